"""AgentSpec -> ResolvedAgent: every name in the spec turned into a live object.

Models, tools, backends, user middleware and prompt sections are resolved here, with errors
located in the spec (`ResolutionError`). After resolution nothing reads the spec's files again.
`build.py` then orders the pieces into the middleware chain and compiles the graph.

Model objects are only created when `with_models=True` (building); `agentctl inspect` resolves
without them so it works with no API key set.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.agent.harness import (
    ask_user_middleware,
    backend_for,
    budget_middleware,
    filesystem_middleware,
    memory_and_skills,
    run_budget,
    summarization_middleware,
)
from runner.agent.resolved import (
    DEFAULT_RECURSION_LIMIT,
    KeyPath,
    LocalContext,
    Locator,
    ResolvedAgent,
    ResolvedModel,
    ResolvedSubagent,
    Resource,
    close_all,
)
from runner.errors import BuildError, Problem, ResolutionError
from runner.middleware.prompt import BASE_PROMPT, PromptSection
from runner.spec import AgentSpec, ImportTool, ModelSpec
from runner.spec.agent import AgentCore
from runner.spec.model import _check_model_id

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware

    from runner.backends import BackendProvider
    from runner.middleware.budgets import RunBudget

    Middleware = AgentMiddleware[Any, Any, Any]
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from runner.replay.cassette import Cassette
    from runner.spec import McpServer
    from runner.tools.mcp import McpServers

__all__ = [
    "ResolvedAgent",
    "ResolvedModel",
    "ResolvedSubagent",
    "Resolver",
    "Resource",
    "resolve",
]


class Resolver:
    """Resolves one spec (and, later, its subagents) sharing cassettes and the model override."""

    def __init__(
        self,
        *,
        model: str | BaseChatModel | None = None,
        with_models: bool = True,
        local_context: LocalContext | None = None,
        backend: Any = None,
    ) -> None:
        """`backend`: a backend object (implementing `runner.backends.protocol.Backend`) that
        replaces the main agent's `backend:`, e.g. a remote sandbox made in Python."""
        self.backend_override = backend
        self.model_override = model
        self.with_models = with_models
        self.local_context = local_context
        self.cassettes: dict[Path, Cassette] = {}
        self.resources: list[Resource] = []
        """What this resolver opened; the ResolvedAgent it returns carries (and closes) them."""
        self._mcp: McpServers | None = None
        self.budget: RunBudget | None = None
        """The main agent's budgets, shared by the subagents resolved under it."""

    def mcp_servers(self) -> McpServers:
        """The MCP servers of this build, created on first use (one loop thread for all)."""
        if self._mcp is None:
            from runner.tools.mcp import McpServers

            self._mcp = McpServers()
            self.resources.append(self._mcp)
        return self._mcp

    def close(self) -> None:
        close_all(self.resources)

    def _budget(
        self,
        core: AgentCore,
        is_main: bool,
        model: ResolvedModel,
        locate: Callable[[KeyPath, str], Problem],
    ) -> Middleware | None:
        """The budget middleware; the main agent's budgets are shared by the subagents it builds."""
        if is_main:
            self.budget = run_budget(core, locate)
        return budget_middleware(self.budget, core, model, main=is_main)

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
        none), else its spec's, else the one it inherits. A `replay:` override is every agent's:
        its cassette holds each agent's replies by name, so an offline run replays them all."""
        override = self.model_override
        replays_all = isinstance(override, str) and override.startswith("replay:")
        if override is not None and (is_main or spec_model is None or replays_all):
            resolved = self._from_override(override, agent=agent, is_main=is_main)
            if resolved.context_window is None:
                # The spec's window still describes the agent it was written for (a replay
                # of it above all), unless the new model reports its own.
                source = spec_model or inherited
                resolved.context_window = source.context_window if source is not None else None
            if resolved.images is None:
                source = spec_model or inherited
                resolved.images = source.images if source is not None else None
            if replays_all:  # a replay of the spec's models: their prices still apply
                resolved.prices = (
                    spec_model.prices()
                    if spec_model is not None
                    else dict(inherited.prices)
                    if inherited is not None
                    else {}
                )
            return resolved
        if spec_model is None and inherited is None:
            message = "missing: set `model:` (e.g. `model: openai:gpt-4.1`) or pass --model"
            raise ResolutionError.at(locator(at, message))
        if spec_model is None:
            assert inherited is not None
            return self._inherit(inherited, agent=agent, locate=lambda m: locator(at, m))
        resolved = ResolvedModel(
            id=spec_model.id,
            params=dict(spec_model.params),
            fallback_ids=[f.id for f in spec_model.fallbacks],
            context_window=spec_model.context_window,
            images=spec_model.images,
            prices=spec_model.prices(),
            parse_text_tool_calls=spec_model.parse_text_tool_calls,
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

    def _inherit(
        self, parent: ResolvedModel, *, agent: str, locate: Callable[[str], Problem]
    ) -> ResolvedModel:
        """A subagent's copy of its parent's model: the same chat model objects (clients are
        shared), except replay models, which play each agent's own replies."""
        inherited = ResolvedModel(
            id=parent.id,
            params=parent.params,
            fallback_ids=parent.fallback_ids,
            context_window=parent.context_window,
            images=parent.images,
            parse_text_tool_calls=parent.parse_text_tool_calls,
            chat_model=parent.chat_model,
            fallbacks=list(parent.fallbacks),
            prices=dict(parent.prices),
        )
        if not self.with_models:
            return inherited
        if parent.provider == "replay":
            inherited.chat_model = self._init(
                parent.id, {}, agent=agent, is_main=False, locate=locate
            )
        for index, fallback_id in enumerate(parent.fallback_ids):
            if fallback_id.startswith("replay:"):
                inherited.fallbacks[index] = self._init(
                    fallback_id, {}, agent=agent, is_main=False, locate=locate
                )
        return inherited

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
        return ResolvedModel(
            id=f"instance:{label}",
            chat_model=override,
            images=_profile_flag(override, "image_tool_message"),
        )

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
            window = _profile(resolved.chat_model, "max_input_tokens")
            resolved.context_window = window if isinstance(window, int) else None
        if resolved.images is None:
            resolved.images = _profile_flag(resolved.chat_model, "image_tool_message")
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
        from runner.agent.models import init_model
        from runner.errors import SpecError

        try:
            return init_model(
                model_id, params, agent=agent, is_main=is_main, cassettes=self.cassettes
            )
        except ResolutionError as exc:
            raise ResolutionError.at(locate(str(exc))) from None
        except SpecError:
            missing = model_id.startswith("replay:") and not Path(model_id[7:]).is_file()
            if missing:  # located at the key that names it, with the path it resolved to
                from runner.check.cassettes import missing_cassette

                raise SpecError(locate(missing_cassette(Path(model_id[7:])))) from None
            raise  # a broken cassette: its own file and line

    # ----------------------------------------------------------------------- tools

    def tools_for(
        self,
        spec: AgentCore,
        where: KeyPath,
        locator: Locator,
        *,
        backend: BackendProvider | None = None,
    ) -> list[BaseTool]:
        """The spec's own tools (`tools:`); `script:` tools run on `backend`."""
        from runner.spec import HttpTool, OpenApiTool, ScriptTool
        from runner.tools.imports import tools_from_import

        tools: list[BaseTool] = []
        for index, entry in enumerate(spec.tools):
            at = (*where, "tools", index)
            if isinstance(entry, HttpTool | OpenApiTool):
                from runner.tools.http import tools_from_http

                if isinstance(entry, OpenApiTool) and not entry.openapi._operations:
                    # a spec built in Python, not loaded from a file: read its document now
                    from runner.load.openapi import read_operations

                    def locate_api(path: KeyPath, message: str, at: KeyPath = at) -> Problem:
                        return locator((*at, "openapi", *path), message)

                    if problems := read_operations(entry.openapi, locate_api):
                        from runner.errors import SpecError

                        raise SpecError(problems)
                tools.extend(tools_from_http(entry))
            elif isinstance(entry, ScriptTool):
                from runner.tools.script import script_tool

                if backend is None or not backend.can_execute:
                    from runner.check.tools import script_message

                    kind = spec.backend.kind if spec.backend is not None else "state"
                    raise BuildError.at(locator((*at, "script"), script_message(kind)))
                tools.append(script_tool(entry.script, backend))
            elif isinstance(entry, ImportTool):

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

        from runner.tools.imports import call_imported, import_object

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
            made = call_imported(obj, entry.import_, entry.args, locate)
            if not isinstance(made, AgentMiddleware):
                raise ResolutionError.at(
                    locate(f"{entry.import_} gave {type(made).__name__}, not an AgentMiddleware")
                )
            result.append(made)
        return result

    # ----------------------------------------------------------------------- agents

    def resolve(self, spec: AgentSpec) -> ResolvedAgent:
        """The main agent of `spec`, with its subagents. What was opened on the way (MCP
        servers) is closed again when resolution fails."""
        try:
            servers = list(_mcp_servers_in(spec, set()))
            if len(servers) > 1:  # start them side by side; each is collected where it is named
                self.mcp_servers().prestart(servers)
            return self._agent(
                spec,
                name=spec.name,
                description=spec.description,
                where=(),
                locator=spec.problem,
                parent=None,
                source=spec.source,
            )
        except BaseException:
            self.close()
            raise

    def _agent(
        self,
        core: AgentCore,
        *,
        name: str,
        description: str | None,
        where: KeyPath,
        locator: Locator,
        parent: ResolvedAgent | None,
        source: str | None,
        default_prompt: str | None = None,
    ) -> ResolvedAgent:
        """Resolve an agent (main, ref'd file, or inline subagent). A subagent inherits the
        parent's model, tools and approvals unless it sets them; memory is never inherited."""
        from runner.middleware.approvals import approvals_middleware, approvals_section
        from runner.middleware.filesystem import filesystem_section
        from runner.middleware.journal import ToolJournalMiddleware
        from runner.middleware.large_inputs import LargeInputsMiddleware
        from runner.middleware.patch_tool_calls import PatchToolCallsMiddleware
        from runner.middleware.replies import ReplyCheckMiddleware
        from runner.middleware.todos import TodosMiddleware

        is_main = parent is None
        fields = core.model_fields_set
        model = self.model_for(
            core.model,
            agent=name,
            is_main=is_main,
            at=(*where, "model"),
            locator=locator,
            inherited=parent.model if parent else None,
        )
        interrupt_on = (
            dict(core.interrupt_on)
            if parent is None or "interrupt_on" in fields
            else dict(parent.interrupt_on)
        )
        todos = TodosMiddleware() if core.todos else None
        permissions = None
        inherited = parent.harness.get("permissions") if parent else None
        if core.permissions.deny or core.permissions.allow or inherited is not None:
            # (without a rule, the permissions middleware stays unimported: start-up)
            from runner.middleware.permissions import permissions_middleware

            permissions = permissions_middleware(
                core.permissions,
                agent=name,
                is_main=is_main,
                inherited=inherited,  # type: ignore[arg-type]
                sets_own=is_main or "permissions" in fields,
            )
        backend = backend_for(core, where, locator, parent, self.backend_override)
        backend, memory, skills = memory_and_skills(core, backend, where, locator)
        tools = (
            self.tools_for(core, where, locator, backend=backend)
            if parent is None or "tools" in fields
            else list(parent.tools)  # script tools among them run on the parent's backend
        )
        files = filesystem_middleware(core, backend, where, locator, images=model.images is True)
        sections: list[PromptSection] = []
        prompt = (
            core.prompt if isinstance(core.prompt, str) and core.prompt.strip() else default_prompt
        )
        if prompt:
            sections.append(PromptSection("prompt", text=prompt))
        sections.append(PromptSection("base", text=BASE_PROMPT))
        if todos is not None:
            sections.append(todos.prompt_section())
        if memory is not None:
            sections.append(memory.prompt_section())
        if skills is not None and (skills_prompt := skills.prompt_section()):
            sections.append(skills_prompt)
        if files_section := filesystem_section(
            files.tool_names,
            custom=core.filesystem.system_prompt,
            large_results=files.evict_over is not None,
        ):
            sections.append(files_section)
        agent = ResolvedAgent(
            name=name,
            description=description,
            spec=core,
            source=source,
            model=model,
            tools=tools,
            prompt_sections=sections,
            interrupt_on=interrupt_on,
            user_middleware=self.user_middleware_for(core, where, locator),
            response_format=core.response_format,
            recursion_limit=core.limits.recursion or DEFAULT_RECURSION_LIMIT,
            is_main=is_main,
            harness={
                "journal": ToolJournalMiddleware(),
                "todos": todos,
                "memory": memory,
                "skills": skills,
                "filesystem": files,
                "large_inputs": (
                    LargeInputsMiddleware(
                        backend, evict_inputs_over_tokens=core.filesystem.evict_inputs_over_tokens
                    )
                    if core.filesystem.evict_inputs_over_tokens
                    else None
                ),
                "permissions": permissions,
                "replies": ReplyCheckMiddleware(parse_text_tool_calls=model.parse_text_tool_calls),
                "summarization": summarization_middleware(
                    core,
                    model,
                    backend,
                    lambda p, m: locator((*where, *p), m),
                    lambda: self._summarizer(core, name, model, where, locator),
                ),
                "patch_tool_calls": PatchToolCallsMiddleware(),
                "approvals": approvals_middleware(
                    interrupt_on, allows=permissions.allows if permissions else None
                ),
                "ask_user": ask_user_middleware(core),
                "budget": self._budget(core, is_main, model, lambda p, m: locator((*where, *p), m)),
            },
            backend=backend,
            resources=self.resources,
            locate=lambda path, message, at_key=False: locator(
                (*where, *path), message, at_key=at_key
            ),
        )
        if isinstance(core, AgentSpec):
            agent.subagents = self._subagents(core, agent, where, locator)
            if agent.subagents:
                from runner.middleware.subagents import TASK_SECTION

                sections.append(PromptSection("subagents", text=TASK_SECTION))
        if approvals := approvals_section(interrupt_on):
            sections.append(approvals)
        if is_main and self.local_context:
            text = (
                self.local_context
                if isinstance(self.local_context, str)
                else self.local_context(core.backend)
            )
            sections.append(PromptSection("local_context", text=text))
        return agent

    def _summarizer(
        self, core: AgentCore, name: str, model: ResolvedModel, where: KeyPath, locator: Locator
    ) -> tuple[Any, int | None]:
        """The summary model and its window: the spec's `summarization.model`, else the agent's
        (a replay model plays the `<name>/summary` replies of its cassette)."""
        summary_agent = f"{name}/summary"
        if core.summarization.model is not None:
            summary_model = self.model_for(
                core.summarization.model,
                agent=summary_agent,
                is_main=False,
                at=(*where, "summarization", "model"),
                locator=locator,
            )
            return summary_model.chat_model, summary_model.context_window
        if self.with_models and model.provider == "replay":
            summarizer = self._init(
                model.id,
                {},
                agent=summary_agent,
                is_main=False,
                locate=lambda m: locator((*where, "model"), m),
            )
            return summarizer, None
        return model.chat_model, None

    def _subagents(
        self, spec: AgentSpec, parent: ResolvedAgent, where: KeyPath, locator: Locator
    ) -> list[ResolvedSubagent]:
        if not spec.subagents and not spec.general_purpose_agent.enabled:
            return []  # (and the subagent middleware stays unimported: start-up)
        from runner.middleware.subagents import (
            DEFAULT_SUBAGENT_PROMPT,
            GENERAL_PURPOSE_DESCRIPTION,
        )
        from runner.spec import (
            A2ASubagent,
            ImportSubagent,
            InlineSubagent,
            RefSubagent,
            RemoteSubagent,
        )
        from runner.spec.checks import GENERAL_PURPOSE

        found: list[ResolvedSubagent] = []
        for index, entry in enumerate(spec.subagents):
            at: KeyPath = (*where, "subagents", index)
            if isinstance(entry, InlineSubagent):
                agent = self._agent(
                    entry,
                    name=entry.name,
                    description=entry.description,
                    where=at,
                    locator=locator,
                    parent=parent,
                    source=parent.source,
                    default_prompt=DEFAULT_SUBAGENT_PROMPT,
                )
                found.append(ResolvedSubagent(entry.name, entry.description, "inline", agent=agent))
            elif isinstance(entry, RefSubagent):
                ref = entry.spec
                name = entry.name or ref.name
                description = entry.description or ref.description or ""
                agent = self._agent(
                    ref,
                    name=name,
                    description=description,
                    where=(),
                    locator=ref.problem,
                    parent=parent,
                    source=ref.source,
                    default_prompt=DEFAULT_SUBAGENT_PROMPT,
                )
                found.append(ResolvedSubagent(name, description, "ref", agent=agent))
            elif isinstance(entry, ImportSubagent):
                runnable = self._import_runnable(entry, at, locator)
                found.append(
                    ResolvedSubagent(entry.name, entry.description, "import", runnable=runnable)
                )
            elif isinstance(entry, RemoteSubagent):
                found.append(
                    ResolvedSubagent(entry.name, entry.description, "remote", remote=entry.remote)
                )
            elif isinstance(entry, A2ASubagent):
                found.append(self._a2a_subagent(entry, at, locator))
        gp = spec.general_purpose_agent
        if gp.enabled:
            # The main agent's tools and approvals (unset keys inherit), a default prompt.
            gp_core = InlineSubagent(
                name=GENERAL_PURPOSE,
                description=gp.description or GENERAL_PURPOSE_DESCRIPTION,
                prompt=gp.prompt or DEFAULT_SUBAGENT_PROMPT,
                todos=spec.todos,
            )
            if gp.model is not None:
                gp_core.model = gp.model
            agent = self._agent(
                gp_core,
                name=GENERAL_PURPOSE,
                description=gp_core.description,
                where=(*where, "general_purpose_agent"),
                locator=locator,
                parent=parent,
                source=parent.source,
            )
            found.append(
                ResolvedSubagent(
                    GENERAL_PURPOSE, gp_core.description, "general-purpose", agent=agent
                )
            )
        return found

    def _a2a_subagent(self, entry: Any, at: KeyPath, locator: Locator) -> ResolvedSubagent:
        """An A2A agent as a subagent. Without `description:` its card's description is used,
        fetched now when the agent is built to run (described only: a placeholder)."""
        description = entry.description
        if not self.with_models:
            return ResolvedSubagent(
                entry.name,
                description or f"(the description of the agent card at {entry.a2a.card})",
                "a2a",
            )
        if importlib.util.find_spec("a2a") is None:
            raise ResolutionError.at(
                locator(
                    (*at, "a2a"),
                    "A2A subagents need the A2A SDK, which is not installed: "
                    "pip install 'agentctl[serve]'",
                )
            )
        from runner.tools.a2a import A2AAgent, fetch_card_sync

        card = None
        if description is None:
            try:
                card = fetch_card_sync(entry.a2a)
            except Exception as exc:
                raise ResolutionError.at(
                    locator(
                        (*at, "a2a", "card"),
                        f"could not fetch the agent card for its description: {exc}; give the "
                        "subagent a `description:` to build without the card",
                    )
                ) from None
            description = card.description or f"The A2A agent {card.name or entry.name}"
        agent = A2AAgent(entry.name, entry.a2a, card=card)
        # its graph is made by the build, with the parent's budgets
        return ResolvedSubagent(entry.name, description, "a2a", remote=agent)

    def _import_runnable(self, entry: Any, at: KeyPath, locator: Locator) -> Any:
        from runner.tools.imports import call_imported, import_object

        def locate(message: str) -> Problem:
            return locator((*at, "import"), message)

        obj = import_object(entry.import_, locate)
        if entry.args is not None:
            if not callable(obj):
                raise ResolutionError.at(
                    locate(f"`args:` given, but {entry.import_} is not callable")
                )
            obj = call_imported(obj, entry.import_, entry.args, locate)
        if not (hasattr(obj, "invoke") and hasattr(obj, "ainvoke")):
            raise ResolutionError.at(
                locate(
                    f"{entry.import_} is {type(obj).__name__}, not a runnable: expected a compiled "
                    "LangGraph graph (or a factory returning one, with `args:`)"
                )
            )
        return obj


def _mcp_servers_in(spec: AgentCore, seen: set[int]) -> Iterator[McpServer]:
    """The `mcp:` servers named by an agent, its inline subagents and its `ref:` files."""
    from runner.spec import InlineSubagent, McpTool, RefSubagent

    if id(spec) in seen:
        return
    seen.add(id(spec))
    yield from (t.mcp for t in spec.tools if isinstance(t, McpTool))
    for entry in getattr(spec, "subagents", ()):
        if isinstance(entry, InlineSubagent):
            yield from _mcp_servers_in(entry, seen)
        elif isinstance(entry, RefSubagent) and entry._spec is not None:
            yield from _mcp_servers_in(entry._spec, seen)


def resolve(
    spec: AgentSpec,
    *,
    model: str | BaseChatModel | None = None,
    with_models: bool = True,
    local_context: LocalContext | None = None,
) -> ResolvedAgent:
    return Resolver(model=model, with_models=with_models, local_context=local_context).resolve(spec)


def _profile(chat_model: Any, key: str) -> Any:
    """One entry of a chat model's profile (langchain-core's `ModelProfile`), or None."""
    profile = getattr(chat_model, "profile", None) or {}
    return profile.get(key) if isinstance(profile, dict) else None


def _profile_flag(chat_model: Any, key: str) -> bool | None:
    value = _profile(chat_model, key)
    return value if isinstance(value, bool) else None
