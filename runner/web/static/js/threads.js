// The threads of the selected agent: title (a rename, else the first message), status (idle,
// running, waiting for approval, failed) and time; open, rename, delete. Everything through the
// engine's own thread API (`/threads/search` by the agent's graph id, `PATCH` of the metadata's
// title, `DELETE`), so it works on every engine and each person sees only their own threads.
import { api } from "./api.js";
import { $, S } from "./state.js";
import { clear, h, onEscape, textOf, when } from "./dom.js";

const TITLE_CHARS = 80;
let hooks = { open: () => {}, deleted: () => {} };
let editing = null; // thread id whose row is being renamed or asked about: not redrawn meanwhile

/** `open(id)`: show a thread; `deleted(id)`: a thread was deleted. */
export function initThreads(given) {
  hooks = { ...hooks, ...given };
}

/** A title from a message: its first line, cut short. */
export function titleFrom(text) {
  const line = String(text || "").trim().split("\n")[0].trim();
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1)}…` : line;
}

export function titleOf(thread) {
  const title = (thread.metadata || {}).title;
  if (title) return String(title);
  if (!thread.values) return "(untitled)"; // an engine whose search gives no values (Aegra)
  const messages = thread.values.messages || [];
  const first = messages.find((m) => m.type === "human");
  return first ? titleFrom(textOf(first.content)) || "(empty message)" : "(no message yet)";
}

/** {label, kind} of the thread's status as a person reads it. */
export function statusOf(thread) {
  const interrupts = Object.values(thread.interrupts || {}).flat();
  const questions = interrupts.filter((i) => (i.value || {}).type === "ask_user").length;
  const requests = interrupts.reduce((n, i) => n + (((i.value || {}).action_requests || []).length || 1), 0);
  switch (thread.status) {
    case "busy":
      return { label: "running", kind: "busy" };
    case "interrupted":
      if (interrupts.length && questions === interrupts.length) return { label: "waiting for your answer", kind: "waiting" };
      return { label: requests > 1 ? `waiting for approval (${requests})` : "waiting for approval", kind: "waiting" };
    case "error":
      return { label: "failed", kind: "error" };
    default:
      return { label: thread.status || "idle", kind: thread.status || "idle" };
  }
}

/** The list drawn again whatever it shows (a row was turned into a form or a question). */
function redraw() {
  editing = null;
  delete $("threads").dataset.drawn;
  return loadThreads();
}

export async function loadThreads() {
  if (editing) return; // a rename or a question on a row: leave the list as it is
  const list = $("threads");
  $("threads-of").textContent = S.agent ? `of ${S.agent}` : "";
  if (!S.agent) {
    clear(list);
    return;
  }
  const agent = S.agent;
  const threads = await api.threads(agent);
  if (editing || agent !== S.agent) return;
  // Drawn again only when something shown changed, and the keyboard stays where it was.
  const drawn = JSON.stringify([S.thread, threads.map((t) => [t.thread_id, titleOf(t), statusOf(t).label, t.updated_at])]);
  if (drawn === list.dataset.drawn) return;
  list.dataset.drawn = drawn;
  const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement : null;
  const where = focused && [focused.closest(".thread")?.dataset.thread, ["open", "rename", "delete"].find((c) => focused.classList.contains(c))];
  clear(list);
  for (const thread of threads) list.append(threadRow(thread));
  if (!threads.length) list.append(h("li", { class: "muted small empty" }, "No threads yet: your first message starts one."));
  if (where && where[0]) focusRow(where[0], `button.${where[1] || "open"}`);
}

function threadRow(thread) {
  const id = thread.thread_id;
  const title = titleOf(thread);
  const state = statusOf(thread);
  const selected = id === S.thread;
  const row = h("li", { class: `thread${selected ? " selected" : ""}`, dataset: { thread: id, status: thread.status || "" } });
  const open = h(
    "button",
    { type: "button", class: "open", "aria-current": selected ? "true" : null, onclick: () => hooks.open(id) },
    h("span", { class: "title" }, title),
    h(
      "span",
      { class: "meta" },
      h("span", { class: `badge ${state.kind}` }, state.label),
      h("time", { datetime: thread.updated_at || "" }, when(thread.updated_at)),
    ),
  );
  const actions = h(
    "span",
    { class: "thread-actions" },
    h("button", { type: "button", class: "icon rename", title: "Rename", "aria-label": `Rename thread: ${title}`, onclick: () => renaming(row, thread, title) }, "✎"),
    h("button", { type: "button", class: "icon delete", title: "Delete", "aria-label": `Delete thread: ${title}`, onclick: () => deleting(row, thread, title) }, "✕"),
  );
  row.append(open, actions);
  return row;
}

/** The row as a small form: the title to edit; Enter saves, Escape gives up. */
function renaming(row, thread, title) {
  editing = thread.thread_id;
  const input = h("input", { type: "text", class: "title-input", value: title, maxlength: 200, "aria-label": "New title of the thread" });
  const problem = h("div", { class: "small error-text", role: "alert" });
  const done = () =>
    redraw()
      .catch(() => {})
      .then(() => focusRow(thread.thread_id, "button.rename"));
  const form = h(
    "form",
    { class: "rename-form" },
    input,
    h("span", { class: "row" }, h("button", { type: "submit", class: "primary" }, "Save"), h("button", { type: "button", onclick: done }, "Cancel")),
    problem,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) {
      problem.textContent = "A title cannot be empty.";
      return;
    }
    try {
      await api.renameThread(thread.thread_id, text);
      done();
    } catch (exc) {
      problem.textContent = String(exc.message || exc);
    }
  });
  onEscape(form, done);
  clear(row).append(form);
  input.focus();
  input.select();
}

/** The row asks first: Delete removes the thread (and its workspace); Escape keeps it. */
function deleting(row, thread, title) {
  editing = thread.thread_id;
  const problem = h("div", { class: "small error-text", role: "alert" });
  const keep = () => {
    redraw()
      .then(() => focusRow(thread.thread_id, "button.delete"))
      .catch(() => {});
  };
  const remove = async () => {
    try {
      await api.deleteThread(thread.thread_id);
    } catch (exc) {
      problem.textContent = String(exc.message || exc);
      return;
    }
    hooks.deleted(thread.thread_id);
    redraw().catch(() => {});
  };
  const yes = h("button", { type: "button", class: "danger", onclick: remove }, "Delete");
  const box = h(
    "div",
    { class: "confirm", role: "group", "aria-label": `Delete thread: ${title}` },
    h("div", { class: "small" }, "Delete ", h("strong", {}, title), "? Its messages and files go too."),
    h("span", { class: "row" }, yes, h("button", { type: "button", onclick: keep }, "Keep")),
    problem,
  );
  onEscape(box, keep);
  clear(row).append(box);
  yes.focus();
}

function focusRow(id, selector) {
  const row = $("threads").querySelector(`.thread[data-thread="${CSS.escape(id)}"]`);
  const target = row && row.querySelector(selector);
  if (target) target.focus();
}
