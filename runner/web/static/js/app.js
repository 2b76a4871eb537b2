// The page: agents and threads (left), the conversation with its approvals (middle), the
// thread's files (right). Everything comes from the LangGraph API of the same server, plus
// /web/api/ for agent problems and inputs, tool schemas, filesystem files and a thread's usage
// (see runner/web/app.py). This module draws the agents and the conversation, runs, and starts
// the page; threads.js, inputs.js, approvals.js and files.js hold the other parts, state.js what
// they share, views.js the header's views.
import { api, streamRun } from "./api.js";
import { initApprovals, showApprovals } from "./approvals.js";
import { activate, append, clear, h, textOf } from "./dom.js";
import { refreshFiles } from "./files.js";
import { checkInputs, inputValues, renderInputs, restoreInputs } from "./inputs.js";
import { $, S, currentAgent, status } from "./state.js";
import { initThreads, loadThreads, statusOf, titleFrom, titleOf } from "./threads.js";
import { initViews } from "./views.js";

const FOLD_CHARS = 500;
const FOLD_LINES = 8;
const WRITES = new Set(["write_file", "edit_file"]);

// ------------------------------------------------------------------ agents and threads

async function loadAgents() {
  const { agents, dev } = await api.agents();
  const before = JSON.stringify(S.agents);
  const fixed = S.agents.filter((a) => a.problems.length && !agents.find((b) => b.name === a.name && b.problems.length));
  S.agents = agents;
  S.dev = dev;
  if (JSON.stringify(agents) !== before) renderAgents(fixed.map((a) => a.name));
  if (!S.agent && agents.length) S.agent = (agents.find((a) => !a.problems.length) || agents[0]).name;
  renderInputs();
}

function renderAgents(reloaded = []) {
  const list = clear($("agents"));
  for (const agent of S.agents) {
    const broken = agent.problems.length > 0;
    list.append(
      h(
        "li",
        {
          class: `agent${agent.name === S.agent ? " selected" : ""}${broken ? " broken" : ""}`,
          title: agent.file,
          dataset: { agent: agent.name },
          tabindex: 0,
          role: "button",
          "aria-current": agent.name === S.agent ? "true" : null,
          "aria-label": `${agent.name}${agent.description ? `: ${agent.description}` : ""}${broken ? " (has problems)" : ""}`,
          "aria-describedby": broken ? `problems-${agent.name}` : null,
          onclick: () => selectAgent(agent.name),
          onkeydown: (e) => activate(e, () => selectAgent(agent.name)),
        },
        h("div", { class: "row" }, h("strong", {}, agent.name), agent.kind === "workflow" ? h("span", { class: "badge" }, "workflow") : null, agent.model ? h("span", { class: "tag model" }, agent.model) : null, editLink(agent)),
        agent.description ? h("div", { class: "muted small description" }, agent.description) : null,
        agent.name === S.agent || broken ? h("div", { class: "tag" }, agent.file) : null,
        reloaded.includes(agent.name) ? h("div", { class: "ok small" }, "reloaded: the file has no problems now") : null,
        broken
          ? h(
              "ul",
              { class: "problems", id: `problems-${agent.name}`, "aria-label": `problems of ${agent.file}` },
              agent.problems.map((p) => h("li", {}, p)),
            )
          : null,
      ),
    );
  }
}

/** A link to the agent's file in the editor, for a user the editor lets in (editor/link.js
 * marks the page so) when the server edits that file; null otherwise. */
function editLink(agent) {
  if (!agent.edit || document.body.dataset.canEdit !== "true") return null;
  const stop = (event) => event.stopPropagation(); // the link, not the agent's row, is followed
  return h("a", { class: "edit-agent small", href: `/edit?file=${encodeURIComponent(agent.edit)}`, "aria-label": `edit ${agent.name}'s file (${agent.edit})`, onclick: stop, onkeydown: stop }, "Edit");
}

document.addEventListener("agentctl:can-edit", () => renderAgents());

function selectAgent(name) {
  const changed = S.agent !== name;
  S.agent = name;
  renderAgents();
  renderInputs();
  if (changed) {
    if (S.thread) newThread();
    else {
      renderHead(); // the new thread's heading names the agent it will run
      loadThreads().catch(() => {});
    }
  }
}

function resetView() {
  clear($("log"));
  clear($("approvals"));
  S.calls.clear();
  S.texts.clear();
  S.subagents.clear();
  S.steps.clear();
  S.changed.clear();
  S.live = { calls: 0, input: 0, output: 0 };
  S.usage = null;
  S.values = {};
  S.interrupts = [];
  S.decisions.clear();
  S.viewing = null;
  clear($("file-view"));
  renderTodos([]);
  renderUsage();
}

function newThread() {
  S.thread = null;
  history.replaceState(null, "", location.pathname);
  resetView();
  renderHead();
  loadThreads().catch(() => {}); // a listing that fails is shown by main() and retried by its timer
  refreshFiles();
  $("message").focus();
}

async function openThread(id) {
  resetView();
  S.thread = id;
  history.replaceState(null, "", `#thread=${encodeURIComponent(id)}`);
  const thread = await api.thread(id);
  const graph = (thread.metadata || {}).graph_id;
  if (graph) S.agent = graph;
  renderAgents();
  renderInputs();
  renderHead(thread);
  restoreRunInputs(id, S.agent);
  const state = await api.state(id);
  S.values = state.values || {};
  renderHead({ ...thread, values: S.values }); // a title from its first message, on any engine
  renderHistory(S.values.messages || []);
  if (thread.status === "error") errorRow($("log"), await lastFailure(id));
  renderTodos(S.values.todos || []);
  showApprovals(state);
  loadUsage();
  loadThreads().catch(() => {}); // a listing that fails is shown by main() and retried by its timer
  refreshFiles();
  if (innerWidth <= 1100) showTab("chat");
}

/** The inputs the thread's last run was given (`configurable.vars`), back in the form. */
async function restoreRunInputs(id, agent) {
  let runs;
  try {
    runs = await api.runs(id);
  } catch {
    return; // an engine without the runs list: the form keeps what it holds
  }
  for (const run of runs || []) {
    // the in-memory engine keeps the config under `kwargs`, Aegra at the top
    const config = (run.kwargs || {}).config || run.config || {};
    const vars = (config.configurable || {}).vars;
    if (vars && S.thread === id) {
      restoreInputs(agent, vars);
      return;
    }
  }
}

function renderHead(thread) {
  S.head = thread || null;
  const head = clear($("thread-head"));
  const state = thread && thread.status ? statusOf(thread) : null;
  append(head, [
    h("h1", { class: "thread-title" }, thread ? titleOf(thread) : "New thread"),
    h("span", { class: "tag" }, S.agent || "no agent"),
    state ? h("span", { class: `badge ${state.kind}` }, state.label) : h("span", { class: "muted small" }, "your first message starts it"),
  ]);
}

// ------------------------------------------------------------------ the conversation

function renderHistory(messages) {
  const log = $("log");
  for (const message of messages) {
    if (message.type === "human") userRow(textOf(message.content));
    else if (message.type === "ai") aiMessage(log, message, message.name || S.agent);
    else if (message.type === "tool") toolResult(message);
  }
  scrollDown();
}

function userRow(text) {
  $("log").append(h("div", { class: "msg user" }, h("div", { class: "who" }, "you"), h("div", { class: "text" }, text)));
}

function textRow(container, id, agent) {
  let el = id && S.texts.get(id);
  if (!el) {
    el = h("div", { class: "text" });
    container.append(h("div", { class: "msg ai" }, h("div", { class: "who" }, agent), el));
    if (id) S.texts.set(id, el);
  }
  return el;
}

/** A complete AI message: its text (replacing what was streamed), a model call, its tool calls. */
function aiMessage(container, message, agent) {
  const text = textOf(message.content);
  if (text) textRow(container, message.id, agent).textContent = text;
  if (S.running) {
    S.live.calls += 1;
    const usage = message.usage_metadata;
    if (usage) {
      S.live.input += usage.input_tokens || 0;
      S.live.output += usage.output_tokens || 0;
    }
    renderUsage();
  }
  for (const call of message.tool_calls || []) toolCall(container, call, agent);
  for (const bad of message.invalid_tool_calls || []) {
    warningRow(container, "invalid tool call", `${bad.name || "?"}: ${bad.error || bad.args || ""}`);
  }
}

function toolCall(container, call, agent) {
  if (S.calls.has(call.id)) return;
  const result = h("div", { class: "result pending muted" }, "running…");
  const card = h(
    "div",
    { class: `call${call.name === "task" ? " task" : ""}`, dataset: { tool: call.name, call: call.id } },
    h("div", { class: "row" }, h("span", { class: "tool" }, call.name), h("span", { class: "muted small" }, agent), h("span", { class: "summary" }, summarize(call.args))),
    h("details", { class: "args" }, h("summary", {}, "arguments"), h("pre", {}, JSON.stringify(call.args, null, 2))),
  );
  let nested = null;
  if (call.name === "task") {
    nested = h("div", { class: "nested", dataset: { subagent: (call.args || {}).subagent_type || "" } }, h("div", { class: "who" }, `subagent ${(call.args || {}).subagent_type || ""}`));
    card.append(nested);
  }
  card.append(result);
  container.append(card);
  S.calls.set(call.id, { card, result, nested, name: call.name, args: call.args || {} });
  scrollDown();
}

function summarize(args) {
  const text = Object.entries(args || {})
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  return text.length > 90 ? `${text.slice(0, 89)}…` : text;
}

function toolResult(message) {
  const entry = S.calls.get(message.tool_call_id);
  const text = textOf(message.content);
  const failed = message.status === "error";
  if (!entry) return;
  const result = clear(entry.result);
  result.className = `result${failed ? " error" : ""}`;
  if (entry.name === "write_todos" && !failed && Array.isArray(entry.args.todos)) {
    // its text is the list as Python writes it; the plan above shows the list itself
    const count = entry.args.todos.length;
    append(result, h("span", { class: "muted small" }, `the plan updated: ${count} ${count === 1 ? "step" : "steps"} (shown in the plan above)`));
    return false;
  }
  const lines = text.split("\n");
  if (text.length > FOLD_CHARS || lines.length > FOLD_LINES) {
    append(result, h("details", {}, h("summary", {}, `${lines[0].slice(0, 100)} … (${lines.length} lines, ${text.length} characters)`), h("pre", {}, text)));
  } else {
    append(result, h("pre", {}, text || "(empty)"));
  }
  if (WRITES.has(entry.name) && !failed && entry.args.file_path) {
    S.changed.add(entry.args.file_path);
    return true;
  }
  return false;
}

function warningRow(container, code, message) {
  container.append(h("div", { class: "warning", role: "alert" }, h("strong", {}, `warning (${code}): `), message));
}

function errorRow(container, message) {
  container.append(h("div", { class: "error-row", role: "alert" }, h("strong", {}, "error: "), message));
  scrollDown();
}

function renderTodos(todos) {
  const plan = $("plan");
  plan.hidden = !todos.length;
  const list = clear($("todos"));
  for (const todo of todos) {
    const mark = { completed: "✔", in_progress: "▶", pending: "○" }[todo.status] || "○";
    list.append(h("li", { class: `todo ${todo.status}` }, h("span", { class: "mark", "aria-hidden": "true" }, mark), ` ${todo.content} `, h("span", { class: "muted small" }, todo.status.replace("_", " "))));
  }
}

/** The thread's model calls, tokens and cost (the server counts them from the thread, priced
 * as `agentctl run` prices them); during a run, what this run has used so far, subagents too. */
function renderUsage() {
  const box = clear($("usage"));
  const tokens = (input, output) => `${(input + output).toLocaleString()} tokens (${input.toLocaleString()} in, ${output.toLocaleString()} out)`;
  const u = S.usage;
  if (u && u.model_calls) {
    const parts = [`${u.model_calls} model call${u.model_calls > 1 ? "s" : ""}`, u.reported ? tokens(u.input_tokens, u.output_tokens) : "no token counts reported"];
    if (u.cost_text) parts.push(`cost ${u.priced_all ? "" : "at least "}${u.cost_text}`);
    box.append(h("span", { class: "usage-thread", title: "this thread's conversation (a subagent's own calls are not kept in it)" }, `Thread: ${parts.join(" · ")}`));
  }
  const live = S.live;
  if (S.running && live.calls) {
    box.append(h("span", { class: "usage-live" }, `This run so far: ${live.calls} model call${live.calls > 1 ? "s" : ""}${live.input || live.output ? ` · ${tokens(live.input, live.output)}` : ""}`));
  }
}

async function loadUsage() {
  const id = S.thread;
  if (!id) return;
  try {
    const usage = await api.usage(id);
    if (S.thread === id) S.usage = usage;
  } catch {
    S.usage = null; // an engine that cannot say: the line stays empty rather than wrong
  }
  renderUsage();
}

function scrollDown() {
  const log = $("log");
  log.scrollTop = log.scrollHeight;
}

// ------------------------------------------------------------------ a run as it happens

/** Where the work of namespace root `ns` goes: under its `task` call, or the main log. */
function containerFor(ns) {
  if (!ns) return $("log");
  let el = S.subagents.get(ns);
  // a workflow step's agent runs in the namespace "<step id>:<task id>": under its step's line
  const step = !el && S.steps.get(ns.split(":")[0]);
  if (step) {
    el = step.nested;
    S.subagents.set(ns, el);
  }
  if (!el) {
    el = h("div", { class: "nested orphan" }, h("div", { class: "who" }, "subagent"));
    $("log").append(el);
    S.subagents.set(ns, el);
  }
  return el;
}

function onEvent(event, data) {
  const [mode, ...namespace] = event.split("|");
  const ns = namespace[0] || null;
  const container = containerFor(ns);
  const agent = ns ? (container.dataset.subagent || "subagent") : S.agent;
  if (mode === "messages") {
    const [chunk, meta] = data;
    if (!meta || meta.langgraph_node !== "model" || !chunk || !String(chunk.type).startsWith("AI")) return;
    const text = textOf(chunk.content);
    if (text) {
      const el = textRow(container, chunk.id, agent);
      el.textContent += text;
      scrollDown();
    }
  } else if (mode === "updates") {
    for (const [node, update] of Object.entries(data || {})) {
      if (node === "__interrupt__" || !update) continue;
      for (const part of Array.isArray(update) ? update : [update]) onUpdate(node, part, container, agent, ns);
    }
  } else if (mode === "custom") {
    if (data && data.agentctl === "subagent_start") {
      const root = String(data.namespace || "").split("|")[0];
      const call = S.calls.get(data.tool_call_id);
      if (root && call && call.nested) {
        call.nested.dataset.subagent = data.agent;
        call.nested.firstChild.textContent = `subagent ${data.agent}`;
        S.subagents.set(root, call.nested);
      }
    } else if (data && (data.agentctl === "step_start" || data.agentctl === "step_end")) {
      stepRow(data);
    } else if (data && data.agentctl === "warning") {
      warningRow(container, data.code || "warning", data.message || "");
    }
  } else if (mode === "error") {
    errorRow(container, streamError(data));
  }
}

/** Why a reopened thread's last run failed, as its error said it when it ran. */
async function lastFailure(id) {
  try {
    const [last] = await api.runs(id);
    const joined = last && last.status === "error" ? await api.join(id, last.run_id) : null;
    if (joined && joined.__error__) return `The last run of this thread failed: ${streamError(joined.__error__)}`;
  } catch {
    // the reason cannot be read now: the failure is still said
  }
  return "The last run of this thread failed.";
}

/** What a stream's error event tells a person: agentctl's message alone (the exception's class
 * name is no news to them), or, for the engine's generic text on a bug, where to look. */
function streamError(data) {
  const message = data && typeof data.message === "string" ? data.message.trim() : "";
  if (message && !/^(An internal error occurred|.*execution failed)\.?$/i.test(message)) return message;
  const kind = (data && data.error) || "an unexpected error";
  return `the run failed on ${kind}, a bug rather than something you can fix here; the server's log has the details`;
}

/** A workflow step's line: its id and kind, its status and time, its agent's work nested under it. */
function stepRow(data) {
  const id = String(data.step || "");
  let step = S.steps.get(id);
  if (!step) {
    const status = h("span", { class: "status" });
    const nested = h("div", { class: "nested" }); // the head above names the step
    nested.dataset.subagent = id; // the step's agent's messages are shown as the step's
    const row = h("div", { class: "step", "data-step": id }, h("div", { class: "head" }, `${id} `, h("span", { class: "kind" }, String(data.kind || "")), " ", status), nested);
    $("log").append(row);
    step = { row, status, nested };
    S.steps.set(id, step);
  }
  if (data.agentctl === "step_start") {
    step.row.dataset.status = "running";
    step.status.textContent = "running";
  } else {
    step.row.dataset.status = String(data.status || "");
    const seconds = typeof data.seconds === "number" ? ` ${data.seconds.toFixed(1)}s` : "";
    step.status.textContent = `${data.status || ""}${seconds}`;
  }
  scrollDown();
}

function onUpdate(node, update, container, agent, ns) {
  if (typeof update !== "object") return;
  for (const message of update.messages || []) {
    if (message.type === "ai" && node === "model") aiMessage(container, message, message.name || agent);
    else if (message.type === "tool" && toolResult(message)) refreshFiles();
  }
  if (Array.isArray(update.todos) && !ns) renderTodos(update.todos);
}

async function run(body) {
  S.running = true;
  S.live = { calls: 0, input: 0, output: 0 };
  $("send").disabled = true;
  status("running…");
  showRunning();
  try {
    const { vars } = inputValues();
    const config = Object.keys(vars).length ? { config: { configurable: { vars } } } : {};
    await streamRun(S.thread, { assistant_id: S.agent, ...config, ...body }, onEvent);
  } catch (exc) {
    errorRow($("log"), String(exc.message || exc));
  } finally {
    S.running = false;
    checkInputs();
  }
  loadUsage();
  const state = await api.state(S.thread);
  S.values = state.values || {};
  renderTodos(S.values.todos || []);
  const thread = await api.thread(S.thread);
  renderHead({ ...thread, values: S.values });
  if (thread.status === "error") errorRow($("log"), "The run failed (see the error above).");
  showApprovals(state);
  loadThreads().catch(() => {}); // a listing that fails is shown by main() and retried by its timer
  refreshFiles();
}

/** The open thread as running, in its header and its row, while this page runs it (the list is
 * not read again during a run). */
function showRunning() {
  renderHead({ metadata: {}, ...(S.head || {}), thread_id: S.thread, status: "busy" });
  const badge = $("threads").querySelector(".thread.selected .badge");
  if (badge) {
    badge.className = "badge busy";
    badge.textContent = "running";
  }
}

async function send(text) {
  if (S.running || !text.trim()) return;
  if (!(await ready(titleFrom(text)))) return;
  userRow(text);
  await run({ input: { messages: [{ role: "user", content: text }] } });
}

/** A workflow's run: its inputs, no message. */
async function runWorkflow() {
  if (S.running || !(await ready(workflowTitle()))) return;
  await run({ input: {} });
}

/** A workflow run's title: its name and the inputs it was given. */
function workflowTitle() {
  const { vars } = inputValues();
  const given = Object.entries(vars).map(([k, v]) => `${k}=${v}`).join(", ");
  return titleFrom(`${S.agent} run${given ? `: ${given}` : ""}`);
}

/** Whether a run may start (the file, waiting approvals, the inputs); its thread, created with
 * `title` (from the first message) when there is none yet. */
async function ready(title) {
  const agent = currentAgent();
  if (agent && agent.problems.length) {
    errorRow($("log"), `${agent.file} has problems; fix the file first (they are listed on the left).`);
    return false;
  }
  if (S.interrupts.length) {
    errorRow($("log"), "Answer the waiting approvals first.");
    return false;
  }
  const { problems } = inputValues();
  if (problems.length) {
    errorRow($("log"), `The inputs are not complete: ${problems.join("; ")}.`);
    return false;
  }
  if (!S.thread) {
    const thread = await api.createThread(S.agent, title);
    S.thread = thread.thread_id;
    history.replaceState(null, "", `#thread=${encodeURIComponent(S.thread)}`);
    renderHead(thread);
    await loadThreads().catch(() => {}); // its row, to show it running
  }
  return true;
}

// ------------------------------------------------------------------ start

/** On a narrow screen, the one panel shown: threads ("side"), the chat, or the files. */
function showTab(name) {
  document.body.dataset.tab = name;
  for (const button of $("tabs").querySelectorAll("button")) button.setAttribute("aria-pressed", String(button.dataset.show === name));
}

function wire() {
  const form = $("composer");
  const box = $("message");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = box.value;
    box.value = "";
    send(text);
  });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && document.body.dataset.tab !== "chat" && innerWidth <= 1100 && !e.defaultPrevented) {
      showTab("chat"); // Escape from the threads or files panel: back to the conversation
      return;
    }
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test((document.activeElement || {}).tagName || "");
    if ((e.key === "a" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) || (e.altKey && e.key.toLowerCase() === "a")) {
      const next = $("approvals").querySelector(".approval:not(.answered) button.approve");
      if (next) {
        e.preventDefault();
        next.click();
      }
    }
  });
  $("inputs").addEventListener("submit", (e) => {
    e.preventDefault();
    if ((currentAgent() || {}).kind === "workflow") runWorkflow();
    else $("message").focus(); // Enter in a field of an agent's inputs: on to the message
  });
  document.querySelector(".skip").addEventListener("click", (e) => {
    e.preventDefault(); // the address keeps the open thread
    $("message").focus();
  });
  $("new-thread").addEventListener("click", newThread);
  $("refresh-files").addEventListener("click", refreshFiles);
  for (const button of $("tabs").querySelectorAll("button")) button.addEventListener("click", () => showTab(button.dataset.show));
  showTab(document.body.dataset.tab || "chat");
  initThreads({
    open: (id) => openThread(id).catch((exc) => errorRow($("log"), String(exc.message || exc))),
    deleted: (id) => {
      if (id === S.thread) newThread();
    },
  });
  initApprovals({ resume: (resume) => run({ command: { resume } }) });
  initViews();
}

async function main() {
  wire();
  let refused = null;
  try {
    await loadAgents();
  } catch (exc) {
    refused = `cannot list the agents: ${exc.message || exc}`;
  }
  renderAgents();
  const match = /thread=([^&]+)/.exec(location.hash);
  if (match) await openThread(decodeURIComponent(match[1]));
  else newThread();
  if (refused) errorRow($("log"), refused); // after the view is drawn, which clears the log
  await loadThreads().catch((exc) => errorRow($("log"), `cannot list the threads: ${exc.message || exc}`));
  // Threads started elsewhere (the CLI, another tab) and edited agent files show up by themselves.
  setInterval(() => {
    if (!S.running) loadThreads().catch(() => {});
  }, 5000);
  setInterval(() => loadAgents().catch(() => {}), S.dev ? 1500 : 10000);
}

main();
