// What a run waits on, and the person's answers: each waiting call with only the decisions its
// `interrupt_on` allows (approve, edit the arguments against the tool's schema, reject with a
// reason), and `ask_user` questions (choices as buttons, or a free answer). The run resumes with
// every answer at once, shaped as the interrupt asks (`{decisions}`, `{answer}`).
import { api } from "./api.js";
import { append, argsView, clear, h, onEscape, onKey } from "./dom.js";
import { bindArgumentCheck, describeSchema } from "./schema.js";
import { $, S, status } from "./state.js";

let hooks = { resume: () => {} };

/** `resume(value)`: start the run that resumes the thread with `value` (`command.resume`). */
export function initApprovals(given) {
  hooks = { ...hooks, ...given };
}


function interruptsOf(state) {
  const seen = new Map();
  for (const i of [...(state.interrupts || []), ...(state.tasks || []).flatMap((t) => t.interrupts || [])]) {
    if (!seen.has(i.id)) seen.set(i.id, i);
  }
  return [...seen.values()];
}

export async function showApprovals(state) {
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
  if (total) box.append(h("h3", {}, `${total} call${total > 1 ? "s" : ""} waiting for approval`, h("span", { class: "muted small" }, " · press a to approve the next one")));
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
    onKey(box, "Enter", give);
    actions.append(box, h("button", { type: "button", class: "save", onclick: give }, "Answer"));
  }
  return card;
}

function requestsOf(interrupt) {
  const value = interrupt.value || {};
  return value.action_requests || [{ name: "interrupt", args: { value }, description: "The run asks for an answer." }];
}

/** Who asks, when a remote subagent (`remote:`, on another Agent Server) does. */
function remoteOf(interrupt) {
  const remote = (interrupt.value || {}).remote;
  if (!remote) return null;
  return h("div", { class: "muted remote" }, `asked by ${remote.agent}, served at ${remote.url}`);
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
    argsView(request.args, { class: "args", "aria-label": `arguments of ${request.name}` }),
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
    onKey(reason, "Enter", reject);
    actions.append(reason, h("button", { type: "button", class: "reject", onclick: reject }, "Reject"));
  }
  return card;
}

function openEditor(editor, request, schema, submit) {
  editor.hidden = false;
  // the editor starts from the arguments shown above, which it replaces while open
  const shown = editor.parentElement.querySelector(".args");
  if (shown) shown.hidden = true;
  const area = h("textarea", { class: "json", rows: 9, spellcheck: "false", "aria-label": `arguments of ${request.name} as JSON` });
  area.value = JSON.stringify(request.args, null, 2);
  const problem = h("div", { class: "json-error", role: "alert" });
  const save = h("button", { type: "button", class: "save" }, "Approve with these arguments");
  bindArgumentCheck(area, problem, save, schema, submit);
  onEscape(area, () => {
    editor.hidden = true; // back to the arguments as the model wrote them
    if (shown) shown.hidden = false;
    const edit = editor.parentElement.querySelector("button.edit");
    if (edit) edit.focus();
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
  hooks.resume(resume);
}

