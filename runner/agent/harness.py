"""The harness middleware resolution builds from the spec: the backend, memory and skills, the
file tools, `ask_user`, summarization and budgets (what needs a model, the summarizer, is asked of
`runner.agent.resolve.Resolver`; `build.py` orders them all into the chain)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runner.agent.resolved import KeyPath, Locator, ResolvedAgent, ResolvedModel, core_name
from runner.errors import BuildError, Problem, ResolutionError
from runner.spec.agent import AgentCore

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware

    from runner.backends import BackendProvider
    from runner.middleware.budgets import RunBudget

    Middleware = AgentMiddleware[Any, Any, Any]

__all__ = [
    "ask_user_middleware",
    "backend_for",
    "budget_middleware",
    "filesystem_middleware",
    "memory_and_skills",
    "run_budget",
    "summarization_middleware",
]


def ask_user_middleware(core: AgentCore) -> Middleware | None:
    """The `ask_user` tool when the agent's own spec turns it on (never inherited)."""
    if core.ask_user is None or not core.ask_user.enabled:
        return None
    from runner.middleware.ask_user import AskUserMiddleware

    return AskUserMiddleware(core.ask_user)


def backend_for(
    core: AgentCore,
    where: KeyPath,
    locator: Locator,
    parent: ResolvedAgent | None,
    override: Any = None,
) -> BackendProvider:
    """The agent's own backend, else its parent's (so files are shared), else `state`.
    `override`: a backend object given in Python (`build_agent(backend=...)`), which replaces
    the main agent's `backend:`."""
    from runner.backends import (
        checked_backend,
        protocol_gaps,
        provider_from_backend,
        provider_from_spec,
    )
    from runner.spec.backend import backend_leaves, has_local_shell
    from runner.tools.imports import import_object

    if parent is None and override is not None:
        try:
            return provider_from_backend(override)
        except BuildError as exc:
            raise BuildError(str(exc)) from None
    if core.backend is None and parent is not None and parent.backend is not None:
        return parent.backend
    if core.backend is not None and has_local_shell(core.backend):  # (else unimported: start-up)
        from runner.backends.sandbox import sandbox_problems

        for at, message in sandbox_problems(core.backend, (*where, "backend")):
            raise ResolutionError.at(locator(at, message))
    leaves = {
        id(leaf): at
        for leaf, at in (backend_leaves(core.backend, (*where, "backend")) if core.backend else ())
    }

    def load(spec: Any) -> Any:
        """The object an `import` backend names: called with `args` unless it already is a
        backend."""
        at = leaves.get(id(spec), (*where, "backend"))
        obj = import_object(spec.import_, lambda m: locator((*at, "import"), m))
        if protocol_gaps(obj) and callable(obj):
            try:
                obj = obj(**spec.args)
            except Exception as exc:
                message = f"calling {spec.import_} raised {type(exc).__name__}: {exc}"
                raise ResolutionError.at(locator((*at, "import"), message)) from None
        try:
            return checked_backend(obj, spec.import_)
        except BuildError as exc:
            raise BuildError.at(locator((*at, "import"), str(exc))) from None

    try:
        return provider_from_spec(core.backend, load)
    except BuildError as exc:
        if exc.problem is not None:  # located already (an `import` backend)
            raise
        raise BuildError.at(locator((*where, "backend"), str(exc))) from None


def memory_and_skills(
    core: AgentCore, backend: BackendProvider, where: KeyPath, locator: Locator
) -> tuple[BackendProvider, Any, Any]:
    """Memory and skills middleware, and the backend with the host folders they need mounted
    (a memory file alone, read-write; a skills folder read-only). A host path some directory
    backend already reaches is used where it is, not mounted again."""
    if not core.memory and not core.skills:
        return backend, None, None  # (and their modules stay unimported: start-up)
    import logging
    from pathlib import Path

    from runner.backends import Mount
    from runner.load.skills import discover
    from runner.middleware.memory import MemoryFile, MemoryMiddleware
    from runner.middleware.skills import BackendSkillsMiddleware, SkillsMiddleware, Source

    taken = {p.rstrip("/") for p in backend.route_prefixes}
    mounts: list[Mount] = []

    def free_prefix(base: str) -> str:
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}-{n}"
        taken.add(candidate)
        return candidate + "/"

    memory_files: list[MemoryFile] = []
    memory_mounts: dict[Path, tuple[str, set[str]]] = {}
    for entry in core.memory:
        if entry.backend is not None:
            memory_files.append(MemoryFile(entry.backend, entry.backend))
            continue
        host = Path(entry.path)
        # a file not created yet is kept (the agent may start it) when its folder exists
        if not (host.is_file() or (not host.exists() and host.parent.is_dir())):
            reason = "is not a file" if host.exists() else "is in a folder that does not exist"
            logging.getLogger("agentctl").warning("memory file %s %s; skipped", host, reason)
            continue
        agent_path = backend.host_path(str(host))
        if agent_path is None:  # files of one folder share one mount
            prefix, names = memory_mounts.get(host.parent) or (free_prefix("/memory"), set())
            memory_mounts[host.parent] = (prefix, names | {host.name})
            agent_path = prefix + host.name
        memory_files.append(MemoryFile(agent_path, str(host), host=str(host)))
    mounts += [
        Mount(prefix, folder, only=frozenset(names))
        for folder, (prefix, names) in memory_mounts.items()
    ]

    sources: list[Source] = []
    for index, entry in enumerate(core.skills):
        if entry.backend is not None:
            sources.append(entry.backend)
            continue
        folder = Path(entry.path)
        if not folder.is_dir():
            from runner.errors import display_path

            message = f"skills folder not found: {display_path(folder)}"
            raise ResolutionError.at(locator((*where, "skills", index), message))
        agent_path = backend.host_path(str(folder))
        if agent_path is None:
            agent_path = free_prefix("/skills")
            mounts.append(Mount(agent_path, folder, read_only=True))
        found = discover([(folder, agent_path)])
        for problem in found.problems:
            logging.getLogger("agentctl").warning("skill skipped: %s", problem)
        sources.append(found.skills)

    backend = backend.with_mounts(mounts)
    memory = MemoryMiddleware(backend, memory_files) if memory_files else None
    skills: SkillsMiddleware | None
    if not sources:
        skills = None
    elif any(isinstance(s, str) for s in sources):
        skills = BackendSkillsMiddleware(sources, backend)
    else:
        skills = SkillsMiddleware(sources)
    return backend, memory, skills


def filesystem_middleware(
    core: AgentCore,
    backend: BackendProvider,
    where: KeyPath,
    locator: Locator,
    *,
    images: bool,
) -> Any:
    from runner.check.tools import execute_message
    from runner.middleware.filesystem import FilesystemMiddleware

    settings = core.filesystem
    if settings.tools is not None and "execute" in settings.tools and not backend.can_execute:
        index = settings.tools.index("execute")
        kind = core.backend.kind if core.backend is not None else "state"
        raise BuildError.at(locator((*where, "filesystem", "tools", index), execute_message(kind)))
    return FilesystemMiddleware(
        backend,
        tools=settings.tools,
        tool_descriptions={str(k): v for k, v in settings.tool_descriptions.items()},
        evict_results_over_tokens=settings.evict_results_over_tokens,
        images=images,
    )


def summarization_middleware(
    core: AgentCore,
    model: ResolvedModel,
    backend: BackendProvider,
    locate: Callable[[KeyPath, str], Problem],
    summarizer: Callable[[], tuple[Any, int | None]],
) -> Middleware | None:
    """Summarization with the spec's thresholds (or the defaults); `summarizer` gives the model
    that writes the summaries and its window (asked for once the thresholds are known good)."""
    settings = core.summarization
    if not settings.enabled:
        return None  # (and its module stays unimported: start-up)
    from runner.middleware import summarization as s

    window = model.context_window

    def threshold(given: Any, share: float, otherwise: tuple[str, int]) -> tuple[str, float]:
        """The spec's threshold, else a share of the window when known, else `otherwise`."""
        if given is not None:
            return given.as_tuple()
        return ("fraction", share) if window else otherwise

    trigger = threshold(
        settings.trigger, s.DEFAULT_TRIGGER_FRACTION, ("tokens", s.DEFAULT_TRIGGER_TOKENS)
    )
    keep = threshold(settings.keep, s.DEFAULT_KEEP_FRACTION, ("messages", s.DEFAULT_KEEP_MESSAGES))
    for key, (kind, _) in (("trigger", trigger), ("keep", keep)):
        if kind == "fraction" and not window:
            from runner.check.tools import fraction_message

            raise BuildError.at(
                locate(("summarization", key, "fraction"), fraction_message(model.id))
            )
    chat_model, summarizer_window = summarizer()
    return s.SummarizationMiddleware(
        model=chat_model,
        provider=backend,
        trigger=trigger,
        keep=keep,
        context_window=window,
        history_dir=settings.history_dir,
        summarizer_window=summarizer_window,
    )


def run_budget(
    core: AgentCore, locate: Callable[[KeyPath, str], Problem], *, counts_calls: bool = False
) -> RunBudget | None:
    """The main agent's budgets (`limits.tokens/time/cost`), when it sets any; with
    `counts_calls` (a workflow's), `limits.model_calls/tool_calls` as totals of the run too."""
    if not core.limits.has_budget(counts_calls=counts_calls):
        return None  # (and the budget middleware stays unimported: start-up)
    from runner.middleware.budgets import RunBudget

    return RunBudget(core.limits, locate, counts_calls=counts_calls)


def budget_middleware(
    budget: RunBudget | None, core: AgentCore, model: ResolvedModel, *, main: bool
) -> Middleware | None:
    """The budget middleware of one agent: `budget` (the main agent's) counted by it and by every
    subagent it builds, each with its own model's prices."""
    if budget is None:
        return None
    if budget.limits.cost is not None and not model.prices:
        raise ResolutionError.at(
            budget.locate(
                ("limits", "cost"),
                f"the price of {model.id} (agent {core_name(core)!r}) is not known: give "
                "it as `model.price` in the spec (a --model other than a replay has none)",
            )
        )
    from runner.middleware.budgets import BudgetMiddleware, CallBudgetMiddleware

    if budget.counts_calls and budget.limits.tool_calls is not None:
        return CallBudgetMiddleware(budget, model.prices, main=main)
    return BudgetMiddleware(budget, model.prices, main=main)
