"""Counting the statements and commits psycopg sends, by kind: what
`tests/threads/test_pg_turn.py` asserts of a Postgres turn and `bench/bench_pg_threads.py --short`
reports beside its timings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["LANGGRAPH", "Traced", "kind_of"]

LANGGRAPH = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


class Traced:
    """The statements psycopg sends in this process while `counting`, by kind, and the commits:
    a transaction (`BEGIN` sent, or psycopg's `transaction()`) that wrote, or a write outside
    one (once per row: autocommit)."""

    def __init__(self, patch: Callable[[Any, str, Any], None] = setattr) -> None:
        """`patch(obj, name, value)` puts the tracing methods on psycopg's classes (pytest's
        `monkeypatch.setattr`, to take them off after the test)."""
        import psycopg

        self.kinds: Counter[str] = Counter()
        self.transactions = 0
        self.commits = 0
        self.on = False
        self._open: dict[int, bool] = {}
        """id of a connection in a transaction -> whether it wrote."""
        traced = self
        for name in ("execute", "executemany"):
            original = getattr(psycopg.Cursor, name)

            def tracing(
                cur: Any,
                query: Any,
                params: Any = None,
                *args: Any,
                _original: Any = original,
                _many: bool = name == "executemany",
                **kwargs: Any,
            ) -> Any:
                if traced.on:
                    rows = len(params) if _many else 1
                    traced.saw(id(cur.connection), str(query), rows)
                return _original(cur, query, params, *args, **kwargs)

            patch(psycopg.Cursor, name, tracing)
        transaction = psycopg.Connection.transaction

        @contextmanager
        def tracing_transaction(conn: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            outer = traced.on and id(conn) not in traced._open
            if outer:
                traced.saw(id(conn), "BEGIN", 1)
            try:
                with transaction(conn, *args, **kwargs) as tx:
                    yield tx
            finally:
                if outer:
                    traced.saw(id(conn), "COMMIT", 1)

        patch(psycopg.Connection, "transaction", tracing_transaction)

    def saw(self, conn: int, query: str, rows: int) -> None:
        verb = query.split()[0].upper()
        if verb == "BEGIN":
            self._open[conn] = False
            self.transactions += 1
        elif verb in ("COMMIT", "ROLLBACK"):
            self.commits += self._open.pop(conn, False)
        else:
            self.kinds[kind_of(query)] += 1
            if verb in ("INSERT", "UPDATE", "DELETE"):
                if conn in self._open:
                    self._open[conn] = True
                else:
                    self.commits += rows

    @contextmanager
    def counting(self) -> Iterator[None]:
        self.kinds.clear()
        self.transactions = self.commits = 0
        self.on = True
        try:
            yield
        finally:
            self.on = False


def kind_of(query: str) -> str:
    """What a statement is, for the counts: LangGraph's (reading or writing its tables) or one
    of agentctl's few (the prune's on the turns it removes checkpoints: a transaction, the
    values the removed checkpoints named, the deletes, a look at the dead rows)."""
    text = " ".join(query.split())
    for needle, kind in (
        ("pg_try_advisory_lock", "lease taken"),
        ("pg_advisory_unlock", "lease let go"),
        ("agentctl_tool_journal", "journal"),
        ("SELECT checkpoint_id FROM checkpoints WHERE", "latest checkpoint"),
        ("SELECT max(checkpoint_id) FROM checkpoints WHERE", "latest checkpoint"),
        ("JOIN unnest(%s::text[], %s::text[]) AS k(ch, since)", "latest checkpoint kept, checked"),
        ("SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id", "prune"),
        ("UPDATE agentctl_threads SET updated_at", "time of last use"),
        ("pg_advisory_xact_lock", "prune, removing"),
        ("DELETE FROM checkpoint", "prune, removing"),
        ("jsonb_each_text(c.checkpoint -> 'channel_versions')", "prune, removing"),
        ("pg_stat_all_tables", "prune, removing"),
    ):
        if needle in text:
            return kind
    if any(f" {table} " in f" {text} " for table in LANGGRAPH):
        return "langgraph"
    return text[:80]
