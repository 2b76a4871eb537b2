"""`read_file` on images (seed 004): image content for a model that can look at images, a plain
refusal for one that cannot, on every backend, with a size cap."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.store.memory import InMemoryStore

import runner
from runner.agent.resolve import Resolver
from runner.backends import FileData, StateBackend
from runner.middleware.filesystem import MAX_IMAGE_BYTES
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import MODES, call, reply, spec_file

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
JPEG_NAMED_PNG = b"\xff\xd8\xff\xe0" + b"\x00JFIF" + bytes(100)
NOW = "2026-11-24T12:00:00+00:00"


def stored(data: bytes) -> FileData:
    """An image as a caller puts it into the state or the store: base64 text."""
    return FileData(
        content=base64.b64encode(data).decode(),
        created_at=NOW,
        modified_at=NOW,
        encoding="base64",
    )


BACKENDS: dict[str, Any] = {
    "state": "state",
    "store": {"kind": "store", "namespace": ["t"]},
    "filesystem": {"kind": "filesystem", "root_dir": "ws"},
    "local_shell": {"kind": "local_shell", "root_dir": "ws"},
    "composite": {
        "kind": "composite",
        "default": "state",
        "routes": {"/pics/": {"kind": "filesystem", "root_dir": "ws"}},
    },
}


def place(tmp_path: Path, backend: str, store: InMemoryStore, name: str, data: bytes) -> Any:
    """Put the file where `backend` keeps it; the state's files for the input, if any."""
    if backend in ("filesystem", "local_shell", "composite"):
        (tmp_path / "ws").mkdir(exist_ok=True)
        (tmp_path / "ws" / name).write_bytes(data)
        return {}
    if backend == "store":
        store.put(("t",), f"/{name}", dict(stored(data)))
        return {}
    return {f"/{name}": stored(data)}


def image_model(path: str, *, images: bool) -> ScriptedChatModel:
    return ScriptedChatModel(
        script=[reply("", call("read_file", file_path=path)), reply("It is a chart.")],
        profile={"image_tool_message": images},
    )


def invoke(agent: Any, files: dict[str, Any], mode: str) -> dict[str, Any]:
    inputs = {"messages": [{"role": "user", "content": "look"}], "files": files}
    if mode == "ainvoke":
        return dict(asyncio.run(agent.ainvoke(inputs)))
    return dict(agent.invoke(inputs))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_the_image_reaches_a_model_that_can_see_it(tmp_path: Path, backend: str, mode: str) -> None:
    store = InMemoryStore()
    files = place(tmp_path, backend, store, "chart.png", PNG)
    path = "/pics/chart.png" if backend == "composite" else "/chart.png"
    model = image_model(path, images=True)
    agent = runner.build_agent(
        spec_file(tmp_path, backend=BACKENDS[backend]), model=model, store=store
    )
    invoke(agent, files, mode)
    seen = model.calls[1][-1]  # what the model got back from read_file, as it got it
    assert isinstance(seen, ToolMessage) and seen.status == "success"
    assert seen.content == [
        {"type": "text", "text": f"{path}: PNG image, 1,032 bytes"},
        {"type": "image", "base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
    ]


@pytest.mark.parametrize("backend", ["state", "filesystem"])
def test_a_model_that_cannot_see_images_gets_a_plain_answer(tmp_path: Path, backend: str) -> None:
    store = InMemoryStore()
    files = place(tmp_path, backend, store, "chart.png", PNG)
    model = image_model("/chart.png", images=False)
    agent = runner.build_agent(spec_file(tmp_path, backend=BACKENDS[backend]), model=model)
    invoke(agent, files, "invoke")
    seen = model.calls[1][-1]
    assert seen.status == "error"
    assert seen.content == (
        "Error: '/chart.png' is a PNG image (1,032 bytes), and this agent's model cannot look at "
        "images, so read_file cannot show it; work from its name and size, or ask the user what "
        "it shows"
    )


def test_the_contents_not_the_name_decide_the_type(tmp_path: Path) -> None:
    files = {"/photo.png": stored(JPEG_NAMED_PNG), "/notes.gif": stored(b"just text")}
    model = ScriptedChatModel(
        script=[
            reply(
                "",
                call("read_file", file_path="/photo.png"),
                call("read_file", file_path="/notes.gif"),
                call("read_file", file_path="/missing.webp"),
            ),
            reply("done"),
        ],
        profile={"image_tool_message": True},
    )
    agent = runner.build_agent(spec_file(tmp_path), model=model)
    invoke(agent, files, "invoke")
    photo, notes, missing = model.calls[1][-3:]
    assert photo.content[1]["mime_type"] == "image/jpeg"
    assert notes.content == (
        "Error: '/notes.gif' is named like an image but is not a PNG, JPEG, GIF or WebP image"
    )
    assert missing.content == "Error: File not found: '/missing.webp'"


def test_images_over_the_cap_are_refused_on_every_kind_of_storage(tmp_path: Path) -> None:
    big = PNG + bytes(MAX_IMAGE_BYTES)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "big.png").write_bytes(big)
    store = InMemoryStore()
    store.put(("t",), "/big.png", dict(stored(big)))
    refusal = (
        f"Error: '/big.png' is {len(big):,} bytes, over the 5,242,880-byte limit for this read"
    )
    for backend, files in [("filesystem", {}), ("state", {"/big.png": stored(big)}), ("store", {})]:
        model = image_model("/big.png", images=True)
        spec = spec_file(tmp_path, backend=BACKENDS[backend])
        invoke(runner.build_agent(spec, model=model, store=store), files, "invoke")
        assert model.calls[1][-1].content == refusal, backend


def test_a_binary_file_in_the_state_is_not_read_as_text() -> None:
    backend = StateBackend({"/chart.png": stored(PNG)})
    with pytest.raises(runner.backends.BackendError) as caught:
        backend.read("/chart.png")
    assert str(caught.value) == "'/chart.png' is a binary file and cannot be read as text"
    assert backend.grep("PNG") == []
    assert backend.ls("/")[0].size == len(PNG)
    assert backend.read_bytes("/chart.png", 10_000) == PNG


def test_whether_the_model_sees_images_comes_from_the_spec_then_its_profile(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "c.yaml"
    cassette.write_text("- content: ok\n")
    said = spec_file(tmp_path, "said.yaml", model={"id": f"replay:{cassette}", "images": True})
    unsaid = spec_file(tmp_path, "unsaid.yaml", model=f"replay:{cassette}")
    resolver = Resolver()
    assert resolver.resolve(runner.load_spec(said)).model.images is True
    assert resolver.resolve(runner.load_spec(unsaid)).model.images is None
    assert resolver.resolve(runner.load_spec(said)).harness["filesystem"].images is True
    from langchain_anthropic import ChatAnthropic

    profile = ChatAnthropic(model="claude-sonnet-4-5", api_key="x").profile  # type: ignore[call-arg]
    assert profile is not None and profile.get("image_tool_message") is True


def test_inspect_shows_what_the_spec_says_about_images(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    spec = spec_file(tmp_path, model={"id": "openai:gpt-4.1", "images": True})
    done = run_cli("inspect", str(spec), env={"OPENAI_API_KEY": ""})
    assert done.returncode == 0, done.stderr
    assert "model       openai:gpt-4.1  (looks at images)" in done.stdout


def test_an_image_behind_a_link_out_of_the_root_is_not_read(tmp_path: Path) -> None:
    """read_bytes resolves paths like every other file tool: from a descriptor of the root."""
    from runner.backends import BackendError, FilesystemBackend

    (tmp_path / "secret.png").write_bytes(PNG)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "leak.png").symlink_to(tmp_path / "secret.png")
    backend = FilesystemBackend(tmp_path / "ws")
    with pytest.raises(BackendError) as caught:
        backend.read_bytes("/leak.png", MAX_IMAGE_BYTES)
    assert "outside" in str(caught.value)
