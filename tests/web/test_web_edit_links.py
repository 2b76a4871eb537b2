"""Who the chat page leads to the editor: on `agentctl serve --edit` with users, an admin sees
"Edit agents" and an Edit link on each agent's row (to its file in the editor); another user sees
neither, though the page lists the same agents. Debian's chromium, driven by Playwright, against
one in-memory server for the module."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve import servers

pytest.importorskip("langgraph_api")
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("needs Debian's chromium (apt install chromium)", allow_module_level=True)
pytestmark = pytest.mark.slow

WAIT = 30_000  # ms: a wait limit for a loaded 2-core machine, not a measurement
ADMIN_KEY = "ada-key-" + "a" * 24
USER_KEY = "bob-key-" + "b" * 24
GREETER = (
    "name: greeter\ndescription: Says hello\nmodel: replay:greeter.cassette.yaml\nprompt: Hi.\n"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("edit-links")
    (folder / "agents").mkdir()
    (folder / "agents" / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (folder / "agents" / "greeter.cassette.yaml").write_text("- content: Hi.\n", "utf-8")
    (folder / "keys.yaml").write_text(
        f"keys:\n  - {{user: ada, key: {ADMIN_KEY}}}\n  - {{user: bob, key: {USER_KEY}}}\n",
        encoding="utf-8",
    )
    args = ["--edit", "--api-keys", "keys.yaml", "--admin", "ada"]
    with servers.serving(["agents"], cwd=folder, args=args, log=folder / "serve.log") as served:
        yield served.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM)  # never a downloaded browser
        try:
            yield launched
        finally:
            launched.close()


def _page(browser: Any, server: str, key: str) -> tuple[Any, Any]:
    context = browser.new_context(base_url=server)
    context.set_default_timeout(WAIT)
    # the key as the page keeps it once asked (sessionStorage, this tab only)
    context.add_init_script(f"sessionStorage.setItem('agentctl.api-key', {key!r})")
    page = context.new_page()
    page.goto("/")
    playwright.expect(page.locator('#agents .agent[data-agent="greeter"]')).to_be_visible()
    return context, page


def test_an_admin_is_led_to_each_agent_file(browser: Any, server: str) -> None:
    context, page = _page(browser, server, ADMIN_KEY)
    playwright.expect(page.get_by_role("link", name="Edit agents")).to_be_visible()
    page.get_by_role("link", name="edit greeter's file (greeter.yaml)").click()
    playwright.expect(page).to_have_url(re.compile(r"/edit\?file=greeter\.yaml$"))
    playwright.expect(page.locator(".cm-content")).to_contain_text("name: greeter")
    context.close()


def test_a_user_who_may_not_edit_sees_no_way_to_the_editor(browser: Any, server: str) -> None:
    context, page = _page(browser, server, USER_KEY)
    # once the editor has answered this user (403), the page shows no link to it
    page.wait_for_load_state("networkidle")
    playwright.expect(page.locator("#edit-link")).to_be_hidden()
    playwright.expect(page.locator("#agents a.edit-agent")).to_have_count(0)
    context.close()
