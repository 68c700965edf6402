"""Calibrate's ``maintenance``: the windows a recording shows a provider refusing paths in.

A maintenance refusal is a 5xx Error with ``Retry-After`` (``evidence`` names it
``maintenance``). Refusals with the same status and code, to the same first path
segment, are one window: it covers that segment (every path, where nothing was
answered during it), the methods it refused where others were answered, opens
at the first refusal (after any answer to its paths before it) and closes where
``Retry-After`` said; the form of ``Retry-After`` (seconds, seconds with a
decimal, an HTTP-date) is the window's. Its message is a template where the
request's path and method and the window's end were filled in; one no template
reproduces is listed as not expressible, never written as a constant. The stage
is read from whether a caller without a key was refused (and with rate-limit
figures or not), as for the HTTP semantics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from mockstore.clock import format_time, parse_time
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import http_date

Cite = Callable[..., str]
_RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "ratelimit")
# Ends that differ by less than this are one end (Retry-After rounds to the second).
_SAME_END = 1.5


def retry_form(value: str) -> str | None:
    """``Retry-After``'s form: ``seconds``, ``decimal``, ``http-date``; None if unreadable."""
    text = value.strip()
    if re.fullmatch(r"[0-9]+", text):
        return "seconds"
    if re.fullmatch(r"[0-9]+\.[0-9]+", text):
        return "decimal"
    return "http-date" if http_date(text) is not None else None


def _end(s: Seen) -> tuple[str, float] | None:
    """(form, the end on the service's clock) a refusal's Retry-After states."""
    value = s.headers.get("retry-after", "")
    form = retry_form(value)
    if form is None:
        return None
    if form == "http-date":
        stated = http_date(value)
        assert stated is not None
        return form, stated - s.header_offset
    return form, s.item.time + float(value)


def _segment(path: str) -> str:
    return "/" + path.lstrip("/").split("/", 1)[0]


def learn_maintenance(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    """Settle ``maintenance`` from the maintenance refusals of ``seen``."""
    refused = [s for s in seen if s.condition == "maintenance"]
    groups: dict[tuple[int, str | None, str], list[Seen]] = {}
    for s in refused:
        groups.setdefault((s.status, s.code, _segment(s.path)), []).append(s)
    windows: list[tuple[dict[str, Any], list[str]]] = []
    for (status, code, segment), members in groups.items():
        learned = _window(seen, members, status, code, segment, result, cite)
        if learned is not None:
            windows.append(learned)
    # One window of every path where the refusals of several segments are alike.
    for value, evidence in _merged(seen, windows):
        result.set("maintenance", value, *evidence)


def _window(
    seen: list[Seen],
    members: list[Seen],
    status: int,
    code: str | None,
    segment: str,
    result: Calibration,
    cite: Cite,
) -> tuple[dict[str, Any], list[str]] | None:
    if all("retry-after" not in s.headers for s in members):
        return _untold(seen, members, status, code, segment, result, cite)
    ends = [_end(s) for s in members]
    if any(end is None for end in ends):
        bad = next(s for s, end in zip(members, ends, strict=True) if end is None)
        result.cannot(
            "a maintenance refusal's Retry-After is unreadable: " + cite(bad, "Retry-After")
        )
        return None
    forms = {end[0] for end in ends if end is not None}
    instants = [end[1] for end in ends if end is not None]
    if len(forms) > 1 or max(instants) - min(instants) > _SAME_END:
        result.cannot(
            f"the maintenance refusals of {segment} state {len(forms)} Retry-After form(s) and "
            "ends that move with each request (a window scenario states one end): "
            + "; ".join(cite(s, "Retry-After") for s in members[:2])
        )
        return None
    first, last = members[0], members[-1]
    # Each Retry-After is the wait rounded up (never early): the earliest end stated is
    # the one that gives every refusal its own again (to the millisecond, rounded down).
    end = math.floor(min(instants) * 1000) / 1000
    opened = _opened(seen, segment, first)
    window: dict[str, Any] = {
        "name": f"maintenance-{segment.strip('/') or 'all'}",
        "paths": [segment],
        "from": format_time(math.floor(opened * 1000) / 1000),
        "until": format_time(end),
        "status": status,
        "retry_after": forms.pop(),
    }
    _describe(window, seen, members, code, segment, result, cite)
    note = f"{len(members)} refusal(s), Retry-After to {format_time(end)}"
    return window, [cite(first, "Retry-After", note=note), cite(last, "Retry-After")]


def _untold(
    seen: list[Seen],
    members: list[Seen],
    status: int,
    code: str | None,
    segment: str,
    result: Calibration,
    cite: Cite,
) -> tuple[dict[str, Any], list[str]]:
    """A window whose refusals say nothing of its end: open from the first one, with no
    end the recording shows (``until`` null), and no Retry-After."""
    first = members[0]
    opened = _opened(seen, segment, first)
    window: dict[str, Any] = {
        "name": f"maintenance-{segment.strip('/') or 'all'}",
        "paths": [segment],
        "from": format_time(math.floor(opened * 1000) / 1000),
        "until": None,
        "status": status,
        "retry_after": "none",
    }
    _describe(window, seen, members, code, segment, result, cite)
    result.open(
        f"maintenance of {segment}: its end is not shown (no Retry-After, refused to the "
        "recording's end): written as open-ended"
    )
    note = f"{len(members)} refusal(s), no Retry-After"
    return window, [cite(first, note=note), cite(members[-1])]


def _describe(
    window: dict[str, Any],
    seen: list[Seen],
    members: list[Seen],
    code: str | None,
    segment: str,
    result: Calibration,
    cite: Cite,
) -> None:
    """The window's code, message, methods and stage, as its refusals show them."""
    first, last = members[0], members[-1]
    if code is not None:
        window["code"] = code
    template = _message_template(members)
    if template is None:
        result.cannot(
            f"the maintenance refusals of {segment} word their message in a way no template of "
            "{path}, {method} and {until} reproduces: " + "; ".join(cite(s) for s in members[:2])
        )
    else:
        window["message"] = template
    during = [
        s
        for s in seen
        if s.condition != "maintenance"
        and first.item.time <= s.item.time <= last.item.time
        and _segment(s.path) == segment
        and s.status not in (401, 429)
    ]
    methods = sorted({s.item.method for s in members})
    if any(s.item.method not in methods for s in during) and during:
        window["methods"] = methods
    stage = _stage(members, seen, segment, first.item.time, last.item.time)
    if stage is not None:
        window["stage"] = stage


def _message_template(members: list[Seen]) -> str | None:
    """A message template every refusal's message is, filled in; None if none is."""
    templates = set()
    for s in members:
        message = s.body.get("message") if isinstance(s.body, dict) else None
        if not isinstance(message, str):
            return None
        template = message.replace("{", "{{").replace("}", "}}")
        end = _end(s)
        if end is not None:
            template = template.replace(format_time(round(end[1], 3)), "{until}")
            template = template.replace(format_time(math.ceil(end[1])), "{until}")
        template = template.replace(s.item.path, "{path}")
        template = re.sub(rf"\b{re.escape(s.item.method)}\b", "{method}", template)
        templates.add(template)
    return templates.pop() if len(templates) == 1 else None


def _stage(members: list[Seen], seen: list[Seen], segment: str, start: float, end: float) -> str:
    keyless = [s for s in members if not s.keyed]
    if keyless:
        return "counted" if any(h in keyless[0].headers for h in _RATE_HEADERS) else "gateway"
    turned_away = [
        s
        for s in seen
        if s.status == 401 and _segment(s.path) == segment and start <= s.item.time <= end
    ]
    if turned_away:
        return "authenticated"
    rated = any(h in members[0].headers for h in _RATE_HEADERS)
    return "authenticated" if rated else "gateway"


def _merged(
    seen: list[Seen], windows: list[tuple[dict[str, Any], list[str]]]
) -> list[tuple[dict[str, Any], list[str]]]:
    """Windows alike in all but their segment, while nothing else was answered: one on /."""
    if len(windows) < 2:
        return windows
    shape = {
        tuple(sorted((k, str(v)) for k, v in value.items() if k not in ("name", "paths")))
        for value, _ in windows
    }
    if len(shape) != 1:
        return windows
    value = dict(windows[0][0])
    start, end = parse_time(value["from"]), parse_time(value["until"])
    answered = [
        s
        for s in seen
        if s.condition != "maintenance" and s.status not in (401, 429)
        and start <= s.item.time < end
    ]  # fmt: skip
    if answered:
        return windows
    value["paths"] = ["/"]
    value["name"] = "maintenance-all"
    return [(value, [e for _, evidence in windows for e in evidence][:2])]


__all__ = ["learn_maintenance", "retry_form"]


def _opened(seen: list[Seen], segment: str, first: Seen) -> float:
    """When the window opened: its first refusal, or just after the last answer served
    under ``segment`` before it if that falls in the same millisecond."""
    before = [
        s
        for s in seen
        if s.condition != "maintenance"
        and _segment(s.path) == segment
        and s.item.time < first.item.time
    ]
    opened = first.item.time
    if before and before[-1].item.time >= math.floor(opened * 1000) / 1000:
        opened = before[-1].item.time + 0.001
    return opened
