"""Specs as a new user writes them: first attempts in the style of other tools, and random
mistakes made to the example agents. Whatever the mistake, `agentctl validate` answers with
located one-line problems and exit 2 (or 0), never a traceback."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cli import main
from tests.conftest import AGENTS, run_cli
from tests.spec.files import write_files

# --------------------------------------------------------------------------- first attempts

# Each: the spec as someone used to another tool would write it, and every line agentctl answers.
FIRST_ATTEMPTS: dict[str, tuple[str, list[str]]] = {
    "deepagents_style": (
        """
        name: research-agent
        model: claude-sonnet-4-5
        system_prompt: |
          You are an expert researcher.
        tools: [internet_search, read_file]
        subagents:
          - name: critique-agent
            description: Critiques the final report
            system_prompt: You are a tough editor.
        """,
        [
            "2:8: model: expected 'provider:model', e.g. 'openai:gpt-4.1' or "
            "'replay:cassette.yaml', found text 'claude-sonnet-4-5'; "
            "did you mean 'anthropic:claude-sonnet-4-5'?",
            "5:9: tools[0]: expected an import reference 'package.module:name' or "
            "'path/to/file.py:name', found text 'internet_search'",
            "5:26: tools[1]: 'read_file' is built in, not imported: the file tools are always "
            "there (`filesystem.tools` chooses which); `tools:` lists import references like "
            "'package.module:name' or 'path/to/file.py:name'",
        ],
    ),
    "openai_agents_style": (
        """
        name: Assistant
        instructions: You are a helpful assistant.
        model: gpt-4o
        handoffs: [billing_agent]
        """,
        [
            "1:7: name: expected lowercase letters, digits, '-' and '_', starting with a letter "
            "or digit, found text 'Assistant'",
            "2:1: instructions: unknown key; did you mean 'prompt'?",
            "3:8: model: expected 'provider:model', e.g. 'openai:gpt-4.1' or "
            "'replay:cassette.yaml', found text 'gpt-4o'; did you mean 'openai:gpt-4o'?",
            "4:1: handoffs: unknown key; did you mean 'subagents'?",
        ],
    ),
    "camel_case": (
        """
        name: reviewer
        model: anthropic:claude-sonnet-4-5
        interruptOn:
          write_file: true
        generalPurposeAgent: false
        responseFormat: {type: object}
        """,
        [
            "3:1: interruptOn: unknown key; did you mean 'interrupt_on'?",
            "5:1: generalPurposeAgent: unknown key; did you mean 'general_purpose_agent'?",
            "6:1: responseFormat: unknown key; did you mean 'response_format'?",
        ],
    ),
    "model_mapping_with_provider": (
        """
        name: chat
        model:
          provider: openai
          name: gpt-4o
          temperature: 0
        """,
        [
            "3:3: model: write the provider and the model together as `id: openai:gpt-4o`, "
            "not as separate keys"
        ],
    ),
    "litellm_model_id": (
        "name: router\nmodel: openai/gpt-4o\n",
        [
            "2:8: model: expected 'provider:model', e.g. 'openai:gpt-4.1' or "
            "'replay:cassette.yaml', found text 'openai/gpt-4o'; did you mean 'openai:gpt-4o'?"
        ],
    ),
    "filesystem_backend_without_root_dir": (
        "name: files\nmodel: openai:gpt-4.1\nbackend: filesystem\n",
        [
            "3:10: backend: the 'filesystem' backend needs `root_dir`; "
            "write {kind: filesystem, root_dir: ...}"
        ],
    ),
    "backend_with_type_and_path": (
        """
        name: sandbox
        model: openai:gpt-4.1
        backend:
          type: local_shell
          path: ./sandbox
        """,
        ["4:3: backend.type: unknown key; did you mean 'kind'?"],
    ),
    "claude_desktop_mcp_servers": (
        """
        name: docs
        model: anthropic:claude-sonnet-4-5
        mcpServers:
          docs:
            command: npx
            args: ["-y", "@docs/server"]
        """,
        [
            "3:1: mcpServers: unknown key; MCP servers are tools here: "
            "`tools: [{mcp: {name: docs, command: ...}}]`"
        ],
    ),
    "approvals_as_a_list": (
        "name: careful\nmodel: openai:gpt-4.1\ninterrupt_on: [execute, write_file]\n",
        [
            "3:15: interrupt_on: expected a mapping of tool name to `true` or "
            "{allowed_decisions: ...}, found a list; write `execute: true`, one line per tool"
        ],
    ),
    "prompt_as_a_path": (
        "name: pathy\nmodel: openai:gpt-4.1\nprompt: ./prompts/system.md\n",
        [
            "3:9: prompt: this is the prompt's text, and it looks like a file name; to read the "
            "file write `prompt: {file: ./prompts/system.md}`"
        ],
    ),
    "model_settings_at_the_top": (
        "name: writer\nmodel: openai:gpt-4.1\ntemperature: 0.7\nmax_tokens: 2000\n",
        [
            "3:1: temperature: unknown key; settings of the model go under it: "
            "`model: {id: ..., params: {temperature: ...}}`",
            "4:1: max_tokens: unknown key; settings of the model go under it: "
            "`model: {id: ..., params: {max_tokens: ...}}`",
        ],
    ),
    "subagent_without_description": (
        """
        name: lead
        model: openai:gpt-4.1
        subagents:
          - name: researcher
            prompt: Research things.
            model: gpt-4o-mini
        """,
        [
            "4:5: subagents[0].description: missing required key; the main agent reads it to "
            "decide when to use this subagent",
            "6:12: subagents[0].model: expected 'provider:model', e.g. 'openai:gpt-4.1' or "
            "'replay:cassette.yaml', found text 'gpt-4o-mini'; did you mean 'openai:gpt-4o-mini'?",
        ],
    ),
    "crewai_style": (
        """
        name: researcher
        goal: Find out what is true
        backstory: You are a veteran researcher.
        llm: openai:gpt-4.1
        """,
        [
            "2:1: goal: unknown key; did you mean 'description'?",
            "3:1: backstory: unknown key; did you mean 'prompt'?",
            "4:1: llm: unknown key; did you mean 'model'?",
        ],
    ),
    "unquoted_jinja": (
        "name: templated\nmodel: openai:gpt-4.1\nvars: {topic: rust}\nprompt: {{ vars.topic }}\n",
        [
            "4:9: prompt: a value starting with '{{' must be quoted, as in \"{{ vars.topic }}\", "
            "or written as a `|` block: unquoted, YAML reads '{' as the start of a mapping"
        ],
    ),
    "tools_as_a_mapping": (
        "name: tooly\nmodel: openai:gpt-4.1\ntools:\n  search: my_pkg.tools:search\n",
        ["4:3: tools: expected a list, found a mapping; start each item with '- '"],
    ),
    "tab_from_an_editor": (
        "name: tabby\nmodel: openai:gpt-4.1\nlimits:\n\tmodel_calls: 10\n",
        ["4:1: YAML syntax error: a tab character; YAML indents with spaces only"],
    ),
}


def test_first_attempts_get_helpful_located_messages(tmp_path: Path) -> None:
    write_files(tmp_path, {f"{name}.yaml": text for name, (text, _) in FIRST_ATTEMPTS.items()})
    result = run_cli("validate", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    expected = [
        f"{name}.yaml:{line}"
        for name, (_, lines) in sorted(FIRST_ATTEMPTS.items())
        for line in lines
    ]
    count = len(FIRST_ATTEMPTS)
    assert result.stderr.splitlines() == [*expected, f"{count} of {count} files have problems"]


# --------------------------------------------------------------------------- random mistakes

EXAMPLES = {path.name: path.read_text(encoding="utf-8") for path in sorted(AGENTS.glob("*.yaml"))}
LOCATED = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): \S")
# Derandomized: CI runs the same examples every time (raise max_examples locally to explore).
MUTATIONS = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of agents/, so mutants keep their prompt files, refs and tools."""
    target = tmp_path_factory.mktemp("mutants") / "agents"
    shutil.copytree(AGENTS, target)
    return target


def validate_in_process(path: Path) -> tuple[int, str, str]:
    """`agentctl validate PATH` through the CLI entry point, in this process (a subprocess per
    example would cost 0.3 s)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code: Any = main(["validate", str(path)])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def assert_answered_properly(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    code, out, err = validate_in_process(path)
    assert code in (0, 2), (code, out, err)
    for stream in (out, err):
        assert "Traceback" not in stream
        assert "internal error" not in stream
    if code == 0:
        assert (out.startswith("ok: "), err) == (True, "")
        return
    assert err, "exit 2 with nothing said"
    for line in err.splitlines():
        match = LOCATED.match(line)
        assert match, f"not located: {line!r}"
        lines_in_file = Path(match["file"]).read_text(encoding="utf-8").count("\n") + 1
        assert 1 <= int(match["line"]) <= lines_in_file, line
        assert int(match["col"]) >= 1, line


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nodes(child, (*path, index))


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _dump(document: Any) -> str:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


example_names = st.sampled_from(sorted(EXAMPLES))
junk = st.text(alphabet=" \n\t:-{}[]\"'#&*!|>%@`,?abcxyz019_", min_size=1, max_size=12)
any_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


@MUTATIONS
@given(name=example_names, data=st.data())
def test_deleting_a_key(workdir: Path, name: str, data: st.DataObject) -> None:
    document = yaml.safe_load(EXAMPLES[name])
    mappings = [p for p in _nodes(document) if isinstance(_get(document, p), dict)]
    owner = _get(document, data.draw(st.sampled_from(mappings)))
    if owner:
        del owner[data.draw(st.sampled_from(sorted(owner)))]
    assert_answered_properly(workdir / "mutant.yaml", _dump(document))


def _typo(key: str, data: st.DataObject) -> str:
    index = data.draw(st.integers(0, max(len(key) - 1, 0)))
    kind = data.draw(st.sampled_from(["drop", "double", "swap", "insert", "case", "dash"]))
    if kind == "drop" and len(key) > 1:
        return key[:index] + key[index + 1 :]
    if kind == "double":
        return key[: index + 1] + key[index:]
    if kind == "swap" and index + 1 < len(key):
        return key[:index] + key[index + 1] + key[index] + key[index + 2 :]
    if kind == "case":
        return key.upper() if key.islower() else key.lower()
    if kind == "dash":
        return key.replace("_", "-") if "_" in key else key + "-x"
    return key[:index] + data.draw(st.sampled_from("aeiouxz")) + key[index:]


@MUTATIONS
@given(name=example_names, data=st.data())
def test_misspelling_a_key(workdir: Path, name: str, data: st.DataObject) -> None:
    document = yaml.safe_load(EXAMPLES[name])
    mappings = [p for p in _nodes(document) if _get(document, p)]
    mappings = [p for p in mappings if isinstance(_get(document, p), dict)]
    owner = _get(document, data.draw(st.sampled_from(mappings)))
    key = data.draw(st.sampled_from(sorted(owner)))
    renamed = {(_typo(k, data) if k == key else k): v for k, v in owner.items()}
    owner.clear()
    owner.update(renamed)
    assert_answered_properly(workdir / "mutant.yaml", _dump(document))


@MUTATIONS
@given(name=example_names, data=st.data(), value=any_value)
def test_changing_a_value_type(workdir: Path, name: str, data: st.DataObject, value: Any) -> None:
    document = yaml.safe_load(EXAMPLES[name])
    path = data.draw(st.sampled_from([p for p in _nodes(document) if p]))
    _get(document, path[:-1])[path[-1]] = value
    assert_answered_properly(workdir / "mutant.yaml", _dump(document))


@MUTATIONS
@given(name=example_names, data=st.data())
def test_swapping_a_list_and_a_mapping(workdir: Path, name: str, data: st.DataObject) -> None:
    document = yaml.safe_load(EXAMPLES[name])
    paths = [p for p in _nodes(document) if isinstance(_get(document, p), list | dict)]
    path = data.draw(st.sampled_from(paths))
    value = _get(document, path)
    if isinstance(value, list):
        swapped: Any = {f"item{index}": item for index, item in enumerate(value)}
    elif data.draw(st.booleans()):
        swapped = list(value.values())
    else:
        swapped = list(value)
    if path:
        _get(document, path[:-1])[path[-1]] = swapped
    else:
        document = swapped
    assert_answered_properly(workdir / "mutant.yaml", _dump(document))


@MUTATIONS
@given(name=example_names, data=st.data(), text=junk)
def test_inserting_junk_text(workdir: Path, name: str, data: st.DataObject, text: str) -> None:
    source = EXAMPLES[name]
    at = data.draw(st.integers(0, len(source)))
    assert_answered_properly(workdir / "mutant.yaml", source[:at] + text + source[at:])


@MUTATIONS
@given(name=example_names, data=st.data())
def test_breaking_indentation(workdir: Path, name: str, data: st.DataObject) -> None:
    lines = EXAMPLES[name].splitlines(keepends=True)
    index = data.draw(st.integers(0, len(lines) - 1))
    shift = data.draw(st.integers(-4, 4).filter(bool))
    line = lines[index]
    lines[index] = (
        " " * shift + line if shift > 0 else line[min(-shift, len(line) - len(line.lstrip(" "))) :]
    )
    assert_answered_properly(workdir / "mutant.yaml", "".join(lines))


@MUTATIONS
@given(name=example_names, data=st.data())
def test_inserting_a_tab(workdir: Path, name: str, data: st.DataObject) -> None:
    source = EXAMPLES[name]
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(source)))
        mutated = source[:at] + "\t" + source[at:]
    else:  # indent one line with a tab instead of its spaces
        lines = source.splitlines(keepends=True)
        indented = [i for i, line in enumerate(lines) if line.startswith(" ")]
        index = data.draw(st.sampled_from(indented))
        lines[index] = "\t" + lines[index].lstrip(" ")
        mutated = "".join(lines)
    assert_answered_properly(workdir / "mutant.yaml", mutated)
