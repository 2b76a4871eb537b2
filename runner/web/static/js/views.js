// The page's views, one at a time in the main area (`<main id="views">`), each with a button in
// the header's navigation (`#views-nav`, shown once there are two): the chat is the first.
// Another part of the page (the YAML editor of `serve --edit`) adds its own with `addView`,
// imported from this module or, for a script loaded on its own, as `window.agentctl.addView`
// (announced by the `agentctl:ready` event on `document`).
import { $ } from "./state.js";
import { h } from "./dom.js";

const views = new Map(); // id -> {section, button, onShow}

/** The chat, already in the page, as the first view (whoever asks first registers it). */
function withChat() {
  if (!views.has("chat")) {
    const button = $("views-nav").querySelector('[data-view="chat"]');
    button.addEventListener("click", () => showView("chat"));
    views.set("chat", { section: $("view-chat"), button, onShow: null });
  }
  return views;
}

/**
 * Add a view: a section in the main area and its button in the header; returns the section to
 * fill. `onShow()` runs each time it is shown.
 */
export function addView(id, label, { onShow } = {}) {
  if (withChat().has(id)) return views.get(id).section;
  const section = h("section", { id: `view-${id}`, class: "view", "aria-label": label, hidden: true });
  $("views").append(section);
  const button = h("button", { type: "button", dataset: { view: id }, "aria-pressed": "false" }, label);
  button.addEventListener("click", () => showView(id));
  $("views-nav").append(button);
  views.set(id, { section, button, onShow });
  return section;
}

/** Show the view `id` (the others hidden, its button pressed). */
export function showView(id) {
  if (!withChat().has(id)) return;
  document.body.dataset.view = id;
  for (const [name, view] of views) {
    view.section.hidden = name !== id;
    view.button.setAttribute("aria-pressed", String(name === id));
  }
  const shown = views.get(id);
  if (shown.onShow) shown.onShow();
}

export function initViews() {
  withChat();
  window.agentctl = { ...(window.agentctl || {}), addView, showView };
  document.dispatchEvent(new CustomEvent("agentctl:ready"));
}
