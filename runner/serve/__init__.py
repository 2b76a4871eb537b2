"""`agentctl serve`: agent files behind the LangGraph Agent Server API.

```
agents/*.yaml --validate--> ServedAgent per file --> GraphFactory (cached by file, mtime, vars,
model) --> engine, in this process --> assistants, threads, runs, SSE, interrupts, store, crons
             in memory (inmem.py) | Aegra on Postgres, + a Redis run queue (aegra.py)
```

`agents.py` finds and checks the files (every problem located, nothing starts on a problem),
`factory.py` builds and caches graphs, `graphs.py` is the module the engines import them from
(`graph_file.py` the file Aegra loads them by), `engines.py` chooses the engine from the flags,
`inmem.py` and `aegra.py` run one each, `ports.py` checks the port, `guard.py` is the
middleware in front of everything either engine serves (Host, Origin, JSON bodies, body
size), `auth.py` is the `Auth` object both engines load to say who may come in (`--api-keys`,
`--auth-jwks`). Nothing here is imported by `agentctl --help` or `validate`.
"""
