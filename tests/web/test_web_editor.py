"""The editor page (`agentctl serve --edit`, /edit) in a real browser, Debian's chromium driven
by Playwright: a person makes a new agent, makes a typo, sees the located problem under the
line, fixes it with a completion, tries the agent on its cassette, answers its approval and
saves; the saved file passes `agentctl validate` and keeps its comments.

With AGENTCTL_EDITOR_SHOTS=FOLDER (scripts/editor-screenshots), the pictures of the docs
(editor and form, 1280 and 390 px wide) are written there.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.check.validate import validate_file
from tests.serve import servers

pytest.importorskip("langgraph_api")
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip(
        "Debian's chromium is not installed (scripts/setup dev installs it when run as root)",
        allow_module_level=True,
    )

WAIT = 30_000  # ms: a wait limit for a loaded 2-core machine, not a measurement
DOCS_SHOTS = os.environ.get("AGENTCTL_EDITOR_SHOTS")
playwright.expect.set_options(timeout=WAIT)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty agents folder: with --edit, serve starts on it."""
    root = tmp_path_factory.mktemp("editor")
    (root / "agents").mkdir()
    return root


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[str]:
    with servers.serving(
        ["agents"], cwd=folder, args=["--edit"], log=folder / "serve.log"
    ) as served:
        yield served.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        # Debian's chromium, never a browser Playwright would download.
        # grayscale text for the docs' pictures: subpixel colour fringes double a PNG's size
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--disable-lcd-text"])
        try:
            yield launched
        finally:
            launched.close()


def _page(browser: Any, server: str, width: int) -> tuple[Any, Any, list[str]]:
    # 720 px high on a desktop: the docs' pictures stay under 200 KB
    viewport = {"width": width, "height": 720 if width > 800 else 800}
    context = browser.new_context(viewport=viewport, base_url=server)
    context.set_default_timeout(WAIT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


def _shot(page: Any, name: str) -> None:
    if DOCS_SHOTS:
        Path(DOCS_SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(DOCS_SHOTS) / f"{name}.png"))


def test_a_new_agent_written_checked_tried_and_saved_in_the_browser(
    browser: Any, server: str, folder: Path
) -> None:
    expect = playwright.expect
    context, page, errors = _page(browser, server, 1280)
    page.goto("/")  # the chat page leads to the editor when the server edits
    page.get_by_role("link", name="Edit agents").click()
    expect(page).to_have_url(re.compile(r"/edit$"))
    expect(page.locator("#ed-status")).to_contain_text("no agent files yet: make a new agent")

    # a new agent, from the starter `agentctl init` writes
    page.get_by_role("button", name="New agent").click()
    page.get_by_label("name of the new agent").fill("planner")
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".cm-content")).to_contain_text("name: planner")
    expect(page.locator("#ed-problems")).to_have_text("no problems")
    # served at once, no restart: the chat lists it
    expect(page.locator("#ed-status")).to_contain_text(
        "now served to the API and the chat: planner"
    )

    # hover: the schema's description of a key
    page.locator(".cm-line", has_text="backend: state").get_by_text("backend", exact=True).hover()
    expect(page.locator(".cm-tooltip-hover")).to_contain_text("Where the agent's files live")
    page.mouse.move(0, 0)

    # a typo: the located problem shows under its line, as `agentctl validate` words it
    page.locator(".cm-line", has_text="backend: state").click()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.type("interupt_on: {write_file: true}")
    problem = page.locator(".ed-problem-line")
    expect(problem).to_have_text("interupt_on: unknown key; did you mean 'interrupt_on'?")
    expect(page.locator("#ed-problems")).to_have_text("1 problem")
    _shot(page, "web-editor-problem")
    # under the line it is on
    typo_line = page.locator(".cm-line", has_text="interupt_on:")
    assert problem.bounding_box()["y"] >= typo_line.bounding_box()["y"]

    # fixed with a completion of the schema's keys, its description beside it
    page.keyboard.press("Home")
    page.keyboard.press("Shift+End")
    page.keyboard.type("interr")
    option = page.locator(".cm-tooltip-autocomplete li", has_text="interrupt_on")
    expect(option).to_be_visible()
    expect(page.locator(".cm-completionInfo")).to_contain_text("approval")
    _shot(page, "web-editor-completion")
    option.click()
    page.keyboard.type("{write_file: true}")
    written = page.evaluate("window.agentctlEditor.state.view.state.doc.toString()")
    assert "\nbackend: state\ninterrupt_on: {write_file: true}\n" in written, written
    expect(page.locator("#ed-problems")).to_have_text("no problems")
    expect(problem).to_have_count(0)

    # tried on its cassette (unsaved), with an approval answered in the chat beside it
    page.get_by_label("message to the agent").fill("Plan the launch of our new website")
    page.get_by_role("button", name="Try it").click()
    approval = page.locator(".ed-approval")
    expect(approval).to_contain_text("Approve write_file?")
    expect(approval).to_contain_text("/plan.md")
    _shot(page, "web-editor")
    approval.get_by_role("button", name="Approve").click()
    expect(page.locator(".ed-agent")).to_contain_text("The plan is in /plan.md")

    # tried again: the arguments edited before approving, checked as they are typed
    page.get_by_label("message to the agent").fill("Plan it again")
    page.get_by_role("button", name="Try it").click()
    expect(page.locator(".ed-approval")).to_have_count(2)
    approval = page.locator(".ed-approval").last
    expect(approval).to_contain_text("Approve write_file?")
    approval.get_by_role("button", name="Edit arguments").click()
    arguments = approval.get_by_label("arguments of write_file as JSON")
    expect(arguments).to_be_focused()
    arguments.fill('{"file_path": "/edited.md"')
    expect(approval.get_by_role("alert")).to_contain_text("not valid JSON")
    use = approval.get_by_role("button", name="Approve with these arguments")
    expect(use).to_be_disabled()
    arguments.fill('{"file_path": "/edited.md", "content": "Edited in the try panel."}')
    expect(approval.get_by_role("alert")).to_have_text("")
    use.click()
    expect(approval).to_contain_text("approved with edited arguments")
    # the tool ran with the edited arguments
    written_by_tool = page.locator(".ed-msg.ed-tool", has_text="← write_file").last
    expect(written_by_tool).to_have_attribute("title", re.compile(r"Updated file /edited\.md$"))
    expect(page.locator(".ed-agent").last).to_contain_text("The plan is in /plan.md")

    # saved only after the diff is shown
    page.get_by_role("button", name="Save…").click()
    dialog = page.locator(".ed-dialog")
    expect(dialog).to_contain_text("Save planner.yaml?")
    expect(dialog.locator(".cm-changedLine")).to_contain_text("interrupt_on: {write_file: true}")
    dialog.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#ed-status")).to_contain_text("saved planner.yaml")
    expect(page.locator("#ed-dirty")).to_have_text("saved")

    saved = folder / "agents" / "planner.yaml"
    assert list(validate_file(saved)) == []
    text = saved.read_text(encoding="utf-8")
    assert "# The model. `replay:` plays the recorded replies in planner.cassette.yaml" in text
    assert "interrupt_on: {write_file: true}" in text

    # the form shows the same file; a change there is written into the YAML
    page.get_by_role("tab", name="Form").click()
    expect(page.locator("#f-name")).to_have_value("planner")
    expect(page.locator("#f-interrupt_on-write_file")).to_be_checked()
    page.locator("#f-description").fill("Plans launches")
    page.locator("#f-description").press("Tab")
    expect(page.locator("#ed-status")).to_contain_text("form: description written")
    _shot(page, "web-editor-form")
    page.get_by_role("tab", name="YAML").click()
    expect(page.locator(".cm-content")).to_contain_text("description: Plans launches")

    # someone else changes the file meanwhile: the save stops and shows both
    theirs = text + "# a line someone else added\n"
    saved.write_text(theirs, encoding="utf-8")
    page.get_by_role("button", name="Save…").click()
    dialog.get_by_role("button", name="Save", exact=True).click()
    expect(dialog).to_contain_text("changed on disk since you opened it")
    assert saved.read_text(encoding="utf-8") == theirs
    dialog.get_by_role("button", name="Keep yours (overwrite)").click()
    expect(page.locator("#ed-status")).to_contain_text("saved planner.yaml")
    assert "description: Plans launches" in saved.read_text(encoding="utf-8")
    assert list(validate_file(saved)) == []

    # its test file, run on the saved files
    page.get_by_role("button", name="Test").click()
    expect(page.locator("#ed-tests h3")).to_contain_text("planner.test.yaml: ")
    expect(page.locator("#ed-tests .ed-case")).to_have_count(1)

    # the chat lists the new agent (no restart), and its row leads back to its file
    page.goto("/")
    row = page.locator("li.agent", has_text="planner")
    row.get_by_role("link", name="edit planner's file (planner.yaml)").click()
    expect(page).to_have_url(re.compile(r"/edit\?file=planner\.yaml$"))
    expect(page.locator(".cm-content")).to_contain_text("description: Plans launches")
    assert not errors, f"the page raised: {errors}"
    context.close()


def test_the_editor_and_form_on_a_phone(browser: Any, server: str, folder: Path) -> None:
    """390 px wide: every control reachable, the try panel under the editor."""
    if not (folder / "agents" / "planner.yaml").exists():
        pytest.skip("needs the agent the first test made")
    context, page, errors = _page(browser, server, 390)
    page.goto("/edit?file=planner.yaml")
    playwright.expect(page.locator(".cm-content")).to_contain_text("name: planner")
    playwright.expect(page.locator("#ed-problems")).to_have_text("no problems")
    for name in ("New agent", "Save…", "Try it", "Record", "Test"):
        playwright.expect(page.get_by_role("button", name=name)).to_be_visible()
    _shot(page, "web-editor-phone")
    page.get_by_role("tab", name="Form").click()
    playwright.expect(page.locator("#f-name")).to_have_value("planner")
    _shot(page, "web-editor-form-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert not errors, f"the page raised: {errors}"
    context.close()
