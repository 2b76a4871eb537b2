"""What `agentctl inspect` reports: a resolved agent described as plain data."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from runner.agent.build import _as_spec, middleware_chain, subagent_middleware
from runner.agent.resolve import LocalContext, Resolver
from runner.middleware.prompt import preview_prompt


def describe(
    spec_or_path: Any,
    *,
    vars: Mapping[str, Any] | None = None,
    model: str | None = None,
    local_context: LocalContext | None = None,
    allow_unused_vars: bool = False,
    probe: bool = False,
) -> dict[str, Any]:
    """The resolved agent as a JSON-ready dict (no model is created, no API key needed).
    `probe`: each remote subagent is reached: an Agent Server (`remote:`) is asked for its
    assistant (`probe` or `probe_error` in its entry), an A2A agent for its card (`probe_a2a`)."""
    spec = _as_spec(spec_or_path, vars, allow_unused_vars=allow_unused_vars, require_inputs=False)
    from runner.check.validate import static_problems
    from runner.errors import SpecError

    if problems := static_problems(spec, cassettes=False):  # what a build would refuse
        raise SpecError(sorted(set(problems)))
    resolved = Resolver(model=model, with_models=False, local_context=local_context).resolve(spec)
    resolved.close()  # MCP servers were started only to list their tools
    resolved.harness["subagents"] = subagent_middleware(resolved, compile=False)
    chain = middleware_chain(resolved)
    tools = list(resolved.tools) + [t for m in chain for t in (getattr(m, "tools", None) or ())]
    declared = declared_tool_details(resolved.spec)
    tool_details = [
        {
            "name": getattr(t, "name", str(t)),
            "description": getattr(t, "description", ""),
            **declared.get(getattr(t, "name", ""), {}),
        }
        for t in tools
    ]
    backend = resolved.backend.describe() if resolved.backend is not None else "state"
    remotes = a2a_details(spec, probe=probe)
    return {
        "name": resolved.name,
        "description": resolved.description,
        "source": os.path.relpath(spec.source) if spec.source else None,
        "model": {
            "id": resolved.model.id,
            "params": resolved.model.display_params(),
            "fallbacks": resolved.model.fallback_ids,
            "context_window": resolved.model.context_window,
            "images": resolved.model.images,
            "prices": {
                model_id: price.model_dump() for model_id, price in resolved.model.prices.items()
            },
        },
        "limits": spec.limits.model_dump(exclude_none=True),
        "middleware": [m.name.removesuffix("Middleware") for m in chain],
        "tools": [t["name"] for t in tool_details],
        "tool_details": tool_details,
        "subagents": [
            {
                "name": sub.name,
                "description": sub.description,
                "kind": sub.kind,
                "model": sub.agent.model.id if sub.agent else None,
                "tools": [t.name for t in sub.agent.tools] if sub.agent else [],
                "approvals": sorted(k for k, v in sub.agent.interrupt_on.items() if v)
                if sub.agent
                else [],
                **(
                    {"remote": remote_details(sub.remote, probe=probe)}
                    if sub.remote is not None and sub.kind == "remote"
                    else {}
                ),
                **({"a2a": remotes[sub.name]} if sub.name in remotes else {}),
            }
            for sub in resolved.subagents
        ],
        "backend": backend,
        "inputs": {
            name: {
                "type": declared.kind,
                **declared.model_dump(exclude_none=True, exclude={"type"}),
            }
            for name, declared in spec.inputs.items()
        },
        "approvals": sorted(k for k, v in resolved.interrupt_on.items() if v is not False),
        "permissions": permission_details(resolved.harness.get("permissions")),
        "system_prompt": preview_prompt(resolved.prompt_sections),
    }


MASK = "***"


def remote_details(server: Any, *, probe: bool = False) -> dict[str, Any]:
    """A remote subagent's server for `inspect`, its secrets shown as `***`; with `probe`, what
    the server says of the assistant (`probe`) or why it did not answer (`probe_error`)."""
    headers = {k: MASK for k in server.headers}
    if server.api_key:
        headers = {"x-api-key": MASK, **headers}
    details: dict[str, Any] = {
        "url": server.url,
        "assistant": server.assistant,
        "headers": headers,
        "timeout": server.timeout,
    }
    if probe:
        from runner.middleware.remote_subagents import ProbeError
        from runner.middleware.remote_subagents import probe as ask

        try:
            details["probe"] = ask(server)
        except ProbeError as exc:
            details["probe_error"] = str(exc)
    return details


def a2a_details(spec: Any, *, probe: bool = False) -> dict[str, dict[str, Any]]:
    """What `inspect` shows of each `a2a:` subagent by name: its card URL, header names (values
    masked) and timeout; with `probe`, whether it answers (`probe_a2a`)."""
    from runner.spec import A2ASubagent
    from runner.spec.a2a import DEFAULT_A2A_TIMEOUT, card_url

    found: dict[str, dict[str, Any]] = {}
    for entry in spec.subagents:
        if isinstance(entry, A2ASubagent):
            found[entry.name] = {
                "card": card_url(entry.a2a.card),
                "headers": {k: MASK for k in entry.a2a.headers},
                "timeout": entry.a2a.timeout or DEFAULT_A2A_TIMEOUT,
            }
            if probe:
                found[entry.name]["probe"] = probe_a2a(entry.a2a)
    return found


def probe_a2a(connection: Any) -> dict[str, Any]:
    """`{"ok": true, name, description, url, streaming, skills}` when the A2A agent's card can
    be fetched and the agent answers with the credentials given; `{"ok": false, "error"}`
    saying what failed otherwise. Nothing is run on the agent."""
    import importlib.util

    if importlib.util.find_spec("a2a") is None:
        return {"ok": False, "error": "the A2A SDK is not installed: pip install 'agentctl[serve]'"}
    from runner.tools.a2a import probe_sync

    try:
        return {"ok": True, **probe_sync(connection)}
    except RuntimeError as exc:
        return {"ok": False, "error": str(exc)}


def declared_tool_details(core: Any) -> dict[str, dict[str, Any]]:
    """What `inspect` adds for the `http:`, `openapi:` and `script:` tools by name: the request
    (method and URL) with header values masked, or the command with its timeout."""
    from runner.spec import HttpTool, OpenApiTool, ScriptTool

    found: dict[str, dict[str, Any]] = {}
    for entry in core.tools:
        if isinstance(entry, HttpTool | OpenApiTool):
            from runner.tools.http import http_calls

            for call in http_calls(entry):
                found[call.name] = {
                    "request": f"{call.method} {call.url}",
                    "headers": {k: MASK for k in call.headers},
                    "timeout": call.timeout,
                }
        elif isinstance(entry, ScriptTool):
            script = entry.script
            found[script.name] = {
                "command": list(script.command),
                "env": {k: MASK for k in script.env},
                "timeout": script.timeout,
            }
    return found


def permission_details(middleware: Any) -> dict[str, list[str]]:
    """The deny and allow rules in force, each as `label: rule`."""
    if middleware is None:
        return {"deny": [], "allow": []}
    return {
        kind: [f"{r.label}: {r.rule.shown()}" for r in getattr(middleware, kind)]
        for kind in ("deny", "allow")
    }
