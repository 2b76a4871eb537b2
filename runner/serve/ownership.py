"""Who owns what on a server with authentication: the `@auth.on` handlers both engines call.

Every thread, run, cron and store namespace belongs to the user who created it. The handlers are
registered on the server's LangGraph `Auth` object (`register`), which the in-memory engine and
Aegra both load, and work the way LangGraph's authorization hook is meant to:

- on create, the owner is written into the resource's metadata (`owner`: the user's identity);
- on read, search, update, delete and run creation, a filter `{"owner": identity}` is returned,
  which the engine applies to the stored metadata: another user's thread is absent (404), never
  forbidden (403), so its existence is not revealed;
- store namespaces are put under the user's own prefix, `("users", identity)`
  (`runner.backends.store_user_prefix`, the prefix Aegra's store API puts them under anyway),
  for the API and for the runs' `store` backends alike (`runner.backends.scope_store_by_user`).

A user whose permissions hold `admin` (`--admin USER`) gets no filter and no namespace prefix:
they see and act on everything. Assistants (the served agents) are shared by every user.

Aegra also scopes threads and runs by the identity it authenticated (its `user_id` column), in
every route, filters or not; the handlers keep the in-memory engine to the same rule, and the
metadata owner is what `agentctl threads --db` shows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ADMIN", "OWNER", "is_admin", "let_admins_see_all_on_aegra", "register"]

ADMIN = "admin"
"""The permission of a user named by `--admin` (`runner.serve.auth` gives it): the ownership
handlers let such a user see all."""

OWNER = "owner"
"""The metadata key of a thread's (or cron's) owner: the identity of the user who created it."""


def is_admin(ctx: Any) -> bool:
    """Whether the request's user has the admin permission (`ADMIN`)."""
    permissions = getattr(ctx, "permissions", None) or getattr(ctx.user, "permissions", ())
    return ADMIN in (permissions or ())


def _identity(ctx: Any) -> str:
    return str(ctx.user.identity)


def _own(value: dict[str, Any], ctx: Any) -> None:
    """Write the owner into `value`'s metadata, in place (the engines keep that very dict)."""
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata[OWNER] = _identity(ctx)
    else:
        value["metadata"] = {OWNER: _identity(ctx)}


def _only_own(ctx: Any) -> dict[str, Any] | None:
    return None if is_admin(ctx) else {OWNER: _identity(ctx)}


def register(auth: Any) -> None:
    """Register the ownership handlers on `auth` (a `langgraph_sdk.Auth`). The runs' store
    backends follow the same rule once `runner.backends.scope_store_by_user()` is called (serve
    does when it turns authentication on)."""

    @auth.on.threads.create
    async def own_thread(ctx: Any, value: dict[str, Any]) -> None:
        _own(value, ctx)

    @auth.on.threads.create_run
    async def run_own_thread(ctx: Any, value: dict[str, Any]) -> dict[str, Any] | None:
        # A run that creates its thread (`if_not_exists="create"`, or a thread-less run) writes
        # its metadata into the new thread's: the owner goes with it.
        _own(value, ctx)
        return _only_own(ctx)

    @auth.on.threads(actions=["read", "update", "delete", "search"])
    async def own_threads_only(ctx: Any, value: dict[str, Any]) -> dict[str, Any] | None:
        return _only_own(ctx)

    @auth.on.assistants
    async def shared_assistants(ctx: Any, value: dict[str, Any]) -> None:
        # The agents are shared: every user may run every served agent (an assistant a user
        # makes is theirs on Aegra, which scopes assistants itself). Said here, the in-memory
        # engine no longer warns at each start that assistants have no handler.
        return None

    @auth.on.crons.create
    async def own_cron(ctx: Any, value: dict[str, Any]) -> dict[str, Any] | None:
        _own(value, ctx)
        return _only_own(ctx)

    @auth.on.crons(actions=["read", "update", "delete", "search"])
    async def own_crons_only(ctx: Any, value: dict[str, Any]) -> dict[str, Any] | None:
        return _only_own(ctx)

    @auth.on.store
    async def own_namespaces(ctx: Any, value: dict[str, Any]) -> None:
        if is_admin(ctx):
            return
        from runner.backends import store_user_prefix

        prefix = store_user_prefix(_identity(ctx))
        namespace = tuple(value.get("namespace") or ())
        if namespace[: len(prefix)] != prefix:  # Aegra puts it there too: never twice
            value["namespace"] = (*prefix, *namespace)


def let_admins_see_all_on_aegra(admins: frozenset[str]) -> None:
    """Aegra scopes every row it reads or changes by the identity it authenticated, in SQL
    (`thread.user_id = :identity`, and so for runs, crons and assistants), and every store
    namespace under `("users", identity)`, whatever the handlers return; an admin would see
    only their own. This lifts both for `admins` (identities), in this process:

    - an ORM statement's `<table>.user_id = :value` condition whose value is an admin's
      identity becomes true (in requests and in the run workers alike, which look rows up by
      the identity of the user who started the run);
    - the store API leaves an admin's namespaces as the admin writes them (`("users", "alice",
      ...)` reads alice's items).
    What an admin creates still belongs to the admin."""
    if not admins:
        return
    from aegra_api.api import store as store_api
    from sqlalchemy import event, true
    from sqlalchemy.orm import ORMExecuteState, Session
    from sqlalchemy.sql import operators, visitors
    from sqlalchemy.sql.elements import BinaryExpression, BindParameter
    from sqlalchemy.sql.schema import Column

    def lifted(element: Any) -> Any:
        if (
            isinstance(element, BinaryExpression)
            and element.operator is operators.eq
            and isinstance(element.left, Column)
            and element.left.name == "user_id"
            and isinstance(element.right, BindParameter)
            and element.right.value in admins
        ):
            return true()
        return None

    @event.listens_for(Session, "do_orm_execute")
    def admins_see_all(state: ORMExecuteState) -> None:
        if state.is_select or state.is_update or state.is_delete:
            state.statement = visitors.replacement_traverse(state.statement, {}, lifted)  # type: ignore[call-overload]

    scoped = store_api.apply_namespace_scoping

    def namespace_of(namespace: list[str], user: Any, **kwargs: Any) -> list[str]:
        if getattr(user, "identity", None) in admins:
            return list(namespace)
        return scoped(namespace, user, **kwargs)

    store_api.apply_namespace_scoping = namespace_of
