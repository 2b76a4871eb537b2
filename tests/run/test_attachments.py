"""`--attach`: images as image content, text inlined, other files into the backend."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from runner.errors import RunError
from runner.run import Session
from runner.run.attachments import read_attachment
from tests.conftest import ROOT, run_cli
from tests.fakes import ScriptedChatModel, ai

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(40)
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tests" / "data" / "spine", tmp_path / "spine")
    shutil.copytree(ROOT / "tests" / "data" / "tools", tmp_path / "tools")
    (tmp_path / "photo.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("buy milk\nfix the shed\n", encoding="utf-8")
    (tmp_path / "report.pdf").write_bytes(PDF)
    return tmp_path


def spec_with(folder: Path, extra: str, *, images: bool | None) -> Path:
    """The calc agent with `model.images` set (or not) and more YAML appended."""
    text = (folder / "spine" / "agent.yaml").read_text()
    if images is not None:
        text = text.replace(
            "model: replay:calc.cassette.yaml",
            f"model: {{id: 'replay:calc.cassette.yaml', images: {str(images).lower()}}}",
        )
    path = folder / "spine" / "attach.yaml"
    path.write_text(text + extra, encoding="utf-8")
    return path


def first_human(model: ScriptedChatModel) -> HumanMessage:
    return next(m for m in model.calls[0] if isinstance(m, HumanMessage))


def test_image_text_and_other_file_reach_the_model_and_the_state(folder: Path) -> None:
    model = ScriptedChatModel(script=[ai("A photo, a list and a report.")])
    attachments = [read_attachment(folder / n) for n in ("photo.png", "notes.txt", "report.pdf")]
    with Session(spec_with(folder, "", images=True), db=folder / "a.db", model=model) as session:
        result = session.run("Describe these", attachments=attachments)
        assert result.error is None, result.error
        files = session.values(result.thread_id)["files"]
    assert first_human(model).content == [
        {"type": "text", "text": "Describe these"},
        {"type": "text", "text": f"Attached image photo.png (PNG image, {len(PNG)} bytes):"},
        {"type": "image", "base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
        {
            "type": "text",
            "text": '<attachment name="notes.txt">\nbuy milk\nfix the shed\n\n</attachment>',
        },
        {
            "type": "text",
            "text": f"Attached file report.pdf (file, {len(PDF)} bytes): it is in your files at "
            "/attachments/report.pdf (read it with your file tools).",
        },
    ]
    stored = files["/attachments/report.pdf"]
    assert stored["encoding"] == "base64" and base64.b64decode(stored["content"]) == PDF


def test_a_second_file_of_the_same_name_gets_its_own_path_on_disk(folder: Path) -> None:
    workspace = folder / "ws"
    spec = spec_with(folder, f"backend: {{kind: filesystem, root_dir: {workspace}}}\n", images=None)
    model = ScriptedChatModel(script=[ai("Got it."), ai("Got it again.")])
    with Session(spec, db=folder / "a.db", model=model) as session:
        first = session.run("Keep this", attachments=[read_attachment(folder / "report.pdf")])
        again = session.run(
            "And this",
            thread_id=first.thread_id,
            attachments=[read_attachment(folder / "report.pdf")],
        )
        assert first.error is None and again.error is None
    assert (workspace / "attachments" / "report.pdf").read_bytes() == PDF
    assert (workspace / "attachments" / "report-2.pdf").read_bytes() == PDF
    last = [m for m in model.calls[1] if isinstance(m, HumanMessage)][-1]
    assert "/attachments/report-2.pdf" in str(last.content)


def test_an_image_for_a_model_without_images_is_refused(folder: Path) -> None:
    model = ScriptedChatModel(script=[ai("never")])
    with Session(spec_with(folder, "", images=False), db=folder / "a.db", model=model) as session:
        result = session.run("Describe", attachments=[read_attachment(folder / "photo.png")])
    assert result.error is not None and not model.calls
    assert result.error.message.startswith(
        "--attach photo.png: the model of agent calc (instance:ScriptedChatModel) does not take "
        "images"
    )

    refused = run_cli("run", "spine/agent.yaml", "Describe", "--attach", "photo.png", cwd=folder)
    assert refused.returncode == 2
    assert "photo.png: the model of agent calc (replay:" in refused.stderr
    assert "does not take images; use a model that does, or set `images: true`" in refused.stderr


def test_missing_and_too_large_files_are_usage_errors(folder: Path) -> None:
    missing = run_cli("run", "spine/agent.yaml", "hi", "--attach", "nope.png", cwd=folder)
    assert missing.returncode == 2 and "nope.png: no such file" in missing.stderr
    with open(folder / "huge.bin", "wb") as handle:
        handle.truncate(51 * 1024 * 1024)  # sparse: no disk used
    huge = run_cli("run", "spine/agent.yaml", "hi", "--attach", "huge.bin", cwd=folder)
    assert huge.returncode == 2
    assert "huge.bin: 51.0 MB, over the 50.0 MB limit for attached files" in huge.stderr
    (folder / "big.png").write_bytes(PNG + bytes(6 * 1024 * 1024))
    big = run_cli("run", "spine/agent.yaml", "hi", "--attach", "big.png", cwd=folder)
    assert big.returncode == 2
    assert "big.png: a PNG image of 6.0 MB, over the 5.0 MB limit for images" in big.stderr
    alone = run_cli("run", "spine/agent.yaml", "--attach", "notes.txt", "--thread", "x", cwd=folder)
    assert alone.returncode == 2 and "--attach goes with a MESSAGE" in alone.stderr
    with pytest.raises(RunError, match="is a directory"):
        read_attachment(folder / "spine")


def test_attach_from_the_command_line_on_a_replay_model(folder: Path) -> None:
    done = run_cli(
        "run",
        "spine/agent.yaml",
        "add these",
        "--attach",
        "notes.txt",
        "--attach",
        "report.pdf",
        "-q",
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    thread = json.loads(run_cli("threads", "list", "--json", cwd=folder).stdout)[0]["thread_id"]
    exported = [
        json.loads(line)
        for line in run_cli("threads", "export", thread, cwd=folder).stdout.splitlines()
    ]
    first = next(r for r in exported if r["type"] == "message")
    assert first["content"].startswith('add these<attachment name="notes.txt">\nbuy milk\n')
    assert "/attachments/report.pdf" in first["content"]
    (stored,) = [r for r in exported if r["type"] == "file"]
    assert stored["path"] == "/attachments/report.pdf" and stored["encoding"] == "base64"
