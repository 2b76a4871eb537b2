"""Codex CLI custom agents: `.codex/agents/NAME.toml`.

Fields: `name`, `description`, `developer_instructions` (the prompt; `instructions` is read too),
`model`, `model_reasoning_effort`, `sandbox_mode`, `mcp_servers`, and the display and runtime
settings of Codex. TOML has no positions in Python's reader, so `toml_positions` finds the line
of each key by scanning the text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runner.load.dialects.common import (
    READ_ONLY_TOOLS,
    Translation,
    agent_name,
    bare_model,
    model_id,
    path_from,
    project_dir,
    put_name,
    unknown_field,
)
from runner.load.source import Loc

LABEL = "Codex"

UNMAPPED = {
    "nickname_candidates": "display names of Codex",
    "web_search": "agentctl has no built-in web tool: add an MCP server or an `http:` tool",
    "skills": "agentctl reads skills from folders (`skills: [./skills]`)",
    "model_verbosity": "a Codex setting; set it in `model.params`",
    "model_reasoning_summary": "a Codex setting",
    "sandbox_workspace_write": "agentctl's shell sandbox keeps only root_dir writable",
    "features": "Codex feature switches",
    "tools": "Codex tool switches",
    "profile": "Codex profiles",
}

MAPPED = (
    "name",
    "description",
    "developer_instructions",
    "instructions",
    "model",
    "model_reasoning_effort",
    "sandbox_mode",
    "mcp_servers",
    "approval_policy",
    "model_provider",
)

PROVIDERS = {
    "openai": "openai",
    "azure": "azure_openai",
    "ollama": "ollama",
}
"""Codex `model_provider` ids -> agentctl providers."""

SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")


def read(path: Path, text: str, shown: str) -> Translation:
    import tomllib

    tr = Translation("codex", shown)
    # the byte order mark and CRLF line ends a Windows editor may write
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line, col = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
        tr.problems.append(Loc(shown, line, col).problem("", f"TOML syntax error: {exc}"))
        tr.unreadable = True
        return tr
    keys = toml_positions(text, shown)
    here = Loc(shown, 1, 1)

    def loc(*key: str) -> Loc:
        return keys.get(key, here)

    name = value.get("name")
    if isinstance(name, str) and name.strip():
        put_name(tr, name, loc("name"))
    else:
        tr.put("name", agent_name(path.stem), here)
        tr.warn(here, "name", "missing; named after the file")
    if "description" in value:
        tr.put("description", value["description"], loc("description"))
    prompt_key = "developer_instructions" if "developer_instructions" in value else "instructions"
    if prompt_key not in value:
        tr.fail(
            here,
            "developer_instructions",
            "missing: a Codex agent file has `developer_instructions` (the agent's prompt), "
            "with `name` and `description`",
        )
    else:
        tr.put("prompt", value[prompt_key], loc(prompt_key))
        if prompt_key == "instructions":
            tr.comment("prompt", "`instructions` in the original")
    if "developer_instructions" in value and "instructions" in value:
        tr.drop(
            loc("instructions"),
            "instructions",
            value["instructions"],
            "`developer_instructions` is the prompt; this one is not added to it",
        )
    _model(tr, value, loc)
    _sandbox(tr, value.get("sandbox_mode"), loc("sandbox_mode"), project_dir(path, ".codex"))
    if "approval_policy" in value:
        _approvals(tr, value["approval_policy"], loc("approval_policy"))
    if "mcp_servers" in value:
        _mcp(tr, value["mcp_servers"], loc, project_dir(path, ".codex"))
    for key, raw in value.items():
        if key not in MAPPED:
            unknown_field(tr, key, raw, loc(key), UNMAPPED, MAPPED, LABEL)
    return tr


def _model(tr: Translation, value: dict[str, Any], loc: Any) -> None:
    model = value.get("model")
    effort = value.get("model_reasoning_effort")
    if model is None:
        for key in ("model_reasoning_effort", "model_provider"):
            if value.get(key) is not None:
                tr.drop(
                    loc(key), key, value[key], "no `model` to give it to (the parent's is used)"
                )
        return
    if not isinstance(model, str):
        tr.fail(loc("model"), "model", "expected a model name")
        return
    full = model_id(model)
    provider = value.get("model_provider")
    if provider is not None and not isinstance(provider, str):
        tr.drop(loc("model_provider"), "model_provider", provider, "expected a provider id")
    elif isinstance(provider, str) and ":" in model:
        tr.drop(loc("model_provider"), "model_provider", provider, "the model names its provider")
    elif isinstance(provider, str):
        known = PROVIDERS.get(provider)
        if known is None:
            tr.drop(
                loc("model_provider"),
                "model_provider",
                provider,
                f"a Codex provider agentctl does not know; the model runs as {full!r}",
            )
        else:
            full = f"{known}:{model}"
    if effort is None:
        tr.put("model", full, loc("model"))
        return
    tr.put("model", {"id": full, "params": {"reasoning_effort": effort}}, loc("model"))
    tr.comment("model", "params.reasoning_effort is model_reasoning_effort in the original")


APPROVAL_POLICIES = ("untrusted", "on-request", "on-failure", "never")


def _approvals(tr: Translation, policy: Any, at: Loc) -> None:
    """`never` is agentctl's default; the others ask before commands, here before each one."""
    if policy not in APPROVAL_POLICIES:
        tr.drop(at, "approval_policy", policy, f"expected one of {', '.join(APPROVAL_POLICIES)}")
        return
    backend = tr.value.get("backend") if tr.value is not None else None
    if policy == "never":
        return
    if not (isinstance(backend, dict) and backend["kind"] == "local_shell"):
        tr.drop(
            at, "approval_policy", policy, "nothing to approve: the read-only sandbox has no shell"
        )
        return
    tr.put("interrupt_on", {"execute": True}, at)
    tr.comment("interrupt_on", f"approval_policy = {policy!r} in the original")
    if policy != "untrusted":
        tr.warn(at, "approval_policy", f"{policy} runs as an approval before every command")


def _sandbox(tr: Translation, mode: Any, at: Loc, project: str) -> None:
    if mode is None:
        mode = "workspace-write"
        tr.comment("backend", "Codex's default sandbox: the project folder, commands allowed")
    if mode not in SANDBOX_MODES:
        tr.fail(at, "sandbox_mode", f"expected one of {', '.join(SANDBOX_MODES)}; found {mode!r}")
        return
    if mode == "read-only":
        tr.put("backend", {"kind": "filesystem", "root_dir": project}, at)
        tr.put_in(("filesystem", "tools"), list(READ_ONLY_TOOLS), at)
        tr.warn(at, "sandbox_mode", "read-only runs with the read-only file tools and no shell")
        tr.comment("filesystem", "sandbox_mode = read-only in the original: no shell here")
        return
    backend: dict[str, Any] = {"kind": "local_shell", "root_dir": project}
    if mode == "danger-full-access":
        backend.update(sandbox="none", network=True)
    tr.put("backend", backend, at)


def _mcp(tr: Translation, servers: Any, loc: Any, project: str) -> None:
    """`[mcp_servers.NAME]` tables as MCP tool entries; a server starts in the project folder,
    as Codex starts it there."""
    if not isinstance(servers, dict):
        tr.fail(loc("mcp_servers"), "mcp_servers", "expected a table of servers")
        return
    entries, locs = [], []
    for name, server in servers.items():
        at = loc("mcp_servers", name)
        if not isinstance(server, dict):
            tr.fail(at, f"mcp_servers.{name}", "expected a table")
            continue
        if server.get("enabled") is False:  # Codex does not start it: neither does agentctl
            tr.drop(at, f"mcp_servers.{name}", "enabled = false", "a disabled server (left out)")
            continue
        entry: dict[str, Any] = {"name": agent_name(name)}
        if "command" in server and "cwd" not in server:
            entry["cwd"] = project
        for key in ("command", "args", "env", "url", "cwd"):
            if key in server:
                entry[key] = server[key]
        if "http_headers" in server:
            entry["headers"] = server["http_headers"]
        if "enabled_tools" in server:
            entry["include"] = server["enabled_tools"]
        if "disabled_tools" in server:
            entry["exclude"] = server["disabled_tools"]
        if "tool_timeout_sec" in server:
            entry["timeout"] = server["tool_timeout_sec"]
        known = {
            "command",
            "args",
            "env",
            "url",
            "cwd",
            "http_headers",
            "enabled_tools",
            "disabled_tools",
            "tool_timeout_sec",
            "enabled",
        }
        for key, raw in server.items():
            if key not in known:
                tr.drop(
                    loc("mcp_servers", name, key),
                    f"mcp_servers.{name}.{key}",
                    raw,
                    "an MCP server setting agentctl does not have",
                )
        entries.append({"mcp": entry})
        locs.append(at)
    if entries:  # each entry located at its `[mcp_servers.NAME]` table
        tr.put("tools", entries, locs[0], item_locs=locs)


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^(\s*)([A-Za-z0-9_-]+|\"[^\"]*\")\s*=")


def toml_positions(text: str, file: str) -> dict[tuple[str, ...], Loc]:
    """Where each key of a TOML document is written (table headers and `key =` lines), by key
    path; the lines inside multi-line strings are skipped."""
    found: dict[tuple[str, ...], Loc] = {}
    table: tuple[str, ...] = ()
    in_string: str | None = None
    for number, line in enumerate(text.split("\n"), 1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        header = _HEADER.match(line)
        if header and not line.lstrip().startswith("[["):
            table = tuple(part.strip().strip('"') for part in header.group(1).split("."))
            found.setdefault(table, Loc(file, number, line.index("[") + 1))
            continue
        key = _KEY.match(line)
        if key:
            name = key.group(2).strip('"')
            found.setdefault((*table, name), Loc(file, number, len(key.group(1)) + 1))
            rest = line[key.end() :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_string = quote
    return found


# --------------------------------------------------------------------------- writing


def write(spec: Any, losses: list[str], out: Path | None = None) -> str:
    """The Codex file; paths are relative to the folder of `out` when it is given."""
    lines = [f"name = {_toml(spec.name)}"]
    if spec.description:
        lines.append(f"description = {_toml(spec.description)}")
    if spec.model is not None:
        lines += _model_lines(spec.model, losses)
    mode = _sandbox_mode(spec, losses)
    if mode is not None:
        lines.append(f"sandbox_mode = {_toml(mode)}")
    if spec.interrupt_on:
        if set(spec.interrupt_on) == {"execute"}:
            lines.append('approval_policy = "untrusted"')
        else:
            names = ", ".join(sorted(spec.interrupt_on))
            losses.append(f"interrupt_on ({names}): Codex asks before commands, not per tool")
    prompt = (spec.prompt or "").rstrip("\n")
    if '"""' in prompt or "\\" in prompt:
        lines.append(f"developer_instructions = {_toml(prompt)}")
    else:
        lines.append(f'developer_instructions = """\n{prompt}\n"""')
    from runner.spec import McpTool

    for entry in spec.tools:
        if isinstance(entry, McpTool):
            lines += ["", *_server_lines(entry.mcp, out)]
    return "\n".join(lines) + "\n"


def _model_lines(model: Any, losses: list[str]) -> list[str]:
    lines = [f"model = {_toml(bare_model(model.id))}"]
    provider = model.id.partition(":")[0]
    named = {v: k for k, v in PROVIDERS.items()}.get(provider)
    if named is not None and named != "openai":
        lines.append(f"model_provider = {_toml(named)}")
    elif named is None and provider != "replay":
        losses.append(
            f"model: Codex knows the providers {', '.join(PROVIDERS)}; {model.id} is written "
            "without its provider"
        )
    effort = model.params.get("reasoning_effort")
    if effort is not None:
        lines.append(f"model_reasoning_effort = {_toml(effort)}")
    return lines


def _server_lines(server: Any, out: Path | None) -> list[str]:
    """A `[mcp_servers.NAME]` table."""
    lines = [f"[mcp_servers.{server.name}]"]
    cwd = path_from(Path(server.cwd), out.parent) if server.cwd and out is not None else server.cwd
    for key, value in (("command", server.command), ("url", server.url), ("cwd", cwd)):
        if value:
            lines.append(f"{key} = {_toml(value)}")
    for key, values in (
        ("args", server.args),
        ("enabled_tools", server.include),
        ("disabled_tools", server.exclude),
    ):
        if values:
            lines.append(f"{key} = [{', '.join(_toml(a) for a in values)}]")
    if server.timeout is not None:
        lines.append(f"tool_timeout_sec = {_toml(server.timeout)}")
    for key, table in (("http_headers", server.headers), ("env", server.env)):
        if table:
            pairs = ", ".join(f"{_toml(k)} = {_toml(v)}" for k, v in table.items())
            lines.append(f"{key} = {{ {pairs} }}")
    return lines


def _sandbox_mode(spec: Any, losses: list[str]) -> str | None:
    from runner.spec import FilesystemBackendSpec, LocalShellBackendSpec

    backend = spec.backend
    if isinstance(backend, LocalShellBackendSpec):
        return "danger-full-access" if backend.sandbox == "none" else None
    if isinstance(backend, FilesystemBackendSpec):
        return "read-only"
    return None


def _toml(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
