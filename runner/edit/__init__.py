"""`agentctl serve --edit`: the page as the place where a person writes, checks, runs and tests
an agent file of the served folder.

    folder.py     the one folder the editor may touch: paths confined to it, versions (hashes),
                  saves that never overwrite a file changed meanwhile
    language.py   the language server's checks, completion and hover, over HTTP
    form.py       the common settings as a form, written back with comments and order kept
    newagent.py   "new agent": the starter of `agentctl init`, as NAME.yaml and its companions
    trying.py     "try it", "record" and "test" on the edited file
    app.py        the routes, admins only when the server has users

The language features are the language server's own (`runner.lsp`): the page shows what
`agentctl validate` and `agentctl lsp` show, from the same code. The front end is
`runner/web/static/editor/` (built from `web/editor/` by `scripts/build-web`).
"""

from __future__ import annotations

from runner.edit.app import edit_routes
from runner.edit.folder import AgentsFolder, Conflict, OutsideFolder

__all__ = ["AgentsFolder", "Conflict", "OutsideFolder", "edit_routes"]
