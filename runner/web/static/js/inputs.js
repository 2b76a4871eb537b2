// The selected agent's typed inputs as a form (served as `configurable.vars` with each run):
// types, choices, bounds and defaults from the side API; required ones asked before the first
// message, the send (or Run) button saying why it waits. Reopening a thread restores the inputs
// its last run was given.
import { $, S, currentAgent } from "./state.js";
import { clear, h } from "./dom.js";

/** The fields a person fills in (a `file` input is the server's: a path on its disk). */
function fieldsOf(agent) {
  return ((agent && agent.inputs) || []).filter((f) => f.type !== "file");
}

/** The form of the selected agent's typed inputs (a workflow's has its Run button), redrawn only
 * when the agent or its inputs change, so the periodic listing never disturbs typing. */
export function renderInputs() {
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
    form.append(h("div", { class: "muted small" }, workflow ? `${agent.name} is a workflow: ${fields.length ? "fill in its inputs and run it" : "run it"}` : `inputs of ${agent.name}, sent with each run`));
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
export function inputValues() {
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
export function checkInputs() {
  const { problems } = inputValues();
  const why = problems.length ? `First ${problems.join("; ")}.` : "";
  for (const button of [$("send"), $("run-workflow")]) {
    if (!button) continue;
    button.disabled = S.running || problems.length > 0;
    button.title = why;
  }
  $("send-why").textContent = why;
}


/** Fill the form of `agentName` with `vars`, the inputs a thread's run was given (as its
 * fields hold them: an enum by its index, a boolean checked or not, a number as text). */
export function restoreInputs(agentName, vars) {
  const agent = S.agents.find((a) => a.name === agentName);
  if (!agent || !vars || typeof vars !== "object") return;
  const held = {};
  for (const field of fieldsOf(agent)) {
    if (!(field.name in vars)) continue;
    const value = vars[field.name];
    if (field.type === "enum") {
      const index = field.enum.findIndex((choice) => choice === value);
      if (index >= 0) held[field.name] = String(index);
    } else if (field.type === "boolean") {
      held[field.name] = Boolean(value);
    } else {
      held[field.name] = value == null ? "" : String(value);
    }
  }
  S.inputs[agentName] = held;
  S.inputsShown = null; // drawn again with these values
  renderInputs();
}
