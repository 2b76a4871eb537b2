// The LangGraph Agent Server API (the names follow langgraph-sdk: assistants, threads, runs),
// plus the page's read-only side API under /web/api/. Every request carries the API key when the
// server asks for one (key.js).
import { fetchWithKey } from "./key.js";

async function call(method, path, body) {
  const response = await fetchWithKey(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (!response.ok) {
    const detail = data && (data.detail || data.error || data.message);
    throw new Error(`${method} ${path}: ${response.status} ${typeof detail === "string" ? detail : text}`);
  }
  return data;
}

export const api = {
  assistants: () => call("POST", "/assistants/search", { limit: 100 }),
  /** The threads of one agent (graph), newest activity first; the engine shows only the caller's. */
  threads: (graphId) =>
    call("POST", "/threads/search", { metadata: { graph_id: graphId }, limit: 100, sort_by: "updated_at", sort_order: "desc" }),
  createThread: (graphId, title) => call("POST", "/threads", { metadata: { graph_id: graphId, ...(title ? { title } : {}) } }),
  thread: (id) => call("GET", `/threads/${encodeURIComponent(id)}`),
  /** A new title, kept in the thread's metadata (merged with what is there). */
  renameThread: (id, title) => call("PATCH", `/threads/${encodeURIComponent(id)}`, { metadata: { title } }),
  deleteThread: (id) => call("DELETE", `/threads/${encodeURIComponent(id)}`),
  runs: (id) => call("GET", `/threads/${encodeURIComponent(id)}/runs?limit=10`),
  join: (id, run) => call("GET", `/threads/${encodeURIComponent(id)}/runs/${encodeURIComponent(run)}/join`),
  usage: (id) => call("GET", `/web/api/threads/${encodeURIComponent(id)}/usage`),
  state: (id) => call("GET", `/threads/${encodeURIComponent(id)}/state`),
  storeSearch: (namespace) =>
    call("POST", "/store/items/search", { namespace_prefix: namespace, limit: 500 }),
  agents: () => call("GET", "/web/api/agents"),
  tools: (agent) => call("GET", `/web/api/agents/${encodeURIComponent(agent)}/tools`),
  files: (agent, thread) =>
    call("GET", `/web/api/agents/${encodeURIComponent(agent)}/files?thread_id=${encodeURIComponent(thread || "")}`),
  file: (agent, thread, path) =>
    call(
      "GET",
      `/web/api/agents/${encodeURIComponent(agent)}/file?thread_id=${encodeURIComponent(thread || "")}&path=${encodeURIComponent(path)}`,
    ),
};

/**
 * Start a run on a thread and stream it: `onEvent(event, data)` for each server-sent event
 * ("metadata", "messages", "updates|tools:<id>", "custom", "error", ...). Resolves at the end.
 */
export async function streamRun(threadId, body, onEvent) {
  const response = await fetchWithKey(`/threads/${encodeURIComponent(threadId)}/runs/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify({
      stream_mode: ["updates", "messages-tuple", "custom"],
      stream_subgraphs: true,
      ...body,
    }),
  });
  if (!response.ok || !response.body) {
    throw new Error(`the run did not start: ${response.status} ${await response.text()}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) continue;
      let parsed;
      try {
        parsed = JSON.parse(data.join("\n"));
      } catch {
        parsed = data.join("\n");
      }
      onEvent(event, parsed);
    }
  }
}
