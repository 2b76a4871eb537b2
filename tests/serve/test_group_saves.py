"""The in-memory engine's thread table saved for every new thread (`runner.serve.inmem`): a
caller returns only once a snapshot holding its change is on disk, and callers that come while
a save is written share the next one."""

from __future__ import annotations

import asyncio

from runner.serve.inmem import GroupSaves


class Table:
    """A table whose changes are numbered, saved by a slow writer that keeps what reached disk."""

    def __init__(self, fail: set[int] | None = None) -> None:
        self.changes = 0
        self.snapshots: list[int] = []
        self.on_disk = 0
        self.fail = fail or set()

    def snapshot(self) -> bytes:
        self.snapshots.append(self.changes)
        return str(self.changes).encode()

    async def write(self, data: bytes) -> None:
        await asyncio.sleep(0.02)
        if len(self.snapshots) in self.fail:
            raise OSError("disk full")
        self.on_disk = max(self.on_disk, int(data))

    async def change_and_save(self, saves: GroupSaves, spread: float = 0.0) -> None:
        await asyncio.sleep(spread)
        self.changes += 1
        mine = self.changes
        await saves.save(self.snapshot, self.write)
        assert self.on_disk >= mine  # answered only once its change is on disk


def test_a_burst_of_changes_costs_two_saves_and_each_caller_waits_for_its_own() -> None:
    table = Table()

    async def burst() -> None:
        saves = GroupSaves()
        await asyncio.gather(*(table.change_and_save(saves) for _ in range(20)))

    asyncio.run(burst())
    assert table.snapshots == [1, 20]  # the first change alone, then the 19 that waited
    assert table.on_disk == 20


def test_changes_spread_over_time_are_each_covered() -> None:
    table = Table()

    async def spread() -> None:
        saves = GroupSaves()
        await asyncio.gather(*(table.change_and_save(saves, spread=i * 0.007) for i in range(30)))

    asyncio.run(spread())
    assert table.on_disk == 30
    assert len(table.snapshots) < 30  # some callers shared a save
    assert table.snapshots == sorted(table.snapshots)


def test_a_failed_write_fails_its_caller_and_the_next_caller_saves_again() -> None:
    table = Table(fail={1})

    async def with_a_failure() -> list[BaseException | None]:
        saves = GroupSaves()
        first = asyncio.ensure_future(table.change_and_save(saves))
        await asyncio.sleep(0)  # the first has taken its snapshot and is writing
        others = [table.change_and_save(saves) for _ in range(3)]
        results = await asyncio.gather(first, *others, return_exceptions=True)
        return [r if isinstance(r, BaseException) else None for r in results]

    results = asyncio.run(with_a_failure())
    assert isinstance(results[0], OSError)
    assert results[1:] == [None, None, None]
    assert table.snapshots == [1, 4] and table.on_disk == 4


def test_saves_work_from_one_event_loop_to_the_next() -> None:
    """(The server has one loop; tests and restarts in one process make new ones.)"""
    saves, table = GroupSaves(), Table()
    for _ in range(2):
        asyncio.run(table.change_and_save(saves))
    assert table.snapshots == [1, 2]
