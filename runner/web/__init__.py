"""The web page `agentctl serve` shows at `/`: each agent's threads, chat, inputs, approvals,
subagents, todos, files, usage and cost.

```
static/        index.html, app.css and plain ES modules (no build step, no CDN, no framework)
app.py         a Starlette app: the page, its assets, and a read-only side API (`/web/api/...`)
usage.py       a thread's token usage and cost, priced as `agentctl run` prices a reply
```

The page talks to the LangGraph Agent Server API the engine serves on the same port
(assistants, threads, runs with SSE streaming, thread state, the store, resume with `Command`).
The side API gives only what that API cannot: each agent file's located problems, model and
typed inputs, its tools' argument schemas (for the approval editor), the files of its
filesystem routes for a thread, read through the same confined backend the agent's tools use,
and a thread's usage and cost (its state read from the engine with the caller's credentials).
Nothing in it writes.

An engine mounts `create_app(...)` in front of its own routes (the in-memory engine passes it to
`langgraph-api` as its custom `http.app`); any other engine can do the same.
"""
