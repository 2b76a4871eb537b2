// The chat page's way to the editor: the "Edit agents" link shows only when the server edits
// (`agentctl serve --edit`) and this user may (an admin, when the server has users).
import { withKey } from "/web/static/js/key.js";

const link = document.getElementById("edit-link");
if (link) {
  fetch("/web/api/edit/files", { headers: withKey() })
    .then((answer) => {
      link.hidden = !answer.ok;
    })
    .catch(() => {});
}
