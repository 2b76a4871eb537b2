"""Load an agent file into an `AgentSpec`: YAML -> ${ENV} -> includes -> validation -> paths,
prompts and subagent refs. Every problem is collected and located; `SpecError` carries them all.

After loading, the spec holds no relative paths (each resolved against the file that names it),
prompts are rendered text, and each `ref:` subagent carries its own loaded spec. Nothing after
this stage reads the spec's files again, except the resolver, which imports code and opens
cassettes named here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from runner.errors import Problem, SpecError, display_path
from runner.load.dialects.detect import is_adk as _is_adk
from runner.load.problems import not_a_mapping, problems_from_validation
from runner.load.source import (
    Document,
    KeyPath,
    Pos,
    SourceMap,
    SourceTooLarge,
    format_path,
    merge,
    read_source,
    read_yaml,
)
from runner.load.templates import TemplateProblem, render
from runner.spec import (
    AgentSpec,
    FilesystemBackendSpec,
    ImportSubagent,
    ImportTool,
    InlineSubagent,
    LocalShellBackendSpec,
    McpTool,
    ModelSpec,
    PromptFile,
    RefSubagent,
    import_ref_is_file,
)
from runner.spec.agent import AgentCore
from runner.spec.backend import ImportBackendSpec, backend_leaves
from runner.spec.base import is_workflow_document
from runner.spec.checks import check_subagent_names, spec_subagent_names
from runner.spec.declared_tools import OpenApiSpec, OpenApiTool

if TYPE_CHECKING:  # the workflow models are loaded with the first workflow (`load_any`)
    from runner.load.dialects.common import Translation
    from runner.spec.workflow import WorkflowSpec

__all__ = ["load_spec"]

_CONCAT_ON_INCLUDE = frozenset({"tools", "subagents"})
_T = TypeVar("_T", AgentSpec, "WorkflowSpec")


def load_spec(
    path: str | os.PathLike[str],
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    allow_unused_vars: bool = False,
    require_inputs: bool = True,
    vars_from: str | None = None,
) -> AgentSpec:
    """Load and validate the agent file at `path`.

    `vars` override the spec's `vars` (in referenced subagent files too); a name that no file
    declares in `vars:` and no prompt reads is a problem (a typo would pass silently), unless
    `allow_unused_vars`. `vars` naming a typed input (`inputs:`) are checked and converted to
    its type; a required input without a value is a problem unless not `require_inputs`
    (`validate`, `inspect`: the prompts then render with a stand-in). `env` replaces
    `os.environ` for `${VAR}` interpolation. Raises `SpecError` listing every problem found.
    `vars_from` names where the caller's `vars` come from when not `--var` (a server's
    `configurable.vars`): the messages about them say so.
    """
    loader = _Loader(dict(vars or {}), os.environ if env is None else env, require_inputs)
    loader.vars_from = vars_from
    spec = loader.load(Path(path), stack=())
    return loader.finish(spec, Path(path), allow_unused_vars=allow_unused_vars)


class _UsedVars(dict[str, Any]):
    """Template variables that note which names a prompt reads (`vars.x`, `vars['x']`,
    `vars.get('x')`); iterating them counts as reading them all."""

    def __init__(self, values: Mapping[str, Any], used: set[str]) -> None:
        super().__init__(values)
        self._used = used

    def __getitem__(self, key: str) -> Any:
        self._used.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._used.add(key)
        return super().get(key, default)

    def __iter__(self) -> Any:
        self._used.update(super().keys())
        return super().__iter__()

    def items(self) -> Any:
        self._used.update(super().keys())
        return super().items()

    def values(self) -> Any:
        self._used.update(super().keys())
        return super().values()


def _unused_vars(loader: _Loader, path: Path) -> list[Problem]:
    """`--var` names that neither a prompt reads nor a file declares: typos, most likely."""
    from runner.load.problems import did_you_mean

    problems: list[Problem] = []
    known = sorted(loader.used_vars)
    for name in sorted(set(loader.caller_vars) - loader.used_vars):
        hint = did_you_mean(name, known)
        fix = f"did you mean {hint!r}? " if hint else ""
        uses = f"it uses: {', '.join(known)}" if known else "it uses none"
        message = f"{name}: {display_path(path)} has no template variable {name!r}; {fix}{uses}"
        if loader.vars_from is None:
            message += " (--allow-unused-var to pass it anyway)"
        problems.append(Problem(loader.vars_from or "--var", 0, 0, "", message))
    return problems


def _missing_input(name: str, declared: Any, vars_from: str | None) -> str:
    kind = declared.kind
    if vars_from is not None:
        return (
            f"required input {name!r} has no value; set {vars_from}.{name} ({declared.expected()})"
        )
    example = {"string": "TEXT", "file": "PATH"}.get(kind, str(declared.stand_in(name)).lower())
    expected = "" if kind == "string" else f" ({declared.expected()})"
    return f"required input {name!r} has no value; pass --var {name}={example}{expected}"


def _yaml_scalar(text: str) -> Any:
    """A `--var` value for a plain `vars:` name: read as a YAML scalar (`3`, `true`, `text`)."""
    import yaml

    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        return str(text)
    return value if isinstance(value, str | int | float | bool) or value is None else str(text)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _one_line(problem: Problem) -> Problem:
    """A problem prints as one line whatever text it quotes: control characters are escaped."""
    if not (_CONTROL.search(problem.message) or _CONTROL.search(problem.path)):
        return problem

    def escape(text: str) -> str:
        return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)

    return Problem(
        problem.file, problem.line, problem.col, escape(problem.path), escape(problem.message)
    )


class _Loader:
    def __init__(
        self, caller_vars: dict[str, Any], env: Mapping[str, str], require_inputs: bool = True
    ) -> None:
        self.caller_vars = caller_vars
        self.env = env
        self.require_inputs = require_inputs
        self.vars_from: str | None = None
        """Where the caller's vars come from when not `--var` (see `load_spec`)."""
        self.used_vars: set[str] = set()
        """Names the prompts read, and those the files declare in `vars:` (see `_unused_vars`)."""
        self.problems: list[Problem] = []
        self.loaded: dict[Path, AgentSpec | None] = {}
        # (file, key path) of values that could not be read (a failed ${VAR}, a bad tag, an
        # unquoted '{{'): later checks there would only repeat the problem.
        self.unreadable: set[tuple[str, str]] = set()
        self.warnings: list[Problem] = []
        """What the files of other tools say that agentctl runs differently (`dialects`)."""
        self.literal_files: set[str] = set()
        """Files whose prompts are text, not templates (the files of other tools)."""

    def finish(self, spec: _T | None, path: Path, *, allow_unused_vars: bool) -> _T:
        """`spec`, or `SpecError` with every problem found while loading it."""
        if not allow_unused_vars and spec is not None:
            self.problems += _unused_vars(self, path)
        if self.problems or spec is None:
            problems = sorted({_one_line(p) for p in self.problems})
            raise SpecError(problems or [Problem(display_path(path), 0, 0, "", "could not load")])
        return spec

    # ----------------------------------------------------------------------- files

    def _read(self, path: Path, *, at: Problem | None = None) -> Document | None:
        shown = display_path(path)
        try:
            text = read_source(path)
        except FileNotFoundError:
            self._fail(at, shown, "file not found")
            return None
        except SourceTooLarge as exc:
            self._fail(at, shown, str(exc))
            return None
        except IsADirectoryError:
            self._fail(at, shown, "is a directory, not an agent file")
            return None
        except UnicodeDecodeError as exc:
            self._fail(at, shown, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
            return None
        except OSError as exc:
            self._fail(at, shown, f"cannot read: {exc.strerror}")
            return None
        from runner.load.dialects.detect import detect, read_markdown_or_toml

        dialect = detect(path)
        if dialect is not None:
            return self._translated(read_markdown_or_toml(dialect, path, text, shown))
        doc = read_yaml(text, shown, self.env)
        if _is_adk(path, doc.value):  # `${...}` is text there, not a variable
            from runner.load.dialects.adk import read_text as read_adk

            return self._translated(read_adk(path, text, shown))
        self.problems.extend(doc.problems)
        self.unreadable.update((shown, format_path(p)) for p in doc.failed_paths)
        if doc.problems and doc.value is None:
            return None
        if not isinstance(doc.value, dict):
            self.problems.append(not_a_mapping(doc, shown, "name:, model:, prompt:, ..."))
            return None
        return doc

    def _translated(self, tr: Translation) -> Document | None:
        """The document of a translated dialect file; its warnings are kept for the spec and its
        prompt is text, not a template."""
        self.problems += tr.problems
        self.warnings += tr.warnings
        self.literal_files.add(tr.file)
        if tr.unreadable:
            return None
        assert tr.value is not None and tr.pos is not None
        return Document(tr.file, tr.value, tr.pos, [])

    def _fail(self, at: Problem | None, shown: str, message: str) -> None:
        if at is None:
            self.problems.append(Problem(shown, 0, 0, "", message))
        else:
            self.problems.append(Problem(at.file, at.line, at.col, at.path, f"{message}: {shown}"))

    def _with_includes(
        self, path: Path, doc: Document, stack: tuple[Path, ...]
    ) -> tuple[dict[str, Any], Pos]:
        """The document merged onto its `include:` files (each merged onto its own first)."""
        path = path.resolve()
        value, pos = doc.value, doc.pos
        includes = value.get("include")
        if includes is None:
            return value, pos
        smap = SourceMap(pos)
        if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
            return value, pos  # validation reports the type
        base: dict[str, Any] = {}
        base_pos = Pos(pos.loc)
        for index, name in enumerate(includes):
            where = smap.problem(("include", index), "")
            target = (path.parent / Path(name).expanduser()).resolve()
            if target in stack or target == path:
                chain = " -> ".join(display_path(p) for p in (*stack, path, target))
                self.problems.append(_with(where, f"includes form a cycle: {chain}"))
                continue
            included = self._read(target, at=where)
            if included is None:
                continue
            inc_value, inc_pos = self._with_includes(target, included, (*stack, path))
            inc_value = {k: v for k, v in inc_value.items() if k != "include"}
            base, base_pos = merge(base, base_pos, inc_value, inc_pos, concat=_CONCAT_ON_INCLUDE)
        return merge(base, base_pos, value, pos, concat=_CONCAT_ON_INCLUDE)

    # ----------------------------------------------------------------------- the spec

    def load(
        self, path: Path, *, stack: tuple[Path, ...], at: Problem | None = None
    ) -> AgentSpec | None:
        key = path.resolve()
        if key in self.loaded:
            return self.loaded[key]
        doc = self._read(path, at=at)
        if doc is None:
            self.loaded[key] = None
            return None
        value, pos = self._with_includes(path, doc, ())
        smap = SourceMap(pos)
        if is_workflow_document(value):
            message = "a workflow file (it has `workflow:`), not an agent file"
            self.problems.append(
                _with(at, f"{message}: {display_path(path)}")
                if at is not None
                else smap.problem(
                    ("workflow",), f"{message}; load it with `load_workflow`", at_key=True
                )
            )
            self.loaded[key] = None
            return None
        try:
            spec = AgentSpec.model_validate(value)
        except ValidationError as exc:
            self.problems.extend(
                p
                for p in problems_from_validation(exc, value, smap, AgentSpec)
                if (p.file, p.path) not in self.unreadable
            )
            self.loaded[key] = None
            self._check_raw(value, smap, (*stack, key))
            return None
        spec._source = str(path)
        spec._warnings = [w for w in self.warnings if w.file == display_path(path)]
        spec._locator = lambda keypath, message, at_key: smap.problem(
            keypath, message, at_key=at_key
        )
        self.loaded[key] = spec

        self.used_vars.update(spec.vars)
        self.used_vars.update(spec.inputs)
        values = self.input_values(spec, smap)
        variables = _UsedVars({**spec.vars, **values}, self.used_vars)
        self.resolve_agent(spec, smap, (*stack, key), variables)
        return spec

    def resolve_agent(
        self, spec: AgentSpec, smap: SourceMap, stack: tuple[Path, ...], variables: dict[str, Any]
    ) -> None:
        """Resolve the paths, prompts and subagents of a validated agent (`smap` locates its
        keys; `stack` is the chain of files that led to it, for ref cycles)."""
        self._resolve_core(spec, (), smap, variables)
        for index, entry in enumerate(spec.subagents):
            where: KeyPath = ("subagents", index)
            if isinstance(entry, InlineSubagent):
                self._resolve_core(entry, where, smap, variables)
            elif isinstance(entry, ImportSubagent):
                entry.import_ = self._import_ref(entry.import_, smap, (*where, "import"))
            elif isinstance(entry, RefSubagent):
                self._load_ref(entry, where, smap, stack)
        gp = spec.general_purpose_agent
        if gp.model is not None:
            _resolve_model(gp.model, smap, ("general_purpose_agent", "model"))
        names = spec_subagent_names(spec)
        for keypath, message in check_subagent_names(
            names, general_purpose=spec.general_purpose_agent.enabled
        ):
            self.problems.append(smap.problem(keypath, message))

    def input_values(self, spec: AgentSpec | WorkflowSpec, smap: SourceMap) -> dict[str, Any]:
        """The caller's vars with the spec's typed inputs checked, converted and defaulted."""
        from runner.spec.inputs import CliText, check_value, read_file_input

        for name in sorted(spec.inputs.keys() & spec.vars.keys()):
            self.problems.append(
                smap.problem(
                    ("inputs", name),
                    f"{name!r} is also in `vars:`; a name is a plain variable or a typed input, "
                    "not both (an input with a `default:` is one the caller may set)",
                )
            )
        values: dict[str, Any] = {}
        for name, value in self.caller_vars.items():
            declared = spec.inputs.get(name)
            if declared is None:
                values[name] = _yaml_scalar(value) if isinstance(value, CliText) else value
                continue
            where = smap.problem(("inputs", name), "")
            label = "--var" if isinstance(value, CliText) else self.vars_from or "vars"
            try:
                converted = check_value(declared, value)
                if declared.kind == "file":
                    converted = read_file_input(converted)
            except ValueError as exc:
                declared_at = f"{where.file}:{where.line}:{where.col}"
                self.problems.append(
                    Problem(label, 0, 0, name, f"{exc} (the input is declared at {declared_at})")
                )
                converted = declared.stand_in(name)  # the prompts still render: no echo
            values[name] = converted
        for name, declared in spec.inputs.items():
            if name in values or name in self.caller_vars:
                continue
            if declared.default is not None:
                values[name] = declared.default
            elif not declared.required:
                values[name] = None
            else:
                if self.require_inputs:
                    self.problems.append(
                        smap.problem(
                            ("inputs", name), _missing_input(name, declared, self.vars_from)
                        )
                    )
                values[name] = declared.stand_in(name)
        return values

    def _load_ref(
        self, entry: RefSubagent, where: KeyPath, smap: SourceMap, stack: tuple[Path, ...]
    ) -> None:
        ref_path, spec = self.load_ref_file(entry.ref, where, smap, stack)
        entry.ref = str(ref_path)
        if spec is None:
            return
        entry._spec = spec
        if entry.description is None and spec.description is None:
            at = smap.problem((*where, "ref"), "")
            self.problems.append(
                _with(
                    at,
                    f"{display_path(ref_path)} has no `description`; add one there, or "
                    "`description:` next to `ref:` here (the main agent needs it to choose)",
                )
            )

    def load_ref_file(
        self, ref: str, where: KeyPath, smap: SourceMap, stack: tuple[Path, ...]
    ) -> tuple[Path, AgentSpec | None]:
        """The agent file `ref` (at `where`, relative to the file that wrote it), loaded."""
        ref_path = (_base_dir(smap, (*where, "ref")) / Path(ref).expanduser()).resolve()
        at = smap.problem((*where, "ref"), "")
        if ref_path in stack:
            chain = " -> ".join(display_path(p) for p in (*stack, ref_path))
            self.problems.append(_with(at, f"subagent refs form a cycle: {chain}"))
            return ref_path, None
        return ref_path, self.load(ref_path, stack=stack, at=at)

    def _check_raw(self, value: dict[str, Any], smap: SourceMap, stack: tuple[Path, ...]) -> None:
        """After a failed validation, still check what can be checked: prompts and refs."""
        raw_vars = value.get("vars")
        declared = dict(raw_vars) if isinstance(raw_vars, dict) else {}
        raw_inputs = value.get("inputs")
        for name in raw_inputs if isinstance(raw_inputs, dict) else {}:
            declared.setdefault(name, f"<{name}>")
        self.used_vars.update(str(k) for k in declared)
        variables = _UsedVars({**declared, **self.caller_vars}, self.used_vars)
        key = _prompt_key(value)
        self._render(value.get(key), (key,), smap, variables)
        subagents = value.get("subagents")
        names: list[tuple[int, str | None, bool]] = []
        for index, entry in enumerate(subagents if isinstance(subagents, list) else []):
            if not isinstance(entry, dict):
                continue
            name = entry.get("name") if isinstance(entry.get("name"), str) else None
            if isinstance(entry.get("ref"), str):
                _, ref_spec = self.load_ref_file(entry["ref"], ("subagents", index), smap, stack)
                if name is None and ref_spec is not None:
                    names.append((index, ref_spec.name, True))
                    continue
            elif "import" not in entry:
                key = _prompt_key(entry)
                self._render(entry.get(key), ("subagents", index, key), smap, variables)
            names.append((index, name, False))
        gp = value.get("general_purpose_agent", True)
        gp_on = (
            gp
            if isinstance(gp, bool)
            else not (isinstance(gp, dict) and gp.get("enabled") is False)
        )
        for keypath, message in check_subagent_names(names, general_purpose=gp_on):
            self.problems.append(smap.problem(keypath, message))

    def _import_ref(self, ref: str, smap: SourceMap, at: KeyPath) -> str:
        """A `path/to/file.py:name` ref made absolute (against the file that wrote it), its
        file checked to exist; `package.module:name` refs are left to import at run time."""
        if not import_ref_is_file(ref):
            return ref
        target, attr = ref.rsplit(":", 1)
        file = _host_path(target, _base_dir(smap, at))
        if (smap.file_of(at), smap.shown(at)) not in self.unreadable and not file.is_file():
            reason = "is a directory, not a Python file" if file.is_dir() else "file not found"
            self.problems.append(smap.problem(at, f"{reason}: {display_path(file)}"))
        return f"{file}:{attr}"

    def _resolve_core(
        self, core: AgentCore, where: KeyPath, smap: SourceMap, variables: dict[str, Any]
    ) -> None:
        """Resolve relative paths and render the prompt of an agent or inline subagent."""
        if core.model is not None:
            _resolve_model(core.model, smap, (*where, "model"))
        if core.summarization.model is not None:
            _resolve_model(core.summarization.model, smap, (*where, "summarization", "model"))
        self.resolve_tools(core.tools, where, smap)
        for index, mw in enumerate(core.middleware):
            mw.import_ = self._import_ref(mw.import_, smap, (*where, "middleware", index, "import"))
        for key in ("memory", "skills"):
            for index, source in enumerate(getattr(core, key)):
                if source.host is not None:
                    source.host = str(
                        _host_path(source.host, _base_dir(smap, (*where, key, index)))
                    )
        if core.backend is not None:
            for leaf, leaf_at in backend_leaves(core.backend, (*where, "backend")):
                if isinstance(leaf, ImportBackendSpec):
                    leaf.import_ = self._import_ref(leaf.import_, smap, (*leaf_at, "import"))
                if isinstance(leaf, FilesystemBackendSpec | LocalShellBackendSpec):
                    leaf.root_dir = str(
                        _host_path(leaf.root_dir, _base_dir(smap, (*leaf_at, "root_dir")))
                    )
                if isinstance(leaf, LocalShellBackendSpec):
                    for key in ("read_only_paths", "writable_paths"):
                        paths: list[str] = getattr(leaf, key)
                        for index, path in enumerate(paths):
                            base = _base_dir(smap, (*leaf_at, key, index))
                            paths[index] = str(_host_path(path, base))
        if core.prompt is not None:
            key = "system_prompt" if smap.exists((*where, "system_prompt")) else "prompt"
            core.prompt = self._render(core.prompt, (*where, key), smap, variables)

    def resolve_tools(self, tools: list[Any], where: KeyPath, smap: SourceMap) -> None:
        """Resolve the relative paths of the `tools:` entries at `where` and read the OpenAPI
        documents they name."""
        for index, tool in enumerate(tools):
            tool_at: KeyPath = (*where, "tools", index)
            if isinstance(tool, ImportTool):
                tool.import_ = self._import_ref(tool.import_, smap, (*tool_at, "import"))
            elif isinstance(tool, McpTool):
                server = tool.mcp
                base = _base_dir(smap, (*tool_at, "mcp"))
                server.cwd = str(_host_path(server.cwd, base)) if server.cwd else str(base)
                if server.command and ("/" in server.command) and not os.path.isabs(server.command):
                    server.command = str(_host_path(server.command, base))
            elif isinstance(tool, OpenApiTool):
                self._read_openapi(tool.openapi, smap, (*tool_at, "openapi"))

    def _read_openapi(self, entry: OpenApiSpec, smap: SourceMap, at: KeyPath) -> None:
        """Read the entry's OpenAPI document (relative to the file naming it) and keep the
        operations it lists; its problems are located (see
        `runner.load.openapi.read_operations`)."""
        from runner.load.openapi import read_operations

        entry.spec = str(_host_path(entry.spec, _base_dir(smap, (*at, "spec"))))
        self.problems += read_operations(entry, lambda path, m: smap.problem((*at, *path), m))

    def _render(
        self, prompt: Any, prompt_at: KeyPath, smap: SourceMap, variables: dict[str, Any]
    ) -> str | None:
        """The rendered prompt (inline, or `{file: ...}`); None after recording a problem."""
        if (smap.file_of(prompt_at), smap.shown(prompt_at)) in self.unreadable:
            return None
        if smap.file_of(prompt_at) in self.literal_files and isinstance(prompt, str):
            return prompt
        if isinstance(prompt, PromptFile):
            prompt = {"file": prompt.file}
        if isinstance(prompt, dict) and isinstance(prompt.get("file"), str):
            file_at: KeyPath = (*prompt_at, "file")
            file = _host_path(prompt["file"], _base_dir(smap, file_at))
            try:
                source = read_source(file)
            except SourceTooLarge as exc:
                self.problems.append(smap.problem(file_at, f"{display_path(file)}: {exc}"))
                return None
            except OSError as exc:
                reason = (
                    "file not found"
                    if isinstance(exc, FileNotFoundError)
                    else f"cannot read ({exc.strerror})"
                )
                self.problems.append(smap.problem(file_at, f"{reason}: {display_path(file)}"))
                return None
            except UnicodeDecodeError:
                self.problems.append(smap.problem(file_at, f"not UTF-8 text: {display_path(file)}"))
                return None
            try:
                return render(source, variables, name=str(file), search_dir=file.parent)
            except TemplateProblem as exc:
                shown = display_path(exc.file or file)
                self.problems.append(
                    Problem(
                        shown, exc.line, 1 if exc.line else 0, smap.shown(prompt_at), exc.message
                    )
                )
                return None
        if isinstance(prompt, str):
            try:
                return render(prompt, variables, name=f"<prompt {smap.shown(prompt_at)}>")
            except TemplateProblem as exc:
                loc = smap.text_line(prompt_at, exc.line) if exc.line else smap.value_loc(prompt_at)
                self.problems.append(loc.problem(smap.shown(prompt_at), exc.message))
        return None


# --------------------------------------------------------------------------- helpers


def _with(at: Problem, message: str) -> Problem:
    return Problem(at.file, at.line, at.col, at.path, message)


def _base_dir(smap: SourceMap, path: KeyPath) -> Path:
    """The folder of the file that wrote the value at `path` (includes keep their own)."""
    return Path(smap.file_of(path)).resolve().parent


def _host_path(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _resolve_model(model: ModelSpec, smap: SourceMap, at: KeyPath) -> None:
    model.id = _replay_path(model.id, smap, (*at, "id") if smap.exists((*at, "id")) else at)
    for index, fallback in enumerate(model.fallbacks):
        fb_at: KeyPath = (*at, "fallbacks", index)
        fallback.id = _replay_path(fallback.id, smap, fb_at)


def _replay_path(model_id: str, smap: SourceMap, at: KeyPath) -> str:
    provider, _, rest = model_id.partition(":")
    if provider != "replay":
        return model_id
    return f"replay:{_host_path(rest, _base_dir(smap, at))}"


def _prompt_key(mapping: dict[str, Any]) -> str:
    """The key an agent's prompt is written under: ours, or the seeds' `system_prompt`."""
    return "system_prompt" if "system_prompt" in mapping and "prompt" not in mapping else "prompt"


def is_workflow_file(path: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> bool:
    """Whether the file at `path` reads as a workflow (False when it cannot be read: the agent
    loader then says why)."""
    try:
        text = read_source(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if "workflow" not in text:
        return False
    return is_workflow_document(read_yaml(text, str(path), env={} if env is None else env).value)
