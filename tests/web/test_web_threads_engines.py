"""The page's thread list on both engines (in memory; Aegra on Postgres), with authentication:
a person sees only their own threads, renames and deletes them through the engine's thread API,
and a thread's usage and cost are counted for its owner only. Debian's chromium, driven by
Playwright, against one server per engine for the module."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from typing import Any

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

KEYS = {"alice": "alice-2b71-5d0e-key", "bob": "bob-93c0-e4a1-9f2-key"}
PRICED = """\
name: priced
description: Answers at a known price
model: {id: "replay:priced.cassette.yaml", price: {input: 2, output: 8}}
prompt: You answer.
"""
REPLIES = "- {content: First answer., usage: {input_tokens: 1000, output_tokens: 500}}\n"
WAIT = 30_000  # ms: a wait limit for a loaded 2-core machine, not a measurement
playwright.expect.set_options(timeout=WAIT)


@pytest.fixture(scope="module", params=["memory", "aegra"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp(f"threads-{request.param}")
    (folder / "priced.yaml").write_text(PRICED, encoding="utf-8")
    (folder / "priced.cassette.yaml").write_text(REPLIES, encoding="utf-8")
    keys = "".join(f"  - {{user: {user}, key: {key}}}\n" for user, key in KEYS.items())
    (folder / "keys.yaml").write_text(f"keys:\n{keys}", encoding="utf-8")
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
                [folder / "priced.yaml"], cwd=folder, args=args, env=env, log=folder / "serve.log"
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


@contextlib.contextmanager
def _as(browser: Any, server: str, user: str) -> Iterator[Any]:
    """A tab of `user`: their key already in the tab's storage, as the key dialog leaves it."""
    context = browser.new_context(base_url=server)
    context.set_default_timeout(WAIT)
    context.add_init_script(f"sessionStorage.setItem('agentctl.api-key', {KEYS[user]!r})")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto("/")
        playwright.expect(page.locator('#agents .agent[data-agent="priced"]')).to_be_visible()
        yield page
    finally:
        context.close()
    assert not errors, f"the page raised: {errors}"


def _status(page: Any, path: str) -> int:
    """The status of a GET the tab sends with its key."""
    return int(
        page.evaluate(
            """async (path) => (await fetch(path, {headers: {'x-api-key':
                sessionStorage.getItem('agentctl.api-key')}})).status""",
            path,
        )
    )


def test_own_threads_listed_renamed_deleted_with_their_usage(browser: Any, server: str) -> None:
    with _as(browser, server, "alice") as alice:
        alice.fill("#message", "What does alice ask?")
        alice.press("#message", "Enter")
        playwright.expect(alice.locator("#log")).to_contain_text("First answer.")
        row = alice.locator("#threads .thread.selected")
        playwright.expect(row.locator(".title")).to_have_text("What does alice ask?")
        playwright.expect(row.locator(".badge")).to_have_text("idle")
        playwright.expect(alice.locator("#usage")).to_have_text(
            "Thread: 1 model call · 1,500 tokens (1,000 in, 500 out) · cost $0.006"
        )
        thread = str(alice.evaluate("location.hash")).removeprefix("#thread=")
        row.get_by_role("button", name="Rename thread: What does alice ask?").click()
        alice.get_by_label("New title of the thread").fill("Alice's thread")
        alice.get_by_label("New title of the thread").press("Enter")
        playwright.expect(row.locator(".title")).to_have_text("Alice's thread")
        alice.reload()
        playwright.expect(alice.locator("#threads .thread.selected .title")).to_have_text(
            "Alice's thread"
        )

        with _as(browser, server, "bob") as bob:
            # bob's list has none of alice's threads, and her usage is not found for him
            playwright.expect(bob.locator("#threads .empty")).to_be_visible()
            assert bob.locator("#threads .thread").count() == 0
            assert _status(bob, f"/web/api/threads/{thread}/usage") == 404
            assert _status(bob, f"/threads/{thread}") == 404

        row = alice.locator(f'#threads .thread[data-thread="{thread}"]')
        row.get_by_role("button", name="Delete thread: Alice's thread").click()
        row.get_by_role("button", name="Delete", exact=True).click()
        playwright.expect(alice.locator(f'#threads .thread[data-thread="{thread}"]')).to_have_count(
            0
        )
        assert _status(alice, f"/threads/{thread}") == 404
        usage = alice.evaluate(
            """async (path) => (await fetch(path, {headers: {'x-api-key':
                sessionStorage.getItem('agentctl.api-key')}})).text()""",
            f"/web/api/threads/{thread}/usage",
        )
        assert json.loads(usage) == {"error": f"thread {thread} not found"}
