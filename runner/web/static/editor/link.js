// The chat page's way to the editor: the "Edit agents" link shows only when the server edits
// (`agentctl serve --edit`) and this user may (an admin, when the server has users).
import { withKey } from "/web/static/js/key.js";

const link = document.getElementById("edit-link");
// The agents' listing says whether the server edits: a server that does not is not asked (a
// 404 on each page load, in the browser's console and the server's log).
if (link) {
  fetch("/web/api/agents", { headers: withKey() })
    .then((answer) => (answer.ok ? answer.json() : { edit: false }))
    .then((listed) => (listed.edit ? fetch("/web/api/edit/files", { headers: withKey() }) : null))
    .then((answer) => {
      link.hidden = !(answer && answer.ok);
    })
    .catch(() => {});
}
