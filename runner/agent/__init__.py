"""AgentSpec -> resolved agent -> compiled LangGraph graph.

```
resolve.py   Resolver: models, tools, middleware, subagents of a spec -> ResolvedAgent
models.py    init_model, provider errors, retries and fallbacks
build.py     build_agent / build_graph: the harness middleware chain around create_agent
inspect.py   `agentctl inspect`: what an agent is built from, without running it
```
"""
