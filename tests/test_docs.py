"""The README and the pages in docs/ hold together.

`mkdocs build --strict` (in scripts/test) checks the links and anchors between the pages; these
tests check what it cannot see: the README (outside the site), the site's nav, references to
files outside the repository, and that every `agentctl` command the docs show exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import yaml

from runner.cli import COMMANDS, cli
from tests.conftest import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))


class _Loader(yaml.SafeLoader):
    """mkdocs.yml names a Python function with a `!!python/...` tag; read it as plain data."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _nav_files(entries: list[object]) -> list[str]:
    files: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            files += _nav_files(value)
        elif isinstance(value, str):
            files.append(value)
    return files


def _links(text: str) -> list[str]:
    """The targets of the Markdown links and images in TEXT, outside code."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    nav = _nav_files(config["nav"])
    assert len(nav) == len(set(nav)), nav
    assert set(nav) == {page.name for page in PAGES}


def test_the_readme_links_to_files_of_the_repository_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [link for link in _links(readme) if not re.match(r"[a-z]+://", link)]
    assert "docs/index.md" in {link.split("#")[0] for link in links}
    for link in links:
        path = link.split("#")[0]
        assert not path.startswith(("/", "..")), f"README.md links outside the repository: {link}"
        assert (ROOT / path).exists(), f"README.md links to {link}, which does not exist"


def test_the_readme_and_the_home_page_index_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {link.split("#")[0] for link in _links(readme)}
    missing = [f"docs/{page.name}" for page in PAGES if f"docs/{page.name}" not in linked]
    assert not missing, f"README.md's index lacks {missing}"
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = {link.split("#")[0] for link in _links(home)}
    missing = [page.name for page in PAGES if page.name not in linked | {"index.md"}]
    assert not missing, f"docs/index.md's table of pages lacks {missing}"


@pytest.mark.parametrize("path", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_no_reference_to_files_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for link in _links(text):
        assert not link.startswith(("../", "/")), f"{path.name}: link outside the docs: {link}"
    assert "shared/seeds" not in text and "../shared" not in text, path.name


def _subcommands(name: str) -> set[str] | None:
    context = click.Context(cli, info_name="agentctl")
    command = cli.get_command(context, name)
    if isinstance(command, click.Group):
        return set(command.list_commands(context))
    return None


@pytest.mark.parametrize("path", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_every_agentctl_command_shown_exists(path: Path) -> None:
    """`agentctl NAME` in prose and `$ agentctl NAME SUB ...` in console blocks name real commands."""
    text = path.read_text(encoding="utf-8")
    shown: list[list[str]] = [
        m.split() for m in re.findall(r"`agentctl ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", text)
    ]
    lines = re.findall(r"^\$ agentctl [^\n]*", text, flags=re.M)
    shown += [line.split(" #")[0].split()[2:4] for line in lines]
    assert shown or path.name in {"architecture.md", "benchmarks.md"}, path.name
    for words in shown:
        name = words[0]
        if name.startswith("-"):
            continue
        assert name in COMMANDS, f"{path.name}: `agentctl {' '.join(words)}`: no command {name!r}"
        subcommands = _subcommands(name)
        if subcommands is not None and len(words) > 1 and not words[1].startswith("-"):
            assert words[1] in subcommands, f"{path.name}: `agentctl {' '.join(words)}`"
