"""Skills in the system prompt: names, descriptions and paths; bodies are read on demand.

Host skill folders are read when the agent is built, so their listing joins the static prompt
and costs nothing per model call; they are mounted read-only (at `/skills/`) so `read_file`
reaches each SKILL.md. Skill folders that live in the backend (`skills: [/skills/]` on a store
route) are discovered once per thread in `before_agent` (on an event loop, `abefore_agent` does
the same work in a worker thread: it reads the backend, and may create its folder). Later
folders override earlier ones by name, whichever kind they are.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Annotated, Any, NotRequired, TypedDict

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import OmitFromInput, OmitFromOutput

from runner.backends import BackendError, BackendProvider
from runner.load.skills import SKILL_FILE, Skill, parse_skill, skill_from, skills_section
from runner.middleware.prompt import PromptSection

log = logging.getLogger("agentctl")

# One source per `skills:` entry, in spec order: host skills already found, or a backend folder.
Source = dict[str, Skill] | str


class SkillsState(TypedDict):
    skills_metadata: NotRequired[
        Annotated[dict[str, dict[str, Any]], OmitFromInput, OmitFromOutput]
    ]


def _merge(
    sources: list[Source], found_in_backend: Mapping[str, Mapping[str, Skill]]
) -> list[Skill]:
    merged: dict[str, Skill] = {}
    for source in sources:
        merged.update(source if isinstance(source, dict) else found_in_backend.get(source, {}))
    return list(merged.values())


class SkillsMiddleware(AgentMiddleware):
    """Skills from host folders only: a static prompt section, no hooks."""

    def __init__(self, sources: list[Source]) -> None:
        super().__init__()
        self.sources = sources

    def prompt_section(self) -> PromptSection | None:
        text = skills_section(_merge(self.sources, {}))
        return PromptSection("skills", text=text) if text else None


class BackendSkillsMiddleware(SkillsMiddleware):
    """Skills with some folders in the backend: discovered once per thread."""

    state_schema = SkillsState  # type: ignore[assignment]

    def __init__(self, sources: list[Source], provider: BackendProvider) -> None:
        super().__init__(sources)
        self.provider = provider
        self.folders = [s for s in sources if isinstance(s, str)]

    def _parse(self, folder: str, path: str, text: str) -> Skill | None:
        name = PurePosixPath(path).parent.name
        meta, problems = parse_skill(text, path, folder_name=name)
        for problem in problems:
            log.warning("skill skipped: %s", problem)
        if meta is None:
            return None
        return skill_from(meta, PurePosixPath(path), path)

    def discover(self, state: Mapping[str, Any] | None, store: Any) -> dict[str, dict[str, Any]]:
        backend = self.provider.get(state, store)
        found: dict[str, dict[str, Any]] = {}
        for folder in self.folders:
            skills: dict[str, Any] = {}
            try:
                for info in backend.glob(f"*/{SKILL_FILE}", folder):
                    skill = self._parse(folder, info.path, backend.read(info.path, 0, 200).content)
                    if skill:
                        skills[skill.name] = skill.__dict__ | {"path": str(skill.path)}
            except (BackendError, OSError) as exc:
                log.warning("skills folder %s skipped: %s", folder, exc)
            found[folder] = skills
        return found

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if state.get("skills_metadata") is not None:
            return None
        return {"skills_metadata": self.discover(state, runtime.store)}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if state.get("skills_metadata") is not None:
            return None
        found = await asyncio.to_thread(self.discover, state, runtime.store)
        return {"skills_metadata": found}

    def render(self, state: Mapping[str, Any]) -> str | None:
        raw = state.get("skills_metadata") or {}
        found = {
            folder: {
                name: Skill(**{**data, "path": PurePosixPath(data["path"])})
                for name, data in skills.items()
            }
            for folder, skills in raw.items()
        }
        return skills_section(_merge(self.sources, found))

    def prompt_section(self) -> PromptSection | None:
        def preview() -> str | None:
            from langgraph.store.memory import InMemoryStore

            return self.render({"skills_metadata": self.discover({}, InMemoryStore())})

        return PromptSection("skills", render=self.render, preview=preview)
