"""`agentctl inspect`: the resolved agent, as agentctl will run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from runner.cli.options import var_options


@click.command(short_help="Show the resolved agent: model, tools, chain, prompt.")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object (name, model, middleware, tools, subagents, backend, system_prompt).",
)
@click.option(
    "--prompt", "show_prompt", is_flag=True, help="Print the fully assembled system prompt."
)
@click.option("--mermaid", is_flag=True, help="For a workflow: its steps as a Mermaid flowchart.")
@click.option(
    "--probe",
    is_flag=True,
    help="Reach each remote subagent: ask an Agent Server (`remote:`) for its assistant and "
    "input schema, fetch an A2A agent's card (`a2a:`) and check it answers; exit 1 when one "
    "does not.",
)
@var_options
@click.option("--model", metavar="MODEL", help="Inspect with this model instead of the spec's.")
def inspect(
    spec: Path,
    as_json: bool,
    show_prompt: bool,
    mermaid: bool,
    probe: bool,
    vars_: tuple[str, ...],
    allow_unused_var: bool,
    model: str | None,
) -> int:
    """Show the agent in SPEC as agentctl assembles it: the model, the tools with their
    descriptions, the middleware chain in order, subagents, the backend and its routes, and with
    --prompt the system prompt. Needs no API key: models are named, not created. --probe asks
    each remote subagent's Agent Server for its assistant and input schema.

    A workflow is shown as its state, agents, tools and steps (with where each goes next);
    --mermaid prints it as a Mermaid flowchart instead, --json as the spec's data.
    """
    from runner.agent.context import local_context_for
    from runner.agent.inspect import describe
    from runner.cli.options import parse_vars
    from runner.load.loader import is_workflow_file

    if is_workflow_file(spec):
        if show_prompt:
            raise click.UsageError("--prompt shows an agent's prompt; inspect an agent file")
        return _workflow(spec, parse_vars(vars_), allow_unused_var, as_json, mermaid)
    if mermaid:
        raise click.UsageError("--mermaid draws a workflow's steps; SPEC is an agent file")

    from runner.cli.convert import echo_dialect_warnings

    echo_dialect_warnings(spec)
    info = describe(
        spec,
        vars=parse_vars(vars_),
        model=model,
        local_context=local_context_for(spec),
        allow_unused_vars=allow_unused_var,
        probe=probe,
    )
    failed = [
        f"{info.get('source') or spec}: subagents.{sub['name']}.remote: {remote['probe_error']}"
        for sub in info["subagents"]
        if "probe_error" in (remote := sub.get("remote") or {})
    ]
    failed += [
        f"{info.get('source') or spec}: subagents.{sub['name']}.a2a: {found['error']}"
        for sub in info["subagents"]
        if not (found := (sub.get("a2a") or {}).get("probe", {"ok": True}))["ok"]
    ]
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
    elif show_prompt:
        click.echo(info["system_prompt"])
    else:
        click.echo(_text(info))
    for line in failed:
        click.echo(line, err=True)
    return 1 if failed else 0


def _workflow(
    spec: Path, vars: dict[str, Any], allow_unused: bool, as_json: bool, mermaid: bool
) -> int:
    from runner.check.workflow import load_checked_workflow
    from runner.workflow.inspect import mermaid as draw
    from runner.workflow.inspect import steps_text

    loaded = load_checked_workflow(
        spec, vars=vars, allow_unused_vars=allow_unused, require_inputs=False
    )
    if as_json:
        data = loaded.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        click.echo(draw(loaded) if mermaid else steps_text(loaded))
    return 0


def _text(info: dict[str, Any]) -> str:
    model = info["model"]
    lines = [
        f"agent       {info['name']}" + (f"  ({info['source']})" if info.get("source") else "")
    ]
    if info.get("description"):
        lines.append(f"            {info['description']}")
    extra = []
    if model.get("params"):
        extra.append(", ".join(f"{k}={v}" for k, v in model["params"].items()))
    if model.get("fallbacks"):
        extra.append("fallbacks: " + ", ".join(model["fallbacks"]))
    if model.get("context_window"):
        extra.append(f"context window {model['context_window']}")
    if model.get("images") is not None:
        extra.append("looks at images" if model["images"] else "no images")
    for model_id, price in (model.get("prices") or {}).items():
        extra.append(f"{model_id}: ${price['input']:g} in / ${price['output']:g} out per 1M tokens")
    lines.append(f"model       {model['id']}" + (f"  ({'; '.join(extra)})" if extra else ""))
    if info.get("limits"):
        lines.append("limits      " + _limits_text(info["limits"]))
    lines.append(f"backend     {info['backend']}")
    lines.append("middleware  " + " → ".join(info["middleware"]))
    lines.append("tools")
    width = max((len(t["name"]) for t in info["tool_details"]), default=0)
    for tool in info["tool_details"]:
        first = (tool["description"] or "").strip().splitlines()
        lines.append(f"  {tool['name']:<{width}}  {first[0] if first else ''}")
        if "request" in tool:
            headers = ", ".join(f"{k}: {v}" for k, v in tool["headers"].items())
            lines.append(
                f"  {'':<{width}}  {tool['request']}" + (f"  ({headers})" if headers else "")
            )
        if "command" in tool:
            lines.append(f"  {'':<{width}}  runs {json.dumps(tool['command'])}")
    if info["subagents"]:
        lines.append("subagents")
        for sub in info["subagents"]:
            lines.append(f"  {sub['name']}: {sub['description']}")
            if "remote" in sub:
                lines.extend(_remote_lines(sub["remote"]))
            if "a2a" in sub:
                lines.extend(_a2a_lines(sub["a2a"]))
    if info.get("inputs"):
        lines.append("inputs")
        width = max(len(name) for name in info["inputs"])
        for name, declared in info["inputs"].items():
            lines.append(f"  {name:<{width}}  {_input_text(declared)}")
    if info["approvals"]:
        lines.append("approvals   " + ", ".join(info["approvals"]))
    for kind in ("deny", "allow"):
        rules = info.get("permissions", {}).get(kind) or []
        for index, rule in enumerate(rules):
            lines.append(f"{kind if index == 0 else '':<12}{rule}")
    lines.append(f"prompt      {len(info['system_prompt'])} characters (see --prompt)")
    return "\n".join(lines)


def _remote_lines(remote: dict[str, Any]) -> list[str]:
    """Where a remote subagent runs and, probed, what its server answered."""
    headers = ", ".join(f"{k}: {v}" for k, v in remote["headers"].items())
    lines = [
        f"      remote {remote['url']} assistant {remote['assistant']!r}"
        + (f"  ({headers})" if headers else "")
    ]
    found = remote.get("probe")
    if found:
        inputs = ", ".join(found["input"]) or "none"
        lines.append(
            f"      answers: graph {found['graph_id']!r}, assistant {found['assistant_id']}, "
            f"inputs: {inputs}"
        )
    elif "probe_error" in remote:
        lines.append(f"      does not answer: {remote['probe_error']}")
    return lines


def _a2a_lines(remote: dict[str, Any]) -> list[str]:
    headers = ", ".join(f"{k}: {v}" for k, v in remote["headers"].items())
    lines = [
        f"    A2A agent, card {remote['card']}"
        + (f"  ({headers})" if headers else "")
        + f", timeout {remote['timeout']:g} s"
    ]
    probe = remote.get("probe")
    if probe is None:
        return lines
    if not probe["ok"]:
        return [*lines, f"    probe: FAILED: {probe['error']}"]
    streaming = "streaming" if probe["streaming"] else "no streaming"
    lines.append(f"    probe: ok, {probe['name']!r} answers at {probe['url']} ({streaming})")
    return lines


def _input_text(declared: dict[str, Any]) -> str:
    """One typed input in a line: `integer >= 1, default 2  How deep to go`."""
    kind = declared["type"]
    if kind == "enum":
        kind = "one of " + "|".join(str(c) for c in declared.get("enum", ()))
    if "minimum" in declared:
        kind += f" >= {declared['minimum']:g}"
    if "maximum" in declared:
        kind += f" <= {declared['maximum']:g}"
    if declared.get("required"):
        kind += ", required"
    elif "default" in declared:
        kind += f", default {json.dumps(declared['default'])}"
    description = declared.get("description")
    return f"{kind}  {description}" if description else kind


def _limits_text(limits: dict[str, Any]) -> str:
    """`model calls 100 · tokens 20,000 · time 5m · cost $0.05`: a run's limits and budgets."""
    from runner.spec.budgets import human_cost, human_duration

    shown = {
        "model_calls": lambda v: f"model calls {v}",
        "tool_calls": lambda v: f"tool calls {v}",
        "recursion": lambda v: f"steps {v}",
        "tokens": lambda v: f"tokens {v:,}",
        "time": lambda v: f"time {human_duration(v)}",
        "cost": lambda v: f"cost {human_cost(v)}",
    }
    return " · ".join(shown[key](value) for key, value in limits.items() if key in shown)
