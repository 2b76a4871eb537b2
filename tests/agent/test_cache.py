"""`AgentCache`: built once per key, bounded, closed when dropped, safe across threads."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from runner.agent.cache import AgentCache, vars_key


class Built:
    """A stand-in for a built agent: a name, and whether its resources were closed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def maker(made: list[Built]) -> Callable[[str], Callable[[], Built]]:
    def make(name: str) -> Callable[[], Built]:
        def build() -> Built:
            made.append(Built(name))
            return made[-1]

        return build

    return make


def test_vars_key_ignores_order_and_tells_values_apart() -> None:
    assert vars_key({"a": 1, "b": "x"}) == vars_key({"b": "x", "a": 1})
    assert vars_key({"a": 1}) != vars_key({"a": "1"})
    assert vars_key({}) == "{}"


def test_a_key_is_built_once_and_a_new_stamp_rebuilds_and_retires_the_old() -> None:
    made: list[Built] = []
    build = maker(made)
    cache: AgentCache[Built] = AgentCache(Built.close)
    first = cache.get(("a.yaml", vars_key({})), build("first"), stamp=1)
    assert cache.get(("a.yaml", vars_key({})), build("again"), stamp=1) is first
    other = cache.get(("a.yaml", vars_key({"topic": "y"})), build("other"), stamp=1)
    assert other is not first and cache.builds == 2
    fresh = cache.get(("a.yaml", vars_key({})), build("fresh"), stamp=2)
    assert fresh.name == "fresh" and cache.builds == 3
    assert first.closed == 0  # a run that started on it may still use it
    cache.close()
    assert [b.closed for b in made] == [1, 1, 1]


def test_remembered_errors_are_raised_again_without_building_others_are_not_kept() -> None:
    calls: list[str] = []

    def failing(kind: type[Exception]) -> Callable[[], Built]:
        def build() -> Built:
            calls.append(kind.__name__)
            raise kind("cannot build")

        return build

    cache: AgentCache[Built] = AgentCache(Built.close, remember=(ValueError,))
    for _ in range(2):
        with pytest.raises(ValueError, match="cannot build"):
            cache.get("bad", failing(ValueError))
    for _ in range(2):
        with pytest.raises(KeyError):
            cache.get("flaky", failing(KeyError))
    assert calls == ["ValueError", "KeyError", "KeyError"]
    # a new stamp (the file changed) tries a remembered failure again
    assert cache.get("bad", lambda: Built("fixed"), stamp=2).name == "fixed"
    assert cache.builds == 1
    cache.close()


def test_two_threads_asking_for_one_key_build_it_once() -> None:
    started, release = threading.Event(), threading.Event()
    made: list[Built] = []

    def slow() -> Built:
        started.set()
        release.wait()
        made.append(Built("slow"))
        return made[-1]

    cache: AgentCache[Built] = AgentCache(Built.close)
    got: list[Built] = []
    first = threading.Thread(target=lambda: got.append(cache.get("k", slow)))
    first.start()
    started.wait()
    second = threading.Thread(target=lambda: got.append(cache.get("k", slow)))
    second.start()
    # another key is not held up by the build of "k"
    assert cache.get("other", lambda: Built("other")).name == "other"
    release.set()
    first.join()
    second.join()
    assert len(made) == 1 and got == [made[0], made[0]]
    assert cache.builds == 2
    cache.close()


def test_leased_values_go_to_one_caller_at_a_time_and_a_few_are_kept() -> None:
    made: list[Built] = []
    build = maker(made)
    cache: AgentCache[Built] = AgentCache(Built.close, idle_per_key=2)
    held = [cache.take("k", build(str(n))) for n in range(3)]
    assert len({id(b) for b in held}) == 3  # none idle: each caller gets its own
    for value in held:
        cache.give_back("k", value)
    assert [b.closed for b in held] == [0, 0, 1]  # two kept, the surplus closed at once
    with cache.lease("k", build("new")) as again:
        assert again in held[:2]
    assert cache.builds == 3
    cache.close()
    assert [b.closed for b in held] == [1, 1, 1]


def test_the_least_recently_used_keys_beyond_the_bound_are_closed() -> None:
    made: list[Built] = []
    build = maker(made)
    cache: AgentCache[Built] = AgentCache(Built.close, max_keys=2, idle_per_key=4)
    a, b = cache.take("a", build("a")), cache.take("b", build("b"))
    cache.give_back("a", a)
    cache.give_back("b", b)
    with cache.lease("a", build("a2")) as same:  # "a" used last: "b" is the oldest
        assert same is a
    c = cache.take("c", build("c"))
    cache.give_back("c", c)
    assert (a.closed, b.closed, c.closed) == (0, 1, 0)
    # a shared value evicted may still be in use: closed with the cache, not at once
    shared = cache.get("s", build("s"))
    assert shared.closed == 0 and a.closed == 1
    cache.close()
    assert [x.closed for x in made] == [1, 1, 1, 1]


def test_close_closes_every_value_even_when_one_fails() -> None:
    closed: list[str] = []

    def close(name: str) -> None:
        closed.append(name)
        if name == "a":
            raise RuntimeError("a will not close")

    cache: AgentCache[str] = AgentCache(close)
    cache.get("a", lambda: "a")
    cache.get("b", lambda: "b")
    with pytest.raises(RuntimeError, match="a will not close"):
        cache.close()
    assert sorted(closed) == ["a", "b"]
    with pytest.raises(ValueError, match="max_keys"):
        AgentCache(close, max_keys=0)
