"""The report as one self-contained HTML page: charts as inline SVG, no script.

The page needs nothing but itself (no script, no stylesheet or font to fetch),
so it can be kept as a CI artifact and opened anywhere, years later. Two
charts come from the report's ``timeline``:

* *Requests over time*: a stacked histogram of requests per time slice,
  coloured by outcome (2xx, 4xx, 401, 429, 5xx, broken connection);
* *Rate-limit headroom per key*: for each key (or anonymous client), the
  ``X-RateLimit-Remaining`` it was told after each request, as a step line
  under its limit, with every 429 marked.

Time is scenario time in seconds after the first request (wall time when the
report covers several runs, whose scenario times need not follow one another:
the timeline's ``clock``). When the clock never moved (a manual clock nobody
advanced), the x axis is the request number.
Hovering over a bar or a marker shows its figures (SVG ``<title>``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from html import escape
from typing import Any

WIDTH = 960
PLOT_LEFT = 56
PLOT_RIGHT = 16
BINS = 60
MAX_KEYS = 12
DOTS = 120  # below this many requests per key, each is also drawn as a dot

CLASSES: tuple[tuple[str, str, str], ...] = (
    ("ok", "2xx/3xx", "#2e7d32"),
    ("client", "4xx", "#ef8f00"),
    ("auth", "401", "#7b1fa2"),
    ("limited", "429", "#c62828"),
    ("server", "5xx", "#455a64"),
    ("broken", "no response", "#111111"),
)
_COLOUR = {name: colour for name, _, colour in CLASSES}
_SEVERITY_COLOUR = {"error": "#c62828", "warning": "#ef8f00", "info": "#1565c0"}

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;
margin:0;background:#f6f7f9}
main{max-width:1000px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.sub{color:#555;margin:0 0 12px}
.badges span{display:inline-block;border-radius:12px;padding:2px 10px;margin-right:6px;
color:#fff;font-weight:600}
.card{background:#fff;border:1px solid #e1e4e8;border-radius:8px;padding:12px 16px;margin:8px 0}
svg{display:block;background:#fff}
svg text{font:11px system-ui,sans-serif;fill:#444}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
.finding{border-left:5px solid #999}
.finding h3{font-size:15px;margin:0 0 4px}
.finding .sev{font-size:12px;font-weight:700;text-transform:uppercase;margin-right:6px}
.finding p{margin:4px 0}
.finding .rule,.finding .evidence{color:#555;font-size:12px}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{border:1px solid #e1e4e8;padding:4px 8px;text-align:center;font-size:13px}
th:first-child,td:first-child{text-align:left}
td.met{background:#e8f5e9}td.never{background:#ffebee;color:#b71c1c;font-weight:600}
td.maybe{background:#fafafa;color:#888}td.unexpected{background:#fff8e1}
td.na{color:#ccc}
.note{color:#666;font-size:12px}
"""


def _status_class(status: int) -> str:
    if status == 0:
        return "broken"
    if status == 429:
        return "limited"
    if status == 401:
        return "auth"
    if status >= 500:
        return "server"
    if status >= 400:
        return "client"
    return "ok"


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / max(1, ticks)
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value % 1 else f"{int(value)}"


class Axis:
    """Maps the report's x values (seconds, or request numbers) to pixels."""

    def __init__(self, xs: list[float], by_time: bool) -> None:
        self.by_time = by_time
        self.low = min(xs, default=0.0)
        self.high = max(xs, default=1.0)
        if self.high - self.low <= 0:
            self.high = self.low + 1
        self.width = WIDTH - PLOT_LEFT - PLOT_RIGHT

    def x(self, value: float) -> float:
        return PLOT_LEFT + (value - self.low) / (self.high - self.low) * self.width

    def label(self, value: float) -> str:
        return f"{_fmt(value)} s" if self.by_time else f"#{_fmt(value)}"

    def ticks(self, top: float, bottom: float) -> list[str]:
        step = _nice_step(self.high - self.low)
        first = math.ceil(self.low / step) * step
        parts = []
        value = first
        while value <= self.high + 1e-9:
            x = self.x(value)
            parts.append(
                f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" '
                f'stroke="#eee"/>'
                f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">'
                f"{escape(self.label(value))}</text>"
            )
            value += step
        return parts


def _x_values(rows: list[list[Any]]) -> tuple[list[float], bool]:
    offsets = [float(r[1]) for r in rows]
    if offsets and max(offsets) - min(offsets) > 0:
        return offsets, True
    return [float(i + 1) for i in range(len(rows))], False


def timeline_svg(rows: list[list[Any]], clock: str = "scenario") -> str:
    """The stacked histogram of requests per time slice, by outcome."""
    height, top, bottom = 240, 12, 210
    xs, by_time = _x_values(rows)
    axis = Axis(xs, by_time)
    bins = max(1, min(BINS, len(rows)))
    width = (axis.high - axis.low) / bins
    counts: list[dict[str, int]] = [defaultdict(int) for _ in range(bins)]
    for x, row in zip(xs, rows, strict=True):
        index = min(bins - 1, int((x - axis.low) / width)) if width else 0
        counts[index][_status_class(int(row[3]))] += 1
    tallest = max((sum(c.values()) for c in counts), default=1) or 1
    parts = [
        f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="Requests over time, by outcome">',
        "<title>Requests over time, by outcome</title>",
        *axis.ticks(top, bottom),
        f'<line x1="{PLOT_LEFT}" x2="{WIDTH - PLOT_RIGHT}" y1="{bottom}" y2="{bottom}" '
        f'stroke="#999"/>',
    ]
    for step in range(0, 5):
        value = tallest * step / 4
        y = bottom - (bottom - top) * step / 4
        label = _fmt(round(value, 1))
        parts.append(f'<text x="{PLOT_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    bar = axis.width / bins
    for index, count in enumerate(counts):
        y = float(bottom)
        start = axis.low + index * width
        for name, label, colour in CLASSES:
            n = count.get(name, 0)
            if not n:
                continue
            h = (bottom - top) * n / tallest
            y -= h
            x = PLOT_LEFT + index * bar
            span = (
                f"{axis.label(start)} to {axis.label(start + width)}"
                if by_time
                else f"requests {_fmt(start)} to {_fmt(start + width)}"
            )
            parts.append(
                f'<rect class="bar {name}" x="{x + 0.5:.1f}" y="{y:.1f}" '
                f'width="{max(1.0, bar - 1):.1f}" height="{h:.1f}" fill="{colour}">'
                f"<title>{escape(span)}: {n} x {escape(label)}</title></rect>"
            )
    axis_label = f"{clock} time after the first request" if by_time else "request number"
    parts.append(
        f'<text x="{WIDTH - PLOT_RIGHT}" y="{height - 4}" text-anchor="end">'
        f"{escape(axis_label)}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def headroom_svgs(rows: list[list[Any]]) -> list[str]:
    """One small chart per key: X-RateLimit-Remaining after each request, 429s marked."""
    xs, by_time = _x_values(rows)
    axis = Axis(xs, by_time)
    per_subject: dict[str, list[tuple[float, list[Any]]]] = defaultdict(list)
    for x, row in zip(xs, rows, strict=True):
        per_subject[str(row[2])].append((x, row))
    ranked = sorted(per_subject.items(), key=lambda item: (-len(item[1]), item[0]))
    charts = []
    for subject, points in ranked[:MAX_KEYS]:
        known = [(x, r) for x, r in points if r[4] is not None]
        if not known:
            continue
        limit = max((r[5] or 0) for _, r in known) or max(r[4] for _, r in known) or 1
        charts.append(_headroom_chart(subject, known, limit, axis))
    return charts


def _headroom_chart(
    subject: str, points: list[tuple[float, list[Any]]], limit: int, axis: Axis
) -> str:
    height, top, bottom = 130, 22, 106

    def y(value: float) -> float:
        return bottom - (bottom - top) * min(value, limit) / limit

    # One path step per change of pixel, so 10,000 requests stay a small path.
    path: list[str] = []
    last: tuple[float, float] | None = None
    for x, row in points:
        px, py = round(axis.x(x), 1), round(y(row[4]), 1)
        if last is None:
            path.append(f"M{px},{py}")
        elif (px, py) != last:
            path.append(f"H{px}" if py == last[1] else f"H{px}V{py}")
        last = (px, py)
    limited = [(x, r) for x, r in points if r[3] == 429]
    title = f"{subject}: {len(points)} request(s), limit {limit}, {len(limited)} answered 429"
    parts = [
        f'<svg class="headroom" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title, quote=True)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{PLOT_LEFT}" y="14" style="font-weight:600">{escape(subject)}</text>',
        f'<text x="{WIDTH - PLOT_RIGHT}" y="14" text-anchor="end">'
        f"X-RateLimit-Remaining (limit {limit}); {len(limited)} x 429</text>",
        *axis.ticks(top, bottom),
        f'<line class="limit" x1="{PLOT_LEFT}" x2="{WIDTH - PLOT_RIGHT}" y1="{y(limit):.1f}" '
        f'y2="{y(limit):.1f}" stroke="#999" stroke-dasharray="4 3"/>',
        f'<text x="{PLOT_LEFT - 6}" y="{y(limit) + 4:.1f}" text-anchor="end">{limit}</text>',
        f'<text x="{PLOT_LEFT - 6}" y="{bottom + 4}" text-anchor="end">0</text>',
        f'<line x1="{PLOT_LEFT}" x2="{WIDTH - PLOT_RIGHT}" y1="{bottom}" y2="{bottom}" '
        f'stroke="#999"/>',
        f'<path class="headroom-line" d="{"".join(path)}" fill="none" stroke="#1565c0" '
        f'stroke-width="1.5"/>',
    ]
    if len(points) <= DOTS:
        # Few requests: a dot per request, so a lone request still shows.
        for x, row in points:
            if row[3] != 429:
                parts.append(
                    f'<circle class="point" cx="{axis.x(x):.1f}" cy="{y(row[4]):.1f}" r="2" '
                    f'fill="#1565c0"><title>#{row[0]} {escape(axis.label(x))}: {row[3]}, '
                    f"{row[4]} left</title></circle>"
                )
    # 429s that fall on the same pixel share one marker (its title counts them).
    markers: dict[float, list[tuple[float, list[Any]]]] = {}
    for x, row in limited:
        markers.setdefault(round(axis.x(x)), []).append((x, row))
    for px, group in markers.items():
        x, row = group[0]
        label = f"#{row[0]} {axis.label(x)}: 429 {row[6] or ''}".strip()
        if len(group) > 1:
            label = f"#{row[0]} to #{group[-1][1][0]}: {len(group)} x 429"
        parts.append(
            f'<circle class="limited" cx="{px:.1f}" cy="{bottom:.1f}" r="3.5" '
            f'fill="{_COLOUR["limited"]}"><title>{escape(label)}</title></circle>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    items = "".join(
        f'<span><i style="background:{colour}"></i>{escape(label)}</span>'
        for _, label, colour in CLASSES
    )
    return f'<div class="legend">{items}</div>'


def _findings(report: dict[str, Any]) -> str:
    if not report["findings"]:
        return '<p class="card" id="no-findings">No etiquette findings: every rule passed.</p>'
    parts = []
    for finding in report["findings"]:
        colour = _SEVERITY_COLOUR.get(finding["severity"], "#999")
        seqs = " ".join(f"#{s}" for s in finding["seqs"][:40])
        more = finding["count"] - min(40, len(finding["seqs"]))
        evidence = seqs + (f" ... and {more} more" if more > 0 else "")
        ids = ", ".join(finding["request_ids"][:10])
        parts.append(
            f'<article class="card finding sev-{escape(finding["severity"])}" '
            f'id="{escape(finding["id"])}-{len(parts)}" style="border-left-color:{colour}">'
            f'<h3><span class="sev" style="color:{colour}">{escape(finding["severity"])}</span>'
            f"{escape(finding['id'])} {escape(finding['title'])} "
            f"<small>({escape(finding['subject'])})</small></h3>"
            f"<p>{escape(finding['message'])}</p>"
            f'<p class="rule">Rule {escape(finding["rule"])}: {escape(finding["threshold"])}</p>'
            f'<p class="evidence">Evidence ({finding["count"]} request(s)): {escape(evidence)}'
            f"{'<br>Request ids: ' + escape(ids) if ids else ''}</p>"
            "</article>"
        )
    return "".join(parts)


def _coverage(report: dict[str, Any]) -> str:
    operations = report["coverage"]["operations"]
    statuses = sorted(
        {r["status"] for op in operations for r in op["responses"]}
        | {r["status"] for op in operations for r in op["unexpected"]}
    )
    head = "".join(f"<th>{s}</th>" for s in statuses)
    rows = []
    for op in operations:
        cells = {r["status"]: r for r in op["responses"]}
        odd = {r["status"]: r for r in op["unexpected"]}
        tds = []
        for status in statuses:
            if status in cells:
                r = cells[status]
                codes = ", ".join(f"{c} x{n}" for c, n in r["codes"].items())
                hint = escape(codes or ("documented" if r["documented"] else "mockstore can send"))
                if r["met"]:
                    tds.append(f'<td class="met" title="{hint}">{r["met"]}</td>')
                elif r["documented"]:
                    tds.append(f'<td class="never" title="{hint}">never</td>')
                else:
                    tds.append(f'<td class="maybe" title="{hint}">never*</td>')
            elif status in odd:
                tds.append(f'<td class="unexpected">{odd[status]["met"]}!</td>')
            else:
                tds.append('<td class="na">-</td>')
        name = escape(f"{op['operation']} ({op['method']} {op['path']})")
        rows.append(f"<tr><td>{name}</td>{''.join(tds)}</tr>")
    documented = report["coverage"]["documented"]
    return (
        f"<p>{documented['met']} of {documented['total']} documented responses met.</p>"
        f'<table id="coverage"><thead><tr><th>operation</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="note">never: documented in the OpenAPI document, never met; never*: not '
        "documented but mockstore can send it; !: not expected for this operation "
        "(a scripted answer or a connection fault).</p>"
    )


def _runs_judged(summary: dict[str, Any]) -> str:
    runs = summary.get("runs", {})
    if runs.get("selected", "all") != "all":
        return f"run {runs['selected']} only"
    count = runs.get("count", 0)
    return f"each of {count} runs on its own" if count != 1 else "one run"


def render_html(report: dict[str, Any]) -> str:
    """The whole page. ``report`` must include the ``timeline`` (``?include=timeline``)."""
    summary = report["summary"]
    timeline = report.get("timeline", {})
    rows = timeline.get("rows", [])
    chart = timeline_svg(rows, timeline.get("clock", "scenario")) if rows else "<p>No requests.</p>"
    counts = summary["findings"]
    badges = "".join(
        f'<span style="background:{_SEVERITY_COLOUR[s]}">{counts[s]} {s}</span>'
        for s in ("error", "warning", "info")
    )
    charts = headroom_svgs(rows)
    headroom = "".join(charts) or '<p class="note">No rate-limit headers were recorded.</p>'
    dropped = summary["journal"]["dropped"]
    note = (
        f'<p class="note">The journal dropped {dropped} older exchange(s); they are not shown.</p>'
        if dropped
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>mockstore report: {escape(summary['scenario'])}</title>"
        f"<style>{STYLE}</style></head><body><main>"
        "<h1>mockstore report</h1>"
        f'<p class="sub">Scenario <b>{escape(summary["scenario"])}</b>, '
        f"{summary['requests']} request(s) judged, {escape(_runs_judged(summary))}.</p>"
        f'<div class="badges">{badges}</div>{note}'
        "<h2>Requests over time</h2>"
        f'<div class="card">{chart}'
        f"{_legend()}</div>"
        "<h2>Rate-limit headroom per key</h2>"
        f'<div class="card">{headroom}</div>'
        "<h2>Etiquette findings</h2>"
        f"{_findings(report)}"
        "<h2>Coverage of documented responses</h2>"
        f"{_coverage(report)}"
        "</main></body></html>\n"
    )
