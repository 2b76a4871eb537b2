"""The agent spec as pydantic models: pure data, no langchain or langgraph import.

`AgentSpec` is one YAML file. The JSON Schema in `schemas/agent.schema.json` is generated from
these models (`agentctl schema`), so editors autocomplete and check specs with the same rules.
Load specs with `runner.load_spec`, which adds file/line locations to every error, `${VAR}`
interpolation, includes, subagent refs and prompt templating.

The modules that define models do without `from __future__ import annotations`, the one
exception to the project's rule: pydantic evaluates every annotation of a model when the class
is made, and a string annotation costs it a compile and an `eval` each (about 200 of them, 2.6%
of the instructions of `agentctl validate` of one file). A model's annotation that names a
class not yet defined is quoted; a validator returning its model says `Self`.
`tests/spec/test_annotations.py` holds it.
"""

from __future__ import annotations

from typing import Any, Literal

from runner.spec.a2a import A2AConnection, A2ASubagent
from runner.spec.agent import (
    FILESYSTEM_TOOLS,
    AgentCore,
    AgentSpec,
    FilesystemSpec,
    GeneralPurposeAgentSpec,
    ImportSubagent,
    InlineSubagent,
    InterruptOn,
    LimitsSpec,
    PromptCachingSpec,
    PromptFile,
    RefSubagent,
    RemoteSubagent,
    RetriesSpec,
    RetryPolicy,
    SubagentSpec,
    SummarizationSpec,
    Threshold,
)
from runner.spec.backend import (
    BACKEND_KINDS,
    BackendSpec,
    CompositeBackendSpec,
    FilesystemBackendSpec,
    LocalShellBackendSpec,
    StateBackendSpec,
    StoreBackendSpec,
)
from runner.spec.base import SourcePath, import_ref_is_file
from runner.spec.declared_tools import (
    HttpTool,
    HttpToolSpec,
    OpenApiSpec,
    OpenApiTool,
    ScriptTool,
    ScriptToolSpec,
    ToolArg,
)
from runner.spec.model import KNOWN_PROVIDERS, FallbackModelSpec, ModelSpec
from runner.spec.permissions import PermissionRule, PermissionsSpec
from runner.spec.tools import ImportTool, McpServer, McpTool, MiddlewareRef

SCHEMA_ID = "https://agentctl.dev/schemas/agent.schema.json"
CASSETTE_SCHEMA_ID = "https://agentctl.dev/schemas/cassette.schema.json"

SchemaKind = Literal["agent", "cassette"]


def json_schema(kind: SchemaKind = "agent") -> dict[str, Any]:
    """The JSON Schema of an agent file (`schemas/agent.schema.json`) or of a replay cassette
    (`schemas/cassette.schema.json`: a mapping with `agents:`, or a plain list of replies)."""
    if kind == "cassette":
        from runner.spec.cassette import CassetteFile

        schema = CassetteFile.model_json_schema(mode="validation")
        defs = schema.pop("$defs", {})
        schema = {
            "title": "Cassette",
            "description": "Recorded model replies for `--model replay:FILE`: replies per agent "
            "name under `agents:`, or a plain list of the main agent's replies.",
            "anyOf": [
                schema,
                {"type": "array", "items": {"$ref": "#/$defs/CassetteReply"}},
            ],
            "$defs": defs,
        }
        schema_id = CASSETTE_SCHEMA_ID
    else:
        schema = _agent_or_workflow_schema()
        schema_id = SCHEMA_ID
    return schema_document(schema, schema_id)


def _agent_or_workflow_schema() -> dict[str, Any]:
    """An agent file or a workflow file (one with `workflow:`, which an agent file may not
    have): one schema for both, so an editor pointed at it completes and checks either."""
    from pydantic.json_schema import models_json_schema

    from runner.spec.workflow import WorkflowSpec

    refs, schema = models_json_schema(
        [(AgentSpec, "validation"), (WorkflowSpec, "validation")],
        ref_template="#/$defs/{model}",
    )
    return {
        "title": "Agent or workflow",
        "description": "An agent file (`name`, `model`, `prompt`, ...) or a workflow file "
        "(`workflow:` with its steps).",
        "anyOf": [refs[(AgentSpec, "validation")], refs[(WorkflowSpec, "validation")]],
        "$defs": schema["$defs"],
    }


def file_schema(document: dict[str, Any], kind: Literal["agent", "workflow"]) -> dict[str, Any]:
    """The branch of the agent schema document (`json_schema("agent")`) for one kind of file,
    as a schema document of its own (`runner.lsp` completes keys with it)."""
    defs = document["$defs"]
    name = "WorkflowSpec" if kind == "workflow" else "AgentSpec"
    head = {k: v for k, v in document.items() if k not in ("anyOf", "$defs", "title")}
    return {**head, **defs[name], "$defs": defs}


def schema_document(schema: dict[str, Any], schema_id: str) -> dict[str, Any]:
    """A generated schema as agentctl commits it: draft 2020-12, with its `$id`. Every schema
    file goes through here (`runner.testing` makes `schemas/test.schema.json` with it too)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        **schema,
    }


def schema_file_text(document: dict[str, Any]) -> str:
    """The text of a committed schema file."""
    import json

    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def json_schema_text(kind: SchemaKind = "agent") -> str:
    return schema_file_text(json_schema(kind))


__all__ = [
    "BACKEND_KINDS",
    "FILESYSTEM_TOOLS",
    "KNOWN_PROVIDERS",
    "A2AConnection",
    "A2ASubagent",
    "AgentCore",
    "AgentSpec",
    "BackendSpec",
    "CompositeBackendSpec",
    "FallbackModelSpec",
    "FilesystemBackendSpec",
    "FilesystemSpec",
    "GeneralPurposeAgentSpec",
    "HttpTool",
    "HttpToolSpec",
    "ImportSubagent",
    "ImportTool",
    "InlineSubagent",
    "InterruptOn",
    "LimitsSpec",
    "LocalShellBackendSpec",
    "McpServer",
    "McpTool",
    "MiddlewareRef",
    "ModelSpec",
    "OpenApiSpec",
    "OpenApiTool",
    "PermissionRule",
    "PermissionsSpec",
    "PromptCachingSpec",
    "PromptFile",
    "RefSubagent",
    "RemoteSubagent",
    "RetriesSpec",
    "RetryPolicy",
    "ScriptTool",
    "ScriptToolSpec",
    "SourcePath",
    "StateBackendSpec",
    "StoreBackendSpec",
    "SubagentSpec",
    "SummarizationSpec",
    "Threshold",
    "ToolArg",
    "file_schema",
    "import_ref_is_file",
    "json_schema",
    "json_schema_text",
    "schema_document",
    "schema_file_text",
]
