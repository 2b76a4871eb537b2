"""The broken-spec corpus: each file in tests/data/broken/ states its exact messages.

A corpus file starts with comment lines; each `# expect: ` line is one problem `load_spec` must
report, in order (problems come sorted by file, line, column). `{file}` stands for the corpus
file's own name; problems in supporting files (refs/, includes/, prompts/) name them relative to
the corpus folder, which is the working directory while loading.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import runner
from tests.conftest import ROOT

BROKEN = ROOT / "tests" / "data" / "broken"
CORPUS = sorted(BROKEN.glob("*.yaml"))
# The environment every corpus file is loaded with: AGENTCTL_CORPUS_SET is set, every other
# AGENTCTL_CORPUS_* variable is not.
CORPUS_ENV = {"AGENTCTL_CORPUS_SET": "the corpus team"}
_EXPECT = "# expect: "


def expected_problems(path: Path) -> list[str]:
    """The `# expect:` lines of the comment block at the top of a corpus file."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if line.startswith(_EXPECT):
            lines.append(line.removeprefix(_EXPECT).replace("{file}", path.name))
    return lines


def load_problems(path: Path) -> list[runner.Problem]:
    with pytest.raises(runner.SpecError) as info:
        runner.load_spec(path.name, env=CORPUS_ENV)
    return info.value.problems


def test_the_corpus_is_large_and_every_file_expects_something() -> None:
    assert len(CORPUS) >= 50
    assert [p.name for p in CORPUS if not expected_problems(p)] == []


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_broken_spec_reports_exactly_its_expected_problems(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(BROKEN)
    problems = load_problems(path)
    assert [str(p) for p in problems] == expected_problems(path)
    # Each names file, line and column; only a problem about a whole file may name the file alone.
    for problem in problems:
        assert problem.file
        assert (problem.line >= 1 and problem.col >= 1) or (
            problem.line == problem.col == 0 and not problem.path
        ), problem


def test_problems_come_sorted_by_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BROKEN)
    problems = load_problems(BROKEN / "multiple_errors.yaml")
    assert len(problems) >= 8
    places = [(p.file, p.line, p.col) for p in problems]
    assert places == sorted(places)
