"""`RunOptions`: how a `Session` runs an agent, as one value a caller builds once and passes down.

`agentctl run` builds one from its flags; `Session(spec, options=...)` takes it, as it takes the
same settings one keyword at a time (docs/python-api.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

    from runner.agent.resolve import LocalContext

__all__ = ["RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """The settings of a `Session` besides its spec and thread database object.

    `model`: a model name (`provider:model`, `replay:FILE`) or a chat model, instead of the
    spec's. `vars`: template variables over the spec's. `db`: the thread database (a path or a
    URL) when no `Home` is given. `record`: a cassette the model's replies are recorded to.
    `local_context`: where the spec sits, for relative paths and the agent's local files.
    `allow_unused_vars`: accept a var no prompt uses. `keep_checkpoints`: checkpoints of each
    thread a turn leaves (`"all"`: every one; None: the database's setting). `wait`: seconds a
    turn waits for a thread another process runs (None: fail at once; `inf`: as long as it
    takes)."""

    model: str | BaseChatModel | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    db: str | os.PathLike[str] | None = None
    record: str | os.PathLike[str] | None = None
    local_context: LocalContext | None = None
    allow_unused_vars: bool = False
    keep_checkpoints: int | Literal["all"] | None = None
    wait: float | None = None

    def given(self) -> list[str]:
        """The names of the settings that differ from their defaults."""
        default = RunOptions()
        return [f.name for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)]
