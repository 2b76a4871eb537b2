"""The agentctl modules the language server reuses, imported in this one place.

The server shows what `agentctl validate` and `agentctl test` report, by calling their code on
the editor's buffers (`SOURCE_OVERLAY`); it never checks anything a second way. Nothing imported
here imports LangChain.
"""

from __future__ import annotations

from runner.check.cassettes import is_cassette
from runner.check.tools import FILE_TOOLS, StaticAgent, static_agents
from runner.check.validate import (
    CASSETTE_SUFFIXES,
    SPEC_SUFFIXES,
    TEST_SUFFIXES,
    LoadCache,
    agents_playing,
    check_file,
    is_agent_file_name,
    is_test_file_name,
)
from runner.errors import Problem, SpecError, display_path
from runner.load.loader import load_spec
from runner.load.problems import did_you_mean
from runner.load.skills import discover as discover_skills
from runner.load.source import SOURCE_OVERLAY, Document, KeyPath, Pos, read_source, read_yaml
from runner.spec import AgentSpec, file_schema, json_schema_text
from runner.spec.model import KNOWN_PROVIDERS
from runner.spec.workflow import STEP_KINDS, WorkflowSpec, is_workflow_document
from runner.testing import test_json_schema_text
from runner.testing.loader import load_test_file

__all__ = [
    "CASSETTE_SUFFIXES",
    "FILE_TOOLS",
    "KNOWN_PROVIDERS",
    "SOURCE_OVERLAY",
    "SPEC_SUFFIXES",
    "STEP_KINDS",
    "TEST_SUFFIXES",
    "AgentSpec",
    "Document",
    "KeyPath",
    "LoadCache",
    "Pos",
    "Problem",
    "SpecError",
    "StaticAgent",
    "WorkflowSpec",
    "agents_playing",
    "check_file",
    "did_you_mean",
    "discover_skills",
    "display_path",
    "file_schema",
    "is_agent_file_name",
    "is_cassette",
    "is_test_file_name",
    "is_workflow_document",
    "json_schema_text",
    "load_spec",
    "load_test_file",
    "read_source",
    "read_yaml",
    "static_agents",
    "test_json_schema_text",
]
