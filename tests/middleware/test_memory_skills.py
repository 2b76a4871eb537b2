"""Memory and skills through the whole agent, with a scripted model that records its prompts."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

import runner
from runner.run import Session
from tests.conftest import ROOT
from tests.fakes import ScriptedChatModel, ai


def spec(tmp_path: Path, **data: Any) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"name": "mem", **data}, sort_keys=False), encoding="utf-8")
    return path


def system_text(model: ScriptedChatModel, call: int = 0) -> str:
    first = model.calls[call][0]
    assert first.type == "system"
    return first.text


def run(agent: Any, message: str, thread: str = "t1") -> dict[str, Any]:
    return agent.invoke(
        {"messages": [{"role": "user", "content": message}]},
        {"configurable": {"thread_id": thread}},
    )


class TestMemory:
    def test_host_memory_is_in_the_prompt_and_an_edit_lands_on_disk(self, tmp_path: Path) -> None:
        memory = tmp_path / "AGENTS.md"
        memory.write_text("# Notes\n- The user likes short answers.\n", encoding="utf-8")
        model = ScriptedChatModel(
            script=[
                ai(
                    "Noting it.",
                    (
                        "edit_file",
                        {
                            "file_path": "/memory/AGENTS.md",
                            "old_string": "short answers.",
                            "new_string": "short answers.\n- The user's name is Ada.",
                        },
                    ),
                ),
                ai("Done."),
            ]
        )
        agent = runner.build_agent(
            spec(tmp_path, memory=["./AGENTS.md"]), model=model, checkpointer=InMemorySaver()
        )
        result = run(agent, "Call me Ada.")
        prompt = system_text(model)
        assert "## Memory" in prompt and "### /memory/AGENTS.md" in prompt
        assert "- The user likes short answers." in prompt
        assert result["messages"][-2].text.startswith("Successfully replaced 1 instance(s)")
        assert (
            memory.read_text(encoding="utf-8")
            == "# Notes\n- The user likes short answers.\n- The user's name is Ada.\n"
        )

    def test_loaded_once_per_thread_and_fresh_in_a_new_thread(self, tmp_path: Path) -> None:
        memory = tmp_path / "AGENTS.md"
        memory.write_text("first version\n", encoding="utf-8")
        model = ScriptedChatModel(script=lambda messages: ai("ok"))
        agent = runner.build_agent(
            spec(tmp_path, memory=["./AGENTS.md"]), model=model, checkpointer=InMemorySaver()
        )
        run(agent, "one", "a")
        memory.write_text("second version\n", encoding="utf-8")
        run(agent, "two", "a")  # same thread: the memory loaded at its start
        run(agent, "three", "b")  # a new thread: loads the file again
        assert "first version" in system_text(model, 0)
        assert "first version" in system_text(model, 1) and "second version" not in system_text(
            model, 1
        )
        assert "second version" in system_text(model, 2)

    def test_backend_memory_in_the_store_outlives_the_thread(self, tmp_path: Path) -> None:
        store = InMemoryStore()
        store.put(
            ("mem", "memories"),
            "/AGENTS.md",
            {
                "content": "remember: tabs, not spaces",
                "created_at": "2026-01-01T00:00:00+00:00",
                "modified_at": "2026-01-01T00:00:00+00:00",
            },
        )
        data = {
            "backend": {
                "kind": "composite",
                "default": "state",
                "routes": {"/memories/": {"kind": "store", "namespace": ["mem", "memories"]}},
            },
            "memory": ["/memories/AGENTS.md"],
        }
        model = ScriptedChatModel(
            script=[
                ai(
                    "",
                    (
                        "edit_file",
                        {
                            "file_path": "/memories/AGENTS.md",
                            "old_string": "tabs",
                            "new_string": "spaces",
                        },
                    ),
                ),
                ai("Updated."),
                ai("Hello again."),
            ]
        )
        agent = runner.build_agent(
            spec(tmp_path, **data), model=model, checkpointer=InMemorySaver(), store=store
        )
        run(agent, "I changed my mind", "a")
        assert "remember: tabs, not spaces" in system_text(model, 0)
        item = store.get(("mem", "memories"), "/AGENTS.md")
        assert item is not None and item.value["content"] == "remember: spaces, not spaces"
        run(agent, "hi", "b")
        assert "remember: spaces, not spaces" in system_text(model, 2)

    def test_files_not_created_yet_are_listed_and_the_agent_can_start_them(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        (tmp_path / "AGENTS.md").write_text("kept\n", encoding="utf-8")
        model = ScriptedChatModel(
            script=[
                ai("", ("write_file", {"file_path": "/memory/NEW.md", "content": "x"})),
                ai("ok"),
            ]
        )
        memory = ["./AGENTS.md", "./NEW.md", "./no/such/folder.md", "./", "/nowhere.md"]
        with caplog.at_level(logging.WARNING, logger="agentctl"):
            agent = runner.build_agent(spec(tmp_path, memory=memory), model=model)
            agent.invoke({"messages": [{"role": "user", "content": "hi"}]})
        system = system_text(model)
        assert "### /memory/AGENTS.md\n\nkept" in system
        for path in ("/memory/NEW.md", "/nowhere.md"):
            assert f"### {path}\n\n(not created yet: create it with `write_file`" in system
        assert "folder.md" not in system
        assert (tmp_path / "NEW.md").read_text() == "x"  # the agent started it, on the host
        warnings = sorted(r.getMessage() for r in caplog.records)
        assert len(warnings) == 2, warnings
        assert warnings[0].endswith("is not a file; skipped")
        assert warnings[1].endswith("folder.md is in a folder that does not exist; skipped")

    def test_memory_is_not_inherited_by_subagents(self, tmp_path: Path) -> None:
        (tmp_path / "AGENTS.md").write_text("secret preference\n", encoding="utf-8")
        resolved = runner.agent.resolve.Resolver(with_models=False).resolve(
            runner.load_spec(
                spec(
                    tmp_path,
                    model="openai:gpt-4.1",
                    memory=["./AGENTS.md"],
                    subagents=[{"name": "helper", "description": "helps"}],
                )
            )
        )
        assert resolved.harness["memory"] is not None
        helper = resolved.subagents[0].agent
        assert helper is not None and helper.harness["memory"] is None
        assert "memory" not in [s.name for s in helper.prompt_sections]


class TestSkills:
    @pytest.fixture
    def skills(self, tmp_path: Path) -> Path:
        shutil.copytree(ROOT / "skills", tmp_path / "skills")
        return tmp_path / "skills"

    def test_only_front_matter_until_the_agent_reads_the_file(
        self, tmp_path: Path, skills: Path
    ) -> None:
        model = ScriptedChatModel(
            script=[
                ai(
                    "Reading the skill.",
                    ("read_file", {"file_path": "/skills/research-report/SKILL.md"}),
                ),
                ai("Following it."),
            ]
        )
        agent = runner.build_agent(spec(tmp_path, skills=["./skills"]), model=model)
        result = agent.invoke({"messages": [{"role": "user", "content": "write a report"}]})
        prompt = system_text(model)
        assert (
            "- **research-report** (`/skills/research-report/SKILL.md`): Structure and write a short research report"
            in prompt
        )
        assert "# Writing a research report" not in prompt  # the body stays out of the prompt
        body = result["messages"][2].text
        assert "     7\t# Writing a research report" in body

    def test_skills_are_read_only(self, tmp_path: Path, skills: Path) -> None:
        model = ScriptedChatModel(
            script=[
                ai("", ("write_file", {"file_path": "/skills/new/SKILL.md", "content": "x"})),
                ai("ok"),
            ]
        )
        agent = runner.build_agent(spec(tmp_path, skills=["./skills"]), model=model)
        result = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
        assert (
            result["messages"][2].text
            == "Error: '/skills/new/SKILL.md' is read-only: it belongs to a skills folder"
        )
        assert not (skills / "new").exists()

    def test_later_folders_override_and_bad_skills_are_skipped(
        self, tmp_path: Path, skills: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        extra = tmp_path / "more"
        (extra / "fact-check").mkdir(parents=True)
        (extra / "fact-check" / "SKILL.md").write_text(
            "---\nname: fact-check\ndescription: The team's own checking rules.\n---\nBody.\n"
        )
        (extra / "broken").mkdir()
        (extra / "broken" / "SKILL.md").write_text("no front matter\n")
        model = ScriptedChatModel(script=[ai("ok")])
        with caplog.at_level(logging.WARNING, logger="agentctl"):
            agent = runner.build_agent(spec(tmp_path, skills=["./skills", "./more"]), model=model)
        agent.invoke({"messages": [{"role": "user", "content": "go"}]})
        prompt = system_text(model)
        assert (
            "- **fact-check** (`/skills-2/fact-check/SKILL.md`): The team's own checking rules."
            in prompt
        )
        assert "research-report" in prompt and "broken" not in prompt
        assert any(
            "more/broken/SKILL.md:1:1: a SKILL.md starts with YAML front matter" in r.getMessage()
            for r in caplog.records
        )

    def test_skills_in_the_backend_are_found_per_thread(self, tmp_path: Path) -> None:
        model = ScriptedChatModel(script=lambda messages: ai("ok"))
        agent = runner.build_agent(
            spec(tmp_path, skills=["/skills/"]), model=model, checkpointer=InMemorySaver()
        )
        files = {
            "/skills/tidy/SKILL.md": {
                "content": "---\nname: tidy\ndescription: Tidy a folder.\n---\nSteps.",
                "created_at": "x",
                "modified_at": "x",
            }
        }
        agent.invoke(
            {"messages": [{"role": "user", "content": "go"}], "files": files},
            {"configurable": {"thread_id": "s"}},
        )
        assert "- **tidy** (`/skills/tidy/SKILL.md`): Tidy a folder." in system_text(model)

    def test_session_prompt_with_user_middleware_keeps_the_seed_order(
        self, tmp_path: Path, skills: Path
    ) -> None:
        (tmp_path / "mw.py").write_text(
            "from langchain.agents.middleware import AgentMiddleware\n"
            "from langchain_core.messages import SystemMessage\n"
            "class Style(AgentMiddleware):\n"
            "    def __init__(self, words):\n"
            "        super().__init__(); self.words = words\n"
            "    def wrap_model_call(self, request, handler):\n"
            "        text = request.system_message.text + '\\n\\n## House style\\n\\n' + self.words\n"
            "        return handler(request.override(system_message=SystemMessage(content=text)))\n"
        )
        cassette = tmp_path / "c.yaml"
        cassette.write_text("- content: ok\n")
        path = spec(
            tmp_path,
            model=f"replay:{cassette}",
            prompt="You are the test agent.",
            memory=["./AGENTS.md"],
            skills=["./skills"],
            interrupt_on={"write_file": True},
            middleware=[{"import": "./mw.py:Style", "args": {"words": "Plain English."}}],
            subagents=[{"name": "helper", "description": "helps"}],
        )
        (tmp_path / "AGENTS.md").write_text("remember this\n")
        model = ScriptedChatModel(script=[ai("ok")])
        with Session(
            path, model=model, db=tmp_path / "db", local_context="## Local context\n\nHere."
        ) as session:
            session.run("hi")
        captured = [system_text(model)]
        headings = [
            line.split()[1].strip("`")
            for line in captured[0].splitlines()
            if line.startswith("## ")
        ]
        expected = [
            "How",
            "write_todos",
            "Memory",
            "Skills",
            "Files",
            "Subagents",
            "House",
            "Approvals",
            "Local",
        ]
        assert [h for h in headings if h in expected] == expected
        assert captured[0].startswith("You are the test agent.")
