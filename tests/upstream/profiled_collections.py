"""The profiled stand-in's collection: how it pages, orders and filters pets, and what it accepts.

A provider's choices where the spec is silent about its collection, as a
``Collections`` of the profile (``tests/upstream/profiled.py``): pages by an
opaque cursor of its own, an offset or a page number, with ``Link`` relations
and a total-count header; listings ordered by a field, either direction, with
or without case (ties by id, in the same direction); a status filter in any
case; a default status the 201 leaves out and later reads show; integers as
strings (or refused with a fraction); names and categories limited beyond the
spec, a name's length in characters or in UTF-8 bytes, a blank name refused;
GitLab's page headers; a query parameter given twice refused or read by its
first or last value. ``Collections()`` is the stand-in as it was before these choices existed
(a listing of the first ``limit`` pets, JSON integers only).

Written as a provider's team would write it: it imports nothing of mockstore,
and its cursor is its own (base64 of JSON naming the last pet shown).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, urlencode

LinkRel = Literal["next", "prev", "first", "last"]
PageFigure = Literal["page", "per_page", "total_pages", "next_page", "prev_page"]
_NUMBER = re.compile(r"\s*([+-]?[0-9]{1,18})(?:\.0*)?\s*")
Refuse = Callable[[str, str], Exception]


@dataclass(frozen=True)
class Collections:
    """``pagination``: ``limit`` (no following pages), ``cursor``, ``offset`` or ``page``,
    through ``page_parameter`` (empty: the style's name); ``links`` in that order;
    ``link_urls``; ``total_header`` (None: none). ``order_by`` a field (None: the
    semantics' ``list_order``), ``order_descending``, ``order_case_insensitive``.
    ``status_case_insensitive`` filter. ``default_on_read``: the default status is
    left out of the 201. ``numbers_body``: ``strict`` (JSON integers), ``schema``
    (``7.0`` too), ``lenient`` (``"7"`` too), ``digits`` (JSON integers and ``"7"``;
    ``7.0`` refused); ``numbers_query``: ``lenient`` reads ``limit=7.0``.
    ``name_max_length`` (counted in ``name_unit``: characters or UTF-8 bytes),
    ``name_min_length`` (in the same unit), ``blank_name`` (a name of white space
    only: ``allow`` or ``refuse``), ``category_minimum``, ``category_maximum``: limits
    beyond the spec. ``page_headers``: with pages by
    number, GitLab's headers (``page``, ``per_page``, ``total_pages``, ``next_page``,
    ``prev_page``) under the provider's names. ``repeated``: a listing's query
    parameter given twice is refused (its condition), or its ``first`` or ``last``
    value read."""

    pagination: Literal["limit", "cursor", "offset", "page"] = "limit"
    page_parameter: str = ""
    links: tuple[LinkRel, ...] = ()
    link_urls: Literal["relative", "absolute"] = "relative"
    total_header: str | None = None
    order_by: Literal["name", "categoryId", "status"] | None = None
    order_descending: bool = False
    order_case_insensitive: bool = False
    status_case_insensitive: bool = False
    default_on_read: bool = False
    numbers_body: Literal["strict", "schema", "lenient", "digits"] = "strict"
    numbers_query: Literal["strict", "lenient"] = "strict"
    name_max_length: int | None = None
    category_minimum: int | None = None
    name_unit: Literal["characters", "bytes"] = "characters"
    name_min_length: int | None = None
    category_maximum: int | None = None
    blank_name: Literal["allow", "refuse"] = "allow"
    page_headers: tuple[tuple[PageFigure, str], ...] = ()
    repeated: Literal["refuse", "first", "last"] = "last"

    @property
    def parameter(self) -> str:
        return self.page_parameter or self.pagination


def problems(
    collections: Collections, token: re.Pattern[str], managed: frozenset[str]
) -> list[str]:
    """Every way ``collections`` cannot be served, as ``path: why``."""
    found = []
    where = "$.semantics.collections"
    if collections.links and collections.pagination == "limit":
        found.append(f"{where}.links: links need pages (pagination other than limit)")
    if len(set(collections.links)) != len(collections.links):
        found.append(f"{where}.links: a relation named twice")
    if collections.page_parameter and (
        collections.page_parameter in ("limit", "status")
        or not re.fullmatch(r"[a-z_]+", collections.page_parameter)
    ):
        found.append(f"{where}.page_parameter: not a parameter of its own")
    header = collections.total_header
    if header is not None and (not token.fullmatch(header) or header.lower() in managed):
        found.append(f"{where}.total_header: not a header of its own")
    if collections.name_max_length is not None and collections.name_max_length < 8:
        found.append(f"{where}.name_max_length: at least 8")
    if collections.page_headers and collections.pagination != "page":
        found.append(f"{where}.page_headers: page headers need pages by number")
    names = [name.lower() for _, name in collections.page_headers]
    for name in names:
        if not token.fullmatch(name) or name in managed or name == (header or "").lower():
            found.append(f"{where}.page_headers.{name}: not a header of its own")
    if len(set(names)) != len(names) or len({f for f, _ in collections.page_headers}) != len(names):
        found.append(f"{where}.page_headers: a figure or a name given twice")
    return found


def order_key(collections: Collections, order: str, positions: dict[int, int]) -> tuple[Any, bool]:
    """The sort key of a listing and whether it is reversed."""
    by = collections.order_by
    if by is None:
        if order == "insertion":
            return (lambda pet: positions.get(pet["id"], len(positions) + pet["id"])), False
        return (lambda pet: pet["id"]), order == "descending"
    lower = collections.order_case_insensitive

    def key(pet: dict[str, Any]) -> tuple[Any, ...]:
        value = pet.get(by)
        if by == "categoryId":
            return (value, pet["id"])
        if value is None:
            return (1, "", pet["id"])
        text = value.lower() if lower else value
        return (0, text, pet["id"]) if by == "status" else (text, pet["id"])

    return key, collections.order_descending


def number(raw: str, collections: Collections) -> int | None:
    """A query integer as the provider reads it (None: not one)."""
    if raw.isascii() and raw.isdigit():
        return int(raw.lstrip("0") or "0") if len(raw.lstrip("0")) <= 18 else -1
    if collections.numbers_query == "lenient" and (found := _NUMBER.fullmatch(raw)):
        return int(found.group(1))
    return None


def page(
    collections: Collections,
    pets: list[dict[str, Any]],
    query: str,
    limit: int,
    base: str,
    refuse: Refuse,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The pets of the page a query asks for (``pets``: the whole listing, in order), and
    the answer's Link and total headers. ``base``: the URL (or path) of the listing."""
    style, name = collections.pagination, collections.parameter
    pairs = parse_qsl(query, keep_blank_values=True)
    given = [value for key, value in pairs if key == name] if style != "limit" else []
    start = 0
    if given:
        if len(given) > 1 and collections.repeated == "refuse":
            raise refuse("bad_page", f"{name} given more than once")
        raw = given[0] if collections.repeated == "first" else given[-1]
        if style == "cursor":
            start = _after(raw, pets, refuse)
        else:
            value = number(raw, collections)
            least = 1 if style == "page" else 0
            if value is None or value < least:
                raise refuse("bad_page", f"{name} must be a whole number from {least}")
            start = (value - 1) * limit if style == "page" else value
    shown = pets[start : start + limit]
    headers: list[tuple[str, str]] = []
    kept = [(key, value) for key, value in pairs if key != name]
    targets: dict[str, int | None] = {
        "next": start + limit if start + limit < len(pets) else None,
        "prev": max(0, start - limit) if start > 0 else None,
        "first": 0,
        "last": max(0, len(pets) - limit)
        if style == "cursor"
        else (len(pets) - 1) // limit * limit,
    }
    parts = []
    for rel in collections.links:
        at = targets[rel]
        if at is None:
            continue
        extra = _value(collections, pets, max(at, 0), limit)
        text = urlencode(kept + ([(name, extra)] if extra is not None else []), quote_via=quote)
        parts.append(f'<{base}{"?" + text if text else ""}>; rel="{rel}"')
    if parts:
        headers.append(("Link", ", ".join(parts)))
    if collections.total_header is not None:
        headers.append((collections.total_header, str(len(pets))))
    if collections.page_headers:
        at = start // limit + 1
        figures = {
            "page": str(at),
            "per_page": str(limit),
            "total_pages": str(max(1, -(-len(pets) // limit))),
            "next_page": str(at + 1) if start + limit < len(pets) else "",
            "prev_page": str(at - 1) if at > 1 else "",
        }
        headers += [(name, figures[figure]) for figure, name in collections.page_headers]
    return shown, headers


def given(values: list[str], collections: Collections) -> str | None:
    """The value a listing reads of a query parameter sent ``len(values)`` times (None: not
    sent); ``LookupError`` when the provider refuses one sent twice."""
    if not values:
        return None
    if len(values) > 1 and collections.repeated == "refuse":
        raise LookupError("given more than once")
    return values[0] if collections.repeated == "first" else values[-1]


def _value(
    collections: Collections, pets: list[dict[str, Any]], start: int, limit: int
) -> str | None:
    style = collections.pagination
    if style == "offset":
        return str(start)
    if style == "page":
        return str(start // limit + 1)
    if start <= 0:
        return None
    last = pets[start - 1]
    token = json.dumps({"after": last["id"]}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def _after(raw: str, pets: list[dict[str, Any]], refuse: Refuse) -> int:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        after = decoded["after"]
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise refuse("bad_page", "the cursor is not valid") from None
    for index, pet in enumerate(pets):
        if pet["id"] == after:
            return index + 1
    raise refuse("bad_page", "the cursor is not valid")


def category(value: Any, collections: Collections) -> Any:
    """A NewPet's categoryId as the provider reads it (unchanged when it reads no other)."""
    if (
        isinstance(value, float)
        and collections.numbers_body in ("schema", "lenient")
        and value.is_integer()
    ):
        return int(value)
    if isinstance(value, str) and collections.numbers_body == "lenient":
        found = _NUMBER.fullmatch(value)
        if found is not None:
            return int(found.group(1))
    digits = isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18
    if digits and collections.numbers_body == "digits":
        return int(value)
    return value


def check(fields: dict[str, Any], collections: Collections, refuse: Refuse) -> None:
    """Refuse a NewPet past the provider's own limits."""
    longest, name = collections.name_max_length, fields["name"]
    if collections.name_unit == "bytes":
        size, unit = len(name.encode("utf-8", "surrogatepass")), "bytes"
    else:
        size, unit = len(name), "characters"
    if longest is not None and size > longest:
        raise refuse("field_constraint", f"name must be at most {longest} {unit}")
    shortest = collections.name_min_length
    if shortest is not None and size < shortest:
        raise refuse("field_constraint", f"name must be at least {shortest} {unit}")
    if collections.blank_name == "refuse" and not name.strip():
        raise refuse("field_constraint", "name must not be blank")
    least = collections.category_minimum
    if least is not None and fields["categoryId"] < least:
        raise refuse("field_constraint", f"categoryId must be at least {least}")
    most = collections.category_maximum
    if most is not None and fields["categoryId"] > most:
        raise refuse("field_constraint", f"categoryId must be at most {most}")
