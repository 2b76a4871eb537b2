"""`agentctl serve`: agent files behind the LangGraph Agent Server API.

```
agents/*.yaml --validate--> ServedAgent per file --> GraphFactory (cached by file, mtime, vars,
model) --> engine (the in-memory LangGraph server, in this process) --> assistants, threads,
runs, SSE, interrupts, store
```

`agents.py` finds and checks the files (every problem located, nothing starts on a problem),
`factory.py` builds and caches graphs, `graphs.py` is the module the engine imports them from,
`inmem.py` runs the in-memory engine. Nothing here is imported by `agentctl --help` or `validate`.
"""
