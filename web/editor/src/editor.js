// The page of `agentctl serve --edit` (/edit): a YAML editor (CodeMirror 6) whose problems,
// completion and hover come from the server (the language server's own code, over
// /web/api/edit/...), a form of the common settings written back into the YAML by the server
// (comments and order kept), "try it" in a chat beside it, "record", "test", and saves that
// show the diff first and never overwrite a file changed on disk meanwhile.
//
// Built by scripts/build-web into runner/web/static/editor/editor.js (one file, committed):
// nothing is fetched from elsewhere at run time.
import { EditorView, basicSetup } from "codemirror";
import { Compartment, EditorState, StateEffect, StateField } from "@codemirror/state";
import { oneDark } from "@codemirror/theme-one-dark";
import { Decoration, WidgetType, hoverTooltip, keymap } from "@codemirror/view";
import { yaml } from "@codemirror/lang-yaml";
import { linter, lintGutter, forceLinting } from "@codemirror/lint";
import { autocompletion } from "@codemirror/autocomplete";
import { indentWithTab } from "@codemirror/commands";
import { MergeView } from "@codemirror/merge";
import { fetchWithKey } from "/web/static/js/key.js";
import { bindArgumentCheck, describeSchema } from "/web/static/js/schema.js";
import "./editor.css";

const API = "/web/api/edit";
const CHECK_DELAY = 250; // ms after the last keystroke before the server checks

// --------------------------------------------------------------------------- small helpers

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const $ = (id) => document.getElementById(id);

async function call(path, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetchWithKey(`${API}${path}`, init);
  let data = {};
  try {
    data = await response.json();
  } catch {
    data = { error: `${response.status} ${response.statusText}` };
  }
  if (!response.ok) {
    const error = new Error(data.error || data.detail || `${response.status}`);
    error.status = response.status;
    error.data = data;
    throw error;
  }
  return data;
}

function say(text, kind = "info") {
  const status = $("ed-status");
  status.textContent = text;
  status.dataset.kind = kind;
}

/** Markdown of the server (schema descriptions) as text nodes: `code` and **bold** only. */
function markdown(text) {
  const box = h("div", { class: "ed-doc" });
  for (const paragraph of String(text).split(/\n{2,}/)) {
    const p = h("p");
    for (const part of paragraph.split(/(`[^`]+`|\*\*[^*]+\*\*)/)) {
      if (part.startsWith("`") && part.endsWith("`") && part.length > 1) p.append(h("code", {}, part.slice(1, -1)));
      else if (part.startsWith("**") && part.endsWith("**")) p.append(h("strong", {}, part.slice(2, -2)));
      else p.append(part);
    }
    box.append(p);
  }
  return box;
}

// --------------------------------------------------------------------------- the document

const state = {
  path: null, // relative to the served folder
  version: null, // the version (hash) the editor loaded, sent with a save
  saved: "", // the text of that version
  view: null,
  mode: "yaml",
  thread: null, // the try waiting for an approval
};

function offset(doc, position) {
  const line = doc.line(Math.min(Math.max(position.line + 1, 1), doc.lines));
  return Math.min(line.from + position.character, line.to);
}

function lineChar(doc, pos) {
  const line = doc.lineAt(pos);
  return { line: line.number - 1, character: pos - line.from };
}

// The located problems, also shown as a line of text under the line they are on.
const setProblems = StateEffect.define();

class ProblemWidget extends WidgetType {
  constructor(messages) {
    super();
    this.messages = messages;
  }
  eq(other) {
    return other.messages.join("\n") === this.messages.join("\n");
  }
  toDOM() {
    return h("div", { class: "ed-problem-line", role: "note" }, ...this.messages.map((m) => h("div", {}, m)));
  }
}

const problemLines = StateField.define({
  create: () => Decoration.none,
  update(decorations, transaction) {
    decorations = decorations.map(transaction.changes);
    for (const effect of transaction.effects) {
      if (!effect.is(setProblems)) continue;
      const byLine = new Map();
      for (const problem of effect.value) {
        const end = transaction.state.doc.lineAt(problem.from).to;
        if (!byLine.has(end)) byLine.set(end, []);
        byLine.get(end).push(problem.message);
      }
      decorations = Decoration.set(
        [...byLine.entries()].sort((a, b) => a[0] - b[0]).map(([end, messages]) => Decoration.widget({ widget: new ProblemWidget(messages), block: true, side: 1 }).range(end)),
      );
    }
    return decorations;
  },
  provide: (field) => EditorView.decorations.from(field),
});

const serverLinter = linter(
  async (view) => {
    if (!state.path) return [];
    const text = view.state.doc.toString();
    let found;
    try {
      found = await call("/check", { path: state.path, text });
    } catch (error) {
      say(`check failed: ${error.message}`, "error");
      return [];
    }
    if (view.state.doc.toString() !== text) return []; // typed meanwhile: the next check answers
    const doc = view.state.doc;
    const diagnostics = found.problems.map((p) => {
      const from = offset(doc, p.from);
      return { from, to: Math.max(offset(doc, p.to), from), severity: p.severity || "error", message: p.message, source: "agentctl" };
    });
    queueMicrotask(() => view.dispatch({ effects: setProblems.of(diagnostics) }));
    $("ed-problems").textContent = diagnostics.length ? `${diagnostics.length} problem${diagnostics.length > 1 ? "s" : ""}` : "no problems";
    $("ed-problems").dataset.kind = diagnostics.length ? "error" : "ok";
    return diagnostics;
  },
  { delay: CHECK_DELAY },
);

async function serverCompletions(context) {
  if (!state.path) return null;
  const doc = context.state.doc;
  const where = lineChar(doc, context.pos);
  const word = context.matchBefore(/[\w.\-/:]*/);
  if (!context.explicit && word && word.from === word.to && !/[\s:\-[,]$/.test(doc.sliceString(Math.max(0, context.pos - 1), context.pos))) return null;
  let found;
  try {
    found = await call("/complete", { path: state.path, text: doc.toString(), ...where });
  } catch {
    return null;
  }
  if (!found.items.length) return null;
  const first = found.items.find((item) => item.from) || {};
  const from = first.from ? offset(doc, first.from) : word ? word.from : context.pos;
  return {
    from,
    options: found.items.map((item) => ({
      label: item.label,
      type: item.type === "property" ? "property" : item.type === "enummember" ? "enum" : "variable",
      apply: item.apply,
      info: item.info ? () => markdown(item.info) : undefined,
    })),
    validFor: /^[\w.\-/]*$/,
  };
}

const serverHover = hoverTooltip(async (view, pos) => {
  if (!state.path) return null;
  const doc = view.state.doc;
  let found;
  try {
    found = await call("/hover", { path: state.path, text: doc.toString(), ...lineChar(doc, pos) });
  } catch {
    return null;
  }
  if (!found.markdown) return null;
  return { pos, above: true, create: () => ({ dom: markdown(found.markdown) }) };
});

// The editor's colours follow the system's light or dark setting, as the page's do.
const darkScheme = window.matchMedia("(prefers-color-scheme: dark)");
const theme = new Compartment();
const themeFor = () => (darkScheme.matches ? oneDark : []);

function makeEditor(parent) {
  darkScheme.addEventListener("change", () => state.view.dispatch({ effects: theme.reconfigure(themeFor()) }));
  return new EditorView({
    parent,
    state: EditorState.create({
      doc: "",
      extensions: [
        basicSetup,
        theme.of(themeFor()),
        EditorView.lineWrapping,
        keymap.of([indentWithTab, { key: "Mod-s", run: () => (save(), true) }]),
        yaml(),
        lintGutter(),
        serverLinter,
        problemLines,
        autocompletion({ override: [serverCompletions], activateOnTyping: true }),
        serverHover,
        EditorView.updateListener.of((update) => {
          if (update.docChanged) showDirty();
        }),
        EditorView.contentAttributes.of({ "aria-label": "agent file (YAML)" }),
      ],
    }),
  });
}

function text() {
  return state.view.state.doc.toString();
}

function setText(next) {
  const view = state.view;
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: next } });
}

function showDirty() {
  const dirty = state.path && text() !== state.saved;
  $("ed-save").disabled = !dirty;
  $("ed-dirty").textContent = !state.path ? "" : dirty ? "unsaved changes" : "saved";
}

async function open(path) {
  if (state.path && text() !== state.saved && !confirm(`Leave ${state.path} without saving?`)) {
    $("ed-file").value = state.path;
    return;
  }
  const file = await call(`/file?path=${encodeURIComponent(path)}`);
  loaded(file);
}

function loaded(file) {
  state.path = file.path;
  state.version = file.version;
  state.saved = file.text;
  setText(file.text);
  const select = $("ed-file");
  if (![...select.options].some((o) => o.value === file.path)) select.append(h("option", { value: file.path }, file.path));
  select.value = file.path;
  history.replaceState(null, "", `/edit?file=${encodeURIComponent(file.path)}`);
  document.title = `${file.path} · agentctl editor`;
  showDirty();
  forceLinting(state.view);
  inputFields();
  if (state.mode === "form") showForm();
  say(`opened ${file.path}`);
}

async function listFiles() {
  const { files, root } = await call("/files");
  $("ed-root").textContent = `${root}/`;
  const select = $("ed-file");
  select.replaceChildren(h("option", { value: "", disabled: true, selected: !state.path }, "Open a file…"), ...files.map((f) => h("option", { value: f }, f)));
  if (state.path) select.value = state.path;
  return files;
}

// --------------------------------------------------------------------------- save

function diffDialog({ title, left, right, leftLabel, rightLabel, actions }) {
  const host = h("div", { class: "ed-merge" });
  const dialog = h(
    "dialog",
    { class: "ed-dialog", "aria-labelledby": "ed-dialog-title" },
    h("h2", { id: "ed-dialog-title" }, title),
    h("div", { class: "ed-merge-labels" }, h("span", {}, leftLabel), h("span", {}, rightLabel)),
    host,
    h("div", { class: "ed-row" }, ...actions.map(([label, value, primary]) => h("button", { type: "button", class: primary ? "ed-primary" : "", onclick: () => dialog.close(value) }, label))),
  );
  document.body.append(dialog);
  const readOnly = [EditorState.readOnly.of(true), EditorView.editable.of(false), yaml(), themeFor()];
  const merge = new MergeView({ a: { doc: left, extensions: readOnly }, b: { doc: right, extensions: readOnly }, parent: host, collapseUnchanged: { margin: 2, minSize: 4 }, gutter: true });
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      merge.destroy();
      dialog.remove();
      resolve(dialog.returnValue);
    });
  });
}

async function save() {
  if (!state.path) return;
  const mine = text();
  if (mine === state.saved) return;
  const answer = await diffDialog({
    title: `Save ${state.path}?`,
    left: state.saved,
    right: mine,
    leftLabel: "on disk",
    rightLabel: "yours",
    actions: [
      ["Save", "save", true],
      ["Cancel", ""],
    ],
  });
  if (answer !== "save") return;
  await write(mine, state.version);
}

async function write(mine, base) {
  try {
    const saved = await call("/save", { path: state.path, text: mine, base });
    state.version = saved.version;
    state.saved = mine;
    showDirty();
    const [note, kind] = servedNote(saved.served);
    say(`saved ${state.path}: new runs use it${note}`, kind);
  } catch (error) {
    if (error.status !== 409) return say(`not saved: ${error.message}`, "error");
    const theirs = error.data.text;
    const choice = await diffDialog({
      title: `${state.path} changed on disk since you opened it`,
      left: theirs ?? "",
      right: mine,
      leftLabel: theirs === null ? "on disk: deleted" : "on disk now",
      rightLabel: "yours",
      actions: [
        ["Keep yours (overwrite)", "mine", true],
        ["Take the disk's (lose yours)", "theirs"],
        ["Cancel", ""],
      ],
    });
    if (choice === "mine") await write(mine, error.data.version);
    else if (choice === "theirs") loaded({ path: state.path, text: theirs ?? "", version: error.data.version });
    else say("not saved: the file on disk changed", "error");
  }
}

/** What the server serves now that a file was written (the answer's `served`), as the end of
 * the status line, and the line's kind. */
function servedNote(served) {
  if (!served) return ["", "ok"];
  if (served.problem) return [`; the agents cannot be served as they are now (${served.problem})`, "error"];
  const parts = [];
  if (served.added.length) parts.push(`now served to the API and the chat: ${served.added.join(", ")}`);
  if (served.removed.length) parts.push(`no longer served: ${served.removed.join(", ")}`);
  return [parts.length ? `; ${parts.join("; ")}` : "", "ok"];
}

// --------------------------------------------------------------------------- the form

let options = null;

async function showForm() {
  const box = $("ed-form");
  box.replaceChildren(h("p", { class: "ed-muted" }, "Reading the file…"));
  let values;
  try {
    [values, options] = await Promise.all([call("/form", { text: text() }), call(`/options?path=${encodeURIComponent(state.path)}`)]);
  } catch (error) {
    box.replaceChildren(h("p", { class: "ed-error", role: "alert" }, error.message));
    return;
  }
  box.replaceChildren(renderForm(values));
}

async function applyForm(change) {
  try {
    const { text: next } = await call("/form/write", { text: text(), values: change });
    setText(next);
    say(`form: ${Object.keys(change).join(", ")} written into the YAML`, "ok");
  } catch (error) {
    say(`form: ${error.message}`, "error");
  }
}

function field(label, control, help) {
  const id = control.id;
  return h("div", { class: "ed-field" }, h("label", { for: id }, label), control, help ? h("div", { class: "ed-muted ed-small" }, help) : null);
}

function textInput(name, value, { multiline = false, placeholder = "" } = {}) {
  const control = multiline
    ? h("textarea", { id: `f-${name}`, name, rows: 6, placeholder }, value ?? "")
    : h("input", { id: `f-${name}`, name, type: "text", value: value ?? "", placeholder, autocomplete: "off" });
  control.addEventListener("change", () => applyForm({ [name]: control.value }));
  return control;
}

function checkboxes(name, all, chosen, legend) {
  const set = new Set(chosen);
  const boxes = [...new Set([...all, ...chosen])].map((item) => {
    const id = `f-${name}-${item}`.replace(/[^\w-]/g, "_");
    const box = h("input", { type: "checkbox", id, value: item, checked: set.has(item) });
    return h("label", { class: "ed-check", for: id }, box, " ", item);
  });
  const fieldset = h("fieldset", { id: `f-${name}` }, h("legend", {}, legend), ...(boxes.length ? boxes : [h("span", { class: "ed-muted" }, "none available")]));
  fieldset.addEventListener("change", () => applyForm({ [name]: [...fieldset.querySelectorAll("input:checked")].map((b) => b.value) }));
  return fieldset;
}

function inputsEditor(rows) {
  const table = h("div", { class: "ed-inputs", id: "f-inputs", role: "group", "aria-label": "inputs" });
  const collect = () =>
    [...table.querySelectorAll(".ed-input")].map((row) => ({
      name: row.querySelector("[data-k=name]").value.trim(),
      type: row.querySelector("[data-k=type]").value || null,
      description: row.querySelector("[data-k=description]").value || null,
      required: row.querySelector("[data-k=required]").checked,
      default: row.querySelector("[data-k=default]").value || null,
    }));
  const write = () => applyForm({ inputs: collect().filter((r) => r.name) });
  const row = (input) => {
    const element = h(
      "div",
      { class: "ed-input" },
      h("input", { "data-k": "name", value: input.name ?? "", placeholder: "name", "aria-label": "input name" }),
      h("select", { "data-k": "type", "aria-label": "input type" }, h("option", { value: "" }, "string"), ...options.input_types.filter((t) => t !== "string").map((t) => h("option", { value: t, selected: input.type === t }, t))),
      h("input", { "data-k": "description", value: input.description ?? "", placeholder: "what it is for", "aria-label": "input description" }),
      h("input", { "data-k": "default", value: input.default ?? "", placeholder: "default", "aria-label": "input default" }),
      h("label", {}, h("input", { type: "checkbox", "data-k": "required", checked: !!input.required }), " required"),
      h("button", { type: "button", "aria-label": `remove input ${input.name || ""}`, onclick: () => (element.remove(), write()) }, "Remove"),
    );
    element.addEventListener("change", write);
    return element;
  };
  table.append(...rows.map(row));
  const add = h("button", { type: "button", onclick: () => add.before(row({})) }, "Add an input");
  table.append(add);
  return table;
}

function renderForm(values) {
  const backend = h("select", { id: "f-backend", disabled: !values.backend_editable }, ...(values.backend_editable ? [] : [h("option", { value: values.backend }, `${values.backend} (edit it in YAML)`)]), h("option", { value: "" }, "state (default)"), ...options.backends.map((b) => h("option", { value: b, selected: values.backend === b }, b)));
  backend.addEventListener("change", () => applyForm({ backend: backend.value }));
  return h(
    "form",
    { class: "ed-form-body", "aria-label": "common settings", onsubmit: (e) => e.preventDefault() },
    field("Name", textInput("name", values.name), "The graph id: lowercase letters, digits, '-' and '_'."),
    field("Description", textInput("description", values.description)),
    field("Model", textInput("model", values.model, { placeholder: "provider:model, or replay:cassette.yaml" }), "replay: plays the recorded replies (offline); a provider runs live with its API key."),
    values.prompt === null ? h("p", { class: "ed-muted" }, "The prompt is a file: edit it in the YAML view.") : field("Prompt", textInput("prompt", values.prompt, { multiline: true })),
    checkboxes("tools", options.tools, values.tools, "Tools (Python functions of this folder)"),
    values.other_tools.length ? h("p", { class: "ed-muted ed-small" }, `Other tools (edit them in YAML): ${values.other_tools.join(", ")}`) : null,
    checkboxes("interrupt_on", options.tool_names, values.interrupt_on, "Ask for approval before"),
    field("Backend (where its files live)", backend),
    h("fieldset", {}, h("legend", {}, "Inputs"), inputsEditor(values.inputs)),
    checkboxes("subagents", options.agents, values.subagents, "Subagents (the other agent files here) it may delegate to"),
    values.other_subagents.length ? h("p", { class: "ed-muted ed-small" }, `Other subagents (edit them in YAML): ${values.other_subagents.join(", ")}`) : null,
  );
}

function setMode(mode) {
  state.mode = mode;
  document.body.dataset.mode = mode;
  for (const tab of document.querySelectorAll("[data-mode]")) tab.setAttribute("aria-selected", String(tab.dataset.mode === mode));
  if (mode === "form") showForm();
}

// --------------------------------------------------------------------------- try, record, test

function logLine(kind, ...content) {
  const log = $("ed-log");
  const line = h("div", { class: `ed-msg ed-${kind}` }, ...content);
  log.append(line);
  log.scrollTop = log.scrollHeight;
  return line;
}

function showEvents(result) {
  let reply = "";
  for (const event of result.events) {
    if (event.type === "text" && !event.parent_id) reply += event.text;
    else if (event.type === "tool_call") logLine("tool", `→ ${event.name}(${JSON.stringify(event.args).slice(0, 200)})`).title = JSON.stringify(event.args, null, 2);
    else if (event.type === "tool_result") logLine("tool", `← ${event.name}: ${String(event.content).slice(0, 200)}`).title = String(event.content);
    else if (event.type === "step_end") logLine("tool", `step ${event.step}: ${event.status} (${Number(event.seconds).toFixed(1)} s)`);
    else if (event.type === "error") logLine("error", event.message);
    else if (event.type === "final") logLine("agent", event.content || reply);
  }
  const last = result.events[result.events.length - 1];
  state.thread = result.waiting ? result.thread_id : null;
  if (result.waiting && last && last.type === "interrupt") askApproval(last);
  if (result.recorded) logLine("note", `recorded into ${result.recorded}`);
}

function askApproval(interrupt) {
  const box = logLine("approvals");
  const decisions = [];
  const buttons = [];
  interrupt.actions.forEach((action, index) => {
    const row = h(
      "div",
      { class: "ed-approval" },
      h("strong", {}, `Approve ${action.name}?`),
      action.description && !action.description.startsWith("Tool execution requires approval") ? h("span", { class: "ed-muted ed-small" }, action.description) : null,
      h("pre", {}, JSON.stringify(action.args, null, 2)),
    );
    const choices = h("div", { class: "ed-row" });
    const editor = h("div", { class: "ed-args", hidden: true });
    const labels = { approve: "Approve", edit: "Edit arguments", reject: "Reject" };
    for (const kind of ["approve", "edit", "reject"].filter((k) => action.allowed_decisions.includes(k))) {
      const onclick = kind === "edit" ? () => editArguments(editor, row, action, (args) => decide(index, "edit", choices, args)) : () => decide(index, kind, choices);
      const button = h("button", { type: "button", class: kind === "approve" ? "ed-primary" : kind === "edit" ? "ed-edit" : "", onclick }, labels[kind]);
      buttons.push(button);
      choices.append(button);
    }
    row.append(choices, editor);
    box.append(row);
  });
  async function decide(index, kind, choices, args) {
    decisions[index] = kind === "edit" ? { type: "edit", args } : { type: kind };
    choices.parentElement.querySelector(".ed-args").hidden = true;
    const done = { approve: "approved", edit: "approved with edited arguments", reject: "rejected" };
    choices.replaceChildren(h("span", { class: "ed-muted" }, done[kind]));
    if (decisions.filter(Boolean).length < interrupt.actions.length) return;
    buttons.forEach((b) => (b.disabled = true));
    await run(() => call("/answer", { thread_id: state.thread, decisions }));
  }
}

/** The tool's argument schema, from the served agent of the file's `name:` (null when it is not
 * served, or the tool is not found: the arguments are then checked to be a JSON object only). */
async function toolSchema(tool) {
  const name = (text().match(/^name:\s*["']?([A-Za-z0-9_.-]+)/m) || [])[1];
  if (!name) return null;
  try {
    const response = await fetchWithKey(`/web/api/agents/${encodeURIComponent(name)}/tools`);
    if (!response.ok) return null;
    const tools = (await response.json()).tools || {};
    return tools[tool] || null;
  } catch {
    return null;
  }
}

/** The chat's argument editor (runner/web/static/js/approvals.js), in the try panel: the
 * arguments as JSON, checked against the tool's schema as you type; Esc closes it. */
async function editArguments(editor, row, action, submit) {
  const shown = row.querySelector("pre");
  const schema = await toolSchema(action.name);
  const area = h("textarea", { class: "ed-json", rows: 8, spellcheck: "false", "aria-label": `arguments of ${action.name} as JSON` });
  area.value = JSON.stringify(action.args, null, 2);
  const problem = h("div", { class: "ed-error ed-small", role: "alert" });
  const save = h("button", { type: "button", class: "ed-primary" }, "Approve with these arguments");
  bindArgumentCheck(area, problem, save, schema, submit);
  area.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    event.preventDefault();
    editor.hidden = true; // back to the arguments as the model wrote them
    if (shown) shown.hidden = false;
    const edit = row.querySelector("button.ed-edit");
    if (edit) edit.focus();
  });
  const rows = schema ? describeSchema(schema) : [];
  editor.replaceChildren(
    area,
    problem,
    rows.length
      ? h("ul", { class: "ed-muted ed-small" }, ...rows.map((r) => h("li", {}, h("code", {}, r.key), ` (${r.flags})`, r.description ? ` ${r.description}` : "")))
      : h("div", { class: "ed-muted ed-small" }, "the arguments as a JSON object"),
    save,
  );
  if (shown) shown.hidden = true;
  editor.hidden = false;
  area.focus();
}

async function run(request) {
  $("ed-try").disabled = true;
  $("ed-busy").hidden = false;
  try {
    showEvents(await request());
  } catch (error) {
    logLine("error", error.message);
  } finally {
    $("ed-try").disabled = false;
    $("ed-busy").hidden = true;
  }
}

/** The agent's typed inputs as fields above the message (kept while their names stay). */
async function inputFields() {
  let inputs = [];
  try {
    inputs = (await call("/form", { text: text() })).inputs;
  } catch {
    inputs = []; // a workflow, or a file the form cannot read: no fields
  }
  const box = $("ed-vars");
  const names = inputs.map((i) => i.name).join(",");
  if (box.dataset.names !== names) {
    box.dataset.names = names;
    box.replaceChildren(
      ...inputs.map((input) => {
        const id = `ed-var-${input.name}`;
        const control =
          input.type === "boolean"
            ? h("select", { id, "data-name": input.name }, h("option", { value: "" }, ""), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"))
            : h("input", { id, "data-name": input.name, value: input.default ?? "", placeholder: input.description || input.type || "string", autocomplete: "off" });
        control.required = !!input.required;
        return h("div", { class: "ed-field" }, h("label", { for: id }, `${input.name}${input.required ? " (required)" : ""}`), control);
      }),
    );
  }
  const vars = {};
  for (const control of box.querySelectorAll("[data-name]")) {
    if (control.value !== "") vars[control.dataset.name] = control.value;
    else if (control.required) {
      control.focus();
      return null;
    }
  }
  return vars;
}

async function tryIt(record = false) {
  const message = $("ed-message").value.trim();
  if (!state.path) return say("open or create an agent first", "error");
  const vars = await inputFields();
  if (vars === null) return say("give the required inputs first", "error");
  if (!message) return $("ed-message").focus();
  const model = $("ed-model").value.trim() || null;
  const cassette = state.path.replace(/\.ya?ml$/, ".cassette.yaml");
  if (record && !confirm(`Record this run into ${cassette}? It replaces the replies recorded there.`)) return;
  logLine("user", message);
  $("ed-message").value = "";
  return run(() => call("/try", { path: state.path, text: text(), message, record, vars, model }));
}

async function runTests() {
  if (!state.path) return say("open or create an agent first", "error");
  const box = $("ed-tests");
  const unsaved = text() !== state.saved ? " (your unsaved changes are not in them: save first to test them)" : "";
  box.replaceChildren(h("p", { class: "ed-muted" }, `Running the test file on the saved files…${unsaved}`));
  try {
    const result = await call("/test", { path: state.path });
    const s = result.summary;
    box.replaceChildren(
      h("h3", {}, `${result.file}: ${s.passed} passed, ${s.failed} failed, ${s.error} errors, ${s.skipped} skipped`),
      ...result.problems.map((p) => h("p", { class: "ed-error" }, p)),
      h("ul", {}, ...result.cases.map((c) => h("li", { class: `ed-case ed-${c.status}` }, h("span", {}, `${c.status}  ${c.name}`), c.details.length ? h("pre", {}, c.details.join("\n")) : null))),
    );
  } catch (error) {
    box.replaceChildren(h("p", { class: "ed-error", role: "alert" }, error.message));
  }
}

// --------------------------------------------------------------------------- new agent

async function newAgent() {
  const input = h("input", { id: "ed-new-name", required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", autocomplete: "off", "aria-label": "name of the new agent", placeholder: "my-agent" });
  const dialog = h(
    "dialog",
    { class: "ed-dialog", "aria-labelledby": "ed-new-title" },
    h(
      "form",
      { method: "dialog" },
      h("h2", { id: "ed-new-title" }, "New agent"),
      h("p", { class: "ed-muted" }, "A starter agent (what `agentctl init` writes) in a folder of its name: it runs at once, offline, on its recorded replies."),
      h("label", { for: "ed-new-name" }, "Name (lowercase letters, digits, '-', '_')"),
      input,
      h("div", { class: "ed-row" }, h("button", { type: "submit", class: "ed-primary", value: "make" }, "Create"), h("button", { type: "button", onclick: () => dialog.close("") }, "Cancel")),
    ),
  );
  document.body.append(dialog);
  dialog.showModal();
  const choice = await new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue)));
  dialog.remove();
  if (choice !== "make" || !input.value.trim()) return;
  try {
    const made = await call("/new", { name: input.value.trim() });
    await listFiles();
    loaded(made);
    const [note, kind] = servedNote(made.served);
    say(`created ${made.path} from the starter${note}`, kind);
  } catch (error) {
    say(`not created: ${error.message}`, "error");
  }
}

// --------------------------------------------------------------------------- the page

function page() {
  const root = $("editor-app");
  root.replaceChildren(
    h(
      "header",
      { class: "ed-top" },
      h("a", { href: "/", class: "ed-brand" }, "agentctl"),
      h("span", { class: "ed-muted", id: "ed-root" }),
      h("label", { for: "ed-file", class: "ed-visually-hidden" }, "file"),
      h("select", { id: "ed-file", onchange: (e) => open(e.target.value) }),
      h("button", { type: "button", id: "ed-new", onclick: newAgent }, "New agent"),
      h("div", { role: "tablist", class: "ed-tabs", "aria-label": "view" }, h("button", { type: "button", role: "tab", "data-mode": "yaml", onclick: () => setMode("yaml") }, "YAML"), h("button", { type: "button", role: "tab", "data-mode": "form", onclick: () => setMode("form") }, "Form")),
      h("button", { type: "button", id: "ed-save", class: "ed-primary", onclick: save, disabled: true, title: "Save (Ctrl+S): shows the diff first" }, "Save…"),
      h("span", { id: "ed-dirty", class: "ed-muted ed-small" }),
      h("span", { id: "ed-problems", class: "ed-small", role: "status", "aria-live": "polite" }),
    ),
    h(
      "div",
      { class: "ed-layout" },
      h("main", { class: "ed-main", "aria-label": "the agent file" }, h("div", { id: "ed-code" }), h("div", { id: "ed-form", class: "ed-form" })),
      h(
        "aside",
        { class: "ed-side", "aria-label": "try it" },
        h("h2", {}, "Try it"),
        h("p", { class: "ed-muted ed-small" }, "Runs the text in the editor, saved or not, on its model: a replay: cassette offline, or a real model when its key is set."),
        h("div", { id: "ed-log", "aria-live": "polite" }),
        h("div", { id: "ed-vars", role: "group", "aria-label": "inputs of the agent" }),
        h("p", { id: "ed-busy", hidden: true, class: "ed-muted" }, "running…"),
        h(
          "form",
          { class: "ed-composer", onsubmit: (e) => (e.preventDefault(), tryIt()) },
          h("label", { for: "ed-model", class: "ed-small ed-muted" }, "Model for tries (empty: the file's)"),
          h("input", { id: "ed-model", autocomplete: "off", placeholder: "e.g. openai:gpt-4.1 (its API key set on the server)" }),
          h("label", { for: "ed-message", class: "ed-visually-hidden" }, "message to the agent"),
          h("textarea", { id: "ed-message", rows: 2, placeholder: "Ask the agent something" }),
          h("div", { class: "ed-row" }, h("button", { type: "submit", id: "ed-try", class: "ed-primary" }, "Try it"), h("button", { type: "button", id: "ed-record", onclick: () => tryIt(true), title: "Run on a live model (the one for tries, or the file's) and save its replies as the agent's cassette" }, "Record"), h("button", { type: "button", id: "ed-test", onclick: runTests, title: "Run the agent's test file (saved files)" }, "Test")),
        ),
        h("div", { id: "ed-tests", "aria-live": "polite" }),
      ),
    ),
    h("footer", { class: "ed-foot" }, h("span", { id: "ed-status", role: "status", "aria-live": "polite" })),
  );
  state.view = makeEditor($("ed-code"));
  $("ed-message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      tryIt();
    }
  });
  window.addEventListener("beforeunload", (event) => {
    if (state.path && text() !== state.saved) event.preventDefault();
  });
  setMode("yaml");
}

async function start() {
  page();
  try {
    const files = await listFiles();
    const wanted = new URLSearchParams(location.search).get("file");
    if (wanted && files.includes(wanted)) await open(wanted);
    else say(files.length ? "open a file, or make a new agent" : "no agent files yet: make a new agent");
  } catch (error) {
    say(error.status === 404 ? "this server does not edit: start it with `agentctl serve --edit`" : error.message, "error");
  }
}

// read by the browser test (tests/web/test_web_editor.py)
window.agentctlEditor = { state };
start();
