"""Calibrate's page headers: where a listing's page lies, stated as GitLab's API states it.

A provider that pages by number without ``Link`` (GitLab, Aviary) says on each listing
its page (``X-Page``), its size (``X-Per-Page``), how many pages there are
(``X-Total-Pages``) and the pages around it (``X-Next-Page``, ``X-Prev-Page``, empty
where there is none). Each header of every recorded listing is matched against each
figure as the mock would compute it from the listing's request (the page parameter,
``limit``) and its total (``collections.pagination.total_header``); a header is that
figure only when it equals it on every listing where the figure is known, on at least
two listings, and changes between them (a constant is a constant header). Such headers
make ``collections.pagination.style: page`` and ``page_headers``.
"""

from __future__ import annotations

from collections.abc import Callable

from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen

Cite = Callable[..., str]
FIGURES = ("page", "per_page", "total_pages", "next_page", "prev_page")
_OWN = ("limit", "status")


def _parameter(listings: list[Seen]) -> str | None:
    """The one query parameter besides ``limit`` and ``status`` the listings page with
    (``page`` when none asks for a page beyond the first); None when several are used."""
    names = {name for s in listings for name in s.facts.query if name not in _OWN}
    if len(names) > 1:
        return None
    return next(iter(names), "page")


def _figures(s: Seen, parameter: str, total: int | None) -> dict[str, str]:
    """Each figure the mock would state for listing ``s`` (only those its request tells)."""
    raw_page = s.facts.query.get(parameter, ["1"])[-1]
    raw_limit = s.facts.query.get("limit", ["20"])[-1]
    if not raw_page.isdigit() or int(raw_page) < 1 or not raw_limit.isdigit():
        return {}  # a page or a limit read leniently: its figures are not known here
    number, limit = int(raw_page), int(raw_limit)
    if limit < 1:
        return {}
    figures = {"page": str(number), "per_page": str(limit)}
    figures["prev_page"] = str(number - 1) if number > 1 else ""
    if total is not None:
        figures["total_pages"] = str(max(1, -(-total // limit)))
        figures["next_page"] = str(number + 1) if number * limit < total else ""
    return figures


def learn_page_headers(
    listings: list[Seen], total_header: str | None, result: Calibration, cite: Cite
) -> list[str]:
    """Set ``collections.pagination.page_headers`` (and ``style: page``) from ``listings``
    (``listPets`` 200s); the headers (lower case) it settled."""
    style = result.value("collections.pagination.style")
    parameter = _parameter(listings)
    if parameter is None or len(listings) < 2 or style not in (None, "page"):
        return []
    shown: list[tuple[Seen, dict[str, str]]] = []
    for s in listings:
        raw = s.headers.get(total_header) if total_header else None
        total = int(raw) if raw is not None and raw.strip().isdigit() else None
        shown.append((s, _figures(s, parameter, total)))
    common = set(listings[0].headers)
    for s in listings:
        common &= set(s.headers)
    common -= {total_header} if total_header else set()
    found: dict[str, str] = {}
    for figure in FIGURES:
        for name in sorted(common - set(found.values())):
            if name.startswith(("x-ratelimit", "ratelimit", "content-")):
                continue
            known = [(s.headers[name].strip(), f[figure]) for s, f in shown if figure in f]
            if (
                len(known) >= 2
                and all(value == figure_value for value, figure_value in known)
                and len({value for value, _ in known}) > 1
            ):
                found[figure] = name
                break
    if not found:
        return []
    example = listings[0]
    spelled = {
        figure: next((h for h, _ in example.item.response_headers if h.lower() == name), name)
        for figure, name in found.items()
    }
    evidence = cite(example, *spelled.values(), code=False, note="where the page lies")
    if style is None:
        result.set("collections.pagination.style", "page", evidence)
        if parameter != "page":
            result.set("collections.pagination.parameter", parameter, evidence)
    for figure, header in spelled.items():
        result.set(f"collections.pagination.page_headers.{figure}", header, evidence)
    return list(found.values())


__all__ = ["FIGURES", "learn_page_headers"]
