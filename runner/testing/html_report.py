"""The HTML report of live evals (`agentctl test --live --report FILE.html`): one self-contained
file (inline CSS and SVG, no script, no network) a person opens in any browser.

It holds the summary, a bar chart each of pass rate (with the threshold), cost and time per case
(a bar per version, side by side with `--compare`), the table of every case's figures, the
regressions against the baseline, and per compared case the trajectory and answer diffs.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Callable, Sequence
from pathlib import Path

from runner.testing.baseline import Regression
from runner.testing.compare import CaseComparison, describe_changes, format_call
from runner.testing.evals import CaseStats, EvalResult
from runner.testing.live_report import money, seconds

__all__ = ["html_report", "write_html_report"]

COLORS = ("#8c96a8", "#2f6fde", "#e08a1e", "#3a9a5b")
"""One per version, in the order they ran (the other version first with --compare)."""

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1d2330;
margin:24px auto;max-width:1040px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde;
padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.meta{color:#5a6272}.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;
font-size:12px}.passed{background:#dcf3e3;color:#17602f}.failed{background:#fde2e0;color:#9b1c14}
.skipped{background:#eceff4;color:#4b5363}.error{background:#fbe7c6;color:#7a4a00}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{border-bottom:1px solid #e6e8ee;
padding:5px 8px;text-align:left;vertical-align:top}th{background:#f5f6f9;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.charts{display:flex;flex-wrap:wrap;gap:18px}.chart{flex:1 1 480px}
.legend span{margin-right:14px}.sw{display:inline-block;width:11px;height:11px;border-radius:2px;
margin-right:5px;vertical-align:-1px}
pre{background:#f6f7fa;padding:8px 10px;border-radius:4px;overflow-x:auto;margin:4px 0;
font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
.add{color:#17602f}.del{color:#9b1c14}.chg{color:#7a4a00}.same{color:#5a6272}
.reg{color:#9b1c14;font-weight:600}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


Series = tuple[str, str, list[float | None]]
"""A version's bars: its label, its color, a value per case."""


def _bars(
    title: str,
    cases: Sequence[str],
    series: Sequence[Series],
    *,
    show: Callable[[float], str],
    top: float | None = None,
    markers: Sequence[float | None] = (),
) -> str:
    """A horizontal bar chart: per case a bar per series (label, color, values); `markers` draw
    a line per case (the threshold)."""
    width, label_w, bar_h, gap = 500, 170, 13, 10
    group_h = bar_h * len(series) + gap
    height = 26 + group_h * len(cases)
    known = [v for _, _, values in series for v in values if v is not None]
    scale_top = top if top is not None else (max(known) if known and max(known) > 0 else 1.0)
    span = width - label_w - 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">',
        f'<text x="0" y="14" font-size="13" font-weight="600" fill="#1d2330">{_e(title)}</text>',
    ]
    for row, case in enumerate(cases):
        y0 = 24 + row * group_h
        short = case if len(case) <= 26 else case[:25] + "…"
        middle = y0 + bar_h * len(series) / 2 + 4
        parts.append(
            f'<text x="{label_w - 8}" y="{middle:.1f}" font-size="11.5" text-anchor="end" '
            f'fill="#333"><title>{_e(case)}</title>{_e(short)}</text>'
        )
        for index, (name, color, values) in enumerate(series):
            value = values[row]
            y = y0 + index * bar_h
            length = 0.0 if value is None else max(0.0, min(1.0, value / scale_top)) * span
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{length:.1f}" height="{bar_h - 2}" '
                f'fill="{color}"><title>{_e(name)}: {_e("-" if value is None else show(value))}'
                "</title></rect>"
            )
            parts.append(
                f'<text x="{label_w + length + 4:.1f}" y="{y + bar_h - 3}" font-size="10.5" '
                f'fill="#444">{_e("-" if value is None else show(value))}</text>'
            )
        marker = markers[row] if row < len(markers) else None
        if marker is not None:
            x = label_w + max(0.0, min(1.0, marker / scale_top)) * span
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0 - 2}" y2="{y0 + bar_h * len(series)}" '
                'stroke="#9b1c14" stroke-width="1.5" stroke-dasharray="3,2"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _charts(result: EvalResult) -> str:
    labels = result.versions
    per_version = {label: result.stats.get(label, []) for label in labels}
    one_file = len({s.file for s in result.current}) == 1
    cases = [s.name if one_file else s.id for s in result.current]
    if not cases:
        return ""
    colors = COLORS if len(labels) > 1 else COLORS[1:]

    def series(figure: Callable[[CaseStats], float | None]) -> list[Series]:
        return [
            (label, colors[index % len(colors)], [figure(s) for s in per_version[label]])
            for index, label in enumerate(labels)
        ]

    legend = "".join(
        f'<span><i class="sw" style="background:{color}"></i>{_e(label)}</span>'
        for label, color, _ in series(lambda s: s.rate)
    )
    charts = [
        _bars(
            "Pass rate (dashed: the threshold)",
            cases,
            series(lambda s: s.rate),
            show=lambda v: f"{v:.0%}",
            top=1.0,
            markers=[s.threshold for s in result.current],
        ),
        _bars("Cost per run (USD)", cases, series(lambda s: s.cost), show=lambda v: money(v)),
        _bars("Time per run, median", cases, series(lambda s: s.time_median), show=seconds),
        _bars("Tokens per run", cases, series(lambda s: s.tokens), show=lambda v: f"{v:,.0f}"),
    ]
    boxes = "".join(f'<div class="chart">{chart}</div>' for chart in charts)
    return f'<div class="legend">{legend}</div><div class="charts">{boxes}</div>'


def _table(result: EvalResult) -> str:
    rows = []
    for stats in result.all_stats():
        failed = stats.failed
        runs = len(stats.runs)
        failures = "<br>".join(
            f"{_e(name)} {count}/{runs}" for name, count in sorted(failed.items())
        )
        judge = money(stats.judge_cost) if stats.judge_cost is not None else "-"
        rows.append(
            "<tr>"
            f"<td>{_e(stats.id)}</td><td>{_e(stats.version)}</td>"
            f'<td><span class="pill {stats.status}">{_e(stats.status)}</span></td>'
            f'<td class="n">{stats.passes}/{runs} ({stats.rate:.0%})</td>'
            f'<td class="n">{stats.threshold:.0%}</td><td>{failures or "-"}</td>'
            f'<td class="n">{stats.tokens:,.0f}</td><td class="n">{_e(money(stats.cost))}</td>'
            f'<td class="n">{_e(judge)}</td>'
            f'<td class="n">{seconds(stats.time_median)}</td>'
            f'<td class="n">{seconds(stats.time_p90)}</td>'
            "</tr>"
        )
    head = (
        "<tr><th>case</th><th>version</th><th>status</th><th>passed</th><th>needs</th>"
        "<th>failed expectations</th><th>tokens/run</th><th>cost/run</th><th>judge cost</th>"
        "<th>time median</th><th>time p90</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def _regressions(regressions: Sequence[Regression]) -> str:
    if not regressions:
        return "<p>No regressions against the baseline.</p>"
    rows = "".join(
        f'<tr><td>{_e(r.id)}</td><td class="reg">{_e(r.kind)}</td><td>{_e(r.message)}</td></tr>'
        for r in regressions
    )
    return f"<table><tr><th>case</th><th>regression</th><th>what</th></tr>{rows}</table>"


_OP = {
    "same": ("same", " "),
    "added": ("add", "+"),
    "removed": ("del", "-"),
    "changed": ("chg", "~"),
}


def _comparison(comparison: CaseComparison) -> str:
    old, new = comparison.before, comparison.after
    deltas = comparison.deltas()
    cells = []
    for name, show in (
        ("pass_rate", lambda v: f"{v:.0%}"),
        ("tokens", lambda v: f"{v:,.0f}"),
        ("cost", money),
        ("time_median", seconds),
        ("time_p90", seconds),
    ):
        figure = deltas[name]
        before, after, change = figure["before"], figure["after"], figure["change"]
        shown_change = "-" if change is None else f"{change:+.0%}"
        if name == "pass_rate" and change is not None:
            shown_change = f"{change * 100:+.0f} points"
        cells.append(
            f"<tr><td>{_e(name.replace('_', ' '))}</td>"
            f'<td class="n">{_e("-" if before is None else show(before))}</td>'
            f'<td class="n">{_e("-" if after is None else show(after))}</td>'
            f'<td class="n">{_e(shown_change)}</td></tr>'
        )
    figures = (
        f"<table><tr><th></th><th>{_e(old.version)}</th><th>{_e(new.version)}</th>"
        f"<th>change</th></tr>{''.join(cells)}</table>"
    )
    lines = []
    for step in comparison.steps:
        css, mark = _OP[step.op]
        text = f"{mark} {format_call(step.tool, step.args, 160)}"
        if step.before is not None:
            text += f"   ({describe_changes(step.before, step.args)})"
        lines.append(f'<span class="{css}">{_e(text)}</span>')
    calls = "\n".join(lines) or "(no tool calls in either version)"
    runs_old, runs_new = comparison.trajectory_runs
    answer_lines = []
    for line in comparison.answer_diff:
        css = "add" if line.startswith("+") else "del" if line.startswith("-") else "same"
        answer_lines.append(f'<span class="{css}">{_e(line)}</span>')
    answer = "\n".join(answer_lines) or "(the same answer)"
    return (
        f"<h3>{_e(comparison.id)}</h3>{figures}"
        f'<p class="meta">Tool calls, the most common sequence of each version '
        f"({_e(old.version)}: {runs_old}/{len(old.runs)} runs, {_e(new.version)}: "
        f"{runs_new}/{len(new.runs)} runs):</p><pre>{calls}</pre>"
        f'<p class="meta">Final answer:</p><pre>{answer}</pre>'
    )


def html_report(
    result: EvalResult,
    *,
    regressions: Sequence[Regression] = (),
    comparisons: Sequence[CaseComparison] = (),
    exit_code: int = 0,
    baseline: str | None = None,
    title: str = "agentctl eval report",
    created: datetime.datetime | None = None,
) -> str:
    created = created or datetime.datetime.now(datetime.UTC)
    current = result.current
    counts = {s: sum(1 for c in current if c.status == s) for s in ("passed", "failed", "error")}
    agent_cost = sum(s.cost * len(s.runs) for s in result.all_stats() if s.cost is not None)
    judge_cost = sum(s.judge_cost for s in result.all_stats() if s.judge_cost is not None)
    meta = (
        f"{created:%Y-%m-%d %H:%M} UTC · model {_e(result.model or '-')} · "
        f"{result.repeat} run{'s' if result.repeat != 1 else ''} per case · versions "
        f"{_e(', '.join(result.versions))} · exit code {exit_code}"
    )
    summary = (
        f'<p><span class="pill passed">{counts["passed"]} passed</span> '
        f'<span class="pill failed">{counts["failed"]} below their pass rate</span> '
        f'<span class="pill error">{counts["error"]} errors</span> '
        f'<span class="pill failed">{len(regressions)} regressions</span> · '
        f"agent cost {_e(money(agent_cost))}"
        + (f" · judge cost {_e(money(judge_cost))}" if judge_cost else "")
        + "</p>"
    )
    problems = "".join(f"<li>{_e(p)}</li>" for p in result.problems)
    sections = [
        f"<h1>{_e(title)}</h1><p class='meta'>{meta}</p>{summary}",
        f"<h2>Bad test files</h2><ul>{problems}</ul>" if problems else "",
        "<h2>Per case</h2>",
        _charts(result),
        _table(result),
    ]
    if baseline is not None:
        sections.append(
            f"<h2>Regressions against the baseline {_e(baseline)}</h2>" + _regressions(regressions)
        )
    if comparisons:
        sections.append("<h2>What changed between the versions</h2>")
        sections.extend(_comparison(c) for c in comparisons)
    body = "\n".join(s for s in sections if s)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def write_html_report(
    path: str | Path,
    result: EvalResult,
    *,
    regressions: Sequence[Regression] = (),
    comparisons: Sequence[CaseComparison] = (),
    exit_code: int = 0,
    baseline: str | None = None,
) -> None:
    text = html_report(
        result,
        regressions=regressions,
        comparisons=comparisons,
        exit_code=exit_code,
        baseline=baseline,
    )
    Path(path).write_text(text, encoding="utf-8")
