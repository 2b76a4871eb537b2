"""AgentSpec -> ResolvedAgent: every name in the spec turned into a live object.

Models, tools, backends, user middleware and prompt sections are resolved here, with errors
located in the spec (`ResolutionError`). After resolution nothing reads the spec's files again.
`build.py` then orders the pieces into the middleware chain and compiles the graph.

Model objects are only created when `with_models=True` (building); `agentctl inspect` resolves
without them so it works with no API key set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runner.errors import BuildError, Problem, ResolutionError
from runner.middleware.prompt import BASE_PROMPT, PromptSection
from runner.spec import AgentSpec, ImportTool, InterruptOn, ModelSpec
from runner.spec.agent import AgentCore
from runner.spec.model import _check_model_id

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware

    Middleware = AgentMiddleware[Any, Any, Any]
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from runner.cassette import Cassette
    from runner.tools.mcp import McpServers

__all__ = ["ResolvedAgent", "ResolvedModel", "Resolver", "Resource", "resolve"]

DEFAULT_RECURSION_LIMIT = 1000
SECRET_PARAMS = ("api_key", "key", "token", "secret", "password")


@dataclass
class ResolvedModel:
    """A model as the spec names it, and (when building) the live chat models."""

    id: str
    params: dict[str, Any] = field(default_factory=dict)
    fallback_ids: list[str] = field(default_factory=list)
    context_window: int | None = None
    chat_model: BaseChatModel | None = None
    fallbacks: list[BaseChatModel] = field(default_factory=list)

    def display_params(self) -> dict[str, Any]:
        """`params` with secrets masked, for display."""
        return {
            k: "***" if any(s in k.lower() for s in SECRET_PARAMS) else v
            for k, v in self.params.items()
        }

    @property
    def provider(self) -> str:
        return self.id.partition(":")[0]

    def require(self) -> BaseChatModel:
        if self.chat_model is None:
            raise BuildError(f"model {self.id!r} was resolved without creating it")
        return self.chat_model


class Resource(Protocol):
    """Something resolution opened that must be closed when the agent is done (MCP servers)."""

    def close(self) -> None: ...


@dataclass
class ResolvedAgent:
    """Everything `build.py` needs to assemble one agent (main or subagent)."""

    name: str
    description: str | None
    spec: AgentCore
    source: str | None
    model: ResolvedModel
    tools: list[BaseTool]
    prompt_sections: list[PromptSection]
    interrupt_on: dict[str, bool | InterruptOn]
    user_middleware: list[Middleware]
    response_format: dict[str, Any] | None
    recursion_limit: int
    is_main: bool = True
    harness: dict[str, Middleware | None] = field(default_factory=dict)
    """The harness middleware by role (`todos`, `patch_tool_calls`, ...), ordered by build.py."""
    resources: list[Resource] = field(default_factory=list)
    """What resolution opened (MCP servers): open while the agent runs, closed by `close()`."""

    def close(self) -> None:
        """Close what resolution opened (idempotent)."""
        close_all(self.resources)

    @property
    def system_prompt_sections(self) -> list[PromptSection]:
        return self.prompt_sections


KeyPath = tuple[str | int, ...]
Locator = Callable[[KeyPath, str], Problem]


def close_all(resources: list[Resource]) -> None:
    """Close resources in reverse order of opening; every one is closed even when one fails."""
    errors = []
    for resource in reversed(resources):
        try:
            resource.close()
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


class Resolver:
    """Resolves one spec (and, later, its subagents) sharing cassettes and the model override."""

    def __init__(
        self,
        *,
        model: str | BaseChatModel | None = None,
        with_models: bool = True,
        local_context: str | None = None,
    ) -> None:
        self.model_override = model
        self.with_models = with_models
        self.local_context = local_context
        self.cassettes: dict[Path, Cassette] = {}
        self.resources: list[Resource] = []
        """What this resolver opened; the ResolvedAgent it returns carries (and closes) them."""
        self._mcp: McpServers | None = None

    def mcp_servers(self) -> McpServers:
        """The MCP servers of this build, created on first use (one loop thread for all)."""
        if self._mcp is None:
            from runner.tools.mcp import McpServers

            self._mcp = McpServers()
            self.resources.append(self._mcp)
        return self._mcp

    def close(self) -> None:
        close_all(self.resources)

    # ----------------------------------------------------------------------- models

    def model_for(
        self,
        spec_model: ModelSpec | None,
        *,
        agent: str,
        is_main: bool,
        at: KeyPath,
        locator: Locator,
        inherited: ResolvedModel | None = None,
    ) -> ResolvedModel:
        """The model an agent runs: the override (the main agent's, and a subagent's that sets
        none), else its spec's, else the one it inherits."""
        override = self.model_override
        if override is not None and (is_main or spec_model is None):
            return self._from_override(override, agent=agent, is_main=is_main)
        if spec_model is None and inherited is None:
            message = "missing: set `model:` (e.g. `model: openai:gpt-4.1`) or pass --model"
            raise ResolutionError.at(locator(at, message))
        if spec_model is None:
            assert inherited is not None
            resolved = ResolvedModel(
                id=inherited.id,
                params=inherited.params,
                fallback_ids=inherited.fallback_ids,
                context_window=inherited.context_window,
            )
            fallback_specs: list[tuple[str, dict[str, Any]]] = list(
                zip(inherited.fallback_ids, [{}] * len(inherited.fallback_ids), strict=True)
            )
        else:
            resolved = ResolvedModel(
                id=spec_model.id,
                params=dict(spec_model.params),
                fallback_ids=[f.id for f in spec_model.fallbacks],
                context_window=spec_model.context_window,
            )
            fallback_specs = [(f.id, dict(f.params)) for f in spec_model.fallbacks]
        resolved = self._instantiate(
            resolved, agent=agent, is_main=is_main, locate=lambda m: locator(at, m)
        )
        if self.with_models:
            for index, (fallback_id, params) in enumerate(fallback_specs):
                fb_at: KeyPath = (*at, "fallbacks", index)

                def locate(message: str, fb_at: KeyPath = fb_at) -> Problem:
                    return locator(fb_at, message)

                resolved.fallbacks.append(
                    self._init(fallback_id, params, agent=agent, is_main=is_main, locate=locate)
                )
        return resolved

    def _from_override(self, override: Any, *, agent: str, is_main: bool) -> ResolvedModel:
        if isinstance(override, str):
            try:
                model_id = _check_model_id(override)
            except ValueError as exc:
                raise ResolutionError(f"--model: {exc}") from None
            if model_id.startswith("replay:"):
                model_id = f"replay:{Path(model_id.partition(':')[2]).resolve()}"
            resolved = ResolvedModel(id=model_id)
            return self._instantiate(
                resolved,
                agent=agent,
                is_main=is_main,
                locate=lambda m: Problem("--model", 0, 0, "", m),
            )
        name = getattr(override, "model_name", None) or getattr(override, "model", None)
        label = f"{type(override).__name__}" + (f"({name})" if isinstance(name, str) else "")
        return ResolvedModel(id=f"instance:{label}", chat_model=override)

    def _instantiate(
        self,
        resolved: ResolvedModel,
        *,
        agent: str,
        is_main: bool,
        locate: Callable[[str], Problem],
    ) -> ResolvedModel:
        if not self.with_models:
            return resolved
        resolved.chat_model = self._init(
            resolved.id, resolved.params, agent=agent, is_main=is_main, locate=locate
        )
        if resolved.context_window is None:
            profile = getattr(resolved.chat_model, "profile", None) or {}
            window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
            resolved.context_window = window if isinstance(window, int) else None
        return resolved

    def _init(
        self,
        model_id: str,
        params: dict[str, Any],
        *,
        agent: str,
        is_main: bool,
        locate: Callable[[str], Problem],
    ) -> BaseChatModel:
        from runner.errors import SpecError
        from runner.models import init_model

        try:
            return init_model(
                model_id, params, agent=agent, is_main=is_main, cassettes=self.cassettes
            )
        except ResolutionError as exc:
            raise ResolutionError.at(locate(str(exc))) from None
        except SpecError:
            raise  # a broken cassette: its own file and line

    # ----------------------------------------------------------------------- tools

    def tools_for(self, spec: AgentCore, where: KeyPath, locator: Locator) -> list[BaseTool]:
        from runner.tools.imports import tools_from_import

        tools: list[BaseTool] = []
        for index, entry in enumerate(spec.tools):
            at = (*where, "tools", index)
            if isinstance(entry, ImportTool):

                def locate(message: str, at: KeyPath = at) -> Problem:
                    return locator((*at, "import"), message)

                tools.extend(tools_from_import(entry, locate))
            else:
                from runner.tools.mcp import tools_from_mcp

                def locate_mcp(path: KeyPath, message: str, at: KeyPath = at) -> Problem:
                    return locator((*at, "mcp", *path), message)

                tools.extend(tools_from_mcp(entry.mcp, locate_mcp, self.mcp_servers))
        return tools

    def user_middleware_for(
        self, spec: AgentCore, where: KeyPath, locator: Locator
    ) -> list[Middleware]:
        from langchain.agents.middleware import AgentMiddleware

        from runner.tools.imports import import_object

        result: list[Middleware] = []
        for index, entry in enumerate(spec.middleware):
            at = (*where, "middleware", index, "import")

            def locate(message: str, at: KeyPath = at) -> Problem:
                return locator(at, message)

            obj = import_object(entry.import_, locate)
            if isinstance(obj, AgentMiddleware):
                if entry.args:
                    raise ResolutionError.at(
                        locate(f"{entry.import_} is an instance; `args` cannot apply")
                    )
                result.append(obj)
                continue
            if not callable(obj):
                raise ResolutionError.at(
                    locate(f"{entry.import_} is not middleware (found {type(obj).__name__})")
                )
            try:
                made = obj(**entry.args)
            except Exception as exc:
                raise ResolutionError.at(
                    locate(f"{entry.import_}(...) raised {type(exc).__name__}: {exc}")
                ) from None
            if not isinstance(made, AgentMiddleware):
                raise ResolutionError.at(
                    locate(f"{entry.import_} gave {type(made).__name__}, not an AgentMiddleware")
                )
            result.append(made)
        return result

    # ----------------------------------------------------------------------- the agent

    def resolve(self, spec: AgentSpec) -> ResolvedAgent:
        """Resolve `spec`; what was opened on the way is closed again when resolution fails."""
        try:
            return self._resolve(spec)
        except BaseException:
            self.close()
            raise

    def _resolve(self, spec: AgentSpec) -> ResolvedAgent:
        from runner.middleware.approvals import approvals_middleware, approvals_section
        from runner.middleware.patch_tool_calls import PatchToolCallsMiddleware
        from runner.middleware.todos import TodosMiddleware

        def locator(path: KeyPath, message: str) -> Problem:
            return spec.problem(path, message)

        model = self.model_for(
            spec.model, agent=spec.name, is_main=True, at=("model",), locator=locator
        )
        todos = TodosMiddleware() if spec.todos else None
        sections: list[PromptSection] = []
        if isinstance(spec.prompt, str) and spec.prompt.strip():
            sections.append(PromptSection("prompt", text=spec.prompt))
        sections.append(PromptSection("base", text=BASE_PROMPT))
        if todos is not None:
            sections.append(todos.prompt_section())
        if approvals := approvals_section(spec.interrupt_on):
            sections.append(approvals)
        if self.local_context:
            sections.append(PromptSection("local_context", text=self.local_context))

        return ResolvedAgent(
            name=spec.name,
            description=spec.description,
            spec=spec,
            source=spec.source,
            model=model,
            tools=self.tools_for(spec, (), locator),
            prompt_sections=sections,
            interrupt_on=dict(spec.interrupt_on),
            user_middleware=self.user_middleware_for(spec, (), locator),
            response_format=spec.response_format,
            recursion_limit=spec.limits.recursion or DEFAULT_RECURSION_LIMIT,
            harness={
                "todos": todos,
                "patch_tool_calls": PatchToolCallsMiddleware(),
                "approvals": approvals_middleware(spec.interrupt_on),
            },
            resources=self.resources,
        )


def resolve(
    spec: AgentSpec,
    *,
    model: str | BaseChatModel | None = None,
    with_models: bool = True,
    local_context: str | None = None,
) -> ResolvedAgent:
    return Resolver(model=model, with_models=with_models, local_context=local_context).resolve(spec)
