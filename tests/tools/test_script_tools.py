"""`script:` tools: a model's values reach the command as single arguments, never as shell text.

The threat list: shell metacharacters (`;`, `|`, `&&`), command substitution (`$(...)`,
backticks), quotes, newlines, globs, an option smuggled in as a value (`-rf`, `--output=...`),
and a NUL. Each must arrive at the program as the exact text given, or be refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import runner
from runner.check.validate import validate_file
from runner.errors import SpecError
from tests.fakes import ScriptedChatModel, ai

HOSTILE = [
    "; rm -rf /",
    "$(touch pwned)",
    "`touch pwned`",
    "a && touch pwned",
    "x | touch pwned",
    "line one\ntouch pwned",
    "'\"quoted\"'",
    "*",
    "${HOME}",
]


def write_agent(folder: Path, script: str, backend: str = "local_shell") -> Path:
    (folder / "ws").mkdir(exist_ok=True)
    path = folder / "agent.yaml"
    path.write_text(
        f"""\
name: scripted
model: openai:gpt-4.1
backend: {{kind: {backend}, root_dir: ./ws}}
tools:
  - script:
{script}"""
    )
    return path


ECHO = """\
      name: echo_args
      description: Print each argument on its own line
      command: [python3, -c, "import sys; print(repr(sys.argv[1:]))", "{text}", "tail-{n}"]
      args:
        text: {type: string, description: What to print}
        n: {type: integer, default: 3}
      env: {GREETING: "hello {text}"}
"""


def run_calls(path: Path, calls: list[dict[str, Any]], *, use_async: bool = False) -> list[Any]:
    model = ScriptedChatModel(script=[ai("", *[("echo_args", c) for c in calls]), ai("done")])
    agent = runner.build_agent(path, model=model, checkpointer=InMemorySaver())
    inputs: Any = {"messages": [{"role": "user", "content": "go"}]}
    config: Any = {"configurable": {"thread_id": "t"}}
    result = (
        asyncio.run(agent.ainvoke(inputs, config)) if use_async else agent.invoke(inputs, config)
    )
    return [m for m in result["messages"] if m.type == "tool"]


@pytest.mark.parametrize("use_async", [False, True])
def test_hostile_values_arrive_as_one_argument_and_run_nothing(
    tmp_path: Path, use_async: bool
) -> None:
    path = write_agent(tmp_path, ECHO)
    results = run_calls(path, [{"text": value} for value in HOSTILE], use_async=use_async)
    assert [m.content for m in results] == [
        f"{[value, 'tail-3']!r}\n[Command succeeded with exit code 0]" for value in HOSTILE
    ]
    assert not list((tmp_path / "ws").iterdir())  # nothing was touched
    assert not Path("pwned").exists()


def test_a_value_starting_with_a_dash_is_refused_unless_allowed(tmp_path: Path) -> None:
    path = write_agent(tmp_path, ECHO)
    (refused, negative) = run_calls(
        path, [{"text": "--output=/etc/passwd"}, {"text": "x", "n": -1}]
    )
    assert refused.status == "error"
    assert refused.content.startswith("Error: argument 'text' starts with '-'")
    assert negative.status == "error" and "argument 'n' starts with '-'" in negative.content
    allowed = ECHO.replace(
        "n: {type: integer, default: 3}", "n: {type: integer, allow_leading_dash: true}"
    )
    path = write_agent(tmp_path, allowed)
    (ok,) = run_calls(path, [{"text": "x", "n": -1}])
    assert ok.content.startswith("['x', 'tail--1']")


def test_values_go_into_the_environment_too(tmp_path: Path) -> None:
    script = ECHO.replace(
        '"import sys; print(repr(sys.argv[1:]))"', "\"import os; print(os.environ['GREETING'])\""
    )
    path = write_agent(tmp_path, script)
    (result,) = run_calls(path, [{"text": "$(id); world"}])
    assert result.content == "hello $(id); world\n[Command succeeded with exit code 0]"


def test_the_timeout_kills_the_command(tmp_path: Path) -> None:
    script = """\
      name: echo_args
      description: Sleep
      command: [sleep, "{text}"]
      args: {text: {}}
      timeout: 0.5
"""
    path = write_agent(tmp_path, script)
    (result,) = run_calls(path, [{"text": "30"}])
    assert "[Command timed out after 0.5 seconds" in result.content


def test_the_tool_schema_is_the_declared_arguments(tmp_path: Path) -> None:
    path = write_agent(tmp_path, ECHO)
    model = ScriptedChatModel(script=[ai("done")])
    agent = runner.build_agent(path, model=model)
    agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    (tool,) = [t for t in model.bound_tools if getattr(t, "name", None) == "echo_args"]
    schema = tool.tool_call_schema.model_json_schema()
    assert schema["properties"]["text"] == {
        "description": "What to print",
        "title": "Text",
        "type": "string",
    }
    assert schema["required"] == ["text"] and "runtime" not in schema["properties"]


def test_a_backend_without_execute_is_a_located_error(tmp_path: Path) -> None:
    path = write_agent(tmp_path, ECHO, backend="filesystem")
    (problem,) = validate_file(path)
    assert (problem.line, problem.path) == (6, "tools[0].script")
    assert problem.message.startswith("a script tool runs through the backend's `execute`")
    assert "this agent's backend is filesystem" in problem.message


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ('[echo, "{txt}"]', "command[1]: {txt} names no argument; declare it under `args:`"),
        ('["{text}", x]', "command[0]: the program cannot come from an argument ({text})"),
        ('[echo, "{text"]', "command[1]: a lone '{' in '{text'"),
        ("[echo, hi]", "args: 'text' is used nowhere: put `{text}` in `command` or `env`"),
    ],
)
def test_placeholder_mistakes_are_spec_errors(tmp_path: Path, command: str, message: str) -> None:
    script = f"""\
      name: t
      description: d
      command: {command}
      args: {{text: {{}}}}
"""
    path = write_agent(tmp_path, script)
    with pytest.raises(SpecError) as info:
        runner.load_spec(path)
    (problem,) = info.value.problems
    assert problem.path == "tools[0].script" and message in problem.message


def test_inspect_shows_the_command_and_masks_env_values(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    path = write_agent(tmp_path, ECHO)
    done = run_cli("inspect", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "echo_args" in done.stdout
    assert 'runs ["python3", "-c", "import sys; print(repr(sys.argv[1:]))", "{text}"' in done.stdout
    done = run_cli("inspect", str(path), "--json", cwd=tmp_path)
    (tool,) = [t for t in json.loads(done.stdout)["tool_details"] if t["name"] == "echo_args"]
    assert (tool["env"], tool["timeout"]) == ({"GREETING": "***"}, 120)


@pytest.mark.parametrize(
    ("command", "found"),
    [
        (["sh", "-c", "echo {a}"], (2, "a")),
        (["bash", "-c", "grep {a} notes.txt"], (2, "a")),
        (["zsh", "-c", "{a}"], (2, "a")),
        (["dash", "-c", "echo {a}"], (2, "a")),
        (["/bin/sh", "-c", "echo {a}"], (2, "a")),
        (["env", "sh", "-c", "echo {a}"], (3, "a")),
        (["/usr/bin/env", "-i", "LANG=C", "bash", "-c", "echo {a}"], (5, "a")),
        (["busybox", "sh", "-c", "echo {a}"], (3, "a")),
        (["bash", "-ec", "echo {a}"], (2, "a")),
        (["bash", "--norc", "-o", "pipefail", "-c", "echo {a}"], (5, "a")),
        (["python3", "-c", "print('{a}')"], (2, "a")),
        (["python3.12", "-I", "-c", "print({a})"], (3, "a")),
        (["perl", "-ne", "print if /{a}/"], (2, "a")),
        (["node", "--eval", "console.log('{a}')"], (2, "a")),
        # the value after the code is an argument the code reads: safe
        (["sh", "-c", 'echo "$1"', "sh", "{a}"], None),
        (["python3", "-c", "import sys; print(sys.argv[1])", "{a}"], None),
        (["bash", "script.sh", "-c", "{a}"], None),  # -c is the script's option
        (["python3", "-m", "pytest", "{a}"], None),
        (["grep", "-c", "{a}", "notes.txt"], None),
        (["sh", "-c", "ls"], None),
        (["env", "A=1"], None),
    ],
)
def test_validate_finds_a_placeholder_inside_code_a_shell_runs(
    command: list[str], found: tuple[int, str] | None
) -> None:
    from runner.check.tools import code_with_placeholder

    assert code_with_placeholder(command) == found


def test_validate_warns_about_sh_c_with_a_placeholder_and_still_passes(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    (tmp_path / "a.yaml").write_text(
        "name: a\nmodel: openai:gpt-4.1\nbackend: {kind: local_shell, root_dir: ./ws}\n"
        "tools:\n"
        '  - script: {name: greet, description: Greets, command: [sh, -c, "echo {who}"],\n'
        "             args: {who: {}}}\n"
        "  - script: {name: safe, description: Greets, command: [sh, -c, 'echo \"$1\"', sh,\n"
        '             "{who}"], args: {who: {}}}\n'
        '  - script: {name: calc, description: Adds, command: [python3, -c, "print({n} + 1)"],\n'
        "             args: {n: {type: integer}}}\n"
    )
    done = run_cli("validate", "a.yaml", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "ok: a.yaml\n"
    assert done.stderr.splitlines() == [
        "warning: a.yaml:5:66: tools[0].script.command[2]: {who} is inside the code `sh -c` "
        "runs: a value holding `;`, `$(...)` or a quote runs as code. Pass it as an argument "
        "after the code instead, e.g. [sh, -c, 'grep -- \"$1\" notes.txt', sh, '{who}'] (the "
        "shell reads it as $1, never as code)",
        "warning: a.yaml:9:68: tools[2].script.command[2]: {n} is inside the code `python3 -c` "
        "runs: a value holding `;`, `$(...)` or a quote runs as code. Pass it as an argument "
        "after the code instead, and read it there (`sys.argv[1]` in Python, `$ARGV[0]` in "
        "Perl, `ARGV[0]` in Ruby, `process.argv[1]` in Node)",
    ]
    done = run_cli("validate", "--json", "a.yaml", cwd=tmp_path)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0
    assert [(w["path"], w["warning"]) for w in lines] == [
        ("tools[0].script.command[2]", True),
        ("tools[2].script.command[2]", True),
    ]
