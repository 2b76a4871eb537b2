"""Skills: folders of `<name>/SKILL.md` files whose YAML front matter says what each is for.

Only the front matter is read up front (progressive disclosure): the agent sees each skill's
name, description and path in its system prompt, and reads the body with `read_file` when a task
calls for it. Front matter is validated like a spec, every problem located in its SKILL.md:
`agentctl validate` reports them as errors; at run time a bad skill is skipped with a warning.
Later folders override earlier ones by name.

Keys we do not know are accepted and ignored: the Agent Skills format lets other tools add
their own (`trigger` in seed 004, `argument-hint`, `model`, ...), and a skill written for them
must not disappear here. Only a key that looks like a misspelling of one of ours
(`descripton`, `allowed_tools`) is an error, with a "did you mean".

Nothing here imports langchain: `agentctl validate` uses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from runner.errors import Problem
from runner.spec.base import SpecModel

SKILL_FILE = "SKILL.md"
SKILL_NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class SkillFrontMatter(SpecModel):
    """The keys of a SKILL.md front matter that agentctl reads; others are kept in
    `model_extra` and ignored (see the module docstring)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=SKILL_NAME_PATTERN, max_length=64)
    """Lowercase letters, digits and single hyphens; the skill's folder has the same name."""
    description: str = Field(min_length=1, max_length=1024)
    """What the skill does and when to use it (the agent decides from this alone)."""
    trigger: str | None = None
    """When to use the skill (seed 004's front matter); listed after the description."""
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
    trigger: str = ""
    """When to use it, if the front matter says (`trigger:`)."""


def skill_from(meta: SkillFrontMatter, path: PurePath, agent_path: str) -> Skill:
    """The skill a validated front matter describes."""
    return Skill(
        name=meta.name,
        description=meta.description.strip(),
        path=path,
        allowed_tools=list(meta.allowed_tools or []),
        agent_path=agent_path,
        trigger=(meta.trigger or "").strip(),
    )


def _misspelt_key(key: str) -> str | None:
    """The known key that `key` (not a known one) looks like a misspelling of, if any: a case,
    `-`/`_` variant or a close spelling. Other unknown keys belong to other tools."""
    import difflib

    known = [
        field.alias or name for name, field in SkillFrontMatter.model_fields.items()
    ]  # `allowed-tools`, not `allowed_tools`
    folded = {k.lower().replace("_", "-"): k for k in known}
    if key.lower().replace("_", "-") in folded:
        return folded[key.lower().replace("_", "-")]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
    return close[0] if close else None


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
    from runner.load.problems import problems_from_validation
    from runner.load.source import Loc, Pos, SourceMap, read_yaml

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
    smap = SourceMap(doc.pos if doc.pos else Pos(Loc(shown, 1, 1)))
    try:
        meta = SkillFrontMatter.model_validate(doc.value)
    except ValidationError as exc:
        return None, [
            shift(p) for p in problems_from_validation(exc, doc.value, smap, SkillFrontMatter)
        ]
    for key in meta.model_extra or {}:
        meant = _misspelt_key(key)
        if meant is not None and meant not in doc.value:
            loc = smap.key_loc((key,))
            return None, [
                Problem(
                    shown,
                    loc.line + first_line - 1,
                    loc.col,
                    key,
                    f"unknown key; did you mean {meant!r}?",
                )
            ]
    if folder_name is not None and meta.name != folder_name:
        loc = smap.value_loc(("name",))
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
    from runner.errors import display_path
    from runner.load.source import read_source

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
                text = read_source(skill_file)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                found.problems.append(Problem(shown, 0, 0, "", f"cannot read: {exc}"))
                continue
            meta, problems = parse_skill(text, shown, folder_name=skill_file.parent.name)
            found.problems.extend(problems)
            if meta is None:
                continue
            found.skills[meta.name] = skill_from(
                meta,
                skill_file,
                f"{agent_prefix.rstrip('/')}/{skill_file.parent.name}/{SKILL_FILE}",
            )
    return found


SKILLS_SECTION = """\
## Skills

Skills are instructions for specialised tasks, each in a SKILL.md file. Only their names and
descriptions are listed here. When a task matches a skill, read its SKILL.md with `read_file`
before you start, and follow it; it may point to more files in its folder.

{listing}"""


def _sentence(text: str) -> str:
    """`text` ending as a sentence does, so what is listed after it does not run into it."""
    return text if text.endswith((".", "!", "?", ":", "\u3002", "\uff01", "\uff1f")) else text + "."


def skills_section(skills: Iterable[Skill]) -> str | None:
    rows = []
    for skill in sorted(skills, key=lambda s: s.name):
        tools = f" (uses: {', '.join(skill.allowed_tools)})" if skill.allowed_tools else ""
        description = _sentence(skill.description) if skill.trigger else skill.description
        when = f" Use when: {_sentence(skill.trigger)}" if skill.trigger else ""
        rows.append(f"- **{skill.name}** (`{skill.agent_path}`): {description}{when}{tools}")
    return SKILLS_SECTION.format(listing="\n".join(rows)) if rows else None
