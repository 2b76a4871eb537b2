"""SKILL.md front matter with keys beyond ours (seed 004's `trigger`, other tools' own keys)."""

from __future__ import annotations

from pathlib import Path

from runner.load.skills import discover, parse_skill, skills_section

SEED_SKILL = """\
---
name: code-review
description: Review code for quality and security.
trigger: When the user asks for a code or PR review
license: Apache-2.0
allowed-tools: read_file grep
metadata: {owner: platform}
argument-hint: "[pr-number]"
model: some-model
---
# Reviewing code
"""


def test_extra_front_matter_keys_are_accepted_and_the_trigger_is_listed(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "code-review"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SEED_SKILL, encoding="utf-8")
    found = discover([(tmp_path / "skills", "/skills/")])
    assert found.problems == []
    skill = found.skills["code-review"]
    assert skill.trigger == "When the user asks for a code or PR review"
    assert skills_section(found.skills.values()) is not None
    assert (
        "- **code-review** (`/skills/code-review/SKILL.md`): Review code for quality and "
        "security. Use when: When the user asks for a code or PR review. (uses: read_file, grep)"
    ) in (skills_section(found.skills.values()) or "")


def test_a_description_without_a_full_stop_is_kept_apart_from_its_trigger(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "code-review"
    folder.mkdir(parents=True)
    text = SEED_SKILL.replace("quality and security.", "quality and security")
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    found = discover([(tmp_path / "skills", "/skills/")])
    assert found.problems == []
    assert "and security. Use when: When the user asks" in (
        skills_section(found.skills.values()) or ""
    )


def test_a_misspelt_key_of_ours_is_still_an_error_with_its_line() -> None:
    text = "---\nname: x\ndescription: d\nLicense: MIT\ntriger: soon\n---\n"
    meta, problems = parse_skill(text, "x/SKILL.md", folder_name="x")
    assert meta is None
    assert [(p.line, p.path, p.message) for p in problems] == [
        (4, "License", "unknown key; did you mean 'license'?")
    ]
    meta, problems = parse_skill(
        "---\nname: x\ndescription: d\ntriger: soon\n---\n", "x/SKILL.md", folder_name="x"
    )
    assert [(p.line, p.message) for p in problems] == [(4, "unknown key; did you mean 'trigger'?")]
