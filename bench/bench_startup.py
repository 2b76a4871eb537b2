"""Cold start, whole process: agentctl's commands against the import floor of LangChain.

Run: .venv/bin/python bench/bench_startup.py [--repeat 7]

Each figure is a fresh `python` process, timed from spawn to exit (median of the repeats, run
interleaved so machine noise hits all alike):

- (a) floor: `python -c "from langchain.agents import create_agent"`, what any agent on
  LangChain pays before it can do anything: to the end of the import (reported by the child)
  and to exit (the interpreter's teardown of the loaded modules included);
- (b) `python -c "from deepagents import create_deep_agent"`;
- (c) `agentctl --help`, `agentctl validate agents/`, and `agentctl run agents/notes.yaml` with
  a one-reply replay cassette: the time to its first model call (reported by the replay model
  of the child process) and to its exit;
- (d) the libraries `validate` cannot start without (click, PyYAML, pydantic's models, as the
  command imports them), in a process of their own: the bound under `validate` of one file, the
  rest being agentctl's (its spec classes, the validator built from them, the check).

With `--against DIR`, agentctl's commands also run from the source tree DIR (a checkout of the
commit before a change: `git archive REV | tar -x -C DIR`), interleaved with the rest, as
rows marked "before".

Prints a table and, last, one JSON line.
Targets (issue 10): `--help` and `validate` under 0.3 s; `run` within 10% of the floor: its first
model call against the end of the floor's import, its exit against the floor's exit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
AGENTCTL = str(Path(PYTHON).parent / "agentctl")
MARK = "agentctl-bench-ready "

# The child reports when it is ready (the imports done), before the interpreter's teardown.
REPORT = (
    f"import sys, time; sys.stderr.write('{MARK}%r %r\\n' % (time.time(), time.process_time()))"
)

# The child process of a `run`: agentctl's own entry point, with the replay model reporting
# the wall-clock and CPU time of its first call on stderr. The model is patched when agentctl
# imports it: importing it here, before `main`, would import LangChain outside agentctl's own
# start-up (and so outside what `main` does to it, `runner.cli.startup`).
FIRST_CALL = f"""
import importlib.util, sys, time
from importlib.abc import MetaPathFinder

def report(models):
    for name in ("_stream", "_generate"):
        def call(self, *args, _original=getattr(models.ReplayChatModel, name), **kwargs):
            sys.stderr.write("{MARK}%r %r\\n" % (time.time(), time.process_time()))
            sys.stderr.flush()
            return _original(self, *args, **kwargs)
        setattr(models.ReplayChatModel, name, call)

class PatchOnImport(MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "runner.agent.models":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run_module = spec.loader.exec_module
        def exec_module(module):
            run_module(module)
            report(module)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, PatchOnImport())
try:
    from runner.program import main  # the console script's entry point
except ImportError:  # (a tree from before runner/program.py, under --against)
    from runner.cli import main
sys.argv[0] = "agentctl"
main()
"""

# What the console script does, for the rows of another tree (`--against`): the installed script
# would import this tree's entry point.
LAUNCH = """
import sys
try:
    from runner.program import main
except ImportError:  # (a tree from before runner/program.py)
    from runner.cli import main
sys.argv[0] = "agentctl"
sys.exit(main())
"""


def spawn(argv: list[str], env: dict[str, str]) -> tuple[float, float | None, float, float | None]:
    """Wall seconds from spawn to exit, and to the first model call when the child reports it;
    then the child's CPU seconds (user + system) to exit, and to that first call."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    ended = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    first = first_cpu = None
    for line in done.stderr.splitlines():
        if line.startswith(MARK):
            when, used = line.removeprefix(MARK).split()
            first, first_cpu = float(when) - started, float(used)
            break
    return ended - started, first, cpu, first_cpu


def commands(folder: Path) -> dict[str, list[str]]:
    cassette = folder / "notes.cassette.yaml"
    cassette.write_text(yaml.safe_dump({"agents": {"notes": [{"content": "Done."}]}}))
    run = ["run", "agents/notes.yaml", "hello", "--model", f"replay:{cassette}", "--quiet"]
    return {
        "floor": [PYTHON, "-c", "from langchain.agents import create_agent"],
        "floor_ready": [PYTHON, "-c", f"from langchain.agents import create_agent\n{REPORT}"],
        "deepagents": [PYTHON, "-c", "from deepagents import create_deep_agent"],
        "help": [AGENTCTL, "--help"],
        "validate": [AGENTCTL, "validate", "agents/"],
        "validate_one": [AGENTCTL, "validate", "agents/notes.yaml"],
        "validate_libraries": [PYTHON, "-c", VALIDATE_LIBRARIES],
        "run": [AGENTCTL, *run, "--db", str(folder / "run.db")],
        "run_first_call": [PYTHON, "-c", FIRST_CALL, *run, "--db", str(folder / "first.db")],
    }


VALIDATE_LIBRARIES = (
    "import click, yaml, pydantic.main, pydantic.types, pydantic.functional_validators, "
    "pydantic.json_schema, pydantic.plugin._schema_validator"
)
"""The third-party modules `agentctl validate agents/notes.yaml` imports (`-X importtime`)."""

AGENTCTL_ROWS = ("help", "validate", "validate_one", "run", "run_first_call")
"""The rows that run agentctl's code (the ones `--against` runs from the other tree too)."""


def bench(repeat: int, against: Path | None = None) -> dict[str, float]:
    env = dict(os.environ)
    # An installed agentctl runs from cached bytecode; with this set (as in some sandboxes) every
    # child would compile the modules changed since the last write, and time the compiler.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env["AGENTCTL_HOME"] = tmp
        argvs = commands(Path(tmp))
        envs = dict.fromkeys(argvs, env)
        if against is not None:
            # PYTHONSAFEPATH: `python -c` would put the working directory (this tree) first
            before = {**env, "PYTHONPATH": str(against.resolve()), "PYTHONSAFEPATH": "1"}
            for name in AGENTCTL_ROWS:
                # a database of its own: the two trees may differ in its schema
                argv = argvs[name]
                if argv[0] == AGENTCTL:
                    argv = [PYTHON, "-c", LAUNCH, *argv[1:]]
                argvs[f"{name}_before"] = [
                    a.removesuffix(".db") + "-before.db" if a.endswith(".db") else a for a in argv
                ]
                envs[f"{name}_before"] = before
        for name, argv in argvs.items():  # warm the page cache and the bytecode cache
            spawn(argv, envs[name])
        for index in range(repeat):
            names = list(argvs)
            names = names[index % len(names) :] + names[: index % len(names)]
            for name in names:
                total, first, cpu, first_cpu = spawn(argvs[name], envs[name])
                if name.removesuffix("_before") in ("run_first_call", "floor_ready"):
                    assert first is not None and first_cpu is not None, f"{name}: no report"
                    times.setdefault(name, []).append(first)
                    times.setdefault(f"{name}_cpu", []).append(first_cpu)
                else:
                    times.setdefault(name, []).append(total)
                    times.setdefault(f"{name}_cpu", []).append(cpu)
    return {name: sorted(values)[len(values) // 2] for name, values in times.items()}


def table(results: dict[str, float]) -> str:
    floor, floor_cpu = results["floor_ready"], results["floor_ready_cpu"]
    rows = [f"{'whole process, seconds':<60}{'wall':>8}{'/ floor':>9}{'CPU':>8}{'/ floor':>9}"]
    for key, label in [
        ("floor_ready", "(a) floor: from langchain.agents import create_agent, done"),
        ("floor", "(a) floor, to exit"),
        ("deepagents", "(b) python -c 'from deepagents import create_deep_agent'"),
        ("help", "(c) agentctl --help"),
        ("validate", "(c) agentctl validate agents/"),
        ("validate_one", "(c) agentctl validate agents/notes.yaml"),
        ("validate_libraries", "(d) its libraries: click, PyYAML, pydantic"),
        ("run_first_call", "(c) agentctl run: first model call"),
        ("run", "(c) agentctl run: exit"),
    ]:
        for name, shown in [(key, label), (f"{key}_before", "    before")]:
            if name not in results:
                continue
            cpu = results[f"{name}_cpu"]
            rows.append(
                f"{shown:<60}{results[name]:>8.3f}{results[name] / floor:>9.2f}"
                f"{cpu:>8.3f}{cpu / floor_cpu:>9.2f}"
            )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="also run agentctl's commands from this source tree, interleaved (rows 'before')",
    )
    args = parser.parse_args()
    results = bench(args.repeat, args.against)
    print(f"cold start (warm page cache), median of {args.repeat}")
    print(table(results))
    summary: dict[str, Any] = {"bench": "startup", "repeat": args.repeat}
    summary.update({f"{k}_s": round(v, 4) for k, v in results.items()})
    first_call = results["run_first_call"]
    summary["ratio_run_first_call_floor"] = round(first_call / results["floor_ready"], 3)
    summary["ratio_run_first_call_floor_cpu"] = round(
        results["run_first_call_cpu"] / results["floor_ready_cpu"], 3
    )
    summary["ratio_validate_one_floor"] = round(results["validate_one"] / results["floor_ready"], 3)
    summary["ratio_validate_one_floor_cpu"] = round(
        results["validate_one_cpu"] / results["floor_ready_cpu"], 3
    )
    summary["ratio_validate_libraries_floor_cpu"] = round(
        results["validate_libraries_cpu"] / results["floor_ready_cpu"], 3
    )
    summary["ratio_run_floor"] = round(results["run"] / results["floor"], 3)
    summary["ratio_run_first_call_deepagents"] = round(
        results["run_first_call"] / results["deepagents"], 3
    )
    if args.against is not None:
        for name in ("run_first_call", "validate_one"):
            summary[f"ratio_{name}_floor_cpu_before"] = round(
                results[f"{name}_before_cpu"] / results["floor_ready_cpu"], 3
            )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
