"""Skills: folders of `<name>/SKILL.md` files whose YAML front matter says what each is for.

Only the front matter is read up front (progressive disclosure): the agent sees each skill's
name, description and path in its system prompt, and reads the body with `read_file` when a task
calls for it. Front matter is validated like a spec, every problem located in its SKILL.md:
`agentctl validate` reports them as errors; at run time a bad skill is skipped with a warning.
Later folders override earlier ones by name.

Nothing here imports langchain: `agentctl validate` uses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from pydantic import Field, ValidationError, field_validator

from runner.errors import Problem
from runner.spec.base import SpecModel

SKILL_FILE = "SKILL.md"
SKILL_NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class SkillFrontMatter(SpecModel):
    """The keys a SKILL.md front matter may have."""

    name: str = Field(pattern=SKILL_NAME_PATTERN, max_length=64)
    """Lowercase letters, digits and single hyphens; the skill's folder has the same name."""
    description: str = Field(min_length=1, max_length=1024)
    """What the skill does and when to use it (the agent decides from this alone)."""
    license: str | None = None
    allowed_tools: list[str] | None = Field(default=None, alias="allowed-tools")
    """Tools the skill expects to use."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    version: str | None = None
    compatibility: str | None = Field(default=None, max_length=500)

    @field_validator("allowed_tools", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: PurePath
    """The SKILL.md on the host (or its backend path for backend skills)."""
    allowed_tools: list[str] = field(default_factory=list)
    agent_path: str = ""
    """Where the agent reads it with read_file."""


def _front_matter(text: str) -> tuple[str, int] | None:
    """(front matter text, the line it starts on) or None when the file has none."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    for index, line in enumerate(lines[1:], 1):
        if line.strip() in ("---", "..."):
            return "\n".join(lines[1:index]), 2
    return None


def parse_skill(
    text: str, shown: str, *, folder_name: str | None
) -> tuple[SkillFrontMatter | None, list[Problem]]:
    """Validate a SKILL.md's front matter; problems are located in `shown` (its display path)."""
    from runner.spec_errors import problems_from_validation
    from runner.yamlsource import Loc, Pos, SourceMap, read_yaml

    found = _front_matter(text)
    if found is None:
        return None, [
            Problem(
                shown,
                1,
                1,
                "",
                "a SKILL.md starts with YAML front matter between '---' lines, "
                "with at least `name:` and `description:`",
            )
        ]
    body, first_line = found
    doc = read_yaml(body, shown, env={})

    def shift(problem: Problem) -> Problem:
        line = problem.line + first_line - 1 if problem.line else first_line
        return Problem(problem.file, line, problem.col or 1, problem.path, problem.message)

    if doc.problems:
        return None, [shift(p) for p in doc.problems]
    if not isinstance(doc.value, dict):
        return None, [
            Problem(
                shown,
                first_line,
                1,
                "",
                "front matter must be a mapping with `name:` and `description:`",
            )
        ]
    try:
        meta = SkillFrontMatter.model_validate(doc.value)
    except ValidationError as exc:
        smap = SourceMap(doc.pos if doc.pos else Pos(Loc(shown, 1, 1)))
        return None, [
            shift(p) for p in problems_from_validation(exc, doc.value, smap, SkillFrontMatter)
        ]
    if folder_name is not None and meta.name != folder_name:
        loc = SourceMap(doc.pos).value_loc(("name",))
        return None, [
            Problem(
                shown,
                loc.line + first_line - 1,
                loc.col,
                "name",
                f"{meta.name!r} does not match its folder {folder_name!r}; rename one of them",
            )
        ]
    return meta, []


@dataclass
class SkillSet:
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def discover(folders: Iterable[tuple[Path, str]]) -> SkillSet:
    """Skills in host folders, each given with the agent path it is mounted at (`/skills/`).
    Later folders override earlier ones by name; problems are collected, bad skills skipped."""
    from runner.loader import display_path

    found = SkillSet()
    for folder, agent_prefix in folders:
        if not folder.is_dir():
            found.problems.append(
                Problem(display_path(folder), 0, 0, "", "skills folder not found")
            )
            continue
        for skill_file in sorted(folder.glob(f"*/{SKILL_FILE}")):
            shown = display_path(skill_file)
            try:
                text = skill_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                found.problems.append(Problem(shown, 0, 0, "", f"cannot read: {exc}"))
                continue
            meta, problems = parse_skill(text, shown, folder_name=skill_file.parent.name)
            found.problems.extend(problems)
            if meta is None:
                continue
            found.skills[meta.name] = Skill(
                name=meta.name,
                description=meta.description.strip(),
                path=skill_file,
                allowed_tools=list(meta.allowed_tools or []),
                agent_path=f"{agent_prefix.rstrip('/')}/{skill_file.parent.name}/{SKILL_FILE}",
            )
    return found


SKILLS_SECTION = """\
## Skills

Skills are instructions for specialised tasks, each in a SKILL.md file. Only their names and
descriptions are listed here. When a task matches a skill, read its SKILL.md with `read_file`
before you start, and follow it; it may point to more files in its folder.

{listing}"""


def skills_section(skills: Iterable[Skill]) -> str | None:
    rows = []
    for skill in sorted(skills, key=lambda s: s.name):
        tools = f" (uses: {', '.join(skill.allowed_tools)})" if skill.allowed_tools else ""
        rows.append(f"- **{skill.name}** (`{skill.agent_path}`): {skill.description}{tools}")
    return SKILLS_SECTION.format(listing="\n".join(rows)) if rows else None
