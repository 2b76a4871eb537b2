// The files of the open thread as its agent sees them, route by route: `state` files from the
// thread's state, `store` files from the store API, filesystem files from the side API (read
// through the agent's own confined backend); the ones the thread wrote marked as changed.
import { api } from "./api.js";
import { activate, clear, h, numbered } from "./dom.js";
import { $, S } from "./state.js";


let filesTimer = null;
export function refreshFiles() {
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
        { class: `file${changed ? " changed" : ""}${file.path === S.viewing ? " selected" : ""}`, dataset: { path: file.path }, tabindex: 0, role: "button", "aria-label": `${file.path}${changed ? " (changed by this thread)" : ""}, ${file.kind}`, onclick: () => viewFile(file), onkeydown: (e) => activate(e, () => viewFile(file)) },
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

