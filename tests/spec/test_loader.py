"""`load_spec` behaviour: ${VAR} interpolation, includes, subagent refs, relative paths, prompts."""

from __future__ import annotations

from pathlib import Path

import pytest

import runner
import runner.load.loader
from runner.spec import (
    CompositeBackendSpec,
    FilesystemBackendSpec,
    ImportSubagent,
    ImportTool,
    InlineSubagent,
    LocalShellBackendSpec,
    McpTool,
    RefSubagent,
)
from tests.spec.files import write_files as write


def problems(path: Path, **kwargs: object) -> list[str]:
    with pytest.raises(runner.SpecError) as info:
        runner.load_spec(path, **kwargs)  # type: ignore[arg-type]
    return [str(p) for p in info.value.problems]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages show paths relative to the working directory: make that the test's folder."""
    monkeypatch.chdir(tmp_path)


# --------------------------------------------------------------------------- ${VAR}


def test_env_variables_default_and_escape(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "a.yaml": """
            name: a
            model: ${PROVIDER}:${MODEL:-gpt-4.1}
            description: "costs $${price}, ${PROVIDER} and ${UNSET:-} end"
            prompt: |
              Token $${NOT_A_VAR} stays; ${PROVIDER:-ignored} is set.
            """
        },
    )
    spec = runner.load_spec(path, env={"PROVIDER": "openai"})
    assert spec.model is not None
    assert spec.model.id == "openai:gpt-4.1"
    assert spec.description == "costs ${price}, openai and  end"
    assert spec.prompt == "Token ${NOT_A_VAR} stays; openai is set.\n"


def test_env_comes_from_the_process_environment_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, {"a.yaml": "name: a\ndescription: ${AGENTCTL_TEST_TEAM}\n"})
    monkeypatch.setenv("AGENTCTL_TEST_TEAM", "from the environment")
    assert runner.load_spec(path).description == "from the environment"
    assert problems(path, env={}) == [
        "a.yaml:2:14: description: environment variable AGENTCTL_TEST_TEAM is not set; set it, "
        "or give a default with ${AGENTCTL_TEST_TEAM:-default}"
    ]


def test_env_problems_point_at_the_reference_in_every_scalar_style(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "a.yaml": """
            name: a
            description: plain ${NO_A} and ${NO_B}
            prompt: 'single ${NO_C}'
            vars:
              folded: >
                first line
                then ${NO_D}
              quoted: "x\\ty ${NO_E}"
            """
        },
    )
    got = problems(path, env={})
    assert [p.split(": environment")[0] for p in got] == [
        "a.yaml:2:20: description",
        "a.yaml:2:32: description",
        "a.yaml:3:17: prompt",
        "a.yaml:7:10: vars.folded",
        "a.yaml:8:17: vars.quoted",
    ]


def test_a_failed_variable_is_one_problem_not_also_a_bad_value(tmp_path: Path) -> None:
    path = write(tmp_path, {"a.yaml": "name: a\nmodel: openai:${MODEL}\n"})
    assert problems(path, env={}) == [
        "a.yaml:2:15: model: environment variable MODEL is not set; set it, or give a default "
        "with ${MODEL:-default}"
    ]


# --------------------------------------------------------------------------- include:


def test_include_merge_rules(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "agent.yaml": """
            include: [base/one.yaml, base/two.yaml]
            name: agent
            model: {params: {temperature: 0.5}}
            tools: [pkg.tools:own]
            subagents: [{name: own, description: Own}]
            """,
            "base/one.yaml": """
            description: from one
            todos: false
            model: {id: "openai:gpt-4.1", params: {temperature: 0.1, max_tokens: 10}}
            backend: {kind: filesystem, root_dir: ./ws, max_file_size_mb: 1}
            tools: [pkg.tools:one]
            subagents: [{name: one, description: One}]
            limits: {model_calls: 5}
            """,
            "base/two.yaml": """
            description: from two
            backend: {kind: store, namespace: [two]}
            tools: [pkg.tools:two]
            subagents: [{name: two, description: Two}]
            limits: {recursion: 50}
            """,
        },
    )
    spec = runner.load_spec(path)
    assert spec.description == "from two"  # a later include wins
    assert spec.todos is False  # keys nobody overrides are kept
    assert spec.model is not None
    # mappings merge key by key, the including file winning
    assert (spec.model.id, spec.model.params) == (
        "openai:gpt-4.1",
        {"temperature": 0.5, "max_tokens": 10},
    )
    assert (spec.limits.model_calls, spec.limits.recursion) == (5, 50)
    # a mapping with another `kind` replaces the whole mapping: no root_dir left over
    assert spec.backend is not None
    assert spec.backend.model_dump() == {"kind": "store", "namespace": ["two"]}
    # tools and subagents concatenate in include order, the including file last
    assert [t.import_ for t in spec.tools if isinstance(t, ImportTool)] == [
        "pkg.tools:one",
        "pkg.tools:two",
        "pkg.tools:own",
    ]
    assert [s.name for s in spec.subagents if isinstance(s, InlineSubagent)] == [
        "one",
        "two",
        "own",
    ]


def test_include_of_the_same_kind_merges_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "agent.yaml": """
            include: [base.yaml]
            name: agent
            backend: {kind: filesystem, virtual_mode: false}
            """,
            "base.yaml": "backend: {kind: filesystem, root_dir: ./ws}\n",
        },
    )
    backend = runner.load_spec(path).backend
    assert isinstance(backend, FilesystemBackendSpec)
    assert (backend.root_dir, backend.virtual_mode) == (str(tmp_path / "ws"), False)


def test_includes_nest_and_resolve_paths_against_their_own_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "agent.yaml": "include: [shared/base.yaml]\nname: agent\n",
            "shared/base.yaml": """
            include: [deeper/tools.yaml]
            prompt: {file: prompt.md}
            backend: {kind: local_shell, root_dir: ./work}
            memory: [./AGENTS.md]
            """,
            "shared/prompt.md": "From the shared folder.\n",
            "shared/deeper/tools.yaml": "tools: [./tools.py:search]\n",
            "shared/deeper/tools.py": "def search(q: str) -> str:\n    return q\n",
        },
    )
    spec = runner.load_spec(path)
    assert spec.prompt == "From the shared folder.\n"
    assert isinstance(spec.backend, LocalShellBackendSpec)
    assert spec.backend.root_dir == str(tmp_path / "shared" / "work")
    assert [m.host for m in spec.memory] == [str(tmp_path / "shared" / "AGENTS.md")]
    tool = spec.tools[0]
    assert isinstance(tool, ImportTool)
    assert tool.import_ == f"{tmp_path / 'shared' / 'deeper' / 'tools.py'}:search"


def test_problems_in_included_content_point_at_the_included_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "agent.yaml": "include: [parts/base.yaml]\nname: agent\nmodel: {params: {a: 1}}\n",
            "parts/base.yaml": "todos: true\nmodel: {id: gpt-4.1}\nlimits: {tool_cals: 3}\n",
        },
    )
    assert problems(path) == [
        "parts/base.yaml:2:13: model.id: expected 'provider:model', e.g. 'openai:gpt-4.1' or "
        "'replay:cassette.yaml', found text 'gpt-4.1'; did you mean 'openai:gpt-4.1'?",
        "parts/base.yaml:3:10: limits.tool_cals: unknown key; did you mean 'tool_calls'?",
    ]


def test_include_cycle_through_three_files(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "a.yaml": "include: [b.yaml]\nname: a\n",
            "b.yaml": "include: [c.yaml]\n",
            "c.yaml": "include: [a.yaml]\n",
        },
    )
    assert problems(path) == [
        "c.yaml:1:11: include[0]: includes form a cycle: a.yaml -> b.yaml -> c.yaml -> a.yaml"
    ]


# --------------------------------------------------------------------------- ref:


def test_ref_loads_the_file_onto_the_entry_with_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "main.yaml": """
            name: main
            subagents:
              - ref: agents/coder.yaml
              - ref: ./agents/coder.yaml
                name: reviewer
                description: Reviews code instead
            """,
            "agents/coder.yaml": """
            name: coder
            description: Writes code
            model: openai:gpt-4.1
            backend: {kind: filesystem, root_dir: ./code}
            """,
        },
    )
    spec = runner.load_spec(path)
    first, second = spec.subagents
    assert isinstance(first, RefSubagent) and isinstance(second, RefSubagent)
    assert first.ref == second.ref == str(tmp_path / "agents" / "coder.yaml")
    assert first.spec is second.spec  # a file ref'd twice is loaded once
    assert (first.spec.name, first.spec.description) == ("coder", "Writes code")
    assert (first.name, first.description) == (None, None)
    assert (second.name, second.description) == ("reviewer", "Reviews code instead")
    backend = first.spec.backend
    assert isinstance(backend, FilesystemBackendSpec)
    assert backend.root_dir == str(tmp_path / "agents" / "code")  # relative to the ref'd file


def test_a_file_refd_from_two_places_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        tmp_path,
        {
            "main.yaml": "name: main\nsubagents: [{ref: a.yaml}, {ref: shared.yaml}]\n",
            "a.yaml": "name: a\ndescription: A\nsubagents: [{ref: shared.yaml}]\n",
            "shared.yaml": "name: shared\ndescription: Shared\n",
        },
    )
    reads: list[str] = []
    original = runner.load.loader.read_source

    def counting_read_source(path: Path, **kwargs: int) -> str:
        reads.append(path.name)
        return original(path, **kwargs)

    monkeypatch.setattr(runner.load.loader, "read_source", counting_read_source)
    spec = runner.load_spec(path)
    assert sorted(reads) == ["a.yaml", "main.yaml", "shared.yaml"]
    via_a = spec.subagents[0]
    direct = spec.subagents[1]
    assert isinstance(via_a, RefSubagent) and isinstance(direct, RefSubagent)
    nested = via_a.spec.subagents[0]
    assert isinstance(nested, RefSubagent)
    assert nested.spec is direct.spec


def test_caller_vars_reach_refd_files(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "main.yaml": "name: main\nvars: {topic: a}\nsubagents: [{ref: sub.yaml}]\n",
            "sub.yaml": "name: sub\ndescription: S\nvars: {topic: b}\nprompt: On {{vars.topic}}\n",
        },
    )
    sub = runner.load_spec(path).subagents[0]
    assert isinstance(sub, RefSubagent)
    assert sub.spec.prompt == "On b"
    sub = runner.load_spec(path, vars={"topic": "c"}).subagents[0]
    assert isinstance(sub, RefSubagent)
    assert sub.spec.prompt == "On c"


def test_a_ref_without_description_is_fine_with_one_next_to_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "main.yaml": "name: main\nsubagents: [{ref: sub.yaml, description: Given here}]\n",
            "sub.yaml": "name: sub\n",
        },
    )
    sub = runner.load_spec(path).subagents[0]
    assert isinstance(sub, RefSubagent)
    assert (sub.description, sub.spec.description) == ("Given here", None)


def test_the_spec_of_an_unloaded_ref_says_how_to_load_it() -> None:
    entry = RefSubagent(ref="x.yaml")
    with pytest.raises(RuntimeError, match=r"subagent ref 'x\.yaml' was not loaded"):
        _ = entry.spec


# --------------------------------------------------------------------------- relative paths


def test_every_path_like_key_resolves_against_the_spec_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "specs/agent.yaml": """
            name: agent
            model:
              id: replay:cassettes/main.cassette.yaml
              fallbacks: [replay:../fallback.cassette.yaml, openai:gpt-4.1]
            prompt: {file: prompts/main.md}
            tools:
              - import: ./tools.py:search
              - import: lib/helpers.py:make
              - import: pkg.tools:search
              - mcp: {name: local, command: python, args: [server.py]}
              - mcp: {name: other, command: ./bin/server, cwd: ../servers}
              - mcp: {name: remote, url: "https://example.com/mcp"}
            backend:
              kind: composite
              default: {kind: local_shell, root_dir: ./work}
              routes:
                /docs/: {kind: filesystem, root_dir: ../docs}
                /memories/: store
            memory: [./AGENTS.md, /memories/AGENTS.md, "~/agents/AGENTS.md", {host: /abs/AGENTS.md}]
            skills: [../skills, /skills/]
            summarization: {model: replay:summary.cassette.yaml}
            general_purpose_agent: {model: "replay:gp.cassette.yaml"}
            middleware: [{import: ./mw.py:Logging}, {import: pkg.mw:Other}]
            subagents:
              - import: ./graphs.py:graph
                name: graph
                description: A prebuilt graph
              - name: inline
                description: An inline subagent
                model: replay:inline.cassette.yaml
                prompt: {file: prompts/inline.md}
                backend: {kind: filesystem, root_dir: inline-work}
            """,
            "specs/prompts/main.md": "Main prompt.\n",
            "specs/prompts/inline.md": "Inline prompt.\n",
            "specs/tools.py": "",
            "specs/lib/helpers.py": "",
            "specs/mw.py": "",
            "specs/graphs.py": "",
        },
    )
    here = tmp_path / "specs"
    spec = runner.load_spec(path)
    assert spec.source == str(path)
    assert spec.model is not None
    assert spec.model.id == f"replay:{here / 'cassettes' / 'main.cassette.yaml'}"
    assert [f.id for f in spec.model.fallbacks] == [
        f"replay:{tmp_path / 'fallback.cassette.yaml'}",
        "openai:gpt-4.1",
    ]
    assert spec.prompt == "Main prompt.\n"
    imports = [t.import_ for t in spec.tools if isinstance(t, ImportTool)]
    assert imports == [
        f"{here / 'tools.py'}:search",
        f"{here / 'lib' / 'helpers.py'}:make",
        "pkg.tools:search",
    ]
    servers = [t.mcp for t in spec.tools if isinstance(t, McpTool)]
    assert [(s.command, s.cwd) for s in servers] == [
        ("python", str(here)),  # the default working directory is the spec's folder
        (str(here / "bin" / "server"), str(tmp_path / "servers")),
        (None, str(here)),
    ]
    backend = spec.backend
    assert isinstance(backend, CompositeBackendSpec)
    assert isinstance(backend.default, LocalShellBackendSpec)
    assert backend.default.root_dir == str(here / "work")
    docs = backend.routes["/docs/"]
    assert isinstance(docs, FilesystemBackendSpec)
    assert docs.root_dir == str(tmp_path / "docs")
    assert [(m.host, m.backend) for m in spec.memory] == [
        (str(here / "AGENTS.md"), None),
        (None, "/memories/AGENTS.md"),
        (str(Path("~/agents/AGENTS.md").expanduser()), None),
        ("/abs/AGENTS.md", None),
    ]
    assert [(s.host, s.backend) for s in spec.skills] == [
        (str(tmp_path / "skills"), None),
        (None, "/skills/"),
    ]
    assert spec.summarization.model is not None
    assert spec.summarization.model.id == f"replay:{here / 'summary.cassette.yaml'}"
    assert spec.general_purpose_agent.model is not None
    assert spec.general_purpose_agent.model.id == f"replay:{here / 'gp.cassette.yaml'}"
    assert [m.import_ for m in spec.middleware] == [f"{here / 'mw.py'}:Logging", "pkg.mw:Other"]
    graph, inline = spec.subagents
    assert isinstance(graph, ImportSubagent) and isinstance(inline, InlineSubagent)
    assert graph.import_ == f"{here / 'graphs.py'}:graph"
    assert inline.model is not None
    assert inline.model.id == f"replay:{here / 'inline.cassette.yaml'}"
    assert inline.prompt == "Inline prompt.\n"
    assert isinstance(inline.backend, FilesystemBackendSpec)
    assert inline.backend.root_dir == str(here / "inline-work")


# --------------------------------------------------------------------------- prompts


def test_prompt_vars_and_caller_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "a.yaml": """
            name: a
            vars: {topic: databases, depth: 2}
            prompt: |
              Research {{ vars.topic }} to depth {{ vars.depth + 1 }}.
              {% if vars.extra is defined %}Extra: {{ vars.extra }}{% endif %}
            subagents:
              - name: critic
                description: Reviews
                prompt: Review work on {{ vars.topic }}.
            """
        },
    )
    spec = runner.load_spec(path)
    assert spec.prompt == "Research databases to depth 3.\n\n"
    critic = spec.subagents[0]
    assert isinstance(critic, InlineSubagent)
    assert critic.prompt == "Review work on databases."
    spec = runner.load_spec(path, vars={"topic": "compilers", "extra": "yes"})
    assert spec.prompt == "Research compilers to depth 3.\nExtra: yes\n"
    assert spec.vars == {"topic": "databases", "depth": 2}  # the file's own vars are kept


def test_caller_vars_define_what_the_file_does_not(tmp_path: Path) -> None:
    path = write(tmp_path, {"a.yaml": "name: a\nprompt: Hello {{ vars.who }}\n"})
    assert runner.load_spec(path, vars={"who": "you"}).prompt == "Hello you"
    assert problems(path) == [
        "a.yaml:2:9: prompt: undefined template variable 'vars.who'; the spec defines no `vars`"
    ]


def test_prompt_files_include_templates_from_their_own_folder(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "agents/a.yaml": "name: a\nvars: {n: 3}\nprompt: {file: prompts/main.md.j2}\n",
            "agents/prompts/main.md.j2": 'Main.\n{% include "parts/rules.md" %}\n',
            "agents/prompts/parts/rules.md": "Rule count: {{ vars.n }}.\n",
        },
    )
    assert runner.load_spec(path).prompt == "Main.\nRule count: 3.\n\n"


def test_template_problem_in_an_included_template_names_that_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "a.yaml": "name: a\nprompt: {file: prompts/main.md}\n",
            "prompts/main.md": 'Main.\n{% include "part.md" %}\n',
            "prompts/part.md": "one\ntwo {{ vars.missing }}\n",
        },
    )
    assert problems(path) == [
        "prompts/part.md:2:1: prompt: undefined template variable 'vars.missing'; "
        "the spec defines no `vars`"
    ]


def test_inline_block_prompt_problem_is_on_its_line_in_the_yaml_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "a.yaml": """
            name: a
            subagents:
              - name: critic
                description: Reviews
                prompt: |
                  one
                  two

                  four {{ vars.nope }}
            """
        },
    )
    assert problems(path) == [
        "a.yaml:9:7: subagents[0].prompt: undefined template variable 'vars.nope'; "
        "the spec defines no `vars`"
    ]


def test_custom_tool_descriptions_is_another_name_for_tool_descriptions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"agent.yaml": "name: agent\nfilesystem:\n  custom_tool_descriptions: {ls: List it.}\n"},
    )
    assert runner.load_spec(path).filesystem.tool_descriptions == {"ls": "List it."}


SEED_NAMED = """\
name: agent
system_prompt: You help.
tool_token_limit_before_evict: 5000
summarization: {max_tokens_before_summary: 170000, messages_to_keep: 6}
general_purpose_agent: {system_prompt: You do anything.}
subagents:
  - name: critic
    description: Critiques
    system_prompt: "You critique {{ vars.topic }}."
    filesystem: {tool_token_limit_before_evict: 100, custom_tool_descriptions: {ls: L.}}
vars: {topic: drafts}
"""


def test_the_seeds_names_for_settings_are_accepted_as_ours(tmp_path: Path) -> None:
    """Seeds 002-004 name some settings differently; a spec written with theirs loads as if
    written with ours (and `inspect` shows ours: the spec holds only our names)."""
    spec = runner.load_spec(write(tmp_path, {"agent.yaml": SEED_NAMED}))
    assert spec.prompt == "You help."
    assert spec.filesystem.evict_results_over_tokens == 5000
    assert spec.summarization.trigger is not None and spec.summarization.keep is not None
    assert spec.summarization.trigger.as_tuple() == ("tokens", 170000)
    assert spec.summarization.keep.as_tuple() == ("messages", 6)
    assert spec.general_purpose_agent.prompt == "You do anything."
    critic = spec.subagents[0]
    assert isinstance(critic, InlineSubagent)
    assert critic.prompt == "You critique drafts."
    assert critic.filesystem.evict_results_over_tokens == 100
    assert critic.filesystem.tool_descriptions == {"ls": "L."}
    dumped = spec.model_dump(exclude_defaults=True)
    assert "system_prompt" not in dumped and "tool_token_limit_before_evict" not in dumped


def test_a_seed_name_and_ours_together_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "agent.yaml": "name: agent\nsystem_prompt: a\nprompt: b\n",
            "b.yaml": "name: b\nsystem_prompt: 'x {{ vars.nope }}'\n",
            "c.yaml": "name: c\nfilesystem:\n  tool_token_limit_before_evict: 1\n"
            "  evict_results_over_tokens: 2\n",
        },
    )
    assert problems(path) == [
        "agent.yaml:1:1: `system_prompt` is the seeds' name for `prompt`; give only one of them"
    ]
    assert problems(tmp_path / "b.yaml") == [
        "b.yaml:2:16: system_prompt: undefined template variable 'vars.nope'; the spec defines "
        "no `vars`"
    ]
    assert problems(tmp_path / "c.yaml") == [
        "c.yaml:3:3: filesystem: `tool_token_limit_before_evict` is the seeds' name for "
        "`evict_results_over_tokens`; give only one of them"
    ]


def test_agentctl_python_is_the_running_interpreter_unless_set(tmp_path: Path) -> None:
    import sys

    from runner.load.source import read_yaml

    text = "command: ${AGENTCTL_PYTHON}\n"
    assert read_yaml(text, "a.yaml", {}).value == {"command": sys.executable}
    assert read_yaml(text, "a.yaml", {"AGENTCTL_PYTHON": "/opt/py"}).value == {"command": "/opt/py"}
