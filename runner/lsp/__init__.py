"""`agentctl lsp`: a language server for agent files, cassettes and test files.

What an editor shows is what the commands report: diagnostics come from `agentctl validate`'s
code (`runner.check.validate.check_file`) and, for test files, from `agentctl test`'s loader, run on
the editor's unsaved buffers (laid over the disk, so includes and refs see them too). The other
features read the same sources: keys and descriptions from the JSON Schema generated from
`runner.spec`, tool and subagent names from `runner.check.tools`.

    server.py       the pygls server: documents, debounced checks, the handlers
    documents.py    the buffers as an overlay, the kind of each file, URIs
    diagnostics.py  the checks, and problems -> LSP diagnostics (also on the `include:` line)
    context.py      the YAML key path at the cursor, tolerant of half-typed text
    schema.py       the JSON Schema walked along a key path
    features.py     completion, hover, definition, symbols, code actions
    _deps.py        the agentctl modules used, imported in one place

Nothing here imports LangChain, and a check of a 300-line agent file takes some tens of
milliseconds: `bench/bench_lsp.py` times a keystroke to its diagnostics.
"""
