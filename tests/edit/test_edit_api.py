"""The editor's routes: present only with --edit, admins only when there are users, and the
language server's answers (validate's problems, completion, hover) on the editor's text."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from runner.check.validate import validate_file
from runner.edit.trying import TryRuns
from tests.edit.conftest import served


def test_without_edit_the_routes_do_not_exist(folder: Path, runs: TryRuns) -> None:
    client = served(folder, runs, edit=False)
    assert client.get("/edit").status_code == 404
    assert client.get("/web/api/edit/files").status_code == 404
    answer = client.post("/web/api/edit/save", json={"path": "x.yaml", "text": "", "base": None})
    assert answer.status_code in (404, 405)
    assert not (folder / "x.yaml").exists()


@pytest.mark.parametrize(
    ("key", "status"), [("admin-key", 200), ("user-key", 403), ("wrong", 401), (None, 401)]
)
def test_with_users_only_admins_edit(
    folder: Path, runs: TryRuns, key: str | None, status: int
) -> None:
    client = served(folder, runs, users=True)
    headers = {"x-api-key": key} if key else {}
    listed = client.get("/web/api/edit/files", headers=headers)
    assert listed.status_code == status, listed.text
    saved = client.post(
        "/web/api/edit/save",
        json={"path": "new.yaml", "text": "name: new\n", "base": None},
        headers=headers,
    )
    assert saved.status_code == status
    assert (folder / "new.yaml").exists() == (status == 200)
    if status == 403:
        assert saved.json() == {"error": "only admins (serve --admin) may edit agent files"}


def test_the_page_is_served_at_edit(client: TestClient) -> None:
    page = client.get("/edit")
    assert page.status_code == 200
    assert "/web/static/editor/editor.js" in page.text


def _text(client: TestClient) -> str:
    return client.get("/web/api/edit/file", params={"path": "planner.yaml"}).json()["text"]


def test_a_typo_is_reported_where_validate_reports_it(client: TestClient, folder: Path) -> None:
    text = _text(client).replace("\nprompt: |", "\npromt: |")
    found = client.post("/web/api/edit/check", json={"path": "planner.yaml", "text": text})
    problems = found.json()["problems"]
    line = text.splitlines().index("promt: |")
    assert problems == [
        {
            "message": "promt: unknown key; did you mean 'prompt'?",
            "from": {"line": line, "character": 0},
            "to": {"line": line, "character": 5},
            "severity": "error",
        }
    ]
    # validate on the same text saved says the same, at the same place (1-based)
    (folder / "planner.yaml").write_text(text, encoding="utf-8")
    [problem] = validate_file(folder / "planner.yaml")
    assert (problem.line, problem.col) == (line + 1, 1)
    assert problem.message in problems[0]["message"]


def test_a_sound_file_has_no_problems(client: TestClient) -> None:
    found = client.post("/web/api/edit/check", json={"path": "planner.yaml", "text": _text(client)})
    assert found.json() == {"problems": []}


def test_completion_offers_the_schema_keys_with_their_descriptions(client: TestClient) -> None:
    text = _text(client) + "interr"
    line = len(text.splitlines()) - 1
    items = client.post(
        "/web/api/edit/complete",
        json={"path": "planner.yaml", "text": text, "line": line, "character": 6},
    ).json()["items"]
    chosen = next(i for i in items if i["label"] == "interrupt_on")
    assert chosen["apply"] == "interrupt_on: "
    assert chosen["from"] == {"line": line, "character": 0}
    assert chosen["to"] == {"line": line, "character": 6}
    assert "approval" in chosen["info"]


def test_completion_offers_the_agents_tool_names_under_interrupt_on(client: TestClient) -> None:
    text = _text(client)
    client.post("/web/api/edit/check", json={"path": "planner.yaml", "text": text})
    text += "interrupt_on:\n  "
    line = len(text.splitlines()) - 1
    items = client.post(
        "/web/api/edit/complete",
        json={"path": "planner.yaml", "text": text, "line": line, "character": 2},
    ).json()["items"]
    assert {"write_file", "edit_file", "write_todos"} <= {i["label"] for i in items}


def test_hover_shows_the_schema_description(client: TestClient) -> None:
    text = _text(client)
    line = text.splitlines().index("backend: state")
    shown = client.post(
        "/web/api/edit/hover",
        json={"path": "planner.yaml", "text": text, "line": line, "character": 3},
    ).json()["markdown"]
    assert shown.startswith("**backend**")


@pytest.mark.parametrize(
    "payload",
    [
        {"path": "planner.yaml", "text": "", "line": -1, "character": 0},
        {"path": "planner.yaml", "text": "", "line": "2", "character": 0},
        {"path": "planner.yaml", "text": 12, "line": 0, "character": 0},
    ],
)
def test_bad_requests_are_told_what_is_wrong(client: TestClient, payload: dict) -> None:
    answer = client.post("/web/api/edit/complete", json=payload)
    assert answer.status_code == 400
    assert answer.json()["error"]


def test_try_runs_the_unsaved_text_on_its_cassette_and_takes_an_approval(
    client: TestClient, folder: Path
) -> None:
    text = _text(client) + "interrupt_on:\n  write_file: true\n"
    started = client.post(
        "/web/api/edit/try",
        json={"path": "planner.yaml", "text": text, "message": "Plan the launch"},
    ).json()
    assert started["waiting"] is True
    assert started["events"][-1]["type"] == "interrupt"
    assert started["events"][-1]["actions"][0]["name"] == "write_file"
    answered = client.post(
        "/web/api/edit/answer",
        json={"thread_id": started["thread_id"], "decisions": [{"type": "approve"}]},
    ).json()
    assert answered["waiting"] is False
    assert answered["events"][-1]["type"] == "final"
    assert "/plan.md" in answered["events"][-1]["content"]
    again = client.post(
        "/web/api/edit/answer",
        json={"thread_id": started["thread_id"], "decisions": [{"type": "approve"}]},
    )
    assert again.status_code == 404


def test_try_reports_the_files_problems(client: TestClient) -> None:
    text = _text(client).replace("\nprompt: |", "\npromt: |")
    answer = client.post(
        "/web/api/edit/try", json={"path": "planner.yaml", "text": text, "message": "hi"}
    )
    assert answer.status_code == 422
    assert "promt: unknown key" in answer.json()["error"]


def test_a_try_may_use_another_model_than_the_files(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    answer = client.post(
        "/web/api/edit/try",
        json={
            "path": "planner.yaml",
            "text": _text(client),
            "message": "hi",
            "model": "openai:gpt-4.1",
        },
    )
    assert answer.status_code == 422  # no key here: the other model cannot start, and says why
    assert "OPENAI_API_KEY" in answer.json()["error"]
    bad = client.post(
        "/web/api/edit/try",
        json={"path": "planner.yaml", "text": _text(client), "message": "hi", "model": "gpt"},
    )
    assert bad.status_code == 422
    assert "provider:model" in bad.json()["error"]


def test_record_needs_a_real_model(client: TestClient) -> None:
    answer = client.post(
        "/web/api/edit/try",
        json={"path": "planner.yaml", "text": _text(client), "message": "hi", "record": True},
    )
    assert answer.status_code == 422
    assert "record runs a real model" in answer.json()["error"]


def test_test_runs_the_test_file_beside_the_agent(client: TestClient) -> None:
    results = client.post("/web/api/edit/test", json={"path": "planner.yaml"}).json()
    assert results["file"] == "planner.test.yaml"
    assert results["summary"]["passed"] == 1
    assert results["cases"][0]["status"] == "passed"
    assert results["cases"][0]["name"] == "planner.test.yaml::writes a plan"


LIVE = """\
name: live
description: Answers live
model:
  id: openai:test-model
  params: {{base_url: "{base_url}", api_key: sk-local, max_retries: 0}}
prompt: You answer.
todos: false
general_purpose_agent: false
"""


def test_record_saves_a_live_run_as_the_agents_cassette(client: TestClient, folder: Path) -> None:
    from tests.wire import OpenAIServer, Turn

    with OpenAIServer([Turn(text="Hello from the live model.")]) as server:
        text = LIVE.format(base_url=server.base_url)
        recorded = client.post(
            "/web/api/edit/try",
            json={"path": "live.yaml", "text": text, "message": "hi", "record": True},
        )
    assert recorded.status_code == 200, recorded.text
    assert recorded.json()["recorded"] == "live.cassette.yaml"
    assert recorded.json()["events"][-1]["content"].strip() == "Hello from the live model."
    assert "Hello from the live model." in (folder / "live.cassette.yaml").read_text("utf-8")
    # the recording plays back offline
    offline = text.split("model:")[0] + "model: replay:live.cassette.yaml\nprompt: You answer.\n"
    replayed = client.post(
        "/web/api/edit/try", json={"path": "live.yaml", "text": offline, "message": "hi"}
    ).json()
    assert replayed["events"][-1]["content"].strip() == "Hello from the live model."


def test_try_takes_the_agents_inputs(client: TestClient) -> None:
    text = _text(client).replace(
        "vars:\n  team: a small team\n", "inputs:\n  team: {type: string, required: true}\n"
    )
    path = {"path": "planner.yaml", "text": text, "message": "Plan it"}
    missing = client.post("/web/api/edit/try", json=path)
    assert missing.status_code == 422
    assert "team" in missing.json()["error"]
    given = client.post("/web/api/edit/try", json={**path, "vars": {"team": "the docs team"}})
    assert given.status_code == 200, given.text
    assert given.json()["events"][0]["type"] == "start"


def test_the_form_offers_the_folders_tools_and_other_agents(
    client: TestClient, folder: Path
) -> None:
    (folder / "tools.py").write_text("def word_count(text: str) -> int:\n    return 0\n")
    (folder / "critic.yaml").write_text("name: critic\ndescription: Critiques\nprompt: Hi.\n")
    offered = client.get("/web/api/edit/options", params={"path": "planner.yaml"}).json()
    assert offered["tools"] == ["./tools.py:word_count"]
    assert offered["agents"] == ["./critic.yaml"]
    assert {"write_file", "write_todos"} <= set(offered["tool_names"])


def test_completion_offers_a_workflows_step_ids(client: TestClient, folder: Path) -> None:
    from tests.conftest import ROOT

    text = (ROOT / "workflows" / "release-notes.yaml").read_text(encoding="utf-8")
    text = text.replace("on_reject: end", "on_reject: ")
    line = next(i for i, row in enumerate(text.splitlines()) if "on_reject:" in row)
    character = len(text.splitlines()[line])
    items = client.post(
        "/web/api/edit/complete",
        json={"path": "notes.yaml", "text": text, "line": line, "character": character},
    ).json()["items"]
    assert {"draft", "review", "again", "approve", "publish", "end"} <= {i["label"] for i in items}


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


def test_try_runs_a_workflow_as_its_steps(client: TestClient, folder: Path) -> None:
    (folder / "pipeline.cassette.yaml").write_text(PIPELINE_REPLIES, encoding="utf-8")
    ran = client.post(
        "/web/api/edit/try", json={"path": "pipeline.yaml", "text": PIPELINE, "message": "go"}
    )
    assert ran.status_code == 200, ran.text
    events = ran.json()["events"]
    assert [e["step"] for e in events if e["type"] == "step_end"] == ["draft", "check"]
    assert events[-1]["type"] == "final"
