"""`load_any`: an agent file or a workflow file, whichever the file is; the workflow loader (and
its models) imported only for a workflow, so that `validate` and `run` of an agent do not load
them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runner.load.loader import is_workflow_file, load_spec

if TYPE_CHECKING:
    from runner.spec import AgentSpec
    from runner.spec.workflow import WorkflowSpec

__all__ = ["load_any"]


def load_any(
    path: str | os.PathLike[str],
    *,
    vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    allow_unused_vars: bool = False,
    require_inputs: bool = True,
) -> AgentSpec | WorkflowSpec:
    """`load_workflow` for a workflow file (a top-level `workflow:` key), else `load_spec`."""
    if is_workflow_file(path, env):
        from runner.load.workflow import load_workflow

        load: Any = load_workflow
    else:
        load = load_spec
    return load(
        path, vars=vars, env=env, allow_unused_vars=allow_unused_vars, require_inputs=require_inputs
    )
