// The API key, when the server asks for one (it answers 401): asked for in a small dialog, kept
// in sessionStorage (this tab only: gone when the tab closes, never shared with other tabs) and
// sent on every request, the API's and the side API's, as `x-api-key` and as a bearer
// credential: the server takes either, and an OpenID Connect token only as the latter.
import { h } from "./dom.js";

const STORE = "agentctl.api-key";
let asking = null; // one dialog at a time, however many requests were refused together
let declined = false; // cancelled: not asked again in this page (a reload asks again)

/** The key to send, or null. */
export function currentKey() {
  return sessionStorage.getItem(STORE);
}

/** `headers` with the key added when there is one. */
export function withKey(headers = {}) {
  const key = currentKey();
  return key ? { ...headers, "x-api-key": key, authorization: `Bearer ${key}` } : headers;
}

/**
 * `fetch(path, init)` with the key; on 401, ask for a key (again, saying the last one was
 * refused) and send the request once more with it. Rejects when the person cancels.
 */
export async function fetchWithKey(path, init = {}) {
  for (;;) {
    const sent = currentKey();
    const response = await fetch(path, { ...init, headers: withKey(init.headers) });
    if (response.status !== 401) return response;
    if (currentKey() !== sent) continue; // another request's dialog gave a new key meanwhile
    sessionStorage.removeItem(STORE);
    sessionStorage.setItem(STORE, await askForKey(sent !== null));
  }
}

function askForKey(refused) {
  if (declined) return Promise.reject(new Error("the server needs an API key: reload the page to give one"));
  asking ??= new Promise((resolve, reject) => {
    const input = h("input", { id: "api-key", type: "password", autocomplete: "off", required: true, "aria-label": "API key" });
    const dialog = h(
      "dialog",
      { id: "key-dialog", "aria-labelledby": "key-title" },
      h(
        "form",
        { method: "dialog" },
        h("h3", { id: "key-title" }, "This server needs an API key"),
        refused ? h("p", { class: "key-refused" }, "The key was refused: try another.") : null,
        h("p", { class: "muted small" }, "It is kept for this tab only, until the tab is closed."),
        input,
        h("div", { class: "row" }, h("button", { type: "submit", class: "save" }, "Use this key"), h("button", { type: "button", class: "cancel", onclick: () => dialog.close("") }, "Cancel")),
      ),
    );
    dialog.addEventListener("close", () => {
      dialog.remove();
      asking = null;
      const key = dialog.returnValue === "" ? "" : input.value.trim();
      if (key) resolve(key);
      else {
        declined = true;
        reject(new Error("the server needs an API key: reload the page to give one"));
      }
    });
    dialog.querySelector("form").addEventListener("submit", (event) => {
      event.preventDefault();
      dialog.close(input.value.trim() ? "key" : "");
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
  return asking;
}
