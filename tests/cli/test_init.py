"""`agentctl init`: a starter folder that validates and runs offline at once."""

from __future__ import annotations

from pathlib import Path

import yaml

from runner.spec import json_schema_text
from runner.starter import STARTER_FILES, agent_name_for, plan_starter, schema_reference
from runner.testing import test_json_schema_text
from tests.conftest import run_cli


def test_init_writes_a_starter_that_validates_and_runs_offline(tmp_path: Path) -> None:
    done = run_cli("init", "My Agent", cwd=tmp_path, process=True)  # the program itself
    assert (done.returncode, done.stderr) == (0, "")
    folder = tmp_path / "My Agent"
    written = [line.removeprefix("wrote ") for line in done.stdout.splitlines()[:7]]
    assert written == [str(Path("My Agent") / rel) for rel in STARTER_FILES] + [
        str(Path("My Agent") / "agent.schema.json"),
        str(Path("My Agent") / "test.schema.json"),
    ]
    assert done.stdout.endswith(
        "Next, offline with its recorded replies:\n"
        "  agentctl run 'My Agent/agent.yaml' \"Plan the launch of our new website\"\n"
        "  agentctl run 'My Agent/agent.yaml'      (in a terminal: a chat)\n"
        "  agentctl test 'My Agent'      (its tests, in agent.test.yaml)\n"
        "Then set `model:` in 'My Agent/agent.yaml' to a real provider (see the comments there).\n"
    )
    agent = (folder / "agent.yaml").read_text(encoding="utf-8")
    assert agent.splitlines()[0] == "# yaml-language-server: $schema=agent.schema.json"
    assert "\nname: my-agent\n" in agent
    assert (folder / "agent.schema.json").read_text(encoding="utf-8") == json_schema_text()
    front = (folder / "skills" / "planning" / "SKILL.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(front.split("---")[1])
    assert meta["name"] == "planning" and len(meta["description"]) > 40

    valid = run_cli("validate", "My Agent", cwd=tmp_path)
    folder_shown = Path("My Agent")
    assert (valid.returncode, valid.stdout) == (
        0,
        f"ok: {folder_shown / 'agent.cassette.yaml'}\nok: {folder_shown / 'agent.yaml'}\n",
    )
    ran = run_cli("run", "My Agent/agent.yaml", "Plan our offsite", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "▸ write_file(file_path='/plan.md'" in ran.stdout
    assert "The plan is in /plan.md" in ran.stdout
    tested = run_cli("test", "My Agent", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout
    assert tested.stdout.startswith("PASS  My Agent/agent.test.yaml::writes a plan\n")
    test_file = (folder / "agent.test.yaml").read_text(encoding="utf-8")
    assert test_file.splitlines()[0] == "# yaml-language-server: $schema=test.schema.json"
    assert (folder / "test.schema.json").read_text(encoding="utf-8") == test_json_schema_text()


def test_init_refuses_to_overwrite_unless_forced(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).returncode == 0  # the current folder by default
    (tmp_path / "AGENTS.md").write_text("mine\n", encoding="utf-8")
    again = run_cli("init", ".", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (1, "")
    assert again.stderr == (
        "error: agent.yaml, agent.cassette.yaml, agent.test.yaml, AGENTS.md, "
        "skills/planning/SKILL.md, agent.schema.json, test.schema.json already exist in .; add "
        "--force to overwrite\n"
    )
    assert (tmp_path / "AGENTS.md").read_text(encoding="utf-8") == "mine\n"
    forced = run_cli("init", "--force", "--name", "planner", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "AGENTS.md").read_text(encoding="utf-8") != "mine\n"
    assert "\nname: planner\n" in (tmp_path / "agent.yaml").read_text(encoding="utf-8")


def test_bad_name_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("init", "--name", "Bad Name", cwd=tmp_path)
    assert done.returncode == 2
    assert "Invalid value for --name: 'Bad Name': use lowercase letters" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_inside_agentctls_checkout_the_schema_line_points_at_the_repository(
    tmp_path: Path,
) -> None:
    repo_schema = tmp_path / "repo" / "schemas" / "agent.schema.json"
    repo_schema.parent.mkdir(parents=True)
    repo_schema.write_text("{}", encoding="utf-8")
    inside = tmp_path / "repo" / "agents" / "new"
    assert schema_reference(inside, repo_schema) == "../../schemas/agent.schema.json"
    assert schema_reference(tmp_path / "elsewhere", repo_schema) is None
    starter = plan_starter(inside, repo_schema=repo_schema)
    assert "agent.schema.json" not in starter.files
    assert "test.schema.json" not in starter.files
    assert starter.files["agent.yaml"].startswith(
        "# yaml-language-server: $schema=../../schemas/agent.schema.json\n"
    )
    assert starter.files["agent.test.yaml"].startswith(
        "# yaml-language-server: $schema=../../schemas/test.schema.json\n"
    )


def test_agent_names_come_from_the_folder() -> None:
    assert agent_name_for(Path("/x/Release Notes!")) == "release-notes"
    assert agent_name_for(Path("/x/__")) == "assistant"
