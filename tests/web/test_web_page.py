"""The web page in a real browser: Debian's chromium, driven by Playwright for Python, against
`agentctl serve --dev` on the showcase agent and its cassette (offline), one server for the module.

Each step leaves a screenshot in `build/screenshots/web/` (or $AGENTCTL_SCREENSHOTS), named
`<test>-<nn>-<step>.png`; README's picture of the page is one of them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AGENTS, ROOT
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

SCREENSHOTS = Path(os.environ.get("AGENTCTL_SCREENSHOTS", ROOT / "build" / "screenshots" / "web"))
ASK = "Write the release notes for agentctl 0.1.0"
# Put into the skill the showcase reads, so a tool result carries HTML (and a script attempt).
HOSTILE = '<img src=x onerror="window.__injected=1"><b id="injected">bold?</b><script>window.__injected=2</script>'
GREETER = "name: greeter\ndescription: Says hello\nmodel: replay:greeter.cassette.yaml\nprompt: You greet.\n"
SCRIBE = """\
name: scribe
description: Writes two notes, each after approval
model: replay:scribe.cassette.yaml
prompt: You write notes.
backend: {kind: filesystem, root_dir: "./ws/{thread_id}"}
interrupt_on:
  write_file: {allowed_decisions: [approve, reject]}
"""
SCRIBE_REPLIES = """\
- content: Writing both notes.
  tool_calls:
    - {name: write_file, args: {file_path: /a.md, content: alpha}}
    - {name: write_file, args: {file_path: /b.md, content: beta}}
- content: ""
"""
FANOUT = """\
name: fanout
description: Asks two helpers at once
model: replay:fanout.cassette.yaml
prompt: You delegate.
subagents:
  - {name: alpha, description: Answers first, prompt: You are alpha.}
  - {name: beta, description: Answers second, prompt: You are beta.}
general_purpose_agent: false
"""
FANOUT_REPLIES = """\
version: 1
agents:
  fanout:
    - content: Asking both at once.
      tool_calls:
        - {name: task, args: {subagent_type: alpha, description: first question}}
        - {name: task, args: {subagent_type: beta, description: second question}}
    - content: Both answered.
  alpha:
    - {content: alpha says one, delay: 0.2}
  beta:
    - {content: beta says two, delay: 0.2}
"""
PIPELINE = """\
version: 1
name: pipeline
description: Drafts, then checks
model: replay:pipeline.cassette.yaml
state: {draft: {type: string}, check: {type: string}}
agents: {drafter: {prompt: You draft.}, checker: {prompt: You check.}}
workflow:
  steps:
    - {id: draft, agent: drafter, input: Draft it., output: draft}
    - {id: check, agent: checker, input: "Check {{ state.draft }}", output: check}
  output: check
"""
PIPELINE_REPLIES = """\
version: 1
agents:
  drafter:
    - content: drafter wrote this
  checker:
    - content: checker approves
"""
ASKER = """\
name: asker
description: Asks how long, then writes
model: replay:asker.cassette.yaml
prompt: You write about {{ vars.topic }} at depth {{ vars.depth }}.
ask_user: true
inputs:
  topic: {type: string, required: true, description: What to write about}
  depth: {type: integer, minimum: 1, maximum: 3, default: 1}
  tone: {enum: [formal, casual], default: casual}
  strict: {type: boolean}
"""
ASKER_REPLIES = """\
- content: One question first.
  tool_calls:
    - {name: ask_user, args: {question: How long?, choices: [short, long]}}
- content: Long notes it is.
"""
PRICED = """\
name: priced
description: Answers at a known price
model: {id: "replay:priced.cassette.yaml", price: {input: 2, output: 8}}
prompt: You answer.
"""
PRICED_REPLIES = """\
- {content: First answer., usage: {input_tokens: 1000, output_tokens: 500}}
- {content: Second answer., usage: {input_tokens: 3000, output_tokens: 250}}
"""
SLOW = "name: slow\ndescription: Takes its time\nmodel: replay:slow.cassette.yaml\nprompt: p\n"
SLOW_REPLIES = "- {content: Done at last., delay: 2}\n"
BROKEN_GREETER = GREETER.replace("prompt:", "promt:")
WAIT = 30_000  # ms: a wait limit for a loaded 2-core machine, not a measurement
playwright.expect.set_options(timeout=WAIT)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The showcase (one workspace per thread) and a small agent, beside a copy of the skills."""
    root = tmp_path_factory.mktemp("web")
    (root / "agents").mkdir()
    showcase = (AGENTS / "showcase.yaml").read_text(encoding="utf-8")
    showcase = showcase.replace("./workspace/showcase}", '"./workspace/{thread_id}"}')
    assert "{thread_id}" in showcase
    (root / "agents" / "showcase.yaml").write_text(showcase, encoding="utf-8")
    shutil.copy(AGENTS / "showcase.cassette.yaml", root / "agents")
    shutil.copytree(ROOT / "skills", root / "skills")
    skill = root / "skills" / "release-notes" / "SKILL.md"
    skill.write_text(skill.read_text(encoding="utf-8") + "\n" + HOSTILE + "\n", encoding="utf-8")
    # broken from the start: `serve --dev` lists it on the page instead of refusing to start
    (root / "agents" / "greeter.yaml").write_text(BROKEN_GREETER, encoding="utf-8")
    (root / "agents" / "greeter.cassette.yaml").write_text("- content: Hello.\n", encoding="utf-8")
    (root / "agents" / "fanout.yaml").write_text(FANOUT, encoding="utf-8")
    (root / "agents" / "fanout.cassette.yaml").write_text(FANOUT_REPLIES, encoding="utf-8")
    (root / "agents" / "scribe.yaml").write_text(SCRIBE, encoding="utf-8")
    (root / "agents" / "scribe.cassette.yaml").write_text(SCRIBE_REPLIES, encoding="utf-8")
    (root / "agents" / "pipeline.yaml").write_text(PIPELINE, encoding="utf-8")
    (root / "agents" / "pipeline.cassette.yaml").write_text(PIPELINE_REPLIES, encoding="utf-8")
    (root / "agents" / "asker.yaml").write_text(ASKER, encoding="utf-8")
    (root / "agents" / "asker.cassette.yaml").write_text(ASKER_REPLIES, encoding="utf-8")
    (root / "agents" / "priced.yaml").write_text(PRICED, encoding="utf-8")
    (root / "agents" / "priced.cassette.yaml").write_text(PRICED_REPLIES, encoding="utf-8")
    (root / "agents" / "slow.yaml").write_text(SLOW, encoding="utf-8")
    (root / "agents" / "slow.cassette.yaml").write_text(SLOW_REPLIES, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server(served: Path) -> Iterator[str]:
    with servers.serving(
        ["agents"], cwd=served, args=["--dev"], log=served / "serve.log"
    ) as served:
        yield served.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        # Debian's chromium, never a browser Playwright would download.
        launched = p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            launched.close()


class Shots:
    """Screenshots of one test's steps: <test>-01-<step>.png, <test>-02-..."""

    def __init__(self, page: Any, test: str) -> None:
        self.page, self.test, self.count = page, test, 0
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def __call__(self, step: str) -> None:
        self.count += 1
        self.page.screenshot(path=str(SCREENSHOTS / f"{self.test}-{self.count:02d}-{step}.png"))


@pytest.fixture
def page(browser: Any, server: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, base_url=server)
    context.set_default_timeout(WAIT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto("/")
    page.wait_for_selector("#agents .agent")
    page.shots = Shots(page, request.node.name.removeprefix("test_"))
    yield page
    context.close()
    assert not errors, f"the page raised: {errors}"


def _start(page: Any, agent: str = "showcase") -> None:
    """A new thread with `agent`, the message sent with Enter, up to the approval."""
    page.click(f'#agents .agent[data-agent="{agent}"]')
    page.click("#new-thread")
    page.fill("#message", ASK)
    page.press("#message", "Enter")
    page.wait_for_selector('.approval[data-tool="write_file"]')
    _expect_text(page, "#threads .thread.selected", "waiting for approval")


def _expect_text(page: Any, selector: str, text: str) -> None:
    playwright.expect(page.locator(selector).first).to_contain_text(text)


def test_a_run_with_plan_edited_approval_subagent_files_and_answer(page: Any) -> None:
    shots = page.shots
    shots("start")
    _start(page)
    # the plan, and the approval with the call's arguments and only the allowed decisions
    _expect_text(page, "#todos", "Read the release-notes skill")
    # the plan's tool result says what changed, not the list as Python writes it
    planned = page.locator('.call[data-tool="write_todos"] .result').first
    playwright.expect(planned).to_have_text("the plan updated: 4 steps (shown in the plan above)")
    _expect_text(page, ".approval", "/RELEASE_NOTES.md")
    # each argument under its name, the file's text with its line breaks (not a JSON string)
    names = page.locator(".approval dl.args dt").all_inner_texts()
    assert names == ["file_path", "content"]
    content = page.locator(".approval dl.args dd").nth(1).inner_text()
    assert content.startswith("# agentctl 0.1.0\n") and "\\n" not in content
    assert page.locator(".approval button").all_inner_texts() == [
        "Approve",
        "Edit arguments",
        "Reject",
    ]
    shots("plan-and-approval")

    # edit the arguments: invalid JSON is refused, the schema is shown
    page.click(".approval button.edit")
    playwright.expect(page.locator(".approval .args")).to_be_hidden()  # the editor replaces it
    editor = page.locator(".editor textarea")
    args = json.loads(editor.input_value())
    editor.fill('{"file_path": "/RELEASE_NOTES.md", "content": ')
    _expect_text(page, ".json-error", "not valid JSON")
    assert page.locator(".editor button.save").is_disabled()
    _expect_text(page, ".schema", "file_path")
    _expect_text(page, ".schema", "required")
    shots("invalid-json-refused")
    editor.fill(json.dumps({"file_path": args["file_path"]}))
    _expect_text(page, ".json-error", 'missing required argument "content"')
    args["content"] = args["content"].replace(
        "# agentctl 0.1.0", "# agentctl 0.1.0 (edited in the browser)", 1
    )
    editor.fill(json.dumps(args, indent=2))
    playwright.expect(page.locator(".json-error")).to_have_text("")
    shots("edited-arguments")
    page.click(".editor button.save")

    # the run goes on: the subagent's review nested under its task call, the final answer
    _expect_text(page, "#log", "Done: the release notes")
    playwright.expect(page.locator("#status")).to_have_text("idle")
    task = page.locator('.call[data-tool="task"]')
    playwright.expect(task.locator(".nested .who").first).to_contain_text("subagent reviewer")
    _expect_text(page, '.call[data-tool="task"] .nested', "Reading the draft.")
    _expect_text(page, '.call[data-tool="task"] .nested .call', "read_file")
    playwright.expect(page.locator(".todo.completed")).to_have_count(4)
    assert re.search(r"\d+ model calls", page.inner_text("#usage"))
    task.scroll_into_view_if_needed()
    shots("subagent-review")

    # the file, marked as changed by the run, with line numbers and the edited heading
    changed = page.locator('.file.changed[data-path="/RELEASE_NOTES.md"]')
    changed.click()
    _expect_text(page, "#file-view .line", "# agentctl 0.1.0 (edited in the browser)")
    assert page.locator("#file-view .line .ln").first.inner_text() == "1"
    _expect_text(page, "#file-view", "Added nested output")  # applied after the review
    shots("final-answer-and-file")

    # reload: the same thread, intact
    page.reload()
    _expect_text(page, "#log .msg.user", ASK)
    _expect_text(page, '.call[data-tool="write_file"] .result', "RELEASE_NOTES.md")
    _expect_text(page, '.call[data-tool="task"] .result', "EventTranslator")
    _expect_text(page, "#log", "Done: the release notes")
    playwright.expect(page.locator('.file.changed[data-path="/RELEASE_NOTES.md"]')).to_be_visible()
    _expect_text(page, "#threads .thread.selected", ASK)
    shots("reloaded")


def test_reject_with_a_reason_on_a_second_thread(page: Any) -> None:
    _start(page)
    page.fill(".approval .reason", "Not now: no release this week")
    page.shots("rejecting")
    page.press(".approval .reason", "Enter")  # Enter in the reason rejects with it
    _expect_text(page, '.call[data-tool="write_file"] .result', "Not now: no release this week")
    playwright.expect(page.locator("#status")).to_have_text("idle")
    playwright.expect(page.locator('.file[data-path="/RELEASE_NOTES.md"]')).to_have_count(0)
    page.shots("rejected")
    playwright.expect(page.locator("#threads .thread.selected .badge")).to_have_text(["idle"])


def test_tool_output_with_html_is_text_and_a_approves(page: Any) -> None:
    _start(page)
    result = page.locator('.call[data-tool="read_file"] .result').first
    playwright.expect(result).to_contain_text('<img src=x onerror="window.__injected=1">')
    assert page.locator("#log img, #log script, #injected").count() == 0
    assert page.evaluate("window.__injected") is None
    # Shift+Enter is a new line, not a send; `a` (outside a text field) approves
    page.click("#message")
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    assert page.input_value("#message") == "first line\nsecond line"
    page.fill("#message", "")
    page.locator("#log").click()
    page.keyboard.press("a")
    _expect_text(page, '.call[data-tool="write_file"] .result', "Updated file /RELEASE_NOTES.md")
    page.shots("html-as-text")


def test_several_waiting_calls_answered_one_by_one_with_only_the_allowed_decisions(
    page: Any,
) -> None:
    page.click('#agents .agent[data-agent="scribe"]')
    page.click("#new-thread")
    page.fill("#message", "two notes")
    page.press("#message", "Enter")
    cards = page.locator(".approval")
    playwright.expect(cards).to_have_count(2)
    _expect_text(page, "#approvals h3", "2 calls waiting for approval")
    assert page.locator(".approval button").all_inner_texts() == ["Approve", "Reject"] * 2
    cards.nth(0).locator("button.approve").click()
    playwright.expect(cards.nth(0)).to_contain_text("approved")
    playwright.expect(page.locator("#status")).to_have_text("1 approval(s) still waiting")
    page.shots("first-of-two-answered")
    cards.nth(1).locator(".reason").fill("only one note today")
    cards.nth(1).locator("button.reject").click()
    _expect_text(page, ".call[data-call] .result >> nth=1", "only one note today")
    # the closing empty reply is a run warning, shown in the conversation
    _expect_text(page, "#log .warning", "empty_reply")
    playwright.expect(page.locator('.file.changed[data-path="/a.md"]')).to_be_visible()
    playwright.expect(page.locator('.file[data-path="/b.md"]')).to_have_count(0)
    page.shots("answered-with-a-warning")


def test_parallel_subagents_each_under_their_own_task_call(page: Any) -> None:
    page.click('#agents .agent[data-agent="fanout"]')
    page.click("#new-thread")
    page.fill("#message", "go")
    page.press("#message", "Enter")
    _expect_text(page, "#log", "Both answered.")
    tasks = page.locator('.call[data-tool="task"]')
    playwright.expect(tasks).to_have_count(2)
    for name, said, other in (
        ("alpha", "alpha says one", "beta"),
        ("beta", "beta says two", "alpha"),
    ):
        nested = tasks.filter(has_text=f"subagent_type={name}").locator(".nested")
        playwright.expect(nested.locator("> .who")).to_have_text(f"subagent {name}")
        playwright.expect(nested).to_contain_text(said)
        playwright.expect(nested).not_to_contain_text(other)
    page.shots("two-subagents")


def test_a_workflows_steps_each_a_line_with_its_agents_work_under_it(page: Any) -> None:
    page.click('#agents .agent[data-agent="pipeline"]')
    page.click("#new-thread")
    playwright.expect(page.locator("#composer")).to_be_hidden()  # a workflow takes no message
    page.get_by_role("button", name="Run", exact=True).click()
    check = page.locator('.step[data-step="check"]')
    playwright.expect(check).to_have_attribute("data-status", "done")
    steps = page.locator(".step")
    playwright.expect(steps).to_have_count(2)
    assert [steps.nth(i).get_attribute("data-step") for i in range(2)] == ["draft", "check"]
    for step, said, other in (
        ("draft", "drafter wrote this", "checker"),
        ("check", "checker approves", "drafter"),
    ):
        row = page.locator(f'.step[data-step="{step}"]')
        playwright.expect(row).to_have_attribute("data-status", "done")
        playwright.expect(row.locator(".head")).to_contain_text(f"{step} agent done")
        playwright.expect(row.locator(".nested")).to_contain_text(said)
        playwright.expect(row.locator(".nested")).not_to_contain_text(other)
    page.shots("workflow-steps")


def test_an_agents_inputs_as_a_form_and_its_question_answered_with_a_choice(
    page: Any, server: str
) -> None:
    page.click('#agents .agent[data-agent="asker"]')
    page.click("#new-thread")
    send = page.get_by_role("button", name="Send")
    playwright.expect(send).to_be_disabled()
    _expect_text(page, "#send-why", "First fill in topic.")
    playwright.expect(page.get_by_label("depth")).to_have_value("1")  # its default
    page.get_by_label("depth").fill("7")
    _expect_text(page, "#send-why", "depth must be an integer from 1 to 3")
    page.get_by_label("depth").fill("2")
    page.get_by_label("tone").select_option(label="formal")
    page.get_by_label("strict").check()
    page.get_by_label("topic").fill("release notes")
    playwright.expect(send).to_be_enabled()
    playwright.expect(page.locator("#send-why")).to_have_text("")
    page.shots("inputs-filled")
    page.fill("#message", "go")
    page.press("#message", "Enter")

    question = page.locator(".question")
    playwright.expect(question).to_contain_text("How long?")
    assert question.locator("button").all_inner_texts() == ["short", "long"]
    _expect_text(page, '.call[data-tool="ask_user"] .result', "waiting for your answer")
    page.shots("question")
    question.get_by_role("button", name="long").click()
    _expect_text(page, "#log", "Long notes it is.")
    _expect_text(page, '.call[data-tool="ask_user"] .result', "long")
    playwright.expect(page.locator("#status")).to_have_text("idle")

    # both runs (the first and the one that answered) got the inputs as `configurable.vars`
    thread = re.sub("^#thread=", "", page.evaluate("location.hash"))
    with urllib.request.urlopen(f"{server}/threads/{thread}/runs") as reply:
        runs = json.load(reply)
    sent = [run["kwargs"]["config"]["configurable"]["vars"] for run in runs]
    expected = {"topic": "release notes", "depth": 2, "tone": "formal", "strict": True}
    assert sent == [expected, expected]


def test_an_agent_file_with_errors_is_listed_located_and_reloads_when_saved(
    page: Any, served: Path
) -> None:
    problem = page.locator('.agent[data-agent="greeter"] .problems li')
    playwright.expect(problem).to_have_text(
        "agents/greeter.yaml:4:1: promt: unknown key; did you mean 'prompt'?"
    )
    page.click('#agents .agent[data-agent="greeter"]')
    page.fill("#message", "hi")
    page.press("#message", "Enter")
    _expect_text(page, "#log .error-row", "agents/greeter.yaml has problems")
    page.shots("agent-with-errors")
    (served / "agents" / "greeter.yaml").write_text(GREETER, encoding="utf-8")  # saved, fixed
    _expect_text(page, '.agent[data-agent="greeter"]', "reloaded")
    playwright.expect(page.locator('.agent[data-agent="greeter"] .problems')).to_have_count(0)
    page.fill("#message", "hi")
    page.press("#message", "Enter")
    _expect_text(page, "#log .msg.ai", "Hello.")
    page.shots("reloaded-agent-answers")


def test_usable_at_390_px(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=server)
    context.set_default_timeout(WAIT)
    page = context.new_page()
    try:
        page.goto("/")
        page.wait_for_selector("#agents .agent", state="attached")
        shots = Shots(page, "usable_at_390_px")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        playwright.expect(page.locator("#message")).to_be_visible()
        page.click('#tabs button[data-show="side"]')
        playwright.expect(page.locator("#agents")).to_be_visible()
        page.click('#agents .agent[data-agent="showcase"]')
        page.click("#new-thread")
        page.click('#tabs button[data-show="chat"]')
        page.fill("#message", ASK)
        page.press("#message", "Enter")
        page.wait_for_selector('.approval[data-tool="write_file"]')
        playwright.expect(page.locator(".approval button.approve")).to_be_in_viewport()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shots("approval")
        page.click(".approval button.approve")
        _expect_text(page, '.call[data-tool="write_file"] .result', "RELEASE_NOTES.md")
        page.click('#tabs button[data-show="files"]')
        playwright.expect(page.locator('.file[data-path="/RELEASE_NOTES.md"]')).to_be_visible()
        shots("files")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # the thread list is a panel of its own, its buttons inside the screen; Escape leaves it
        page.click('#tabs button[data-show="side"]')
        row = page.locator("#threads .thread.selected")
        playwright.expect(row.locator(".title")).to_have_text(ASK)
        playwright.expect(row.locator("button.delete")).to_be_in_viewport()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shots("threads")
        page.keyboard.press("Escape")
        playwright.expect(page.locator("#message")).to_be_visible()
    finally:
        context.close()


def _thread_id(page: Any) -> str:
    return re.sub("^#thread=", "", page.evaluate("location.hash"))


def test_threads_of_an_agent_with_title_status_rename_and_delete(page: Any, server: str) -> None:
    page.click('#agents .agent[data-agent="scribe"]')
    page.click("#new-thread")
    page.fill("#message", "weekly notes\nand a second line that is not the title")
    page.press("#message", "Enter")
    playwright.expect(page.locator(".approval")).to_have_count(2)
    row = page.locator("#threads .thread.selected")
    playwright.expect(row.locator(".title")).to_have_text("weekly notes")
    playwright.expect(row.locator(".badge")).to_have_text("waiting for approval (2)")
    playwright.expect(row.locator("time")).not_to_be_empty()
    playwright.expect(page.locator(".thread-title")).to_have_text("weekly notes")
    thread = _thread_id(page)
    page.shots("waiting-for-approval")

    # another agent's threads are not in its list
    page.click('#agents .agent[data-agent="fanout"]')
    playwright.expect(page.locator("#threads-of")).to_have_text("of fanout")
    playwright.expect(page.locator(f'#threads .thread[data-thread="{thread}"]')).to_have_count(0)
    page.click('#agents .agent[data-agent="scribe"]')
    row = page.locator(f'#threads .thread[data-thread="{thread}"]')
    row.locator(".open").click()
    playwright.expect(page.locator(".approval")).to_have_count(2)

    # rename: Escape gives up, Enter saves (kept in the thread's metadata: a reload shows it)
    row.get_by_role("button", name="Rename thread: weekly notes").click()
    title = page.get_by_label("New title of the thread")
    playwright.expect(title).to_be_focused()
    title.fill("not this")
    title.press("Escape")
    playwright.expect(row.locator(".title")).to_have_text("weekly notes")
    playwright.expect(row.get_by_role("button", name="Rename thread: weekly notes")).to_be_focused()
    page.keyboard.press("Enter")
    page.get_by_label("New title of the thread").fill("Notes for Friday")
    page.get_by_label("New title of the thread").press("Enter")
    playwright.expect(row.locator(".title")).to_have_text("Notes for Friday")
    page.reload()
    playwright.expect(
        page.locator(f'#threads .thread[data-thread="{thread}"] .title')
    ).to_have_text("Notes for Friday")
    playwright.expect(page.locator(".thread-title")).to_have_text("Notes for Friday")
    with urllib.request.urlopen(f"{server}/threads/{thread}") as reply:
        assert json.load(reply)["metadata"]["title"] == "Notes for Friday"

    # answered: the status is idle again
    page.locator(".approval button.approve").first.click()
    page.locator(".approval button.approve").last.click()
    playwright.expect(page.locator("#status")).to_have_text("idle")
    playwright.expect(row.locator(".badge")).to_have_text("idle")

    # delete: asked first (Keep keeps it), then gone from the list and from the server
    row.get_by_role("button", name="Delete thread: Notes for Friday").click()
    row.get_by_role("button", name="Keep").click()
    playwright.expect(row).to_have_count(1)
    row.get_by_role("button", name="Delete thread: Notes for Friday").click()
    page.shots("asked-before-deleting")
    row.get_by_role("button", name="Delete", exact=True).click()
    playwright.expect(page.locator(f'#threads .thread[data-thread="{thread}"]')).to_have_count(0)
    playwright.expect(page.locator(".thread-title")).to_have_text("New thread")
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(f"{server}/threads/{thread}")
    assert gone.value.code == 404


def test_usage_and_cost_of_a_thread_and_a_failed_run(page: Any, server: str) -> None:
    page.click('#agents .agent[data-agent="priced"]')
    page.click("#new-thread")
    page.fill("#message", "first")
    page.press("#message", "Enter")
    _expect_text(page, "#log", "First answer.")
    # 1000 in, 500 out at $2 and $8 a million tokens: $0.006
    playwright.expect(page.locator("#usage")).to_have_text(
        "Thread: 1 model call · 1,500 tokens (1,000 in, 500 out) · cost $0.006"
    )
    page.fill("#message", "second")
    page.press("#message", "Enter")
    _expect_text(page, "#log", "Second answer.")
    expected = "Thread: 2 model calls · 4,750 tokens (4,000 in, 750 out) · cost $0.014"
    playwright.expect(page.locator("#usage")).to_have_text(expected)
    page.shots("usage")
    page.reload()  # counted by the server from the thread, not from what the page saw
    playwright.expect(page.locator("#usage")).to_have_text(expected)
    with urllib.request.urlopen(f"{server}/web/api/threads/{_thread_id(page)}/usage") as reply:
        assert json.load(reply)["cost_text"] == "$0.014"
    # a third message: the cassette has no more replies, the run fails, and so says the list
    page.fill("#message", "third")
    page.press("#message", "Enter")
    _expect_text(page, "#log .error-row", "the run asked for reply 3")
    # agentctl's message alone, without the exception's class name before it
    playwright.expect(page.locator("#log .error-row").first).to_have_text(
        re.compile(r"^error: replay cassette ")
    )
    playwright.expect(page.locator("#threads .thread.selected .badge")).to_have_text("failed")
    playwright.expect(page.locator("#thread-head .badge")).to_have_text("failed")
    # opened again, the thread says why its last run failed (it said only that it had)
    page.reload()
    playwright.expect(page.locator("#log .error-row")).to_contain_text(
        "The last run of this thread failed: replay cassette "
    )


def test_reopening_a_thread_restores_its_inputs(page: Any) -> None:
    page.click('#agents .agent[data-agent="asker"]')
    page.click("#new-thread")
    page.get_by_label("topic").fill("the roadmap")
    page.get_by_label("depth").fill("3")
    page.get_by_label("tone").select_option(label="formal")
    page.fill("#message", "go")
    page.press("#message", "Enter")
    playwright.expect(page.locator(".question")).to_contain_text("How long?")
    page.reload()  # the page forgets what was typed; the thread's run has it
    playwright.expect(page.get_by_label("topic")).to_have_value("the roadmap")
    playwright.expect(page.get_by_label("depth")).to_have_value("3")
    playwright.expect(page.get_by_label("tone").locator("option:checked")).to_have_text("formal")
    playwright.expect(page.get_by_label("strict")).not_to_be_checked()


UNNAMED = re.compile(
    r"^\s*- (button|textbox|combobox|checkbox|spinbutton|link|listbox)(\s*\[[^\]]*\])*:?\s*$"
)
"""A control in Chromium's accessibility tree (an aria snapshot line) without a name."""


def _unnamed_controls(page: Any) -> list[str]:
    tree = page.locator("body").aria_snapshot()
    return [line for line in tree.splitlines() if UNNAMED.match(line)]


def test_every_control_has_an_accessible_name_and_keys_reach_them(page: Any) -> None:
    # the skip link (first in the page) shows when focused and takes the keyboard to the message
    first = page.evaluate("document.querySelector('a[href], button, input, textarea').className")
    assert first == "skip"
    page.click('#agents .agent[data-agent="showcase"]')
    page.locator(".skip").focus()
    playwright.expect(page.locator(".skip")).to_be_in_viewport()
    page.keyboard.press("Enter")
    playwright.expect(page.locator("#message")).to_be_focused()
    assert page.evaluate("location.hash") == ""  # the thread's address is kept
    page.keyboard.press("Tab")
    playwright.expect(page.locator("#send")).to_be_focused()
    # with approvals waiting, the arguments editor open, a question with its inputs form
    _start(page)
    page.click(".approval button.edit")
    playwright.expect(page.locator(".editor textarea")).to_be_focused()
    page.keyboard.press("Escape")  # back to the arguments as written, focus on Edit
    playwright.expect(page.locator(".editor")).to_be_hidden()
    playwright.expect(page.locator(".approval button.edit")).to_be_focused()
    page.click(".approval button.edit")
    assert _unnamed_controls(page) == []
    page.click('#agents .agent[data-agent="asker"]')
    page.click("#new-thread")
    page.get_by_label("topic").fill("x")
    page.fill("#message", "go")
    page.press("#message", "Enter")
    playwright.expect(page.locator(".question")).to_be_visible()
    assert _unnamed_controls(page) == []
    # every control seen by the DOM too: a text, a label, aria-label or aria-labelledby
    unnamed = page.evaluate(
        """() => [...document.querySelectorAll('button, input, select, textarea, [role=button]')]
        .filter((el) => el.type !== 'hidden')
        .filter((el) => !((el.getAttribute('aria-label') || '').trim()
            || el.getAttribute('aria-labelledby') || (el.labels && el.labels.length)
            || ((el.tagName === 'BUTTON' || el.getAttribute('role') === 'button')
                && el.textContent.trim())))
        .map((el) => el.outerHTML.slice(0, 120))"""
    )
    assert unnamed == []
    # focus is visible: a focused button draws an outline
    page.locator("#new-thread").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", "")


def _luminance(css_colour: str) -> float:
    red, green, blue = (int(v) for v in re.findall(r"\d+", css_colour)[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def test_dark_mode_follows_the_system_setting(browser: Any, server: str) -> None:
    for scheme, dark in (("dark", True), ("light", False)):
        context = browser.new_context(color_scheme=scheme, base_url=server)
        try:
            page = context.new_page()
            page.goto("/")
            page.wait_for_selector("#agents .agent")
            colours = page.evaluate(
                """() => [getComputedStyle(document.body).backgroundColor,
                          getComputedStyle(document.body).color,
                          getComputedStyle(document.querySelector('#side')).backgroundColor]"""
            )
            background, text, panel = (_luminance(c) for c in colours)
            assert (background < 0.2) is dark and (text > 0.7) is dark, colours
            assert (panel < 0.2) is dark, colours
        finally:
            context.close()


def _thread_elsewhere(server: str, agent: str, title: str) -> str:
    """A thread another client starts (the list shows it at its next refresh)."""
    body = json.dumps({"metadata": {"graph_id": agent, "title": title}}).encode()
    request = urllib.request.Request(
        f"{server}/threads", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as reply:
        return str(json.load(reply)["thread_id"])


def test_the_thread_list_refreshing_keeps_the_keyboard_where_it_was(page: Any, server: str) -> None:
    page.click('#agents .agent[data-agent="pipeline"]')
    _thread_elsewhere(server, "pipeline", "started in another tab")
    rename = page.get_by_role("button", name="Rename thread: started in another tab")
    rename.focus()  # waits for the refresh that lists it
    _thread_elsewhere(server, "pipeline", "started in a third tab")
    playwright.expect(page.locator("#threads")).to_contain_text("started in a third tab")
    playwright.expect(rename).to_be_focused()


def test_a_thread_being_run_shows_running_then_idle(page: Any) -> None:
    page.click('#agents .agent[data-agent="slow"]')
    page.click("#new-thread")
    page.fill("#message", "take your time")
    page.press("#message", "Enter")
    row = page.locator("#threads .thread.selected")
    playwright.expect(row.locator(".title")).to_have_text("take your time")
    playwright.expect(row.locator(".badge")).to_have_text("running")
    playwright.expect(page.locator("#thread-head .badge")).to_have_text("running")
    _expect_text(page, "#log", "Done at last.")
    playwright.expect(row.locator(".badge")).to_have_text("idle")
    playwright.expect(page.locator("#thread-head .badge")).to_have_text("idle")


def test_another_view_added_to_the_header_takes_the_main_area(page: Any) -> None:
    nav = page.get_by_role("navigation", name="views")
    playwright.expect(nav).to_be_hidden()  # one view: no navigation to show
    page.evaluate(
        """() => window.agentctl.addView('extra', 'Extra')
                 .append(Object.assign(document.createElement('p'), {textContent: 'extra view'}))"""
    )
    playwright.expect(nav.get_by_role("button")).to_have_text(["Chat", "Extra"])
    nav.get_by_role("button", name="Extra").click()
    playwright.expect(page.get_by_text("extra view")).to_be_visible()
    playwright.expect(page.locator("#view-chat")).to_be_hidden()
    playwright.expect(nav.get_by_role("button", name="Extra")).to_have_attribute(
        "aria-pressed", "true"
    )
    nav.get_by_role("button", name="Chat").click()
    playwright.expect(page.locator("#message")).to_be_visible()
    playwright.expect(page.get_by_text("extra view")).to_be_hidden()


def test_choosing_another_agent_names_it_in_the_new_threads_heading(page: Any) -> None:
    # the heading kept the first agent's name while the thread list showed the second's
    for agent in ("scribe", "asker"):
        page.click(f'#agents .agent[data-agent="{agent}"]')
        playwright.expect(page.locator("#thread-head .tag")).to_have_text(agent)
        _expect_text(page, "#thread-head", "your first message starts it")


def test_a_server_that_does_not_edit_is_not_asked_whether_it_does(
    browser: Any, server: str
) -> None:
    # the page asked /web/api/edit/files at each load: a 404 in the console and the server's log
    context = browser.new_context(base_url=server)
    page = context.new_page()
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto("/")
    page.wait_for_selector("#agents .agent")
    page.wait_for_load_state("networkidle")
    assert any(url.endswith("/web/api/agents") for url in asked), asked
    assert not [url for url in asked if "/web/api/edit/" in url]
    playwright.expect(page.locator("#edit-link")).to_be_hidden()
    context.close()
