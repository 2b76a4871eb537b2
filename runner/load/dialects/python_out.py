"""An agent as a deepagents script: `create_deep_agent(...)` with what it can take.

The script needs `deepagents` installed, not agentctl. What deepagents' function has no
argument for (budgets, retries, MCP servers, the shell) is a loss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.load.dialects.common import path_from


def write(spec: Any, losses: list[str], out: Path | None = None) -> str:
    """The script; paths are relative to it when `out` says where it goes."""
    from runner.spec import (
        FilesystemBackendSpec,
        ImportTool,
        InlineSubagent,
        LocalShellBackendSpec,
        RefSubagent,
    )

    imports = ["from pathlib import Path", "", "from deepagents import create_deep_agent"]
    lines: list[str] = []
    tools: list[str] = []
    for index, entry in enumerate(spec.tools):
        if isinstance(entry, ImportTool) and not entry.import_.split(":", 1)[0].endswith(".py"):
            module, _, attr = entry.import_.partition(":")
            alias = f"tool_{index}"
            imports.append(f"from {module} import {attr} as {alias}")
            tools.append(alias if entry.args is None else f"{alias}(**{entry.args!r})")
        else:
            losses.append(
                f"tools[{index}]: only `import:` tools of a package become Python imports"
            )
    args: list[str] = []
    if spec.model is not None and (spec.model.params or spec.model.fallbacks):
        imports.append("from langchain.chat_models import init_chat_model")
        params = "".join(f", {k}={v!r}" for k, v in spec.model.params.items())
        args.append(f"    model=init_chat_model({spec.model.id!r}{params}),")
        if spec.model.fallbacks:
            losses.append("model.fallbacks: the script uses the first model only")
    elif spec.model is not None:
        args.append(f"    model={spec.model.id!r},")
    if tools:
        args.append(f"    tools=[{', '.join(tools)}],")
    args.append("    system_prompt=SYSTEM_PROMPT,")
    subagents = []
    for sub in spec.subagents:
        if isinstance(sub, InlineSubagent):
            subagents.append(_subagent(sub.name, sub.description, sub.prompt, sub.model))
        elif isinstance(sub, RefSubagent) and sub._spec is not None:
            ref = sub._spec
            description = sub.description or ref.description or ""
            subagents.append(_subagent(sub.name or ref.name, description, ref.prompt, ref.model))
        else:
            losses.append("subagents: an `import:` subagent is a compiled graph; add it by hand")
    if subagents:
        args.append("    subagents=[")
        args += [f"        {s!r}," for s in subagents]
        args.append("    ],")
    if spec.interrupt_on:
        approvals = {
            name: (
                setting
                if isinstance(setting, bool)
                else {"allowed_decisions": list(setting.allowed_decisions)}
            )
            for name, setting in spec.interrupt_on.items()
        }
        args.append(f"    interrupt_on={approvals!r},")
        # an approval pauses the run: its state must be kept to resume it
        imports.append("from langgraph.checkpoint.memory import InMemorySaver")
        args.append("    checkpointer=InMemorySaver(),")
    if spec.response_format is not None:
        args.append(f"    response_format={spec.response_format!r},")
    backend = spec.backend
    if isinstance(backend, FilesystemBackendSpec | LocalShellBackendSpec):
        root = path_from(Path(backend.root_dir), out.parent if out is not None else Path.cwd())
        root_expr = root if Path(root).is_absolute() else f"HERE / {root!r}"
        root_expr = repr(root) if Path(root).is_absolute() else root_expr
        if isinstance(backend, LocalShellBackendSpec):
            imports.append("from deepagents.backends import LocalShellBackend")
            args.append(
                f"    backend=LocalShellBackend(root_dir={root_expr}, "
                f"virtual_mode={backend.virtual_mode!r}, timeout={int(backend.timeout)!r}),"
            )
            losses.append(
                "backend: deepagents' LocalShellBackend runs commands on the host, in no sandbox"
            )
        else:
            imports.append("from deepagents.backends import FilesystemBackend")
            args.append(
                f"    backend=FilesystemBackend(root_dir={root_expr}, "
                f"virtual_mode={backend.virtual_mode!r}),"
            )
    elif backend is not None:
        losses.append(f"backend: {getattr(backend, 'kind', 'custom')} is not written to the script")
    if spec.filesystem.tools is not None or not spec.todos:
        losses.append(
            "filesystem.tools/todos: create_deep_agent always adds its file and todo tools"
        )
    if not spec.general_purpose_agent.enabled:
        losses.append("general_purpose_agent: create_deep_agent always adds it")
    if spec.memory or spec.skills:
        losses.append("memory/skills: not written to the script")
    args.append(f"    name={spec.name!r},")
    lines += [
        f'"""The agent {spec.name!r}, written by `agentctl convert --to python`.',
        "",
        "Needs `pip install deepagents` and the model provider's package and API key.",
        '"""',
        "",
        *imports,
        "",
        "HERE = Path(__file__).resolve().parent",
        f"SYSTEM_PROMPT = {spec.prompt or ''!r}",
        "",
        "agent = create_deep_agent(",
        *args,
        ")",
        "",
        'if __name__ == "__main__":',
        "    import sys",
        "",
        '    message = " ".join(sys.argv[1:]) or input("> ")',
        '    config = {"configurable": {"thread_id": "main"}}',
        '    result = agent.invoke({"messages": [{"role": "user", "content": message}]}, config)',
        '    if result.get("__interrupt__"):',
        '        print("waiting for an approval:", result["__interrupt__"][0].value)',
        "    else:",
        '        print(result["messages"][-1].content)',
    ]
    return "\n".join(lines) + "\n"


def _subagent(name: str, description: str, prompt: Any, model: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "description": description,
        "system_prompt": prompt if isinstance(prompt, str) else "",
    }
    if model is not None:
        entry["model"] = model.id
    return entry
