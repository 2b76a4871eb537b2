""" "New agent": what `agentctl init` writes, laid out as the served folder's agents are.

`agentctl serve` serves the agent files directly inside its folder, so a new agent NAME is
`NAME.yaml` there, beside `NAME.cassette.yaml` (its recorded replies) and `NAME.test.yaml` (its
test), as the example agents are; its memory file and skill go in a folder of its name
(`NAME/AGENTS.md`, `NAME/skills/`), so they are its own. The texts are the starter's, with the
file names changed in them.
"""

from __future__ import annotations

from pathlib import Path

from runner.starter import SCHEMA_FILE, TEST_SCHEMA_FILE, plan_starter

__all__ = ["new_agent_files"]


def new_agent_files(root: Path, name: str) -> dict[str, str]:
    """{path relative to `root`: text} of a new agent `name` in the served folder `root`."""
    starter = plan_starter(root, name=name).files

    def renamed(text: str) -> str:
        text = text.replace("agent.cassette.yaml", f"{name}.cassette.yaml")
        return text.replace("agent.yaml", f"{name}.yaml")

    agent = renamed(starter["agent.yaml"])
    agent = agent.replace("memory: [./AGENTS.md]", f"memory: [./{name}/AGENTS.md]")
    agent = agent.replace("skills: [./skills]", f"skills: [./{name}/skills]")
    files = {
        f"{name}.yaml": agent,
        f"{name}.cassette.yaml": renamed(starter["agent.cassette.yaml"]),
        f"{name}.test.yaml": renamed(starter["agent.test.yaml"]),
        f"{name}/AGENTS.md": starter["AGENTS.md"],
        f"{name}/skills/planning/SKILL.md": starter["skills/planning/SKILL.md"],
    }
    # outside agentctl's checkout the schemas go beside the agent, shared by every agent there
    for schema in (SCHEMA_FILE, TEST_SCHEMA_FILE):
        if schema in starter and not (root / schema).exists():
            files[schema] = starter[schema]
    return files
