// The chat page's way to the editor: the "Edit agents" link, and an "Edit" link on each agent
// whose file the editor opens, show only when the server edits (`agentctl serve --edit`) and
// this user may (an admin, when the server has users). The agents list (js/app.js) reads
// `data-can-edit` on <body>, and draws itself again on the `agentctl:can-edit` event.
import { withKey } from "/web/static/js/key.js";

const link = document.getElementById("edit-link");
// The agents' listing says whether the server edits: a server that does not is not asked (a
// 404 on each page load, in the browser's console and the server's log).
fetch("/web/api/agents", { headers: withKey() })
  .then((answer) => (answer.ok ? answer.json() : { edit: false }))
  .then((listed) => (listed.edit ? fetch("/web/api/edit/files", { headers: withKey() }) : null))
  .then((answer) => {
    if (link) link.hidden = !(answer && answer.ok);
    if (!(answer && answer.ok)) return;
    document.body.dataset.canEdit = "true";
    document.dispatchEvent(new Event("agentctl:can-edit"));
  })
  .catch(() => {});
