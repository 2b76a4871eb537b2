"""Ownership on a served team, through `langgraph-sdk` with API keys, on both engines: alice and
bob cannot see or touch each other's threads, runs, crons, state, approvals, store items or
workspace files (every attempt is a 404, and the owner reads everything unchanged afterwards);
searches return only one's own; an admin sees all; a thread is continued only with its own agent;
deleting a thread deletes its workspace folder (and nothing a symlink points to). One server per
engine for the module."""

from __future__ import annotations

import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve import servers
from tests.serve.test_serve_contract import SCRIBE, SCRIBE_REPLIES, aegra_args

pytest.importorskip("langgraph_api")
sdk = pytest.importorskip("langgraph_sdk")
httpx = pytest.importorskip("httpx")

pytestmark = pytest.mark.slow

KEEPER = """\
name: keeper
description: Keeps a memory in the store
model: replay:keeper.cassette.yaml
prompt: You keep memories.
backend:
  kind: composite
  default: {kind: state}
  routes:
    /memories/: {kind: store, namespace: [memories]}
"""
KEEPER_REPLIES = """\
- content: Remembering.
  tool_calls:
    - {name: write_file, args: {file_path: /memories/m.md, content: remembered}}
- content: Kept.
"""
GREETER = """\
name: greeter
description: Says hello
model: replay:greeter.cassette.yaml
prompt: You greet.
"""
KEYS = {
    "alice": "alice-key-0123456789abcdef",
    "bob": "bob-key-0123456789abcdef0",
    "root": "root-key-0123456789abcdef",
}


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("owned")
    for name, text in [
        ("scribe.yaml", SCRIBE),
        ("scribe.cassette.yaml", SCRIBE_REPLIES),
        ("keeper.yaml", KEEPER),
        ("keeper.cassette.yaml", KEEPER_REPLIES),
        ("greeter.yaml", GREETER),
        ("greeter.cassette.yaml", "- content: Hello there.\n" * 3),
    ]:
        (folder / name).write_text(text, encoding="utf-8")
    keys = "keys:\n" + "".join(f"  - {{user: {u}, key: {k}}}\n" for u, k in KEYS.items())
    (folder / "keys.yaml").write_text(keys, encoding="utf-8")
    return folder


AUTH = ["--api-keys", "keys.yaml", "--admin", "root"]


@pytest.fixture(scope="module", params=["memory", "aegra"])
def served(request: pytest.FixtureRequest, agents: Path) -> Iterator[tuple[str, str | None]]:
    """(URL, database URL or None) of a server with keys for alice, bob and root (an admin)."""
    paths = [agents / f for f in ("scribe.yaml", "keeper.yaml", "greeter.yaml")]
    log = agents / f"serve-{request.param}.log"
    if request.param == "memory":
        with servers.serving(paths, cwd=agents, args=["--dev", *AUTH], log=log) as server:
            yield server.url, None
        return
    with (
        aegra_args(request) as (args, env),
        servers.serving(paths, cwd=agents, args=[*args, *AUTH], env=env, log=log) as server,
    ):
        yield server.url, args[1]


@pytest.fixture(scope="module")
def as_user(served: tuple[str, str | None]) -> Callable[[str], Any]:
    url = served[0]
    return lambda user: sdk.get_sync_client(url=url, api_key=KEYS[user])


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _status(call: Callable[[], Any]) -> int:
    """The HTTP status `call` fails with (200 when it succeeds)."""
    try:
        call()
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


def _to_approval(client: Any) -> str:
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "scribe", input=_ask("note"))
    assert client.threads.get(thread)["status"] == "interrupted"
    return thread


def _side_api(url: str, user: str, query: str) -> int:
    request = urllib.request.Request(
        f"{url}/web/api/agents/scribe/{query}", headers={"x-api-key": KEYS[user]}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_another_user_gets_404_for_everything_of_a_thread(
    as_user: Callable[[str], Any], served: tuple[str, str | None], agents: Path
) -> None:
    alice, bob = as_user("alice"), as_user("bob")
    thread = _to_approval(alice)
    before = alice.threads.get_state(thread)
    run = alice.runs.list(thread)[0]["run_id"]
    (agents / "ws" / thread).mkdir(parents=True, exist_ok=True)
    (agents / "ws" / thread / "mine.md").write_text("alice's", encoding="utf-8")

    resume = {"resume": {"decisions": [{"type": "approve"}]}}
    attempts: dict[str, Callable[[], Any]] = {
        "read": lambda: bob.threads.get(thread),
        "state": lambda: bob.threads.get_state(thread),
        "history": lambda: bob.threads.get_history(thread),
        "update state": lambda: bob.threads.update_state(thread, {"messages": []}),
        "update metadata": lambda: bob.threads.update(thread, metadata={"x": 1}),
        "copy": lambda: bob.threads.copy(thread),
        "continue": lambda: bob.runs.wait(thread, "scribe", input=_ask("more")),
        "answer the approval": lambda: bob.runs.wait(thread, "scribe", command=resume),
        "read a run": lambda: bob.runs.get(thread, run),
        "join a run": lambda: bob.runs.join(thread, run),
        "stream a run": lambda: list(bob.runs.join_stream(thread, run)),
        "cancel a run": lambda: bob.runs.cancel(thread, run),
        "delete": lambda: bob.threads.delete(thread),
    }
    statuses = {what: _status(attempt) for what, attempt in attempts.items()}
    assert statuses == dict.fromkeys(attempts, 404)
    assert thread not in {t["thread_id"] for t in bob.threads.search(limit=1000)}
    listed = []
    try:
        listed = bob.runs.list(thread)
    except httpx.HTTPStatusError as exc:
        assert exc.response.status_code == 404
    assert listed == []
    url = served[0]
    assert _side_api(url, "bob", f"files?thread_id={thread}") == 404
    assert _side_api(url, "bob", f"file?thread_id={thread}&path=/mine.md") == 404
    assert _side_api(url, "alice", f"file?thread_id={thread}&path=/mine.md") == 200

    # Nothing changed: alice still finds her thread waiting for her answer, with its files.
    after = alice.threads.get_state(thread)
    assert after["values"] == before["values"] and after["next"] == before["next"]
    assert alice.threads.get(thread)["status"] == "interrupted"
    assert not (agents / "ws" / thread / "note.md").exists()
    assert (agents / "ws" / thread / "mine.md").exists()
    assert alice.runs.wait(thread, "scribe", command=resume)["messages"][-1]["content"] == "Done."
    assert (agents / "ws" / thread / "note.md").read_text(encoding="utf-8") == "draft"


def test_search_returns_ones_own_and_an_admin_sees_all(
    as_user: Callable[[str], Any], served: tuple[str, str | None]
) -> None:
    alice, bob, root = as_user("alice"), as_user("bob"), as_user("root")
    mine = alice.threads.create(metadata={"topic": "shared-name"})["thread_id"]
    theirs = bob.threads.create(metadata={"topic": "shared-name"})["thread_id"]
    found = {
        u: {t["thread_id"] for t in c.threads.search(limit=1000)}
        for u, c in [("alice", alice), ("bob", bob), ("root", root)]
    }
    assert mine in found["alice"] and theirs not in found["alice"]
    assert theirs in found["bob"] and mine not in found["bob"]
    assert {mine, theirs} <= found["root"]
    assert alice.threads.get(mine)["metadata"]["owner"] == "alice"
    # a client cannot claim another owner
    claimed = bob.threads.create(metadata={"owner": "alice"})["thread_id"]
    assert claimed not in {t["thread_id"] for t in alice.threads.search(limit=1000)}
    assert root.threads.get(theirs)["metadata"]["owner"] == "bob"
    root.threads.get_state(mine)
    assert _side_api(served[0], "root", f"files?thread_id={mine}") == 200
    assert _side_api(served[0], "alice", f"files?thread_id={theirs}") == 404
    root.threads.update(claimed, metadata={"seen": "root"})
    assert bob.threads.get(claimed)["metadata"]["seen"] == "root"
    root.threads.delete(claimed)
    assert _status(lambda: bob.threads.get(claimed)) == 404
    if served[1] is not None:
        return  # Aegra: no copy route, and a run's thread is checked against its creator in code
    copied = root.threads.copy(mine)["thread_id"]
    assert copied in {t["thread_id"] for t in root.threads.search(limit=1000)}
    # An admin continues a user's thread; the user sees what the run did.
    assert root.runs.wait(theirs, "greeter", input=_ask("hi"))["messages"][-1]["content"] == (
        "Hello there."
    )
    assert bob.threads.get_state(theirs)["values"]["messages"][-1]["content"] == "Hello there."
    assert bob.threads.get(theirs)["metadata"]["owner"] == "bob"


def test_crons_are_their_owners(as_user: Callable[[str], Any]) -> None:
    alice, bob = as_user("alice"), as_user("bob")
    thread = alice.threads.create()["thread_id"]
    yearly = {"schedule": "0 0 1 1 *", "input": _ask("hi")}  # never fires during the test
    alice.crons.create_for_thread(thread, "greeter", **yearly)  # Aegra answers with a run
    cron = next(c["cron_id"] for c in alice.crons.search() if c["thread_id"] == thread)
    assert cron in {c["cron_id"] for c in alice.crons.search()}
    assert cron not in {c["cron_id"] for c in bob.crons.search()}
    assert _status(lambda: bob.crons.delete(cron)) == 404
    assert _status(lambda: bob.crons.create_for_thread(thread, "greeter", **yearly)) == 404
    assert cron in {c["cron_id"] for c in alice.crons.search()}
    alice.crons.delete(cron)


def test_store_items_are_per_user_for_the_api_and_the_runs(as_user: Callable[[str], Any]) -> None:
    alice, bob, root = as_user("alice"), as_user("bob"), as_user("root")
    alice.store.put_item(["notes"], "k", {"text": "alice's"})
    assert _item(bob, ["notes"], "k") is None
    assert bob.store.search_items(["notes"])["items"] == []
    bob.store.put_item(["notes"], "k", {"text": "bob's"})
    bob.store.delete_item(["notes"], "k")
    assert _item(alice, ["notes"], "k") == {"text": "alice's"}
    assert _item(root, ["users", "alice", "notes"], "k") == {"text": "alice's"}

    # A run's store backend works in its user's namespace: the same one the API shows them.
    thread = alice.threads.create()["thread_id"]
    alice.runs.wait(thread, "keeper", input=_ask("remember"))
    kept = _item(alice, ["memories"], "/m.md")
    assert kept is not None and kept["content"] == "remembered"
    assert _item(bob, ["memories"], "/m.md") is None
    other = bob.threads.create()["thread_id"]
    state = bob.runs.wait(other, "keeper", input=_ask("remember"))
    assert state["messages"][-1]["content"] == "Kept."
    assert (_item(alice, ["memories"], "/m.md") or {}).get("content") == "remembered"


def _item(client: Any, namespace: list[str], key: str) -> Any:
    """The value of a store item as `client` sees it, or None (absent: None or a 404)."""
    try:
        item = client.store.get_item(namespace, key)
    except httpx.HTTPStatusError as exc:
        assert exc.response.status_code == 404
        return None
    return None if item is None else item["value"]


def test_a_thread_is_continued_only_with_its_own_agent(as_user: Callable[[str], Any]) -> None:
    alice, root = as_user("alice"), as_user("root")
    thread = alice.threads.create()["thread_id"]
    alice.runs.wait(thread, "greeter", input=_ask("hi"))
    for client in (alice, root):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.runs.wait(thread, "scribe", input=_ask("note"))
        assert refused.value.response.status_code == 409
        assert "belongs to agent 'greeter'" in refused.value.response.text
    greeter = next(a for a in alice.assistants.search() if a["graph_id"] == "scribe")
    assert (
        _status(lambda: alice.runs.create(thread, greeter["assistant_id"], input=_ask("x"))) == 409
    )
    again = alice.runs.wait(thread, "greeter", input=_ask("hi again"))
    assert again["messages"][-1]["content"] == "Hello there."


def test_deleting_a_thread_deletes_its_workspace_folder_and_nothing_else(
    as_user: Callable[[str], Any], agents: Path, tmp_path: Path
) -> None:
    alice, bob = as_user("alice"), as_user("bob")
    thread = _to_approval(alice)
    alice.runs.wait(thread, "scribe", command={"resume": {"decisions": [{"type": "approve"}]}})
    folder = agents / "ws" / thread
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("keep", encoding="utf-8")
    os.symlink(outside, folder / "link")
    assert (folder / "note.md").exists()
    assert _status(lambda: bob.threads.delete(thread)) == 404
    assert (folder / "note.md").exists()
    alice.threads.delete(thread)
    assert not os.path.lexists(folder)
    assert (outside / "keep.md").read_text(encoding="utf-8") == "keep"

    # A thread whose folder is a symlink: the link goes, what it points to stays.
    linked = alice.threads.create()["thread_id"]
    os.symlink(outside, agents / "ws" / linked)
    alice.threads.delete(linked)
    assert not os.path.lexists(agents / "ws" / linked)
    assert (outside / "keep.md").read_text(encoding="utf-8") == "keep"


def test_the_cli_shows_the_owner_of_served_threads(
    as_user: Callable[[str], Any], served: tuple[str, str | None], agents: Path
) -> None:
    database = served[1]
    if database is None:
        pytest.skip("threads --db reads the server's Postgres (Aegra)")
    thread = as_user("bob").threads.create()["thread_id"]
    as_user("bob").runs.wait(thread, "greeter", input=_ask("hi"))
    listing = subprocess.run(
        [servers.AGENTCTL, "threads", "--db", database],
        capture_output=True,
        text=True,
        cwd=agents,
        timeout=120,
    )
    assert listing.returncode == 0, listing.stderr
    header, *rows = listing.stdout.splitlines()
    assert header.split()[:3] == ["THREAD", "AGENT", "OWNER"]
    row = next(r for r in rows if r.startswith(thread))
    assert row.split()[1:3] == ["greeter", "bob"]


def test_a_new_thread_survives_a_sigkill_right_after_it_was_created(tmp_path: Path) -> None:
    """The in-memory engine answers a thread's creation only once it is saved: killed at once
    (its periodic save is seconds away), a restarted server still has it, with its owner."""
    (tmp_path / "greeter.yaml").write_text(GREETER, encoding="utf-8")
    (tmp_path / "greeter.cassette.yaml").write_text("- content: Hello there.\n", encoding="utf-8")
    (tmp_path / "keys.yaml").write_text(
        f"keys:\n  - {{user: alice, key: {KEYS['alice']}}}\n", encoding="utf-8"
    )
    args = ["--api-keys", "keys.yaml"]
    log = tmp_path / "serve.log"
    server = servers.start([tmp_path / "greeter.yaml"], cwd=tmp_path, args=args, log=log)
    try:
        client = sdk.get_sync_client(url=server.url, api_key=KEYS["alice"])
        thread = client.threads.create(metadata={"topic": "kept"})["thread_id"]
    finally:
        servers.kill(server)
    with servers.serving([tmp_path / "greeter.yaml"], cwd=tmp_path, args=args, log=log) as again:
        client = sdk.get_sync_client(url=again.url, api_key=KEYS["alice"])
        metadata = client.threads.get(thread)["metadata"]
        assert (metadata["topic"], metadata["owner"]) == ("kept", "alice")
        state = client.runs.wait(thread, "greeter", input=_ask("hi"))
        assert state["messages"][-1]["content"] == "Hello there."
