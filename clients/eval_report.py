"""One evaluation's report (or two side by side) as one self-contained HTML file.

    html = render_report([view])                  # a `GET /api/evals/{id}` view
    html = render_report([view_a, view_b])        # two, with their comparison (`compare`)

The file holds inline CSS and inline SVG charts drawn here, and no script: a meta
Content-Security-Policy lets it load nothing and run nothing, wherever it is opened. What it shows:
each evaluation's agent, dataset, status and summary; a grouped bar chart of the pass rate per
evaluator per evaluation (each bar's `data-eval`, `data-evaluator`, `data-pass-rate`); the
distribution of each evaluation's cases' cost and latency (a dot per case, `data-field`,
`data-case`, `data-value`); each evaluation's cases (verdict, output, scores, reasons, cost,
duration); for two, the cases that differ. Every value is HTML-escaped (outputs are model text).
The same views give the same bytes: nothing of the moment (no clock) goes in, so
`GET /api/evals/{id}/report.html` and `client.py eval report` write the same file.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from clients.evals import compare

__all__ = ["REPORT_CSP", "render_report"]

REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""What the file may load and run: its own inline styles, nothing else (no script, no request)."""

PALETTE = ("#3b6fd8", "#e07b39", "#3a9a5b", "#a3489c", "#c9a227", "#5a6b7b")
"""A color per evaluation, in the order given (the page uses the same)."""

BAR_W, BAR_GAP, GROUP_GAP, CHART_H, AXIS_W, LABEL_H = 22, 4, 26, 180, 40, 46
STRIP_W, STRIP_ROW_H, STRIP_LEFT = 520, 34, 150

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1d1d1f; margin: 1.5em auto; max-width: 70em;
  padding: 0 1em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f3f3f5; }
td.output, td.scores { white-space: pre-wrap; word-break: break-word; max-width: 30em; }
.pass { color: #1f7a3a; font-weight: 600; } .fail { color: #a3241b; font-weight: 600; }
.legend span { display: inline-block; margin-right: 1.2em; }
.swatch { display: inline-block; width: .9em; height: .9em; margin-right: .3em; vertical-align: -.1em; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
""".strip()


def _e(value: object) -> str:
    """`value` as escaped text: strings as they are, None as `-`, anything else as JSON."""
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return html.escape(text, quote=True)


def _number(value: object) -> str:
    """A number as a data attribute holds it (JSON's spelling: the API's value exactly)."""
    return _e(json.dumps(value))


def _percent(rate: object) -> str:
    return "-" if not isinstance(rate, int | float) else f"{rate * 100:.1f}%"


def _usd(value: object) -> str:
    return "-" if not isinstance(value, int | float) else f"${value:.6f}"


def _seconds(value: object) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:.3f} s"


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _label(view: Mapping[str, Any]) -> str:
    """`<eval id> (<agent>)`, the name an evaluation has in the charts."""
    return f"{view['eval_id']} ({view['agent']})"


def _legend(views: Sequence[Mapping[str, Any]]) -> str:
    items = "".join(
        f'<span><i class="swatch" style="background:{_color(i)}"></i>{_e(_label(v))}</span>'
        for i, v in enumerate(views)
    )
    return f'<p class="legend">{items}</p>'


def _summary_table(views: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(
        "<tr>"
        f"<td>{_e(v['eval_id'])}</td><td>{_e(v['agent'])}</td><td>{_e(v['dataset'])}</td>"
        f"<td>{_e(v['status'])}</td><td>{_e(v['summary']['cases'])}</td>"
        f"<td>{_e(v['summary']['passed'])}</td><td>{_e(v['summary']['failed'])}</td>"
        f"<td>{_e(v['summary']['pending'])}</td>"
        f'<td data-pass-rate="{_number(v["summary"]["pass_rate"])}">'
        f"{_percent(v['summary']['pass_rate'])}</td>"
        f"<td>{_usd(v['summary']['cost_usd'])}</td><td>{_seconds(v['summary']['latency_s_p50'])}</td>"
        f"<td>{_seconds(v['summary']['latency_s_max'])}</td>"
        + (f"<td>{_e(v['error'])}</td>" if "error" in v else "<td></td>")
        + "</tr>"
        for v in views
    )
    head = (
        "<tr><th>evaluation</th><th>agent</th><th>dataset</th><th>status</th><th>cases</th><th>passed</th>"
        "<th>failed</th><th>pending</th><th>pass rate</th><th>cost</th><th>latency p50</th>"
        "<th>latency max</th><th>error</th></tr>"
    )
    return f'<table class="summary">{head}{rows}</table>'


def _pass_rate_chart(views: Sequence[Mapping[str, Any]]) -> str:
    """A grouped bar chart: a group per evaluator, a bar per evaluation (its pass rate, 0 to 100%)."""
    evaluators = sorted({name for v in views for name in v["summary"]["by_evaluator"]})
    if not evaluators:
        return "<p>No evaluator has scored a case yet.</p>"
    group_w = len(views) * (BAR_W + BAR_GAP) - BAR_GAP
    width = AXIS_W + len(evaluators) * (group_w + GROUP_GAP) + GROUP_GAP
    height = CHART_H + LABEL_H
    parts = [
        f'<svg class="pass-rates" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="pass rate per evaluator per evaluation">'
    ]
    top = 10
    for tick in (0, 50, 100):
        y = CHART_H - (CHART_H - top) * tick / 100
        parts.append(
            f'<line x1="{AXIS_W}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{AXIS_W - 4}" y="{y + 4:.1f}" text-anchor="end">{tick}%</text>'
        )
    for g, name in enumerate(evaluators):
        x0 = AXIS_W + GROUP_GAP + g * (group_w + GROUP_GAP)
        for i, view in enumerate(views):
            row = view["summary"]["by_evaluator"].get(name)
            if row is None:
                continue
            rate = row["pass_rate"]
            bar_h = (CHART_H - top) * rate
            x = x0 + i * (BAR_W + BAR_GAP)
            scored = row["passed"] + row["failed"]
            title = f"{_label(view)} · {name}: {_percent(rate)} ({row['passed']} of {scored})"
            parts.append(
                f'<rect class="bar" x="{x}" y="{CHART_H - bar_h:.1f}" width="{BAR_W}" '
                f'height="{max(bar_h, 1):.1f}" '
                f'fill="{_color(i)}" data-eval="{_e(view["eval_id"])}" data-evaluator="{_e(name)}" '
                f'data-pass-rate="{_number(rate)}"><title>{_e(title)}</title></rect>'
            )
        parts.append(
            f'<text x="{x0 + group_w / 2:.1f}" y="{CHART_H + 16}" text-anchor="middle">{_e(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _strip_chart(views: Sequence[Mapping[str, Any]], field: str, unit: Callable[[object], str]) -> str:
    """A dot per case on a line per evaluation, from 0 to the largest value of all (`field` of a case)."""
    values = [c[field] for v in views for c in v["cases"]]
    if not values:
        return "<p>No case has ended yet.</p>"
    top = max(values) or 1
    height = len(views) * STRIP_ROW_H + 24
    width = STRIP_LEFT + STRIP_W + 20
    parts = [
        f'<svg class="strip" data-field="{_e(field)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{_e(field)} per case">'
    ]
    for i, view in enumerate(views):
        y = i * STRIP_ROW_H + STRIP_ROW_H / 2
        parts.append(
            f'<text x="{STRIP_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{_e(view["eval_id"])}</text>'
            f'<line x1="{STRIP_LEFT}" x2="{STRIP_LEFT + STRIP_W}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        for case in view["cases"]:
            x = STRIP_LEFT + STRIP_W * case[field] / top
            parts.append(
                f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{_color(i)}" fill-opacity="0.7" '
                f'data-field="{_e(field)}" data-eval="{_e(view["eval_id"])}" data-case="{_e(case["name"])}" '
                f'data-value="{_number(case[field])}">'
                f"<title>{_e(case['name'])}: {unit(case[field])}</title></circle>"
            )
    axis_y = len(views) * STRIP_ROW_H + 16
    parts.append(
        f'<text x="{STRIP_LEFT}" y="{axis_y}">0</text>'
        f'<text x="{STRIP_LEFT + STRIP_W}" y="{axis_y}" text-anchor="end">{unit(top)}</text></svg>'
    )
    return "".join(parts)


def _scores(case: Mapping[str, Any]) -> str:
    lines = [f"{name}: {_e(value)}" for name, value in case["scores"].items()]
    lines += [f"{name} (why): {_e(reason)}" for name, reason in case["reasons"].items()]
    return "\n".join(lines)


def _verdict(passed: object) -> str:
    return '<span class="pass">passed</span>' if passed else '<span class="fail">failed</span>'


def _cases_table(view: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr data-case="{_e(c["name"])}"><td>{_e(c["name"])}</td><td>{_verdict(c["passed"])}</td>'
        f'<td>{_e(c["run_status"])}</td><td class="output">{_e(c["output"])}</td>'
        f'<td class="scores">{_scores(c)}</td><td>{_usd(c["cost_usd"])}</td>'
        f"<td>{_seconds(c['duration_s'])}</td></tr>"
        for c in view["cases"]
    )
    head = (
        "<tr><th>case</th><th>verdict</th><th>run</th><th>output</th><th>scores</th><th>cost</th>"
        "<th>duration</th></tr>"
    )
    table = f'<table class="cases" data-eval="{_e(view["eval_id"])}">{head}{rows}</table>'
    return f"<h3>{_e(_label(view))}</h3>{table}"


def _comparison(first: Mapping[str, Any], second: Mapping[str, Any]) -> str:
    diff = compare(dict(first), dict(second))
    a, b = diff["a"]["eval_id"], diff["b"]["eval_id"]
    if not diff["differences"]:
        return f"<p>No case differs between {_e(a)} and {_e(b)}.</p>"
    rows: list[str] = []
    for d in diff["differences"]:
        if "only_in" in d:
            rows.append(
                f'<tr data-case="{_e(d["name"])}"><td>{_e(d["name"])}</td>'
                f'<td colspan="3">only in {_e(d["only_in"])}</td></tr>'
            )
            continue
        scores = "\n".join(f"{name}: {_e(s['a'])} → {_e(s['b'])}" for name, s in d["scores"].items())
        rows.append(
            f'<tr data-case="{_e(d["name"])}"><td>{_e(d["name"])}</td>'
            f"<td>{_verdict(d['passed']['a'])} → {_verdict(d['passed']['b'])}</td>"
            f'<td class="output">{_e(d["output"]["a"])}\n→\n{_e(d["output"]["b"])}</td>'
            f'<td class="scores">{scores}</td></tr>'
        )
    head = (
        f"<tr><th>case</th><th>verdict ({_e(a)} → {_e(b)})</th><th>output</th>"
        "<th>scores that differ</th></tr>"
    )
    return f'<table class="differences">{head}{"".join(rows)}</table>'


def render_report(views: Sequence[Mapping[str, Any]]) -> str:
    """The HTML document of one or two evaluations' views (`Evals.show`'s), the first as `a`.

    Raises:
        ValueError: no view, or more than two.
    """
    if not 1 <= len(views) <= 2:
        raise ValueError("a report is of one evaluation or two")
    title = "Evaluation report: " + " vs ".join(str(v["eval_id"]) for v in views)
    body = [
        f"<h1>{_e(title)}</h1>",
        _summary_table(views),
        "<h2>Pass rate per evaluator</h2>",
        _legend(views),
        _pass_rate_chart(views),
        "<h2>Cost per case</h2>",
        _strip_chart(views, "cost_usd", _usd),
        "<h2>Latency per case</h2>",
        _strip_chart(views, "duration_s", _seconds),
    ]
    if len(views) == 2:
        body += [f"<h2>What differs ({_e(views[0]['eval_id'])} → {_e(views[1]['eval_id'])})</h2>"]
        body += [_comparison(views[0], views[1])]
    body += ["<h2>Cases</h2>", *(_cases_table(v) for v in views)]
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{REPORT_CSP}">\n'
        f"<title>{_e(title)}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
