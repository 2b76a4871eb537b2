"""`agentctl threads`: the saved threads, one conversation, deleting one.

Everything here reads the thread database (`runner.run.Home`): no spec is loaded and no agent is
built, so a thread stays readable after its spec moved, and nothing (no MCP server) starts.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from runner.errors import RunError
    from runner.run import Home, ThreadInfo, Transcript
    from runner.threads_db import Holder

db_option = click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="Thread database (default $AGENTCTL_HOME/agentctl.db).",
)


@click.group(invoke_without_command=True, short_help="List, show or delete saved threads.")
@click.pass_context
def threads(ctx: click.Context) -> int | None:
    """List the saved threads (the default), show one conversation, or delete a thread.

    Continue a thread with `agentctl run SPEC --thread ID`.
    """
    if ctx.invoked_subcommand is None:
        return ctx.invoke(list_threads)
    return None


@threads.command("list")
@click.option("--agent", metavar="NAME", help="Only the threads of this agent.")
@db_option
def list_threads(agent: str | None = None, db: Path | None = None) -> int:
    """The saved threads, most recently updated first: id, agent, last update (local time) and
    the first message."""
    home = _home(db)
    try:
        found = home.threads(agent=agent)
    finally:
        home.close()
    if not found:
        which = f" of agent {agent!r}" if agent else ""
        click.echo(f"no threads{which} in {home.path}", err=True)
        return 0
    rows = [
        (t.thread_id, t.agent, local_time(t.updated_at), one_line(t.first_message)) for t in found
    ]
    widths = [max(len(row[i]) for row in [_HEADER, *rows]) for i in range(3)]
    lines = []
    for row in [_HEADER, *rows]:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        line += "  " + row[3]
        lines.append(click.style(line, bold=True) if row is _HEADER else line)
    click.echo("\n".join(lines))  # one write: thousands of threads list at once
    return 0


_HEADER = ("THREAD", "AGENT", "UPDATED", "FIRST MESSAGE")


@threads.command("show")
@click.argument("thread_id", metavar="ID")
@db_option
def show_thread(thread_id: str, db: Path | None) -> int:
    """The conversation of thread ID: messages by role, tool calls and their results in short,
    and the approvals it waits for."""
    from runner.cli.render import result_summary, short_args
    from runner.errors import RunError

    home = _home(db)
    try:
        info = home.thread(thread_id)
        transcript = _transcript(home, thread_id)
    finally:
        home.close()
    if transcript is None and info is None:
        raise RunError(f"no thread {thread_id!r} in {home.path}")
    agent = info.agent if info else "agent"
    click.echo(click.style(f"thread {thread_id}", bold=True) + _about(info))
    click.echo()
    for message in transcript.messages if transcript else []:
        kind = getattr(message, "type", "")
        if kind == "human":
            _said(click.style("user", fg="green", bold=True), message.text)
        elif kind == "ai":
            if message.text.strip():
                _said(click.style(agent, fg="cyan", bold=True), message.text)
            for call in message.tool_calls:
                click.echo(f"  ▸ {call['name']}({short_args(call['args'])})")
        elif kind == "tool":
            failed = getattr(message, "status", "success") == "error"
            mark = click.style("✗", fg="red") if failed else "✓"
            first, size = result_summary(message.text)
            click.echo(f"    {mark} {one_line(first, 100)}" + (f"  ({size})" if size else ""))
    pending = transcript.pending if transcript else []
    if pending:
        click.echo()
        click.echo(click.style("waiting for approval:", fg="yellow", bold=True))
        for action in pending:
            click.echo(
                f"  {action.name}({short_args(action.args)})  "
                f"[{'/'.join(action.allowed_decisions)}]"
            )
        spec = info.spec if info and info.spec else "SPEC"
        click.echo(
            f"answer with: agentctl run {spec} --thread {thread_id} --approve "
            "(or --reject, --edit JSON; or without them in a terminal)"
        )
    return 0


@threads.command("rm")
@click.argument("thread_id", metavar="ID")
@click.option("--yes", "-y", is_flag=True, help="Delete without asking.")
@db_option
def remove_thread(thread_id: str, yes: bool, db: Path | None) -> int:
    """Delete thread ID: its checkpoints (conversation, files in state, pending approvals) and
    its entry in the list. Asks first unless --yes.

    A thread that a process is running now (`agentctl run`, a chat) is not deleted: the error
    names that process (pid, host, since when); delete it when the run is over.
    """
    from runner.errors import RunError
    from runner.threads_db import ThreadBusy

    home = _home(db)
    try:
        info = home.thread(thread_id)
        if info is None and not home.retention.has_checkpoints(thread_id):
            raise RunError(f"no thread {thread_id!r} in {home.path}")
        holder = home.lease.holder(thread_id)
        if holder is not None:  # said before asking; the lease taken below settles it
            raise _running(thread_id, holder)
        if not yes:
            about = f" ({info.agent}: {one_line(info.first_message, 50)})" if info else ""
            try:
                confirmed = click.confirm(f"Delete thread {thread_id}{about}?", err=True)
            except click.Abort:
                confirmed = False
            if not confirmed:
                click.echo("not deleted", err=True)
                return 1
        # The thread's lease, held while deleting: no run deletes under a runner's feet, and
        # none starts on a half-deleted thread.
        try:
            lease = home.lease.acquire(thread_id)
        except ThreadBusy as busy:
            raise _running(thread_id, busy.holder) from None
        try:
            home.delete(thread_id)
        finally:
            lease.release()
    finally:
        home.close()
    click.echo(f"deleted thread {thread_id}")
    return 0


def _running(thread_id: str, holder: Holder) -> RunError:
    from runner.errors import RunError

    return RunError(
        f"thread {thread_id} is being run by another process ({holder.describe()}); not "
        "deleted: stop that run, or delete the thread when it is done"
    )


@threads.command("keep-checkpoints")
@click.argument("value", metavar="[N|all]", required=False)
@db_option
def keep_checkpoints(value: str | None, db: Path | None) -> int:
    """Show or set how many of its latest checkpoints each thread keeps in this database.

    The default is 10. `all` keeps every checkpoint (full time travel through the Python API),
    and then a thread's storage grows with the square of its length: each checkpoint holds the
    whole conversation. Checkpoints where a thread waited for approval, or that a fork was made
    from, are always kept. Setting a value prunes every thread now and gives the freed space
    back to the file system; `agentctl run --keep-checkpoints` overrides it for one run.
    """
    from runner.retention import DEFAULT_KEEP, describe_keep, parse_keep

    home = _home(db)
    try:
        retention = home.retention
        if value is None:
            found, keep = retention.stored_keep()
            which = "" if found else " (the default)"
            click.echo(f"{describe_keep(keep if found else DEFAULT_KEEP)}{which}")
            return 0
        try:
            keep = parse_keep(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="N|all") from None
        converting = not retention.incremental()
        retention.store_keep(keep)
        pruned = retention.prune_all(keep)
        if converting:
            click.echo("rewriting the database once to give space back (VACUUM) ...", err=True)
        freed = retention.reclaim(force=True)
    finally:
        home.close()
    click.echo(
        f"threads in {home.path} keep {describe_keep(keep)} checkpoints; removed "
        f"{pruned.checkpoints} old checkpoints, freed {freed / 1e6:.1f} MB"
    )
    return 0


def _transcript(home: Home, thread_id: str) -> Transcript | None:
    """Read without LangChain when the checkpoint is plain msgpack (`runner.transcripts`), else
    through LangGraph's serializer."""
    from runner.run import Transcript
    from runner.transcripts import Unreadable, saved_transcript

    try:
        found = saved_transcript(home.conn, home._lock, thread_id)
    except Unreadable:
        return home.transcript(thread_id)
    return None if found is None else Transcript(list(found[0]), found[1])


def _home(db: Path | None) -> Home:
    from runner.run import Home

    return Home(db)


def _about(info: ThreadInfo | None) -> str:
    if info is None:
        return ""
    spec = f" ({info.spec})" if info.spec else ""
    return (
        f"  agent {info.agent}{spec}\n"
        f"created {local_time(info.created_at)} · updated {local_time(info.updated_at)}"
    )


def _said(who: str, text: str) -> None:
    lines = text.strip().splitlines() or [""]
    click.echo(f"{who}: {lines[0]}")
    for line in lines[1:]:
        click.echo(f"  {line}" if line else "")


def local_time(iso: str) -> str:
    """An ISO 8601 UTC time as local `YYYY-MM-DD HH:MM`."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def one_line(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
