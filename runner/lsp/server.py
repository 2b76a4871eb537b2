"""The pygls server behind `agentctl lsp`: open documents, debounced checks, the handlers.

A change is checked `debounce` seconds after the last keystroke (0.03 s by default; the
`debounce` initialization option changes it), on the buffers of every open document. A check of
one file also re-checks the open files that read it (an agent including the fragment being
typed), and each file's diagnostics are the union of what every check found in it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from runner import __version__
from runner.lsp import features
from runner.lsp._deps import (
    AgentSpec,
    SpecError,
    WorkflowSpec,
    agents_playing,
    load_spec,
    load_test_file,
)
from runner.lsp.diagnostics import Checked, check, diagnostics_by_file
from runner.lsp.documents import Overlay, file_kind, overlaid, path_to_uri, uri_to_path

DEBOUNCE = 0.03


class AgentLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("agentctl", __version__)
        self.debounce = DEBOUNCE
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.checks: dict[str, Checked] = {}
        """The last check of each open file, by absolute path."""
        self.published: dict[str, dict[str, list[lsp.Diagnostic]]] = {}
        """Diagnostics by the file they are in, then by the file whose check found them."""
        self.specs: dict[str, list[AgentSpec]] = {}
        self.workflows: dict[str, WorkflowSpec] = {}
        """The agents each open file last loaded (kept while the file does not load)."""

    # ----------------------------------------------------------------------- documents

    def overlay(self) -> Overlay:
        texts: dict[str, str] = {}
        for uri, document in self.workspace.text_documents.items():
            path = uri_to_path(uri)
            if path is not None:
                texts[str(path)] = document.source
        return Overlay(texts)

    def uri_of(self, path: str | Path) -> str:
        """The URI the client opened `path` by (its spelling, which may quote differently from
        ours), or ours for a file it has not opened."""
        for uri in self.workspace.text_documents:
            if uri_to_path(uri) == Path(path):
                return uri
        return path_to_uri(path)

    def text_of(self, uri: str) -> str:
        return self.workspace.get_text_document(uri).source

    def schedule(self, uri: str, *, now: bool = False) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        if now:
            self.check_now(uri)
        else:
            self.pending[uri] = loop.call_later(self.debounce, self.check_now, uri)

    def check_now(self, uri: str) -> None:
        """Check `uri` and the open files that read it; publish what changed."""
        self.pending.pop(uri, None)
        path = uri_to_path(uri)
        if path is None:
            return
        targets = [path] + [
            Path(other)
            for other, found in self.checks.items()
            if other != str(path) and str(path) in found.reads
        ]
        for target in targets:
            self._check(target)

    def _check(self, path: Path) -> None:
        uri = self.uri_of(path)
        if uri not in self.workspace.text_documents:
            return
        text = self.text_of(uri)
        kind = file_kind(path, text)
        if kind == "other":
            return
        includers = [
            Path(p) for p, c in self.checks.items() if str(path) in c.reads and p != str(path)
        ]
        if kind == "fragment" and includers:
            # the open files including it report its problems (checking it through them again
            # would double the work of every keystroke)
            self.checks.pop(str(path), None)
            self._publish(str(path), {})
            return
        overlay = self.overlay()
        checked = check(path, kind, overlay, includers=includers)
        self.checks[str(path)] = checked
        specs = self._specs(path, kind, checked, overlay)
        if specs:
            self.specs[str(path)] = specs
        if checked.workflow is not None:
            self.workflows[str(path)] = checked.workflow
        self._publish(str(path), diagnostics_by_file(path, checked, overlay))

    def _specs(self, path: Path, kind: str, checked: Checked, overlay: Overlay) -> list[AgentSpec]:
        """The agents completion and hover draw names from: the file's own, or for a test file
        its `agent:`, or for a cassette the agents that play it."""
        if checked.spec is not None:
            return [checked.spec]
        if kind == "test":
            with overlaid(Overlay(overlay)):
                try:
                    loaded = load_test_file(path)
                    return [
                        load_spec(loaded.agent_path, require_inputs=False, allow_unused_vars=True)
                    ]
                except SpecError:
                    return []
        if kind == "cassette":
            with overlaid(Overlay(overlay)):
                return agents_playing(path)
        return []

    def _publish(self, source: str, found: dict[str, list[lsp.Diagnostic]]) -> None:
        touched = set(found) | {source}
        for file, by_source in self.published.items():
            if source in by_source:
                touched.add(file)
                del by_source[source]
        for file, diagnostics in found.items():
            self.published.setdefault(file, {})[source] = diagnostics
        for file in sorted(touched):
            merged: list[lsp.Diagnostic] = []
            for diagnostics in self.published.get(file, {}).values():
                merged += [d for d in diagnostics if d not in merged]
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=self.uri_of(file), diagnostics=merged)
            )

    def forget(self, uri: str) -> None:
        path = uri_to_path(uri)
        if path is None:
            return
        self.checks.pop(str(path), None)
        self.specs.pop(str(path), None)
        self.workflows.pop(str(path), None)
        self._publish(str(path), {})

    def context(self, uri: str) -> tuple[str, Path, str, list[AgentSpec]] | None:
        path = uri_to_path(uri)
        if path is None:
            return None
        text = self.text_of(uri)
        return text, path, file_kind(path, text), self.specs.get(str(path), [])


server = AgentLanguageServer()


@server.feature(lsp.INITIALIZE)
def initialize(ls: AgentLanguageServer, params: lsp.InitializeParams) -> None:
    """`initializationOptions: {debounce: MILLISECONDS}` sets the wait after a keystroke."""
    options = params.initialization_options
    if isinstance(options, dict) and isinstance(options.get("debounce"), (int, float)):
        ls.debounce = max(0.0, float(options["debounce"]) / 1000)


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: AgentLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, now=True)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: AgentLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: AgentLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, now=True)


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def watched_files(ls: AgentLanguageServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    """A file changed on disk (saved by another program, a cassette re-recorded): re-check the
    open files that read it, or that may now find it (a created file)."""
    changed = {str(p) for change in params.changes if (p := uri_to_path(change.uri)) is not None}
    created = any(change.type == lsp.FileChangeType.Created for change in params.changes)
    for path, checked in list(ls.checks.items()):
        if created or checked.reads & changed:
            ls.check_now(ls.uri_of(path))


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: AgentLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.forget(params.text_document.uri)


@server.feature(
    lsp.TEXT_DOCUMENT_COMPLETION,
    lsp.CompletionOptions(trigger_characters=[" ", ":", "/", ".", "[", ",", "-"]),
)
def completion(ls: AgentLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    found = ls.context(params.text_document.uri)
    items: list[lsp.CompletionItem] = []
    if found is not None:
        text, path, kind, specs = found
        if kind != "other":
            with overlaid(ls.overlay()):
                items = features.complete(
                    text,
                    path,
                    kind,
                    params.position.line,
                    params.position.character,
                    specs,
                    ls.workflows.get(str(path)),
                )
    return lsp.CompletionList(is_incomplete=False, items=items)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: AgentLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    found = ls.context(params.text_document.uri)
    if found is None or found[2] == "other":
        return None
    text, path, kind, specs = found
    value = features.hover(text, path, kind, params.position.line, params.position.character, specs)
    if value is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(lsp.MarkupKind.Markdown, value))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def definition(ls: AgentLanguageServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    found = ls.context(params.text_document.uri)
    if found is None or found[2] == "other":
        return None
    text, path, kind, specs = found
    line, character = params.position.line, params.position.character
    return features.definition(text, path, kind, line, character, specs)


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbol(
    ls: AgentLanguageServer, params: lsp.DocumentSymbolParams
) -> list[lsp.DocumentSymbol]:
    found = ls.context(params.text_document.uri)
    if found is None or found[2] == "other":
        return []
    return features.symbols(found[0], found[2])


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
)
def code_action(ls: AgentLanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    return features.fixes(uri, ls.text_of(uri), params.context.diagnostics)


def serve(*, debounce: float | None = None) -> None:
    """Serve on stdin/stdout until the client exits."""
    if debounce is not None:
        server.debounce = debounce
    server.start_io()
