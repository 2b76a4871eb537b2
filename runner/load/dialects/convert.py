"""`agentctl convert`: an agent file (agentctl's or another tool's) loaded, then written in a
target format; what the target cannot express is the loss report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runner.load.dialects import TARGETS
from runner.load.dialects.common import Translation
from runner.load.dialects.detect import detect, read_markdown_or_toml
from runner.spec import AgentSpec

__all__ = ["Converted", "Export", "convert", "export", "translation_of"]


@dataclass
class Export:
    text: str
    losses: list[str] = field(default_factory=list)


def export(spec: AgentSpec, target: str, *, out: Path | None = None) -> Export:
    """`spec` written in `target`'s format; `losses` says what that format cannot express."""
    from runner.load.dialects import adk, claude, codex, copilot, python_out

    losses = _losses(spec, target)
    if target == "claude":
        text = claude.write(spec, losses)
    elif target == "copilot":
        text = copilot.write(spec, losses)
    elif target == "codex":
        text = codex.write(spec, losses, out)
    elif target == "adk":
        text = adk.write(spec, losses, out)
    elif target == "python":
        text = python_out.write(spec, losses, out)
    else:
        raise ValueError(f"unknown target {target!r}")
    return Export(text, losses)


# What each target can say, by agentctl key (anything else set in the file is a loss).
_EXPRESSIBLE = {
    "claude": {
        "name",
        "description",
        "prompt",
        "model",
        "filesystem",
        "todos",
        "general_purpose_agent",
        "ask_user",
        "backend",
        "version",
        "interrupt_on",
        "limits",  # `model_calls` as maxTurns; the other budgets are losses (claude.write)
    },
    "copilot": {
        "name",
        "description",
        "prompt",
        "model",
        "filesystem",
        "todos",
        "general_purpose_agent",
        "backend",
        "version",
    },
    "codex": {
        "interrupt_on",
        "name",
        "description",
        "prompt",
        "model",
        "backend",
        "tools",
        "version",
        "filesystem",
        "todos",
        "general_purpose_agent",
    },
    "adk": {
        "name",
        "description",
        "prompt",
        "model",
        "tools",
        "subagents",
        "filesystem",
        "todos",
        "general_purpose_agent",
        "version",
    },
    "python": {
        "name",
        "description",
        "prompt",
        "model",
        "tools",
        "subagents",
        "interrupt_on",
        "backend",
        "filesystem",
        "todos",
        "general_purpose_agent",
        "response_format",
        "version",
        "memory",
        "skills",
    },
}

_WHAT = {
    "interrupt_on": "approvals",
    "permissions": "permission rules",
    "limits": "budgets",
    "backend": "the backend",
    "middleware": "middleware",
    "retries": "retries",
    "summarization": "summarization settings",
    "prompt_caching": "prompt caching",
    "response_format": "a structured answer",
    "inputs": "typed inputs",
    "vars": "template variables (the prompt is written as rendered)",
    "memory": "memory files",
    "skills": "skills",
    "subagents": "subagents",
    "tools": "tools from code, MCP servers and declared tools",
    "ask_user": "the ask_user tool",
    "task_description": "the task tool's description",
}


def _nested_losses(spec: AgentSpec, target: str) -> list[str]:
    """Settings inside the keys a target has (`model`, `filesystem`, `general_purpose_agent`)
    that it has no field for."""
    from runner.spec import ImportTool, McpTool

    losses = []
    if spec.model is not None:
        for key in sorted(spec.model.model_fields_set - {"id", "params", "fallbacks"}):
            losses.append(f"model.{key}: {target} has no field for it")
    for key in sorted(spec.filesystem.model_fields_set - {"tools"}):
        losses.append(f"filesystem.{key}: {target} has no field for it")
    for key in sorted(spec.general_purpose_agent.model_fields_set - {"enabled"}):
        losses.append(f"general_purpose_agent.{key}: {target} has no field for it")
    for index, entry in enumerate(spec.tools):
        if target == "codex" and isinstance(entry, McpTool):
            server = entry.mcp
            unsaid = sorted(server.model_fields_set & {"transport", "prefix", "tools"})
            losses += [f"tools[{index}].mcp.{key}: codex has no field for it" for key in unsaid]
        elif target in ("adk", "python") and isinstance(entry, ImportTool):
            unsaid = sorted(entry.model_fields_set & {"name", "description", "return_direct"})
            losses += [f"tools[{index}].{key}: {target} has no field for it" for key in unsaid]
            if entry.import_.split(":", 1)[0].endswith(".py") and target == "adk":
                losses.append(f"tools[{index}]: ADK imports tools by module path, not a file")
        elif target == "adk" and "tools" in spec.model_fields_set:
            losses.append(f"tools[{index}]: ADK tools are Python functions")
    return losses


def _losses(spec: AgentSpec, target: str) -> list[str]:
    from runner.spec import FilesystemBackendSpec, LocalShellBackendSpec, McpTool

    can = _EXPRESSIBLE[target]
    losses = []
    for key in sorted(spec.model_fields_set):
        alias = type(spec).model_fields[key].alias or key
        if alias == "import":
            continue
        if alias not in can:
            losses.append(f"{alias}: {target} cannot express {_WHAT.get(alias, alias)}")
    if "backend" in can and spec.backend is not None:
        backend = spec.backend
        if target != "python" and not isinstance(
            backend, FilesystemBackendSpec | LocalShellBackendSpec
        ):
            losses.append(
                f"backend: {target} works on the project folder, not a "
                f"{getattr(backend, 'kind', 'custom')} backend"
            )
        elif (
            target != "python"
            and isinstance(backend, LocalShellBackendSpec)
            and (
                backend.read_only_paths
                or backend.writable_paths
                or backend.env
                or (backend.network and not (target == "codex" and backend.sandbox == "none"))
            )
        ):
            losses.append(f"backend: {target} cannot express the shell's paths, env or network")
    losses += _nested_losses(spec, target)
    if target == "codex":
        for index, entry in enumerate(spec.tools):
            if not isinstance(entry, McpTool):
                losses.append(f"tools[{index}]: codex takes MCP servers only")
        files = spec.filesystem.tools
        if files is not None and not (
            isinstance(spec.backend, FilesystemBackendSpec)
            and set(files) <= {"ls", "read_file", "glob", "grep"}
        ):
            losses.append("filesystem.tools: codex cannot choose its file tools")
        if not spec.todos or not spec.general_purpose_agent.enabled:
            losses.append("todos/general_purpose_agent: codex cannot turn its tools off")
    if target == "claude" and spec.model is not None and not spec.model.id.startswith("anthropic:"):
        losses.append(
            f"model: Claude Code runs Anthropic models; {spec.model.id} is kept as written"
        )
    if spec.model is not None and spec.model.id.startswith("replay:"):
        losses.append(f"model: {target} cannot play an agentctl cassette; the id is kept as is")
    if target in ("claude", "copilot", "adk") and spec.model is not None:
        if spec.model.params and target != "adk":
            losses.append(f"model.params: {target} takes a model name only")
        if spec.model.fallbacks and target != "copilot":
            losses.append(f"model.fallbacks: {target} takes one model")
    if target == "adk" and spec.filesystem.tools != []:
        losses.append("filesystem: an ADK agent has no file tools")
    return losses


@dataclass
class Converted:
    text: str
    losses: list[str]
    """What the target cannot express (or, to YAML, what the original had that agentctl does
    not run)."""
    warnings: list[str]


def convert(path: str | Path, target: str, *, out: Path | None = None) -> Converted:
    """The agent file at `path` written as `target` (`TARGETS`). Raises `SpecError` when the
    file does not load; the text holds the losses as comments where the format has comments."""
    from runner.errors import SpecError, display_path
    from runner.load.loader import load_spec

    path = Path(path)
    if target not in TARGETS:
        raise SpecError(f"--to {target}: expected one of {', '.join(TARGETS)}")
    spec = load_spec(path, allow_unused_vars=True, require_inputs=False)
    warnings = [str(w) for w in spec.load_warnings]
    if target == "yaml":
        tr = translation_of(path)
        if tr is None:
            raise SpecError(f"{display_path(path)}: already an agentctl YAML file")
        from runner.load.dialects.yaml_out import write

        out_dir = out.parent if out is not None else Path.cwd()
        text = write(tr, out_dir=out_dir, source_dir=path.parent)
        return Converted(text, list(tr.dropped), warnings)
    result = export(spec, target, out=out)
    original = translation_of(path)
    # what the original had that agentctl does not run is lost on the way too
    losses = [f"{line} (in {original.file})" for line in original.dropped] if original else []
    losses += result.losses
    text = _with_loss_comments(result.text, losses, target)
    return Converted(text, losses, warnings)


def translation_of(path: Path) -> Translation | None:
    """The translation of a dialect file (None for an agentctl YAML file)."""
    from runner.errors import display_path
    from runner.load.dialects.adk import is_adk
    from runner.load.dialects.adk import read_text as read_adk
    from runner.load.source import read_source, read_yaml

    text = read_source(path)
    shown = display_path(path)
    dialect = detect(path)
    if dialect is not None:
        return read_markdown_or_toml(dialect, path, text, shown)
    doc = read_yaml(text, shown, env={})
    if is_adk(path, doc.value):
        return read_adk(path, text, shown)
    return None


def _with_loss_comments(text: str, losses: list[str], target: str) -> str:
    """The losses as comments at the top, in formats that have comments."""
    if not losses:
        return text
    lines = [f"# agentctl convert: {target} cannot express:"] + [f"#   {loss}" for loss in losses]
    block = "\n".join(lines) + "\n"
    if target in ("claude", "copilot"):  # YAML comments inside the front matter
        return text.replace("---\n", "---\n" + block, 1)
    return block + text
