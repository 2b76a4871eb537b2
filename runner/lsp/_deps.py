"""The agentctl modules the language server reuses, imported in this one place.

The server shows what `agentctl validate` and `agentctl test` report, by calling their code on
the editor's buffers (`SOURCE_OVERLAY`); it never checks anything a second way. Nothing imported
here imports LangChain.
"""

from __future__ import annotations

from runner.cassette_check import is_cassette
from runner.errors import Problem, SpecError
from runner.loader import display_path, load_spec
from runner.skills import discover as discover_skills
from runner.spec import AgentSpec, json_schema_text
from runner.spec.model import KNOWN_PROVIDERS
from runner.spec_errors import did_you_mean
from runner.static_tools import FILE_TOOLS, StaticAgent, static_agents
from runner.testing import test_json_schema_text
from runner.testing.loader import is_test_file_name, load_test_file
from runner.validate import (
    CASSETTE_SUFFIXES,
    SPEC_SUFFIXES,
    TEST_SUFFIXES,
    LoadCache,
    agents_playing,
    check_file,
    is_agent_file_name,
)
from runner.yamlsource import SOURCE_OVERLAY, Document, KeyPath, Pos, read_source, read_yaml

__all__ = [
    "CASSETTE_SUFFIXES",
    "FILE_TOOLS",
    "KNOWN_PROVIDERS",
    "SOURCE_OVERLAY",
    "SPEC_SUFFIXES",
    "TEST_SUFFIXES",
    "AgentSpec",
    "Document",
    "KeyPath",
    "LoadCache",
    "Pos",
    "Problem",
    "SpecError",
    "StaticAgent",
    "agents_playing",
    "check_file",
    "did_you_mean",
    "discover_skills",
    "display_path",
    "is_agent_file_name",
    "is_cassette",
    "is_test_file_name",
    "json_schema_text",
    "load_spec",
    "load_test_file",
    "read_source",
    "read_yaml",
    "static_agents",
    "test_json_schema_text",
]
