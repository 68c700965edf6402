"""What recorded listings and creates show of a provider's collection (``collections``).

Calibrate learns the ``collections`` settings from a recording, and drift compares
and explains listings by them; both read the recording through these pure
functions:

- ``orders_of``: every ``collections.order`` (field, direction, case; ties by id)
  one listing is consistent with;
- ``parse_links``: a ``Link`` header's targets by relation; ``page_parameter`` and
  ``page_style``: the query parameter a provider's links page with, and whether its
  values are cursors, offsets or page numbers;
- ``total_header_of``: the header of a listing that says how many pets its filter
  keeps;
- ``link_shape``: what of a ``Link`` a client depends on (its relations' order, the
  form of its URLs, the page parameter), without the values the store decides;
- ``repeated_choice``: which value of a ``limit`` given twice a listing's length shows
  the provider used (``collections.repeated_parameters``).

No HTTP, no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

# The orders a listing may be in, as collections.order spells them (ties by id).
FIELDS = ("id", "name", "categoryId", "status")
DIRECTIONS = ("ascending", "descending")
CASES = ("sensitive", "insensitive")
_LINK = re.compile(r"\s*<([^>]*)>\s*((?:;\s*[^;,]+)*)")
_REL = re.compile(r'rel\s*=\s*"?([^";]+)"?', re.IGNORECASE)
# listPets' own parameters: a page parameter is any other.
_SPEC_PARAMETERS = frozenset({"limit", "status"})


def _key(pet: dict[str, Any], by: str, lower: bool) -> tuple[Any, ...] | None:
    """A pet's place in an order by ``by``, or None when the pet cannot be placed."""
    pet_id = pet.get("id")
    if not isinstance(pet_id, int):
        return None
    if by == "id":
        return (pet_id,)
    value = pet.get(by)
    if by == "categoryId":
        return (value, pet_id) if isinstance(value, int) and not isinstance(value, bool) else None
    if by == "status" and value is None:
        return (1, "", pet_id)  # a pet without a status comes after every status
    if not isinstance(value, str):
        return None
    text = value.lower() if lower else value
    return (0, text, pet_id) if by == "status" else (text, pet_id)


def orders_of(pets: list[Any]) -> set[tuple[str, str, str]]:
    """Every (by, direction, case) that ``pets`` (a listing, in its order) is sorted by."""
    found = set()
    for by in FIELDS:
        for case in CASES:
            if by in ("id", "categoryId") and case == "insensitive":
                continue
            keys = [_key(p, by, case == "insensitive") if isinstance(p, dict) else None
                    for p in pets]  # fmt: skip
            if any(k is None for k in keys):
                continue
            if keys == sorted(keys):
                found.add((by, "ascending", case))
            if keys == sorted(keys, reverse=True):
                found.add((by, "descending", case))
    # Case never matters for ids and categories: they are listed under both.
    for by, direction, _ in list(found):
        if by in ("id", "categoryId"):
            found.add((by, direction, "insensitive"))
    return found


def parse_links(value: str) -> list[tuple[str, str]]:
    """A ``Link`` header's (relation, target) pairs, in its order."""
    found = []
    for match in _LINK.finditer(value):
        params = match.group(2) or ""
        rel = _REL.search(params)
        if rel is not None:
            for name in rel.group(1).split():
                found.append((name.lower(), match.group(1)))
    return found


def page_parameter(target: str) -> tuple[str, str] | None:
    """The (name, value) of the parameter a link target pages with (not limit nor status)."""
    pairs = parse_qsl(urlsplit(target).query, keep_blank_values=True)
    others = [(name, value) for name, value in pairs if name not in _SPEC_PARAMETERS]
    return others[-1] if others else None


def page_style(value: str, limit: int, first_page: bool) -> str:
    """``offset``, ``page`` or ``cursor``: what a next link's page value is, on a first page."""
    if value.isdigit() and first_page:
        if int(value) == limit:
            return "offset"
        if int(value) == 2:
            return "page"
    return "cursor" if not value.isdigit() else "offset"


@dataclass(frozen=True)
class LinkShape:
    """What a client depends on in a listing's ``Link``: not the values the store decides."""

    form: str  # absolute | relative | none
    parameter: str | None
    rels: tuple[str, ...]
    style: str | None = None  # what its page values look like: cursor, offset or page


def link_shape(value: str | None) -> LinkShape:
    if not value:
        return LinkShape("none", None, ())
    links = parse_links(value)
    if not links:
        return LinkShape("none", None, ())
    absolute = any(re.match(r"https?://", target) for _, target in links)
    pairs = [(rel, found) for rel, target in links if (found := page_parameter(target))]
    parameter = pairs[0][1][0] if pairs else None
    style = None
    for rel, (_, value) in pairs:
        if not value.isdigit():
            style = "cursor"
        elif style is None:
            style = "page" if rel == "first" and value == "1" else "offset"
    if links and not pairs:
        style = "cursor"  # a first page only, and no parameter: a cursor's first link
    rels = tuple(r for r, _ in links)
    return LinkShape("absolute" if absolute else "relative", parameter, rels, style)


def same_shape(was: LinkShape, now: LinkShape) -> bool:
    """Whether two listings' Links agree where both say something (which pages exist
    around a page depends on the store: a relation one has and the other lacks is not
    compared; the order of the ones both have is)."""
    if (was.form == "none") != (now.form == "none"):
        return False
    if was.form == "none":
        return True
    common = [rel for rel in was.rels if rel in now.rels]
    return (
        was.form == now.form
        and was.parameter == now.parameter
        and common == [rel for rel in now.rels if rel in was.rels]
    )


def total_header_of(listings: list[tuple[dict[str, str], list[Any], bool]]) -> str | None:
    """The header (lower case) every listing carries with the number of pets it keeps.

    ``listings``: each 200 to listPets as (headers, its pets, whether it is the whole
    listing: a first page with fewer pets than its limit). The header must be a whole
    number on every listing, at least its length, and equal to it on a whole one.
    """
    if not listings:
        return None
    names = set(listings[0][0])
    for headers, _, _ in listings:
        names &= set(headers)
    found = []
    for name in sorted(names):
        if name.startswith(("x-ratelimit", "ratelimit", "content-")):
            continue
        values = [headers[name].strip() for headers, _, _ in listings]
        if not all(v.isdigit() for v in values):
            continue
        fits = all(
            int(v) >= len(pets) and (not whole or int(v) == len(pets))
            for v, (_, pets, whole) in zip(values, listings, strict=True)
        )
        # A constant that happens to count a listing is a constant: a total changes with
        # the filter, or says what it is.
        named = re.search(r"total|count", name) is not None
        counts = len(set(values)) > 1 or named
        if fits and counts and (named or any(whole for _, _, whole in listings)):
            found.append(name)
    return found[0] if len(found) == 1 else None


def page_pairs(recorded: str | None, mock: str | None) -> dict[tuple[str, str], tuple[str, str]]:
    """The page a recorded Link relation names -> the one the mock's names for it.

    Drift replays a recording on the mock: a client that followed the provider's
    ``rel="next"`` sent the provider's cursor, which names nothing to the mock; the
    mock's own link to the same page stands in for it (as pet ids do).
    """
    if not recorded or not mock:
        return {}
    theirs = dict(parse_links(recorded))
    found = {}
    for rel, target in parse_links(mock):
        was = theirs.get(rel)
        pair_was = page_parameter(was) if was else None
        pair_now = page_parameter(target)
        if pair_was is not None and pair_now is not None:
            found[pair_was] = pair_now
    return found


def rewrite_query(query: str, pages: dict[tuple[str, str], tuple[str, str]]) -> str:
    """``query`` with each page it names as the mock names it (``page_pairs``)."""
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(pair in pages for pair in pairs):
        return query
    return urlencode([pages.get(pair, pair) for pair in pairs], quote_via=quote)


def recorded_total(seen: list[Any]) -> str | None:
    """The total-count header of a recording's listings (``total_header_of``), from its
    classified exchanges (``evidence.Seen``)."""
    shown = []
    for s in seen:
        if s.facts.operation != "listPets" or s.status != 200 or not isinstance(s.body, list):
            continue
        raw = s.facts.query.get("limit", ["20"])[-1]
        limit = int(raw) if raw.isdigit() and 1 <= int(raw) <= 100 else 20
        paged = any(name not in _SPEC_PARAMETERS for name in s.facts.query)
        shown.append((s.headers, s.body, not paged and len(s.body) < limit))
    return total_header_of(shown)


def read_default(seen: list[Any]) -> tuple[str, Any, Any] | None:
    """A default status the recording's 201s leave out and a later read shows:
    (the status, the create, the read), or None."""
    created: dict[int, Any] = {}
    for s in seen:
        body = s.body
        if s.facts.operation == "createPet" and s.status == 201 and isinstance(body, dict):
            sent = _json(s.item.body)
            fresh = isinstance(sent, dict) and "status" not in sent and "status" not in body
            if fresh and isinstance(body.get("id"), int):
                created[body["id"]] = s
            continue
        if not created or s.status != 200 or s.item.method != "GET":
            continue
        shown = [body] if isinstance(body, dict) else body if isinstance(body, list) else []
        for pet in shown:
            if isinstance(pet, dict) and pet.get("id") in created:
                status = pet.get("status")
                return (status, created[pet["id"]], s) if isinstance(status, str) else None
    return None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body and len(body) < 65536 else None
    except ValueError:
        return None


def repeated_choice(query: dict[str, list[str]], pets: Any, total: int | None) -> str | None:
    """``first`` or ``last``: the value of a repeated ``limit`` the listing ``pets`` obeys.

    ``total`` is the count of pets the filter keeps when the listing states it (a shorter
    listing may be the whole collection). None when the listing tells neither apart.
    """
    given = query.get("limit", [])
    if len(given) < 2 or not isinstance(pets, list):
        return None
    if not all(value.isdigit() and int(value) >= 1 for value in (given[0], given[-1])):
        return None
    shown = len(pets)

    def fits(value: str) -> bool:
        wanted = min(int(value), 100)
        return shown == (wanted if total is None else min(wanted, total))

    first, last = fits(given[0]), fits(given[-1])
    if first != last:
        return "first" if first else "last"
    return None
