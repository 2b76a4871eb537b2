"""Defaults of the spec models. Settings left out of a file (`permissions`, `limits`, ...) default
to the settings model's own defaults, made without building the settings model's validator
(`default_factory=TheSettings.model_construct`, see `runner.spec.base.SpecModel`); a list field's
default factory is `empty_list`, not the builtin whose signature pydantic parses each time."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from runner.spec import AgentSpec
from runner.spec.agent import InlineSubagent
from runner.spec.workflow import WorkflowSpec
from tests.conftest import last_line_of

SETTINGS = (
    "permissions",
    "summarization",
    "filesystem",
    "prompt_caching",
    "limits",
    "retries",
    "general_purpose_agent",
)


def settings_model(holder: type[BaseModel], key: str) -> type[BaseModel]:
    """The settings model a field of `holder` holds (its annotation, through `Annotated`)."""
    found = holder.model_fields[key].annotation
    assert isinstance(found, type) and issubclass(found, BaseModel), (key, found)
    return found


@pytest.mark.parametrize("key", SETTINGS)
def test_a_setting_left_out_is_the_settings_models_default(key: str) -> None:
    spec = AgentSpec.model_validate({"name": "plain"})
    model = settings_model(AgentSpec, key)
    value = getattr(spec, key)
    assert type(value) is model
    assert value == model()
    assert value.model_fields_set == set()
    assert key not in spec.model_fields_set


def test_an_inline_subagent_and_a_workflow_get_them_too() -> None:
    subagent = InlineSubagent.model_validate({"name": "helper", "description": "Helps."})
    assert subagent.limits == settings_model(InlineSubagent, "limits")()
    assert type(subagent.permissions).__name__ == "PermissionsSpec"
    workflow = WorkflowSpec.model_validate(
        {"name": "flow", "workflow": {"steps": [{"id": "done", "agent": "a", "input": "x"}]}}
    )
    assert workflow.limits == settings_model(WorkflowSpec, "limits")()


def test_the_defaults_build_no_validator_of_their_own() -> None:
    """Validating an agent that leaves its settings out builds `AgentSpec`'s validator only: a
    default made by calling the settings model would build that model's too."""
    code = (
        "from runner.spec import AgentSpec\n"
        "AgentSpec.model_validate({'name': 'plain'})\n"
        f"models = [AgentSpec.model_fields[key].annotation for key in {SETTINGS!r}]\n"
        "print(sorted(m.__name__ for m in models if m.__pydantic_complete__))\n"
    )
    assert last_line_of(code) == "[]"


def spec_models() -> list[type[BaseModel]]:
    import runner.spec.cassette
    import runner.spec.workflow
    import runner.testing.spec
    from runner.spec.base import SpecModel

    found: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [SpecModel]
    while todo:
        model = todo.pop()
        found.append(model)
        todo += model.__subclasses__()
    assert runner.spec.cassette.CassetteFile in found and WorkflowSpec in found
    assert runner.testing.spec.ExpectSpec in found
    return found


def test_no_list_field_defaults_to_the_builtin_list() -> None:
    from runner.spec.base import empty_list

    fields = [(m, k, f) for m in spec_models() for k, f in m.model_fields.items()]
    assert [(m.__name__, k) for m, k, f in fields if f.default_factory is list] == []
    assert any(f.default_factory is empty_list for _, _, f in fields)
