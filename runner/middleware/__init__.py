"""The harness: the middleware chain a deep agent runs with, one concern per module.

The chain, in order (assembled in one place, `runner.agent.build.middleware_chain`):

| # | middleware            | why it sits there                                                    |
|---|-----------------------|----------------------------------------------------------------------|
| 0 | SystemPrompt          | only when a prompt section depends on the thread (memory, skills):   |
|   |                       | static sections are joined once at build time, dynamic ones per call |
| 1 | Todos                 | `write_todos`; first, as in the seeds. No hooks: the tool itself     |
|   |                       | rejects parallel calls                                               |
| 2 | Memory                | loads AGENTS.md files once per thread                                |
| 3 | Skills                | lists SKILL.md front matter; bodies are read on demand               |
| - | ToolJournal           | the outermost tool wrapper (the ones above wrap no tool call): a     |
|   |                       | call that finished before a crash is answered from the journal, and  |
|   |                       | the result recorded is the one the graph got                         |
| 4 | Filesystem            | file tools; evicts large results (the first tool wrapper inside the  |
|   |                       | journal, so it sees the final result after retries)                  |
| 5 | SubAgents             | the `task` tool (a `remote:` subagent's calls: `remote_subagents`)   |
| - | Permissions           | `permissions:` deny rules answer a denied call as soon as the reply  |
|   |                       | arrives (outside ReplyCheck: it sees checked calls), so approvals    |
|   |                       | never ask about it; checked again just before a tool runs            |
| - | AskUser               | the `ask_user` tool (`ask_user:`): an interrupt carrying a question  |
| - | ReplyCheck            | repairs the history before each model call and checks each reply     |
|   |                       | (cut off, unreadable or id-less calls, empty): outer to everything   |
|   |                       | that calls a model (summarizer, retries, fallbacks, the user's       |
|   |                       | middleware), so none of those sends a broken history and every reply |
|   |                       | they return is checked                                               |
| 6 | Summarization         | compacts old messages near the context limit                         |
| - | Budget                | `limits.tokens/time/cost`: checked before each model call, counted   |
|   |                       | after it; one tally per run shared with the subagents (outer to      |
|   |                       | retries and fallbacks: it counts the reply that came back)           |
| - | limits                | model-call and tool-call limits                                      |
| - | fallback, retries     | fallback outside retry: retry the primary first, then fall back;     |
|   |                       | both inside prompt assembly, outside caching                         |
| 7 | PromptCaching         | Anthropic cache markers, decided on the model actually called        |
| 8 | PatchToolCalls        | answers dangling tool calls in the request (a model-call hook, not a |
|   |                       | node: a node is a graph step, and every step writes a checkpoint)    |
| - | spec `middleware:`    | the user's middleware, after the whole shared harness (seed 000      |
|   |                       | §3.1: a subagent's own middleware follows the shared one; the main   |
|   |                       | agent's goes in the same place, as `create_deep_agent` puts it)      |
| - | SystemPromptTail      | approvals and local-context sections, after the user's prompt text   |
| 9 | HumanInTheLoop        | last: it pauses on the tool calls the model finally asked for        |

Prompt sections follow the order of seed 004 ("提示词组装流程"): the spec's prompt, the base
prompt, todos, memory, skills, filesystem (and execute), subagents, user middleware, approvals,
local context. Each middleware contributes its section through `runner.middleware.prompt`
instead of appending in its own `wrap_model_call`: every wrap hook costs time on every model
call, and most sections never change during a run.

For the same reason `build_graph` hands LangChain the wrap hooks of adjacent harness middleware
(nothing else's hook of that kind between them) as one hook per kind, composed in the order above
(`runner.middleware.fused`): in the default chain Filesystem's and LargeInputs' tool hooks are one,
and LargeInputs', ReplyCheck's, Summarization's and PatchToolCalls' model hooks are one. The
spec's middleware and LangChain's own are never fused, and `middleware_chain` still lists the
chain as above. The harness's hooks also skip LangSmith's per-call bookkeeping (thread hops under
`ainvoke`) unless a trace is being recorded (`runner.middleware.hook_tracing`).
"""
