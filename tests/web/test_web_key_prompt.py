"""The page on a server that needs an API key (`agentctl serve --api-keys`): it asks for the key
when the server answers 401, keeps it for the tab only (sessionStorage), and sends it as
`x-api-key` on every request, the API's and the side API's. Debian's chromium, driven by
Playwright, against one server per engine (in memory; Aegra on Postgres) for the module."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.serve import servers
from tests.serve.test_serve_contract import aegra_args

pytest.importorskip("langgraph_api")
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip(
        "Debian's chromium is not installed (scripts/setup dev installs it when run as root)",
        allow_module_level=True,
    )

KEY = "alice-7f3a9c-key"
GREETER = "name: greeter\ndescription: Says hello\nmodel: replay:greeter.cassette.yaml\nprompt: p\n"
WAIT = 30_000  # ms: a wait limit for a loaded 2-core machine, not a measurement
API = ("/threads", "/assistants", "/store", "/runs", "/web/api/")
"""Paths of the API and the side API (the page and its assets are public)."""


@pytest.fixture(scope="module", params=["memory", "aegra"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp(f"keyed-{request.param}")
    (folder / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (folder / "greeter.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    (folder / "keys.yaml").write_text(f"keys:\n  - {{user: alice, key: {KEY}}}\n", "utf-8")
    args = ["--api-keys", "keys.yaml"]
    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if request.param == "memory":
            args.append("--dev")
        else:
            engine_args, env = stack.enter_context(aegra_args(request))
            args += engine_args
        served = stack.enter_context(
            servers.serving(
                [folder / "greeter.yaml"], cwd=folder, args=args, env=env, log=folder / "serve.log"
            )
        )
        yield served.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM)  # never a downloaded browser
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def context(browser: Any, server: str) -> Iterator[Any]:
    context = browser.new_context(base_url=server)
    context.set_default_timeout(WAIT)
    try:
        yield context
    finally:
        context.close()


class Watched:
    """A tab, with every API request it sent (path, x-api-key, status) and its errors."""

    def __init__(self, context: Any) -> None:
        self.page = context.new_page()
        self.sent: list[tuple[str, str | None, int]] = []
        self.bearers: list[str | None] = []
        """The Authorization header of each API request (a token pasted as the key works)."""
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("response", self._answered)

    def _answered(self, response: Any) -> None:
        path = urlsplit(response.url).path
        if path.startswith(API):
            self.sent.append((path, response.request.headers.get("x-api-key"), response.status))
            self.bearers.append(response.request.headers.get("authorization"))

    def answer(self, key: str) -> None:
        dialog = self.page.locator("#key-dialog")
        playwright.expect(dialog).to_be_visible()
        dialog.locator("input").fill(key)
        dialog.locator("button.save").click()


def _expect_agents(page: Any) -> None:
    playwright.expect(page.locator('#agents .agent[data-agent="greeter"]')).to_be_visible()


def test_the_page_asks_for_a_key_keeps_it_for_the_tab_and_sends_it_everywhere(
    context: Any,
) -> None:
    tab = Watched(context)
    tab.page.goto("/")
    # the first requests were refused, and one dialog asks (not one per request)
    playwright.expect(tab.page.locator("#key-dialog")).to_have_count(1)
    assert tab.sent and {status for _, _, status in tab.sent} == {401}
    assert tab.page.locator('#agents .agent[data-agent="greeter"]').count() == 0

    # a wrong key is refused and asked for again, saying so
    tab.answer("not-the-key")
    playwright.expect(tab.page.locator("#key-dialog .key-refused")).to_contain_text("refused")
    tab.answer(KEY)
    _expect_agents(tab.page)
    playwright.expect(tab.page.locator("#key-dialog")).to_have_count(0)

    # the page works with it: a run streams to its answer
    tab.page.click('#agents .agent[data-agent="greeter"]')
    tab.page.click("#new-thread")
    tab.page.fill("#message", "hi")
    tab.page.press("#message", "Enter")
    playwright.expect(tab.page.locator("#log .msg.ai").first).to_contain_text("Hello there.")
    tab.page.click("#refresh-files")  # the side API's files route too
    playwright.expect(tab.page.locator("#routes")).not_to_be_empty()

    # every request after the key was given carried it, and every one was answered
    accepted = next(i for i, (_, key, _) in enumerate(tab.sent) if key == KEY)
    after = tab.sent[accepted:]
    paths = {path for path, _, _ in after}
    assert {"/web/api/agents", "/threads", "/threads/search"} <= paths, paths
    assert any(p.endswith("/runs/stream") for p in paths), paths
    assert any(p.startswith("/web/api/agents/greeter/") for p in paths), paths
    assert [s for s in after if s[1] != KEY] == [], after
    assert [s for s in after if s[2] == 401] == [], after

    # kept for this tab only: in sessionStorage, never in localStorage or a cookie
    stored = tab.page.evaluate("[sessionStorage.length, localStorage.length, document.cookie]")
    assert stored == [1, 0, ""]
    assert context.cookies() == []

    # a reload of the tab keeps it: no question
    tab.sent.clear()
    tab.bearers.clear()
    tab.page.reload()
    _expect_agents(tab.page)
    assert tab.page.locator("#key-dialog").count() == 0
    assert {key for _, key, _ in tab.sent} == {KEY}
    assert set(tab.bearers) == {f"Bearer {KEY}"}

    # another tab does not have it: it asks again
    other = Watched(context)
    other.page.goto("/")
    playwright.expect(other.page.locator("#key-dialog")).to_be_visible()
    assert other.page.evaluate("sessionStorage.length") == 0
    assert not tab.errors and not other.errors, tab.errors + other.errors


def test_a_cancelled_question_says_a_key_is_needed_and_asks_no_more(context: Any) -> None:
    tab = Watched(context)
    tab.page.goto("/")
    playwright.expect(tab.page.locator("#key-dialog")).to_be_visible()
    tab.page.click("#key-dialog button.cancel")
    playwright.expect(tab.page.locator("#log .error-row").first).to_contain_text(
        "the server needs an API key"
    )
    playwright.expect(tab.page.locator("#key-dialog")).to_have_count(0)
    assert tab.page.evaluate("sessionStorage.length") == 0
    assert not tab.errors, tab.errors
