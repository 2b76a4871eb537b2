// Building the page's DOM. Text is always set with text nodes: nothing the model or a tool wrote
// is ever parsed as HTML: the page never assigns markup (a test checks the assets for it).

/** h("div", {class: "x", onclick: f}, "text", child, [more]) -> an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Append children (strings become text nodes, arrays are flattened, null is skipped). */
export function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** A short, readable time: "14:05" today, "3 Nov 14:05" before. */
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return today ? time : `${date.toLocaleDateString([], { day: "numeric", month: "short" })} ${time}`;
}

/** Text of a message's content (a string, or a list of content blocks). */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((block) => (typeof block === "string" ? block : block && block.type === "text" ? block.text || "" : ""))
      .join("");
  }
  return content == null ? "" : JSON.stringify(content);
}

/** Read-only text with line numbers (one row per line). */
export function numbered(text) {
  const lines = String(text).split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return h(
    "div",
    { class: "numbered", role: "region", "aria-label": "file content" },
    lines.map((line, i) => h("div", { class: "line" }, h("span", { class: "ln" }, String(i + 1)), h("span", { class: "lt" }, line))),
  );
}

/** Run `action` when `key` is pressed inside `el` (the key goes no further). */
export function onKey(el, key, action) {
  el.addEventListener("keydown", (event) => {
    if (event.key !== key || event.isComposing) return;
    event.preventDefault();
    event.stopPropagation();
    action();
  });
}

/** Run `action` when Escape is pressed inside `el`. */
export function onEscape(el, action) {
  onKey(el, "Escape", action);
}

/** Enter or Space on an element that acts as a button. */
export function activate(event, action) {
  if (event.target !== event.currentTarget || (event.key !== "Enter" && event.key !== " ")) return;
  event.preventDefault();
  action();
}

/** A tool call's arguments as a person reads them: each name over its value, text as written
 * (its line breaks kept, not `\n` inside a JSON string), any other value as short JSON. */
export function argsView(args, attrs = {}) {
  const entries = args && typeof args === "object" && !Array.isArray(args) ? Object.entries(args) : null;
  if (!entries) return h("pre", attrs, JSON.stringify(args, null, 2));
  return h(
    "dl",
    attrs,
    entries.map(([name, value]) => [
      h("dt", {}, name),
      h("dd", {}, h("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2))),
    ]),
  );
}
