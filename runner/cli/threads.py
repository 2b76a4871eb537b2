"""`agentctl threads`: the saved threads: list, show, export, fork, search, delete, prune.

Everything here reads the thread database (`runner.run.Home`, through `runner.threads.export`): no
spec is loaded and no agent is built, so a thread stays readable after its spec moved, and
nothing (no MCP server) starts.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from runner.cli.options import db_option

if TYPE_CHECKING:
    from runner.errors import RunError
    from runner.run import Home, ThreadInfo
    from runner.threads.guards import Holder


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (fields: docs/threads.md, Export)."
)


@click.group(invoke_without_command=True, short_help="List, show, export, fork or prune threads.")
@db_option
@click.pass_context
def threads(ctx: click.Context, db: Path | str | None = None) -> int | None:
    """List the saved threads (the default), show, export, fork or search them, or delete them.

    Continue a thread with `agentctl run SPEC --thread ID`. `--db` here is the database of
    every subcommand (`agentctl threads --db URL show ID`), unless the subcommand names one.
    """
    ctx.obj = db
    if ctx.invoked_subcommand is None:
        return ctx.invoke(list_threads, db=db)
    return None


@threads.command("list")
@click.option("--agent", metavar="NAME", help="Only the threads of this agent.")
@json_option
@db_option
def list_threads(
    agent: str | None = None, db: Path | str | None = None, as_json: bool = False
) -> int:
    """The saved threads, most recently updated first: id, agent, last update (local time) and
    the first message. --json: a JSON list of thread records."""
    home = _home(db)
    try:
        found = home.threads(agent=agent)
        records = []
        if as_json:
            from runner.threads.export import thread_record

            records = [thread_record(home, t.thread_id, t) for t in found]
    finally:
        home.close()
    if as_json:
        _print_json([{k: v for k, v in r.items() if k != "type"} for r in records])
        return 0
    if not found:
        which = f" of agent {agent!r}" if agent else ""
        click.echo(f"no threads{which} in {home.path}", err=True)
        return 0
    # The owner column only where a server with authentication made threads (empty for the
    # CLI's own).
    owned = any(t.owner for t in found)
    header = (*_HEADER[:2], "OWNER", *_HEADER[2:]) if owned else _HEADER
    rows = [
        (
            t.thread_id,
            t.agent,
            *((t.owner,) if owned else ()),
            local_time(t.updated_at),
            one_line(t.first_message),
        )
        for t in found
    ]
    columns = len(header) - 1
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(columns)]
    lines = []
    for row in [header, *rows]:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        line += "  " + row[columns]
        lines.append(click.style(line, bold=True) if row is header else line)
    click.echo("\n".join(lines))  # one write: thousands of threads list at once
    return 0


_HEADER = ("THREAD", "AGENT", "UPDATED", "FIRST MESSAGE")


@threads.command("show")
@click.argument("thread_id", metavar="ID")
@click.option(
    "--checkpoints",
    "show_checkpoints",
    is_flag=True,
    help="List the checkpoints it keeps (for `threads fork --at`) instead.",
)
@json_option
@db_option
def show_thread(
    thread_id: str, db: Path | str | None, show_checkpoints: bool = False, as_json: bool = False
) -> int:
    """The conversation of thread ID: messages by role, tool calls and their results in short,
    and the approvals it waits for. --checkpoints: the checkpoints it keeps, newest first.
    --json: the thread record with its messages and pending approvals (or checkpoints)."""
    from runner.cli.render import decision_flags, result_summary, short_args
    from runner.errors import RunError
    from runner.threads.export import latest_transcript

    if show_checkpoints:
        return _show_checkpoints(thread_id, db, as_json=as_json)
    home = _home(db)
    try:
        info = home.thread(thread_id)
        transcript = home.transcript(thread_id) if as_json else latest_transcript(home, thread_id)
        if transcript is None and info is None:
            raise RunError(f"no thread {thread_id!r} in {home.path}")
        if as_json:
            _print_json(_show_json(home, thread_id, info, transcript))
            return 0
    finally:
        home.close()
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
        flags = decision_flags(pending)
        click.echo(
            f"answer with: agentctl run {spec} --thread {thread_id} {flags}; or without them "
            "in a terminal"
        )
    return 0


@threads.command("rm")
@click.argument("thread_id", metavar="ID")
@click.option("--yes", "-y", is_flag=True, help="Delete without asking.")
@db_option
def remove_thread(thread_id: str, yes: bool, db: Path | str | None) -> int:
    """Delete thread ID: its checkpoints (conversation, files in state, pending approvals) and
    its entry in the list. Asks first unless --yes.

    A thread that a process is running now (`agentctl run`, a chat) is not deleted: the error
    names that process (pid, host, since when); delete it when the run is over.
    """
    from runner.errors import RunError
    from runner.threads.guards import ThreadBusy

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
def keep_checkpoints(value: str | None, db: Path | str | None) -> int:
    """Show or set how many of its latest checkpoints each thread keeps in this database.

    The default is 10. `all` keeps every checkpoint (full time travel through the Python API),
    and then a thread's storage grows with the square of its length: each checkpoint holds the
    whole conversation. Checkpoints where a thread waited for approval, or that a fork was made
    from, are always kept. Setting a value prunes every thread now and gives the freed space
    back to the file system; `agentctl run --keep-checkpoints` overrides it for one run.
    """
    from runner.threads.retention import DEFAULT_KEEP, describe_keep, parse_keep

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


@threads.command("export")
@click.argument("thread_id", metavar="ID")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "markdown"]),
    default="jsonl",
    show_default=True,
    help="jsonl: one JSON record per line; markdown: a document to read.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write to FILE instead of stdout.",
)
@db_option
def export_thread(thread_id: str, fmt: str, output: Path | None, db: Path | str | None) -> int:
    """Export thread ID: its messages, tool calls with their arguments and results, the
    approvals it asked for with the decisions given, and the files it keeps in its state.

    JSON lines: a `thread` record first, then `message`, `tool_call`, `approval` and `file`
    records (fields: docs/threads.md, Export)."""
    from runner.threads.export import export_jsonl, export_markdown

    home = _home(db)
    try:
        text = export_jsonl(home, thread_id) if fmt == "jsonl" else export_markdown(home, thread_id)
    finally:
        home.close()
    if output is None:
        click.echo(text, nl=False)
        return 0
    from runner.errors import RunError

    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RunError(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(f"exported thread {thread_id} to {output}", err=True)
    return 0


@threads.command("fork")
@click.argument("thread_id", metavar="ID")
@click.option(
    "--at",
    metavar="CHECKPOINT|STEP",
    help="The checkpoint to start from (an id or the start of one; default: the latest). "
    "`threads show ID --checkpoints` lists them. On a workflow's run: a step id, for the "
    "checkpoint after that step last finished.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="FIELD=VALUE",
    help="On a workflow's run: set a field of its state in the new thread (repeatable; VALUE "
    "is read as YAML: 3, true, [a, b], text).",
)
@db_option
def fork_thread(
    thread_id: str, at: str | None, sets: tuple[str, ...], db: Path | str | None
) -> int:
    """Start a new thread from a checkpoint of thread ID, to try another answer from there.

    The new thread has the conversation (and state files, and any approval it waited for) as
    they were at that checkpoint, and the agent, spec, model and vars of thread ID; continue it
    with `agentctl run SPEC --thread NEW`. Thread ID is not changed.

    A workflow's run forks at a step (`--at STEP`): the new thread goes on with the step after
    it, with the state fields given by --set changed."""
    import shlex

    from runner.threads.history import fork_thread as fork

    state = {}
    for item in sets:
        field, eq, value = item.partition("=")
        if not eq or not field:
            raise click.BadParameter(f"expected FIELD=VALUE, found {item!r}", param_hint="--set")
        import yaml

        try:
            state[field] = yaml.safe_load(value)
        except yaml.YAMLError:
            state[field] = value
    home = _home(db)
    try:
        made = fork(home, thread_id, at=at, state=state or None)
    finally:
        home.close()
    click.echo(made.thread_id)
    spec = shlex.quote(made.spec) if made.spec else "SPEC"
    click.echo(
        f"forked thread {thread_id} at checkpoint {made.checkpoint_id}; continue it with: "
        f"agentctl run {spec} --thread {made.thread_id}",
        err=True,
    )
    return 0


@threads.command("search")
@click.argument("text")
@click.option("--agent", metavar="NAME", help="Only the threads of this agent.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Stop after N matching messages.",
)
@json_option
@db_option
def search_threads(
    text: str, agent: str | None, limit: int | None, as_json: bool, db: Path | str | None
) -> int:
    """Find TEXT (case-insensitive) in the messages of every thread: what was said, tool calls
    and their arguments, tool results. One line per matching message, newest thread first;
    exits 1 when nothing matches."""
    from runner.threads.history import search_threads as search

    home = _home(db)
    try:
        matches = list(search(home, text, agent=agent, limit=limit))
    finally:
        home.close()
    if as_json:
        _print_json([m.to_dict() for m in matches])
        return 0 if matches else 1
    if not matches:
        click.echo(f"no messages contain {text!r}", err=True)
        return 1
    lines = []
    for match in matches:
        where = f"{match.thread_id}  {match.agent}  #{match.index} {match.role}:"
        lines.append(f"{click.style(where, bold=True)} {_highlight(match.snippet, text)}")
    click.echo("\n".join(lines))
    return 0


@threads.command("prune")
@click.option(
    "--older-than",
    "older_than",
    required=True,
    metavar="AGE",
    help="Delete threads whose last activity is older than AGE: 30d, 12h, 2w, 90m.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@db_option
def prune_threads(older_than: str, dry_run: bool, db: Path | str | None) -> int:
    """Delete the threads not used for longer than AGE (their checkpoints, state files, pending
    approvals and registry entries). A thread that a process runs now is never deleted."""
    from runner.threads.history import parse_age
    from runner.threads.history import prune_threads as prune

    try:
        age = parse_age(older_than)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--older-than") from None
    home = _home(db)
    try:
        outcome = prune(home, age, dry_run=dry_run)
    finally:
        home.close()
    verb = "would delete" if dry_run else "deleted"
    for info in outcome.deleted:
        click.echo(
            f"{verb} {info.thread_id}  {info.agent}  {local_time(info.updated_at)}  "
            f"{one_line(info.first_message)}"
        )
    for info, holder in outcome.running:
        click.echo(f"kept {info.thread_id}: it is running ({holder})", err=True)
    click.echo(
        f"{verb} {len(outcome.deleted)} thread{'s' if len(outcome.deleted) != 1 else ''} "
        f"not used for {older_than}"
        + (f", kept {len(outcome.running)} running" if outcome.running else ""),
        err=True,
    )
    return 0


def _show_json(
    home: Home, thread_id: str, info: ThreadInfo | None, transcript: Any
) -> dict[str, Any]:
    from runner.threads.export import message_records, thread_record

    record = thread_record(home, thread_id, info)
    record.pop("type")
    record["messages"] = [
        {k: v for k, v in m.items() if k != "type"}
        for m in message_records(transcript.messages if transcript else [])
    ]
    record["pending"] = [
        {
            "id": a.id,
            "name": a.name,
            "args": a.args,
            "description": a.description,
            "allowed_decisions": a.allowed_decisions,
            "agent": a.agent,
        }
        for a in (transcript.pending if transcript else [])
    ]
    return record


def _show_checkpoints(thread_id: str, db: Path | str | None, *, as_json: bool) -> int:
    from runner.threads.history import checkpoints

    home = _home(db)
    try:
        found = checkpoints(home, thread_id)
    finally:
        home.close()
    if as_json:
        _print_json([c.to_dict() for c in found])
        return 0
    rows = [
        (
            c.checkpoint_id,
            "" if c.step is None else str(c.step),
            local_time(c.created_at, seconds=True),
            str(c.messages),
            ("waits for " + ", ".join(c.waiting) + " · " if c.waiting else "")
            + one_line(c.last, 70),
        )
        for c in found
    ]
    header = ("CHECKPOINT", "STEP", "CREATED", "MSGS", "LAST MESSAGE")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    lines = []
    for row in [header, *rows]:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        line += "  " + row[4]
        lines.append(click.style(line, bold=True) if row is header else line)
    click.echo("\n".join(lines))
    click.echo(f"fork from one with: agentctl threads fork {thread_id} --at CHECKPOINT", err=True)
    return 0


def _print_json(value: Any) -> None:
    import json

    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _highlight(snippet: str, text: str) -> str:
    import re

    return re.sub(
        re.escape(text),
        lambda m: click.style(m.group(0), bold=True, fg="yellow"),
        snippet,
        flags=re.IGNORECASE,
    )


def _home(db: Path | str | None) -> Home:
    from runner.threads import open_home

    if db is None:  # the group's --db, if given
        db = click.get_current_context().find_object(str) or None
    return open_home(db)


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


def local_time(iso: str, *, seconds: bool = False) -> str:
    """An ISO 8601 UTC time as local `YYYY-MM-DD HH:MM` (`:SS` with `seconds`).

    The local time is the C library's (`time.localtime`), as `datetime.astimezone()` finds it, at
    a third of its cost: `threads list` writes one for each of thousands of threads."""
    try:
        moment = time.localtime(datetime.fromisoformat(iso).timestamp())
    except (ValueError, OverflowError, OSError):
        return iso
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", moment)


def one_line(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
