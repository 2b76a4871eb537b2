"""`agentctl init`: a starter agent folder that runs at once, offline.

```
agent.yaml             a commented agent: model, prompt, vars, memory, skills, backend
agent.cassette.yaml    recorded replies, so `model: replay:agent.cassette.yaml` needs no API key
agent.test.yaml        a test of the agent (`agentctl test`), offline on the cassette
AGENTS.md              the agent's memory
skills/planning/       one skill (SKILL.md with `name` and `description` front matter)
agent.schema.json      the JSON Schema editors use, unless the folder is inside agentctl's repo
test.schema.json       the same for the test file
```

The first line of agent.yaml points yaml-language-server at the schema. An installed agentctl has
no `schemas/` folder to point at, so the schema is written next to the agent (regenerate it with
`agentctl schema -o agent.schema.json` after upgrading). A folder inside the checkout agentctl
runs from points at the repository's `schemas/agent.schema.json` instead, which is kept current.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "STARTER_FILES",
    "Starter",
    "agent_name_for",
    "plan_starter",
    "schema_reference",
    "write_starter",
]

FILES = Path(__file__).parent / "files"

STARTER_FILES = (
    "agent.yaml",
    "agent.cassette.yaml",
    "agent.test.yaml",
    "AGENTS.md",
    "skills/planning/SKILL.md",
)

SCHEMA_FILE = "agent.schema.json"
TEST_SCHEMA_FILE = "test.schema.json"
REPO_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "agent.schema.json"
"""The committed schema, when agentctl runs from its own checkout (absent once installed)."""


@dataclass(frozen=True)
class Starter:
    """What `write_starter` writes: file path (relative to the folder) -> text."""

    directory: Path
    files: dict[str, str]

    def existing(self) -> list[str]:
        return [name for name in self.files if (self.directory / name).exists()]


def agent_name_for(directory: Path) -> str:
    """An agent name (lowercase letters, digits, '-', '_') from the folder's name."""
    name = re.sub(r"[^a-z0-9_-]+", "-", directory.resolve().name.lower()).strip("-_")
    return name[:64] or "assistant"


def schema_reference(directory: Path, repo_schema: Path = REPO_SCHEMA) -> str | None:
    """The repository's schema relative to `directory` when `directory` is inside the checkout
    agentctl runs from; None when the schema must be written next to the agent."""
    if not repo_schema.is_file():
        return None
    repo = repo_schema.parent.parent
    target = directory.resolve()
    if target != repo and repo not in target.parents:
        return None
    return Path(os.path.relpath(repo_schema, target)).as_posix()


def plan_starter(
    directory: Path, *, name: str | None = None, repo_schema: Path = REPO_SCHEMA
) -> Starter:
    """The starter's files for `directory`, without writing anything."""
    files = {rel: (FILES / rel).read_text(encoding="utf-8") for rel in STARTER_FILES}
    reference = schema_reference(directory, repo_schema)
    if reference is None:
        from runner.spec import json_schema_text
        from runner.testing import test_json_schema_text

        files[SCHEMA_FILE] = json_schema_text()
        files[TEST_SCHEMA_FILE] = test_json_schema_text()
        reference = SCHEMA_FILE
    test_reference = reference.removesuffix(SCHEMA_FILE) + TEST_SCHEMA_FILE
    files["agent.test.yaml"] = files["agent.test.yaml"].replace("__TEST_SCHEMA__", test_reference)
    files["agent.yaml"] = (
        files["agent.yaml"]
        .replace("__SCHEMA__", reference)
        .replace("__NAME__", name or agent_name_for(directory))
    )
    return Starter(directory, files)


def write_starter(starter: Starter) -> list[Path]:
    """Write every file of `starter` (creating folders); the paths written."""
    written = []
    for rel, text in starter.files.items():
        path = starter.directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
