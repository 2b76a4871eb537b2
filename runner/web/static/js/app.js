// The page: agents and threads (left), the conversation with its approvals (middle), the
// thread's files (right). Everything comes from the LangGraph API of the same server, plus
// /web/api/ for agent problems, tool schemas and filesystem files (see runner/web/app.py).
import { api, streamRun } from "./api.js";
import { append, clear, h, numbered, textOf, when } from "./dom.js";
import { checkArgs, describeSchema } from "./schema.js";

const $ = (id) => document.getElementById(id);
const FOLD_CHARS = 500;
const FOLD_LINES = 8;
const WRITES = new Set(["write_file", "edit_file"]);

const S = {
  agents: [], // rows of /web/api/agents
  dev: false,
  agent: null, // graph id (= assistant id) of the open thread or the selected agent
  thread: null,
  running: false,
  values: {}, // the open thread's state values
  calls: new Map(), // tool call id -> {card, result, nested, name, args}
  texts: new Map(), // AI message id -> its text element
  subagents: new Map(), // namespace root ("tools:<id>") -> element holding that subagent's work
  steps: new Map(), // workflow step id -> {row, status, nested}
  changed: new Set(), // agent paths written by the thread
  usage: { calls: 0, input: 0, output: 0 },
  schemas: new Map(), // agent -> {tool: JSON schema}
  decisions: new Map(), // interrupt id -> array of decisions (one per action request)
  interrupts: [],
  inputs: {}, // agent -> {input name: what its field holds} (kept while the page is open)
  inputsShown: null, // what the input form was drawn for
  viewing: null, // path shown in the file viewer
};

function status(text) {
  $("status").textContent = text;
}

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
          dataset: { agent: agent.name },
          tabindex: 0,
          onclick: () => selectAgent(agent.name),
          onkeydown: (e) => e.key === "Enter" && selectAgent(agent.name),
        },
        h("div", { class: "row" }, h("strong", {}, agent.name), agent.model ? h("span", { class: "tag" }, agent.model) : null),
        agent.description ? h("div", { class: "muted" }, agent.description) : null,
        h("div", { class: "muted small" }, agent.file),
        reloaded.includes(agent.name) ? h("div", { class: "ok small" }, "reloaded: the file has no problems now") : null,
        broken
          ? h(
              "ul",
              { class: "problems", "aria-label": `problems of ${agent.file}` },
              agent.problems.map((p) => h("li", {}, p)),
            )
          : null,
      ),
    );
  }
}

function selectAgent(name) {
  S.agent = name;
  renderAgents();
  renderInputs();
  if (S.thread && threadAgent() !== name) newThread();
}

function threadAgent() {
  return S.agent;
}

async function loadThreads() {
  const threads = await api.threads();
  const list = clear($("threads"));
  for (const thread of threads) {
    const messages = (thread.values && thread.values.messages) || [];
    const first = messages.find((m) => m.type === "human");
    const waiting = Object.values(thread.interrupts || {})
      .flat()
      .reduce((n, i) => n + (((i.value || {}).action_requests || []).length || 1), 0);
    const graph = (thread.metadata || {}).graph_id || "";
    list.append(
      h(
        "li",
        {
          class: `thread${thread.thread_id === S.thread ? " selected" : ""}`,
          dataset: { thread: thread.thread_id },
          tabindex: 0,
          onclick: () => openThread(thread.thread_id),
          onkeydown: (e) => e.key === "Enter" && openThread(thread.thread_id),
        },
        h("div", { class: "first" }, first ? textOf(first.content).slice(0, 90) : "(no message yet)"),
        h(
          "div",
          { class: "row small" },
          h("span", { class: `badge ${thread.status}` }, thread.status),
          waiting ? h("span", { class: "badge waiting" }, `${waiting} approval${waiting > 1 ? "s" : ""} waiting`) : null,
          graph ? h("span", { class: "muted" }, graph) : null,
          h("span", { class: "muted" }, when(thread.updated_at)),
        ),
      ),
    );
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
  S.usage = { calls: 0, input: 0, output: 0 };
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
  const state = await api.state(id);
  S.values = state.values || {};
  renderHistory(S.values.messages || []);
  if (thread.status === "error") errorRow($("log"), "The last run of this thread failed.");
  renderTodos(S.values.todos || []);
  showApprovals(state);
  loadThreads().catch(() => {}); // a listing that fails is shown by main() and retried by its timer
  refreshFiles();
  if (innerWidth <= 700) showTab("chat");
}

function renderHead(thread) {
  const head = clear($("thread-head"));
  append(head, [
    h("strong", {}, S.agent || "no agent"),
    " ",
    h("span", { class: "muted small" }, S.thread ? `thread ${S.thread}` : "new thread: your first message starts it"),
    thread && thread.status ? h("span", { class: `badge ${thread.status}` }, thread.status) : null,
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
  S.usage.calls += 1;
  const usage = message.usage_metadata;
  if (usage) {
    S.usage.input += usage.input_tokens || 0;
    S.usage.output += usage.output_tokens || 0;
  }
  renderUsage();
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

function renderUsage() {
  const u = S.usage;
  $("usage").textContent = u.calls
    ? `${u.calls} model call${u.calls > 1 ? "s" : ""}` + (u.input || u.output ? ` · ${u.input + u.output} tokens (${u.input} in, ${u.output} out)` : " · no token counts reported")
    : "";
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
    errorRow(container, `${(data && (data.error || "")) || ""} ${(data && data.message) || JSON.stringify(data)}`.trim());
  }
}

/** A workflow step's line: its id and kind, its status and time, its agent's work nested under it. */
function stepRow(data) {
  const id = String(data.step || "");
  let step = S.steps.get(id);
  if (!step) {
    const status = h("span", { class: "status" });
    const nested = h("div", { class: "nested" }, h("div", { class: "who" }, `step ${id}`));
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
  $("send").disabled = true;
  status("running…");
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
  const state = await api.state(S.thread);
  S.values = state.values || {};
  renderTodos(S.values.todos || []);
  const thread = await api.thread(S.thread);
  renderHead(thread);
  if (thread.status === "error") errorRow($("log"), "The run failed (see the error above).");
  showApprovals(state);
  loadThreads().catch(() => {}); // a listing that fails is shown by main() and retried by its timer
  refreshFiles();
}

async function send(text) {
  if (S.running || !text.trim()) return;
  if (!(await ready())) return;
  userRow(text);
  await run({ input: { messages: [{ role: "user", content: text }] } });
}

/** A workflow's run: its inputs, no message. */
async function runWorkflow() {
  if (S.running || !(await ready())) return;
  await run({ input: {} });
}

/** Whether a run may start (the file, waiting approvals, the inputs); its thread, created. */
async function ready() {
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
    const thread = await api.createThread(S.agent);
    S.thread = thread.thread_id;
    history.replaceState(null, "", `#thread=${encodeURIComponent(S.thread)}`);
    renderHead(thread);
  }
  return true;
}

// ------------------------------------------------------------------ the agent's inputs

function currentAgent() {
  return S.agents.find((a) => a.name === S.agent);
}

/** The fields a person fills in (a `file` input is the server's: a path on its disk). */
function fieldsOf(agent) {
  return ((agent && agent.inputs) || []).filter((f) => f.type !== "file");
}

/** The form of the selected agent's typed inputs (a workflow's has its Run button), redrawn only
 * when the agent or its inputs change, so the periodic listing never disturbs typing. */
function renderInputs() {
  const agent = currentAgent();
  const drawn = JSON.stringify(agent ? [agent.name, agent.kind, agent.inputs] : null);
  if (drawn === S.inputsShown) return;
  S.inputsShown = drawn;
  const form = clear($("inputs"));
  const fields = fieldsOf(agent);
  const workflow = Boolean(agent && agent.kind === "workflow");
  form.hidden = !fields.length && !workflow;
  $("composer").hidden = workflow;
  if (!form.hidden) {
    const held = (S.inputs[agent.name] ||= {});
    form.append(h("div", { class: "muted small" }, workflow ? `${agent.name} is a workflow: fill in its inputs and run it` : `inputs of ${agent.name}, sent with each run`));
    const grid = h("div", { class: "fields" }, fields.map((field) => inputField(field, held)));
    form.append(grid);
    if (workflow) form.append(h("button", { type: "submit", id: "run-workflow", "aria-describedby": "send-why" }, "Run"));
  }
  checkInputs();
}

function inputField(field, held) {
  const id = `input-${field.name}`;
  const help = [field.description, bounds(field)].filter(Boolean).join(" · ");
  const start = field.name in held ? held[field.name] : field.default;
  const attrs = { id, name: field.name, dataset: { input: field.name }, required: field.required, "aria-describedby": help ? `${id}-help` : null };
  let control;
  if (field.type === "boolean") {
    control = h("input", { ...attrs, type: "checkbox", checked: Boolean(start) });
  } else if (field.type === "enum") {
    const blank = field.required || field.default === undefined ? h("option", { value: "" }, "(choose)") : null;
    control = h("select", attrs, blank, field.enum.map((choice, n) => h("option", { value: String(n), selected: start === choice || start === String(n) }, String(choice))));
  } else if (field.type === "integer" || field.type === "number") {
    control = h("input", { ...attrs, type: "number", min: field.minimum, max: field.maximum, step: field.type === "integer" ? 1 : "any", value: start ?? "" });
  } else {
    control = h("input", { ...attrs, type: "text", value: start ?? "" });
  }
  const keep = () => {
    held[field.name] = field.type === "boolean" ? control.checked : control.value;
    checkInputs();
  };
  control.addEventListener("input", keep);
  control.addEventListener("change", keep);
  return h(
    "div",
    { class: `field ${field.type}` },
    h("label", { for: id }, field.name, field.required ? h("span", { class: "required", title: "required" }, " *") : null),
    control,
    help ? h("div", { class: "muted small", id: `${id}-help` }, help) : null,
  );
}

function bounds(field) {
  const low = field.minimum ?? null;
  const high = field.maximum ?? null;
  if (low !== null && high !== null) return `from ${low} to ${high}`;
  if (low !== null) return `at least ${low}`;
  if (high !== null) return `at most ${high}`;
  return "";
}

/** {vars: the inputs' values as the run's `configurable.vars`, problems: what keeps a run back}. */
function inputValues() {
  const vars = {};
  const missing = [];
  const problems = [];
  for (const field of fieldsOf(currentAgent())) {
    const el = $("inputs").querySelector(`[data-input="${CSS.escape(field.name)}"]`);
    if (!el) continue;
    if (field.type === "boolean") {
      vars[field.name] = el.checked;
      continue;
    }
    const raw = el.value.trim();
    if (raw === "") {
      if (field.required) missing.push(field.name);
      continue;
    }
    if (field.type === "enum") {
      vars[field.name] = field.enum[Number(raw)];
    } else if (field.type === "integer" || field.type === "number") {
      const n = Number(raw);
      const whole = field.type !== "integer" || Number.isInteger(n);
      if (!Number.isFinite(n) || !whole || (field.minimum != null && n < field.minimum) || (field.maximum != null && n > field.maximum)) {
        problems.push(`${field.name} must be ${field.type === "integer" ? "an integer" : "a number"}${bounds(field) ? ` ${bounds(field)}` : ""}`);
      } else {
        vars[field.name] = n;
      }
    } else {
      vars[field.name] = el.value;
    }
  }
  if (missing.length) problems.unshift(`fill in ${missing.join(", ")}`);
  return { vars, problems };
}

/** The send (or Run) button, enabled only when the inputs allow a run, and why not. */
function checkInputs() {
  const { problems } = inputValues();
  const why = problems.length ? `First ${problems.join("; ")}.` : "";
  for (const button of [$("send"), $("run-workflow")]) {
    if (!button) continue;
    button.disabled = S.running || problems.length > 0;
    button.title = why;
  }
  $("send-why").textContent = why;
}

// ------------------------------------------------------------------ approvals

function interruptsOf(state) {
  const seen = new Map();
  for (const i of [...(state.interrupts || []), ...(state.tasks || []).flatMap((t) => t.interrupts || [])]) {
    if (!seen.has(i.id)) seen.set(i.id, i);
  }
  return [...seen.values()];
}

async function showApprovals(state) {
  const box = clear($("approvals"));
  S.interrupts = interruptsOf(state);
  S.decisions.clear();
  if (!S.interrupts.length) {
    status(S.thread ? "idle" : "");
    return;
  }
  const questions = S.interrupts.filter(isQuestion);
  status(questions.length === S.interrupts.length ? "waiting for your answer" : "waiting for your approval");
  const waiting = new Set(S.interrupts.filter((i) => !isQuestion(i)).flatMap((i) => requestsOf(i).map((r) => r.name)));
  for (const entry of S.calls.values()) {
    if (!entry.result.classList.contains("pending")) continue;
    if (waiting.has(entry.name)) entry.result.textContent = "waiting for approval";
    else if (entry.name === "ask_user" && questions.length) entry.result.textContent = "waiting for your answer";
  }
  const schemas = await toolSchemas(S.agent);
  const total = S.interrupts.filter((i) => !isQuestion(i)).reduce((n, i) => n + requestsOf(i).length, 0);
  if (total) box.append(h("h3", {}, `${total} call${total > 1 ? "s" : ""} waiting for approval`, h("span", { class: "muted small" }, " · a approves the next one")));
  for (const interrupt of S.interrupts) {
    if (isQuestion(interrupt)) {
      S.decisions.set(interrupt.id, [null]);
      box.append(questionCard(interrupt));
      continue;
    }
    const requests = requestsOf(interrupt);
    S.decisions.set(interrupt.id, new Array(requests.length).fill(null));
    const configs = new Map(((interrupt.value || {}).review_configs || []).map((c) => [c.action_name, c]));
    requests.forEach((request, index) => {
      const allowed = (configs.get(request.name) || {}).allowed_decisions || ["approve", "edit", "reject"];
      box.append(approvalCard(interrupt, index, request, allowed, schemas[request.name]));
    });
  }
  const first = box.querySelector("button.approve, .question button, .question input");
  if (first) first.focus();
}

function isQuestion(interrupt) {
  return (interrupt.value || {}).type === "ask_user";
}

/** A question of the agent's (`ask_user`): its choices as buttons, or a box for the answer; it
 * resumes with `{"answer": TEXT}`. */
function questionCard(interrupt) {
  const value = interrupt.value || {};
  const choices = value.choices || [];
  const card = h("div", { class: "approval question", role: "group", "aria-label": "question of the agent" });
  const actions = h("div", { class: "actions" });
  const answer = (text) => {
    S.decisions.get(interrupt.id)[0] = { answer: text };
    card.classList.add("answered");
    clear(actions).append(h("span", { class: "decided" }, `answered: ${text}`));
    maybeResume();
  };
  append(card, [h("div", { class: "row" }, h("span", { class: "tool" }, "question"), h("span", { class: "text" }, String(value.question || ""))), remoteOf(interrupt), actions]);
  if (choices.length) {
    for (const choice of choices) actions.append(h("button", { type: "button", class: "choice", onclick: () => answer(String(choice)) }, String(choice)));
  } else {
    const box = h("input", { type: "text", class: "answer", placeholder: "Your answer", "aria-label": "your answer" });
    const give = () => box.value.trim() && answer(box.value.trim());
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        give();
      }
    });
    actions.append(box, h("button", { type: "button", class: "save", onclick: give }, "Answer"));
  }
  return card;
}

function requestsOf(interrupt) {
  const value = interrupt.value || {};
  return value.action_requests || [{ name: "interrupt", args: { value }, description: "The run asks for an answer." }];
}

async function toolSchemas(agent) {
  if (!S.schemas.has(agent)) {
    try {
      S.schemas.set(agent, (await api.tools(agent)).tools || {});
    } catch {
      S.schemas.set(agent, {});
    }
  }
  return S.schemas.get(agent);
}

/** Who asks, when a remote subagent (`remote:`, on another Agent Server) does. */
function remoteOf(interrupt) {
  const remote = (interrupt.value || {}).remote;
  if (!remote) return null;
  return h("div", { class: "muted remote" }, `asked by ${remote.agent}, served at ${remote.url}`);
}

function approvalCard(interrupt, index, request, allowed, schema) {
  const card = h("div", { class: "approval", dataset: { tool: request.name } });
  const actions = h("div", { class: "actions" });
  const editor = h("div", { class: "editor", hidden: true });
  const decide = (decision, label) => {
    S.decisions.get(interrupt.id)[index] = decision;
    card.classList.add("answered");
    clear(actions).append(h("span", { class: "decided" }, label));
    editor.hidden = true;
    maybeResume();
  };
  append(card, [
    h("div", { class: "row" }, h("span", { class: "tool" }, request.name), request.description ? h("span", { class: "muted" }, request.description) : null),
    remoteOf(interrupt),
    h("pre", { class: "args" }, JSON.stringify(request.args, null, 2)),
    actions,
    editor,
  ]);
  if (allowed.includes("approve")) {
    actions.append(h("button", { type: "button", class: "approve", title: "Approve (a)", onclick: () => decide({ type: "approve" }, "approved") }, "Approve"));
  }
  if (allowed.includes("edit")) {
    actions.append(h("button", { type: "button", class: "edit", onclick: () => openEditor(editor, request, schema, (args) => decide({ type: "edit", edited_action: { name: request.name, args } }, "approved with edited arguments")) }, "Edit arguments"));
  }
  if (allowed.includes("reject")) {
    const reason = h("input", { type: "text", class: "reason", placeholder: "Why (sent to the agent)", "aria-label": "reason for rejecting" });
    const reject = () => decide(reason.value.trim() ? { type: "reject", message: reason.value.trim() } : { type: "reject" }, `rejected${reason.value.trim() ? `: ${reason.value.trim()}` : ""}`);
    reason.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        reject();
      }
    });
    actions.append(reason, h("button", { type: "button", class: "reject", onclick: reject }, "Reject"));
  }
  return card;
}

function openEditor(editor, request, schema, submit) {
  editor.hidden = false;
  // the editor starts from the arguments shown above, which it replaces while open
  const shown = editor.parentElement.querySelector("pre.args");
  if (shown) shown.hidden = true;
  const area = h("textarea", { class: "json", rows: 9, spellcheck: "false", "aria-label": `arguments of ${request.name} as JSON` });
  area.value = JSON.stringify(request.args, null, 2);
  const problem = h("div", { class: "json-error", role: "alert" });
  const save = h("button", { type: "button", class: "save" }, "Approve with these arguments");
  const check = () => {
    const { error } = checkArgs(area.value, schema);
    problem.textContent = error || "";
    save.disabled = Boolean(error);
    area.setAttribute("aria-invalid", error ? "true" : "false");
    return !error;
  };
  area.addEventListener("input", check);
  save.addEventListener("click", () => {
    if (check()) submit(checkArgs(area.value, schema).args);
  });
  const rows = describeSchema(schema);
  append(clear(editor), [
    area,
    problem,
    rows.length
      ? h("div", { class: "schema" }, h("div", { class: "muted small" }, `arguments of ${request.name}:`), h("ul", {}, rows.map((r) => h("li", {}, h("code", {}, r.key), ` (${r.flags})`, r.description ? ` ${r.description}` : ""))))
      : h("div", { class: "muted small" }, "no argument schema known for this tool"),
    save,
  ]);
  area.focus();
  save.scrollIntoView({ block: "nearest" });
}

function maybeResume() {
  const all = [...S.decisions.values()];
  if (all.some((d) => d.includes(null))) {
    status(`${all.flat().filter((d) => d === null).length} approval(s) still waiting`);
    return;
  }
  const payloads = S.interrupts.map((i) => {
    const decisions = S.decisions.get(i.id);
    if (isQuestion(i)) return decisions[0];
    return (i.value || {}).action_requests ? { decisions } : decisions[0].type === "approve" ? true : decisions[0];
  });
  const resume = S.interrupts.length === 1 ? payloads[0] : Object.fromEntries(S.interrupts.map((i, n) => [i.id, payloads[n]]));
  S.interrupts = [];
  clear($("approvals"));
  run({ command: { resume } });
}

// ------------------------------------------------------------------ files

let filesTimer = null;
function refreshFiles() {
  clearTimeout(filesTimer);
  filesTimer = setTimeout(loadFiles, 50);
}

async function loadFiles() {
  const list = clear($("file-list"));
  const routesBox = clear($("routes"));
  if (!S.agent) return;
  let listing;
  try {
    listing = await api.files(S.agent, S.thread);
  } catch (exc) {
    routesBox.textContent = String(exc.message || exc);
    return;
  }
  const files = [];
  for (const route of listing.routes) {
    routesBox.append(h("div", { class: "small" }, h("code", {}, route.prefix), ` ${route.kind}${route.namespace ? ` [${route.namespace.join(", ")}]` : ""}${route.note ? ` (${route.note})` : ""}`));
    if (route.kind === "state") {
      const stateFiles = S.values.files || {};
      for (const [path, data] of Object.entries(stateFiles)) {
        if (data && (route.prefix === "/" || path.startsWith(route.prefix))) files.push({ path, kind: "state", content: data.content, modified_at: data.modified_at });
      }
    } else if (route.kind === "store") {
      try {
        const { items } = await api.storeSearch(route.namespace);
        for (const item of items || []) {
          if (JSON.stringify(item.namespace) !== JSON.stringify(route.namespace)) continue;
          const path = route.prefix === "/" ? item.key : route.prefix.replace(/\/$/, "") + item.key;
          files.push({ path, kind: "store", content: (item.value || {}).content, modified_at: item.updated_at });
        }
      } catch (exc) {
        routesBox.append(h("div", { class: "error-row small" }, String(exc.message || exc)));
      }
    }
  }
  for (const file of listing.files) files.push({ ...file, kind: "filesystem" });
  files.sort((a, b) => a.path.localeCompare(b.path));
  for (const file of files) {
    const changed = S.changed.has(file.path);
    list.append(
      h(
        "li",
        { class: `file${changed ? " changed" : ""}${file.path === S.viewing ? " selected" : ""}`, dataset: { path: file.path }, tabindex: 0, onclick: () => viewFile(file), onkeydown: (e) => e.key === "Enter" && viewFile(file) },
        h("span", { class: "path" }, file.path),
        changed ? h("span", { class: "badge changed", title: "written by this thread" }, "changed") : null,
        h("span", { class: "muted small" }, file.kind),
      ),
    );
    if (file.path === S.viewing) viewFile(file);
  }
  if (!files.length) list.append(h("li", { class: "muted" }, "no files yet"));
}

async function viewFile(file) {
  S.viewing = file.path;
  for (const li of $("file-list").children) li.classList.toggle("selected", li.dataset.path === file.path);
  const view = clear($("file-view"));
  view.append(h("div", { class: "row" }, h("strong", {}, file.path), S.changed.has(file.path) ? h("span", { class: "badge changed" }, "changed") : null));
  let content = file.content;
  if (content === undefined) {
    try {
      content = (await api.file(S.agent, S.thread, file.path)).content;
    } catch (exc) {
      view.append(h("div", { class: "error-row" }, String(exc.message || exc)));
      return;
    }
  }
  if (S.viewing === file.path) view.append(numbered(content));
}

// ------------------------------------------------------------------ start

function showTab(name) {
  document.body.dataset.tab = name;
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
  $("new-thread").addEventListener("click", newThread);
  $("refresh-files").addEventListener("click", refreshFiles);
  for (const button of $("tabs").querySelectorAll("button")) button.addEventListener("click", () => showTab(button.dataset.show));
}

async function main() {
  wire();
  try {
    await loadAgents();
  } catch (exc) {
    errorRow($("log"), `cannot list the agents: ${exc.message || exc}`);
  }
  renderAgents();
  const match = /thread=([^&]+)/.exec(location.hash);
  if (match) await openThread(decodeURIComponent(match[1]));
  else newThread();
  await loadThreads().catch((exc) => errorRow($("log"), `cannot list the threads: ${exc.message || exc}`));
  // Threads started elsewhere (the CLI, another tab) and edited agent files show up by themselves.
  setInterval(() => {
    if (!S.running) loadThreads().catch(() => {});
  }, 5000);
  setInterval(() => loadAgents().catch(() => {}), S.dev ? 1500 : 10000);
}

main();
