"""Google ADK agent configs: `root_agent.yaml` and the files its `sub_agents` name.

Fields of an `LlmAgent`: `name`, `model`, `description`, `instruction` (the prompt), `tools`
(`{name: google_search}` for ADK's own, `{name: package.module.function}` for code),
`sub_agents` (`{config_path: other.yaml}` or `{code: package.module.agent}`), and the settings
ADK adds. An ADK agent has no file tools: only what it lists.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runner.load.dialects.common import (
    Translation,
    bare_model,
    model_id,
    path_from,
    put_name,
    unknown_field,
)
from runner.load.dialects.detect import ADK_MAPPED as MAPPED
from runner.load.dialects.detect import ADK_UNMAPPED as UNMAPPED
from runner.load.dialects.detect import is_adk
from runner.load.source import Loc, Pos

LABEL = "ADK"

BUILT_IN = {
    "google_search": "agentctl has no built-in web search: add an MCP server or an `http:` tool",
    "url_context": "agentctl has no built-in web tool: add an MCP server or an `http:` tool",
    "load_memory": "agentctl memory files are `memory: [AGENTS.md]`",
    "preload_memory": "agentctl memory files are `memory: [AGENTS.md]`",
    "load_artifacts": "agentctl agents read files with `read_file`",
    "exit_loop": "agentctl loops are workflow steps",
    "get_user_choice": "the closest agentctl tool is `ask_user` (`ask_user: true`)",
    "transfer_to_agent": "agentctl delegates with `task`",
}

CONTENT_PARAMS = ("temperature", "top_p", "top_k", "max_output_tokens", "seed", "stop_sequences")


def read_text(path: Path, text: str, shown: str) -> Translation:
    """An ADK file's text read as YAML in which `${...}` is text, then translated."""
    from runner.load.source import read_yaml

    doc = read_yaml(text.replace("${", "$${"), shown, env={})
    if doc.problems or not isinstance(doc.value, dict):
        tr = Translation("adk", shown, problems=list(doc.problems), unreadable=True)
        if not doc.problems:
            tr.fail(doc.pos.loc, "", "expected a mapping of ADK agent fields")
        return tr
    return read(path, doc.value, doc.pos, shown)


def read(path: Path, value: dict[str, Any], pos: Pos, shown: str) -> Translation:
    tr = Translation("adk", shown)
    here = pos.loc
    loc, vloc = pos.key_loc, pos.value_loc

    kind = value.get("agent_class", "LlmAgent")
    if kind not in ("LlmAgent", "Agent"):
        tr.fail(
            vloc("agent_class"),
            "agent_class",
            f"{kind!r}: agentctl runs ADK's LlmAgent; a Sequential/Parallel/LoopAgent is an "
            "agentctl workflow (see docs/workflows.md)",
        )
        tr.unreadable = True
        return tr
    name = value.get("name")
    if isinstance(name, str) and name.strip():
        put_name(tr, name, vloc("name"))
    else:
        tr.fail(here, "name", "missing: an ADK agent needs `name:`")
    if "description" in value:
        tr.put("description", value["description"], vloc("description"))
    if "model" in value:
        if isinstance(value["model"], str):
            tr.put("model", model_id(value["model"]), vloc("model"))
        else:
            tr.fail(vloc("model"), "model", "expected a model name")
    if "model_code" in value and "model" in value:
        tr.drop(loc("model_code"), "model_code", value["model_code"], "`model` is the model")
    elif "model_code" in value:
        _model_code(tr, value["model_code"], loc("model_code"))
    if "instruction" in value:
        instruction = value["instruction"]
        child = pos.children.get("instruction")
        tr.put("prompt", instruction, vloc("instruction"))
        if child is not None:
            tr.root.children["prompt"] = child
        if isinstance(instruction, str) and re.search(r"\{[A-Za-z_][\w:.?]*\}", instruction):
            tr.warn(
                vloc("instruction"),
                "instruction",
                "ADK fills {name} from session state; agentctl leaves it as written",
            )
            tr.comment("prompt", "ADK fills {name} from session state; here it is text")
    if "generate_content_config" in value:
        _content_config(tr, value["generate_content_config"], loc, vloc)
    # An ADK agent has only the tools it lists: no file tools, todos or general-purpose helper.
    tr.put_in(("filesystem", "tools"), [], here)
    tr.put("todos", False, here)
    tr.put("general_purpose_agent", False, here)
    tr.comment("filesystem", "an ADK agent has no file tools, only those in `tools`")
    agent_tools = _tools(tr, value.get("tools"), pos.children.get("tools"), vloc("tools"))
    _sub_agents(
        tr,
        path.parent,
        value.get("sub_agents"),
        pos.children.get("sub_agents"),
        vloc("sub_agents"),
        agent_tools,
    )
    for key, raw in value.items():
        if key not in MAPPED:
            unknown_field(tr, key, raw, loc(key), UNMAPPED, MAPPED, LABEL)
    return tr


def _model_code(tr: Translation, raw: Any, at: Loc) -> None:
    """`model_code: {name: ...LiteLlm, args: [{name: model, value: openai/gpt-4o}]}`: the model
    it names, as agentctl's `provider:model`."""
    name = raw.get("name") if isinstance(raw, dict) else None
    args = raw.get("args") if isinstance(raw, dict) else None
    model = None
    if isinstance(args, list):
        model = next(
            (a.get("value") for a in args if isinstance(a, dict) and a.get("name") == "model"),
            None,
        )
    elif isinstance(args, dict):
        model = args.get("model")
    if isinstance(name, str) and name.endswith("LiteLlm") and isinstance(model, str):
        tr.put("model", model_id(model), at)
        tr.warn(at, "model_code", f"LiteLlm model {model!r} runs as {model_id(model)!r}")
        tr.comment("model", f"model_code (LiteLlm {model}) in the original")
        return
    tr.drop(at, "model_code", raw, "a model built by code agentctl does not run")


def _content_config(tr: Translation, raw: Any, loc: Any, vloc: Any) -> None:
    if not isinstance(raw, dict):
        tr.fail(vloc("generate_content_config"), "generate_content_config", "expected a mapping")
        return
    params = {k: v for k, v in raw.items() if k in CONTENT_PARAMS}
    for key, item in raw.items():
        if key not in CONTENT_PARAMS:
            tr.drop(
                loc("generate_content_config"),
                f"generate_content_config.{key}",
                item,
                "a Gemini setting agentctl does not pass",
            )
    if not params:
        return
    model = tr.value.get("model") if tr.value is not None else None
    if model is None:
        tr.drop(
            loc("generate_content_config"),
            "generate_content_config",
            params,
            "no `model` to give the settings to",
        )
        return
    if "max_output_tokens" in params:
        params["max_tokens"] = params.pop("max_output_tokens")
    tr.put("model", {"id": model, "params": params}, vloc("model"))
    tr.comment("model", "params are generate_content_config in the original")


def _tools(tr: Translation, raw: Any, pos: Pos | None, at: Loc) -> list[tuple[str, Loc]]:
    """The `tools:` of code as `import:` tools; returns the agents of `AgentTool` entries
    (config paths), which run as subagents."""
    agents: list[tuple[str, Loc]] = []
    if raw is None:
        return agents
    if not isinstance(raw, list):
        tr.fail(at, "tools", "expected a list of tools")
        return agents
    entries: list[Any] = []
    locs: list[Loc] = []
    for index, item in enumerate(raw):
        item_at = pos.children[index].loc if pos is not None and index in pos.children else at
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str):
            tr.fail(item_at, f"tools[{index}]", "expected `name:` of a tool")
            continue
        agent = _agent_tool(item) if name == "AgentTool" else None
        if agent is not None:
            agents.append((agent, item_at))
            tr.comment("subagents", f"AgentTool {agent} in the original")
            tr.warn(
                item_at,
                f"tools[{index}]",
                f"AgentTool {agent!r} runs as a subagent, called with agentctl's `task` tool",
            )
            item_pos = pos.children.get(index) if pos is not None else None
            args_pos = item_pos.children.get("args") if item_pos is not None else None
            for key, extra in item["args"].items():
                if key != "agent":
                    key_at = args_pos.key_locs.get(key, item_at) if args_pos else item_at
                    tr.drop(
                        key_at,
                        f"tools[{index}].args.{key}",
                        extra,
                        "an AgentTool setting agentctl does not have",
                    )
            continue
        if name in BUILT_IN:
            tr.warn(
                item_at,
                f"tools[{index}]",
                f"ADK tool {name!r} has no agentctl equivalent; {BUILT_IN[name]} (left out)",
            )
            tr.dropped.append(f"tools: {name}  (no agentctl equivalent)")
            continue
        if "." not in name:
            tr.warn(
                item_at,
                f"tools[{index}]",
                f"ADK tool {name!r} is not a module path (package.module.function) agentctl "
                "can import (left out)",
            )
            tr.dropped.append(f"tools: {name}  (not an import path)")
            continue
        module, _, attr = name.rpartition(".")
        entry: dict[str, Any] = {"import": f"{module}:{attr}"}
        args = item.get("args") if isinstance(item, dict) else None
        if isinstance(args, list) and all(isinstance(a, dict) and "name" in a for a in args):
            entry["args"] = {a["name"]: a.get("value") for a in args}
        elif isinstance(args, dict):
            entry["args"] = args
        elif args is not None:
            tr.drop(item_at, f"tools[{index}].args", args, "expected a list of {name, value}")
        _extra_keys(tr, item, {"name", "args"}, f"tools[{index}]", item_at)
        entries.append(entry)
        locs.append(item_at)
    if entries:
        tr.put("tools", entries, at, item_locs=locs)
    return agents


def _extra_keys(tr: Translation, item: Any, known: set[str], where: str, at: Loc) -> None:
    """Keys of a list entry that agentctl does not read: each a warning."""
    if isinstance(item, dict):
        for key in item.keys() - known:
            tr.drop(at, f"{where}.{key}", item[key], "not an ADK setting agentctl reads")


def _agent_tool(item: Any) -> str | None:
    """The config path of an `AgentTool` entry (`args: {agent: {config_path: x.yaml}}`)."""
    args = item.get("args") if isinstance(item, dict) else None
    agent = args.get("agent") if isinstance(args, dict) else None
    path = agent.get("config_path") if isinstance(agent, dict) else None
    return path if isinstance(path, str) else None


def _sub_agents(
    tr: Translation,
    folder: Path,
    raw: Any,
    pos: Pos | None,
    at: Loc,
    agent_tools: list[tuple[str, Loc]],
) -> None:
    entries: list[Any] = [_sub_ref(tr, folder, path, loc) for path, loc in agent_tools]
    locs: list[Loc] = [loc for _, loc in agent_tools]
    if raw is not None and not isinstance(raw, list):
        tr.fail(at, "sub_agents", "expected a list of `config_path:` entries")
        raw = None
    for index, item in enumerate(raw or []):
        item_at = pos.children[index].loc if pos is not None and index in pos.children else at
        if isinstance(item, dict) and isinstance(item.get("config_path"), str):
            entries.append(_sub_ref(tr, folder, item["config_path"], item_at))
            locs.append(item_at)
            _extra_keys(tr, item, {"config_path"}, f"sub_agents[{index}]", item_at)
            continue
        code = item.get("code") if isinstance(item, dict) else None
        why = (
            (
                f"{code!r} is an ADK agent object; agentctl's `import:` subagents are compiled "
                "LangGraph graphs"
            )
            if code
            else "expected `config_path:`"
        )
        tr.warn(item_at, f"sub_agents[{index}]", f"{why} (left out)")
        tr.dropped.append(f"sub_agents: {code or item!r}  ({why})")
    if entries:
        tr.put("subagents", entries, at, item_locs=locs)
        tr.put("general_purpose_agent", False, at)


def _sub_ref(tr: Translation, folder: Path, config_path: str, at: Loc) -> dict[str, Any]:
    """A sub agent's `ref:` entry. ADK's `description` is optional, agentctl's main agent needs
    one to choose a subagent: a sub agent file without it is described by its name (warning)."""
    import yaml

    entry: dict[str, Any] = {"ref": config_path}
    try:
        sub = yaml.safe_load((folder / config_path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return entry  # the ref's own load says what is wrong with it
    if not isinstance(sub, dict) or sub.get("description") or not isinstance(sub.get("name"), str):
        return entry
    entry["description"] = f"The {sub['name']} agent."
    tr.warn(
        at,
        "sub_agents",
        f"{config_path} has no `description` (optional in ADK; agentctl's main agent chooses a "
        f"subagent by it): described as {entry['description']!r}",
    )
    tr.comment("subagents", f"description: {config_path} has none in the original")
    return entry


# --------------------------------------------------------------------------- writing


def write(spec: Any, losses: list[str], out: Path | None) -> str:
    from runner.spec import ImportTool, RefSubagent

    doc: dict[str, Any] = {"agent_class": "LlmAgent", "name": spec.name}
    if spec.model is not None:
        doc["model"] = bare_model(spec.model.id)
    if spec.description:
        doc["description"] = spec.description
    doc["instruction"] = spec.prompt or ""
    tools = []
    for entry in spec.tools:
        if (
            isinstance(entry, ImportTool)
            and ":" in entry.import_
            and not entry.import_.split(":", 1)[0].endswith(".py")
        ):
            module, _, attr = entry.import_.partition(":")
            tool: dict[str, Any] = {"name": f"{module}.{attr}"}
            if entry.args:
                tool["args"] = [{"name": k, "value": v} for k, v in entry.args.items()]
            tools.append(tool)
    if tools:
        doc["tools"] = tools
    subs = []
    for index, sub in enumerate(spec.subagents):
        for key in ("name", "description"):
            if isinstance(sub, RefSubagent) and getattr(sub, key) is not None:
                losses.append(
                    f"subagents[{index}].{key}: an ADK sub agent has the {key} its own file gives"
                )
        if isinstance(sub, RefSubagent) and _is_adk_file(Path(sub.ref)):
            subs.append({"config_path": _relative(Path(sub.ref), out)})
        elif isinstance(sub, RefSubagent):
            ref = Path(sub.ref)
            target = ref.name.split(".")[0] + ".yaml"
            subs.append({"config_path": target})
            losses.append(
                f"subagents[{index}]: {ref.name} is not an ADK file; written as {target}: "
                f"convert it too (agentctl convert {ref.name} --to adk -o {target})"
            )
        else:
            losses.append(f"subagents[{index}]: ADK sub_agents are config files (config_path)")
    if subs:
        doc["sub_agents"] = subs
    params = spec.model.params if spec.model is not None else {}
    config = {k: v for k, v in params.items() if k in CONTENT_PARAMS or k == "max_tokens"}
    if "max_tokens" in config:
        config["max_output_tokens"] = config.pop("max_tokens")
    if config:
        doc["generate_content_config"] = config
    from runner.load.dialects.yaml_out import dump

    return dump(doc)


def _is_adk_file(path: Path) -> bool:
    import yaml

    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        return is_adk(path, yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False


def _relative(path: Path, out: Path | None) -> str:
    return path_from(path, out.parent if out is not None else Path.cwd())
