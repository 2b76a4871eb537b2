"""What starting an agent imports: nothing heavy that the agent does not use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT


def test_building_a_non_anthropic_agent_does_not_import_the_anthropic_sdk(tmp_path: Path) -> None:
    spec = tmp_path / "agent.yaml"
    spec.write_text(yaml.safe_dump({"name": "plain", "prompt": "Plain text."}), encoding="utf-8")
    cassette = tmp_path / "c.cassette.yaml"
    cassette.write_text(
        yaml.safe_dump({"agents": {"plain": [{"content": "hi"}]}}), encoding="utf-8"
    )
    code = (
        "import sys, runner\n"
        f"runner.build_agent({str(spec)!r}, model='replay:{cassette}')\n"
        "print(sorted(m for m in ('langchain_anthropic', 'jinja2') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
