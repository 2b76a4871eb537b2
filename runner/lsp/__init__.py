"""`agentctl lsp`: a language server for agent files, cassettes and test files.

What an editor shows is what the commands report: diagnostics come from `agentctl validate`'s
code (`runner.validate.check_file`) and, for test files, from `agentctl test`'s loader, run on
the editor's unsaved buffers (laid over the disk, so includes and refs see them too). The other
features read the same sources: keys and descriptions from the JSON Schema generated from
`runner.spec`, tool and subagent names from `runner.static_tools`.

    server.py       the pygls server: documents, debounced checks, the handlers
    documents.py    the buffers as an overlay, the kind of each file, positions
    diagnostics.py  problems -> LSP diagnostics (included files on the `include:` line)
    context.py      the YAML key path at the cursor, tolerant of half-typed text
    schema.py       the JSON Schema walked along a key path
    features.py     completion, hover, definition, symbols, code actions

Nothing here imports LangChain: the server starts in well under a second and checks a change in
a few milliseconds (bench/lsp_latency.py).
"""
