"""An agent as a deepagents script: `create_deep_agent(...)` with what it can take.

The script needs `deepagents` installed, not agentctl. What deepagents' function has no
argument for (budgets, retries, MCP servers, the shell) is a loss.
"""

from __future__ import annotations

from typing import Any


def write(spec: Any, losses: list[str]) -> str:
    from runner.spec import (
        FilesystemBackendSpec,
        ImportTool,
        InlineSubagent,
        LocalShellBackendSpec,
        RefSubagent,
    )

    imports = ["from deepagents import create_deep_agent"]
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
    args = [f"    model={_model(spec)!r},"] if spec.model is not None else []
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
    if spec.response_format is not None:
        args.append(f"    response_format={spec.response_format!r},")
    backend = spec.backend
    if isinstance(backend, FilesystemBackendSpec | LocalShellBackendSpec):
        imports.append("from deepagents.backends import FilesystemBackend")
        args.append(
            f"    backend=FilesystemBackend(root_dir={backend.root_dir!r}, "
            f"virtual_mode={backend.virtual_mode!r}),"
        )
        if isinstance(backend, LocalShellBackendSpec):
            losses.append("backend: the script's FilesystemBackend has no shell (`execute`)")
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
        '    result = agent.invoke({"messages": [{"role": "user", "content": message}]})',
        '    print(result["messages"][-1].content)',
    ]
    return "\n".join(lines) + "\n"


def _model(spec: Any) -> str:
    return str(spec.model.id)


def _subagent(name: str, description: str, prompt: Any, model: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "description": description,
        "system_prompt": prompt if isinstance(prompt, str) else "",
    }
    if model is not None:
        entry["model"] = model.id
    return entry
