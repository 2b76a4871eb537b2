"""The cost of OpenTelemetry tracing per agent step: off (nothing registered), and on with the
real SDK pipeline (BatchSpanProcessor) into an exporter that drops what it gets.

Run: .venv/bin/python bench/bench_otel.py [--repeat 5] [--steps 50]

One step is a model call plus a tool call on agentctl's default harness (the instant model of
`_common`); tracing on makes two spans per step (chat, execute_tool) and one root per run.
"off" runs before tracing was first enabled in the process, and again after `shutdown()` to
show that nothing stays behind. Prints median and minimum ms per step (the minimum is the
steadier figure on a shared machine) and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import InstantModel, build, median, python_version, spec_file, steps_script, timed


def _dropping_exporter() -> Any:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    return Dropping()


def per_step(spec: Path, steps: int) -> float:
    model = InstantModel(script=steps_script(steps))
    agent = build("agentctl", model, spec)
    config = {"recursion_limit": 4 * steps + 20}
    seconds = timed(lambda: agent.invoke({"messages": [("user", "go")]}, config))
    return 1000 * seconds / steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--verbose", action="store_true", help="print every figure")
    args = parser.parse_args()
    from runner.run import telemetry

    with tempfile.TemporaryDirectory() as folder:
        spec = spec_file(Path(folder), "traced")
        per_step(spec, 5)  # warm up imports and caches
        figures: dict[str, list[float]] = {"off": [], "on": [], "off after": []}
        for _ in range(args.repeat):
            figures["off"].append(per_step(spec, args.steps))
            active = telemetry.enable(exporter=_dropping_exporter())
            try:
                figures["on"].append(per_step(spec, args.steps))
            finally:
                active.shutdown()
            figures["off after"].append(per_step(spec, args.steps))
    medians = {name: median(values) for name, values in figures.items()}
    if args.verbose:
        print(figures)
    print(f"Python {python_version()}, {args.steps} steps, {args.repeat} repeats (invoke)")
    fastest = {name: min(values) for name, values in figures.items()}
    for name in figures:
        print(f"  tracing {name:<10} median {medians[name]:6.2f}  min {fastest[name]:6.2f} ms/step")
    print(
        f"  on / off: median {medians['on'] / medians['off']:.2f}, "
        f"min {fastest['on'] / fastest['off']:.2f}"
    )
    print(json.dumps({"bench": "otel", "steps": args.steps, "median": medians, "min": fastest}))


if __name__ == "__main__":
    main()
