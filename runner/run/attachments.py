"""Files sent with a message (`agentctl run SPEC "Describe this" --attach photo.png`).

Each file goes to the agent in the form it can use:

- an image (PNG, JPEG, GIF, WebP, told from its bytes) as an image content block of the message,
  when the agent's model takes images (the spec's `model.images`, else the model profile's
  `image_inputs`); a clear error otherwise;
- a UTF-8 text file up to `MAX_INLINE_BYTES` inlined in the message, with its name;
- anything else (a PDF, an archive, a large text file) put into the agent's backend under
  `/attachments/`, and the message says where, so the agent's file tools can reach it.

Reading a file (`read_attachment`) is separate from attaching it to a turn (`attach`), so the
command line can refuse a missing or too large file before it builds the agent.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from runner.errors import RunError

if TYPE_CHECKING:
    from runner.agent.resolve import ResolvedAgent

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_INLINE_BYTES",
    "Attachment",
    "attach",
    "check_images",
    "read_attachment",
    "takes_images",
]

MAX_INLINE_BYTES = 100 * 1024
"""A text file up to this size goes into the message; a larger one into the backend."""
MAX_FILE_BYTES = 50 * 1024 * 1024
"""Any attached file."""
FOLDER = "/attachments"


def _megabytes(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


@dataclass(frozen=True)
class Attachment:
    """One file to send with a message, read and classified."""

    name: str
    data: bytes
    kind: Literal["image", "text", "file"]
    mime: str | None = None

    def describe(self) -> str:
        what = self.mime.partition("/")[2].upper() + " image" if self.mime else "file"
        return f"{self.name} ({what}, {len(self.data):,} bytes)"


def read_attachment(path: Path) -> Attachment:
    """Read and classify `path`; `RunError` for a missing, unreadable or too large file. An
    image has the size limit of images that `read_file` shows."""
    from runner.middleware.filesystem import MAX_IMAGE_BYTES, image_type

    shown = str(path)
    if not path.exists():
        raise RunError(f"--attach {shown}: no such file")
    if path.is_dir():
        raise RunError(f"--attach {shown}: is a directory; attach its files one by one")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise RunError(
                f"--attach {shown}: {_megabytes(size)}, over the {_megabytes(MAX_FILE_BYTES)} "
                "limit for attached files"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise RunError(f"--attach {shown}: cannot read it: {exc.strerror or exc}") from None
    mime = image_type(data)
    if mime is not None:
        if len(data) > MAX_IMAGE_BYTES:
            raise RunError(
                f"--attach {shown}: a {mime.partition('/')[2].upper()} image of "
                f"{_megabytes(len(data))}, over the {_megabytes(MAX_IMAGE_BYTES)} limit for "
                "images sent to a model; make it smaller"
            )
        return Attachment(path.name, data, "image", mime)
    if len(data) <= MAX_INLINE_BYTES and b"\0" not in data:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return Attachment(path.name, data, "text")
    return Attachment(path.name, data, "file")


def takes_images(agent: ResolvedAgent) -> bool:
    """Whether the agent's model takes images in a message: the spec's `model.images` when it
    says, else the model's profile (`image_inputs`)."""
    if agent.model.images is not None:
        return agent.model.images
    profile = getattr(agent.model.chat_model, "profile", None) or {}
    return isinstance(profile, dict) and profile.get("image_inputs") is True


def check_images(agent: ResolvedAgent, attachments: list[Attachment]) -> None:
    """`RunError` when an attachment is an image and the agent's model takes none."""
    images = [a for a in attachments if a.kind == "image"]
    if images and not takes_images(agent):
        names = ", ".join(a.name for a in images)
        raise RunError(
            f"--attach {names}: the model of agent {agent.name} ({agent.model.id}) does not "
            "take images; use a model that does, or set `images: true` under `model:` in the "
            "spec if this one does (e.g. model: {id: ..., images: true})"
        )


def _free_path(backend: Any, name: str, taken: set[str]) -> str:
    """`/attachments/<name>`, or `<stem>-2<suffix>`... when that path is taken."""
    try:
        existing = {info.path for info in backend.ls(FOLDER)}
    except Exception:  # no such folder yet (or a backend that cannot list it): nothing taken
        existing = set()
    existing |= taken
    stem, suffix = Path(name).stem, Path(name).suffix
    candidate, number = f"{FOLDER}/{name}", 1
    while candidate in existing:
        number += 1
        candidate = f"{FOLDER}/{stem}-{number}{suffix}"
    return candidate


def _put_files(
    agent: ResolvedAgent,
    store: Any,
    thread_id: str,
    files: list[Attachment],
    values: dict[str, Any],
) -> tuple[list[str], dict[str, Any]]:
    """Put `files` into the agent's backend as the thread sees it; (their paths, the update of
    the thread's `files` state for those that live there)."""
    from langchain_core.runnables.config import var_child_runnable_config

    from runner.backends import BackendError

    provider = agent.backend
    if provider is None:
        raise RunError(f"agent {agent.name} has no file backend to put attachments in")
    # a backend whose root is per thread (`root_dir: ./ws/{thread_id}`) finds it in the config
    token = var_child_runnable_config.set({"configurable": {"thread_id": thread_id}})
    try:
        backend = provider.get(values, store)
        writer = getattr(backend, "write_bytes", None)
        if writer is None:
            raise RunError(
                f"agent {agent.name}'s backend cannot hold attached files "
                f"({', '.join(a.name for a in files)})"
            )
        paths: list[str] = []
        update: dict[str, Any] = {}
        for attachment in files:
            target = _free_path(backend, attachment.name, set(paths))
            try:
                written = writer(target, attachment.data)
            except BackendError as exc:
                raise RunError(
                    f"--attach {attachment.name}: cannot put it at {target}: {exc}"
                ) from None
            paths.append(written.path)
            update.update(written.files_update or {})
    finally:
        var_child_runnable_config.reset(token)
    return paths, update


def attach(
    agent: ResolvedAgent,
    store: Any,
    thread_id: str,
    text: str,
    attachments: list[Attachment],
    values: dict[str, Any],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The content blocks of a message `text` with `attachments`, and the update of the
    thread's `files` state (for attachments put into a `state` backend). `agent` and `store`
    (the thread database's, for `store` backends) are the session's; `values` is the thread's
    state as the turn found it."""
    check_images(agent, attachments)
    files = [a for a in attachments if a.kind == "file"]
    paths, update = _put_files(agent, store, thread_id, files, values) if files else ([], {})
    where = dict(zip((id(a) for a in files), paths, strict=True))
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for attachment in attachments:
        if attachment.kind == "image":
            blocks.append({"type": "text", "text": f"Attached image {attachment.describe()}:"})
            blocks.append(
                {
                    "type": "image",
                    "base64": base64.b64encode(attachment.data).decode("ascii"),
                    "mime_type": attachment.mime,
                }
            )
        elif attachment.kind == "text":
            body = attachment.data.decode("utf-8")
            blocks.append(
                {
                    "type": "text",
                    "text": f'<attachment name="{attachment.name}">\n{body}\n</attachment>',
                }
            )
        else:
            blocks.append(
                {
                    "type": "text",
                    "text": f"Attached file {attachment.describe()}: it is in your files at "
                    f"{where[id(attachment)]} (read it with your file tools).",
                }
            )
    return blocks, update
