"""What a recording shows of a provider's collection: the ``collections`` settings, learned.

From the listings (``listPets`` 200s) and from read-after-write pairs (a pet
created, then read), without sending anything:

- pagination: the ``Link`` relations and their order, whether their URLs are
  absolute, the parameter they page with and whether its values are cursors,
  offsets or page numbers (two pages in a row tell an offset of 2 from page 2),
  and the header that says a listing's total;
- order: the field, direction and case every recorded listing is sorted by
  (ties by id); listings by id stay ``behaviour.list_order``'s;
- the status filter in capitals answered or refused; integers as strings or with
  a zero fraction accepted or refused, in a body and in a query;
- constraints: the longest name accepted and the shortest refused for a limit of
  the provider's (``field_constraint``), the lowest category accepted and the one
  refused: any value between reproduces the recording, and the roundest is
  written (an estimate, said so);
- a default status that the 201 leaves out and later reads show (``applied: read``).

Each setting cites the exchanges that settled it; what the recording leaves open
stays mockstore's default and is listed as open.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mockstore.fidelity.calibrate.page_headers import learn_page_headers
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.conditions import json_of
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.listings import (
    orders_of,
    page_parameter,
    parse_links,
    read_default,
    repeated_choice,
    total_header_of,
)
from mockstore.scenario.collections import DEFAULT_PARAMETER
from mockstore.status_filter import named_statuses, spelling_of

Cite = Callable[..., str]
_STATUSES = ("available", "pending", "sold")
_STRICT_INTEGER = re.compile(r"[0-9]+")
# The lengths and categories providers limit to, roundest first.
_ROUND_LENGTHS = (64, 100, 50, 32, 128, 255, 256, 40, 80, 120, 150, 200)
_ROUND_MINIMA = (0, 1)


def learn_collections(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    """Settle every ``collections`` setting ``seen`` shows (``cite`` names an exchange)."""
    listings = [
        s for s in seen
        if s.facts.operation == "listPets" and s.status == 200 and s.item.method == "GET"
        and isinstance(s.body, list)
    ]  # fmt: skip
    _pagination(listings, result, cite)
    _order(listings, result, cite)
    _filter(seen, result, cite)
    _several_statuses(seen, result, cite)
    _numbers(seen, result, cite)
    _constraints(seen, result, cite)
    _defaults(seen, result, cite)
    _missing_content_type(seen, result, cite)
    _repeated_parameters(seen, result, cite)


def _repeated_parameters(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    """``collections.repeated_parameters``: a listing asked with ``limit`` twice answered
    with as many pets as its first value says (``first``) or its last (``last``), as
    ``repeated_choice`` reads it (drift's attribution reads it the same way); refused
    (mockstore's own reading) when a 4xx answered every one."""
    asked = [
        s for s in seen
        if s.facts.operation == "listPets" and s.item.method == "GET"
        and len(s.facts.query.get("limit", [])) > 1
    ]  # fmt: skip
    if not asked:
        return
    if all(400 <= s.status < 500 and s.status not in (401, 403, 429) for s in asked):
        result.confirm("collections.repeated_parameters")
        return
    shown: dict[str, Seen] = {}
    for s in asked:
        if s.status != 200:
            return  # some answered, some refused: the recording does not tell one reading
        choice = repeated_choice(s.facts.query, s.body, None)
        if choice is not None:
            shown.setdefault(choice, s)
    if len(shown) == 1:
        choice, example = shown.popitem()
        note = f"{len(example.body)} pet(s): its {choice} limit"
        result.set("collections.repeated_parameters", choice, cite(example, code=False, note=note))


def _missing_content_type(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    """``behaviour.missing_content_type``: a create with a body and no Content-Type read as
    JSON (answered, or refused for what the body says) or refused as 415."""
    untyped = [
        s for s in seen
        if s.facts.operation == "createPet" and s.item.method == "POST" and s.item.body.strip()
        and not any(name.lower() == "content-type" for name, _ in s.item.headers)
        and s.status not in (401, 403, 429, 503) and s.status < 500
    ]  # fmt: skip
    if not untyped:
        return
    read = [s for s in untyped if s.status != 415]
    if read and len(read) == len(untyped):
        note = "a body without Content-Type read as JSON"
        result.set("behaviour.missing_content_type", "json", cite(read[0], code=False, note=note))
    elif not read:
        result.confirm("behaviour.missing_content_type")


def page_refusals(seen: list[Seen]) -> None:
    """A listing refused for its page parameter is ``bad_offset`` (``bad_cursor``), not
    unexplained: the parameter every paged listing of the recording names (besides
    ``limit`` and ``status``), sent with a value no page of its kind has (``page=0``,
    ``page=x``). Run before the refusals' codes and messages are learned."""
    listings = [s for s in seen if s.facts.operation == "listPets" and s.status == 200]
    names = {name for s in listings for name in s.facts.query if name not in ("limit", "status")}
    if len(names) != 1:
        return
    name = names.pop()
    values = [s.facts.query[name][-1] for s in listings if name in s.facts.query]
    numbers = all(v.isdigit() for v in values)
    least = min((int(v) for v in values), default=1) if numbers else None
    for s in seen:
        if s.condition != "unexplained" or s.facts.operation != "listPets":
            continue
        if not 400 <= s.status < 500 or name not in s.facts.query:
            continue
        value = s.facts.query[name][-1]
        if numbers and (not value.isdigit() or int(value) < (least or 0)):
            s.condition = "bad_offset"
        elif not numbers and value not in values:
            s.condition = "bad_cursor"


def _limit(s: Seen) -> int:
    raw = s.facts.query.get("limit", ["20"])[-1]
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= 100 else 20


def _pagination(listings: list[Seen], result: Calibration, cite: Cite) -> None:
    linked = [(s, parse_links(s.headers["link"])) for s in listings if "link" in s.headers]
    linked = [(s, links) for s, links in linked if links]
    if linked:
        rels: list[str] = []
        for _, links in sorted(linked, key=lambda pair: -len(pair[1])):
            for index, (rel, _) in enumerate(links):
                if rel in rels:
                    continue
                before = [r for r, _ in links[:index] if r in rels]
                rels.insert(rels.index(before[-1]) + 1 if before else 0, rel)
        rels = [rel for rel in rels if rel in ("next", "prev", "first", "last")]
        first = linked[0][0]
        style, parameter, evidence = _style(linked)
        if style is None:
            # No link names a page beyond the first (a listing of one page): any style
            # writes the same first link; a cursor's has no parameter at all.
            style, parameter = "cursor", "cursor"
            evidence = cite(first, "Link", code=False, note="no page beyond the first")
            result.open(
                "collections.pagination.style: the recording's links name no page beyond the "
                "first: written as cursor"
            )
        result.set("collections.pagination.style", style, evidence)
        if parameter != DEFAULT_PARAMETER[style]:
            result.set("collections.pagination.parameter", parameter, evidence)
        result.set("collections.pagination.links", rels, cite(first, "Link", code=False))
        absolute = any(re.match(r"https?://", t) for _, links in linked for _, t in links)
        if absolute:
            result.set("collections.pagination.link_urls", "absolute",
                       cite(first, "Link", code=False, note="absolute URLs"))  # fmt: skip
    shown = [(s.headers, s.body, _whole(s)) for s in listings]
    name = total_header_of(shown)
    if name is not None:
        example = listings[0]
        spelled = next((h for h, _ in example.item.response_headers if h.lower() == name), name)
        result.set(
            "collections.pagination.total_header",
            spelled,
            cite(example, spelled, code=False, note="the number of pets the listing keeps"),
        )
        _settled_header(name, result)
    for header in learn_page_headers(listings, name, result, cite):
        _settled_header(header, result)


def _settled_header(name: str, result: Calibration) -> None:
    """Header ``name`` (lower case) is a collections setting's: not a constant header, nor
    one no setting reproduces."""
    result.varying.discard(name)
    result.inexpressible[:] = [t for t in result.inexpressible if f"header {name} " not in t]
    if "behaviour.headers" in result.items:
        kept = [
            entry for entry in result.items["behaviour.headers"]
            if str(entry.value.get("name", "")).lower() != name
        ]  # fmt: skip
        if kept:
            result.items["behaviour.headers"] = kept
        else:
            del result.items["behaviour.headers"]


def _whole(s: Seen) -> bool:
    """Whether ``s`` is the whole listing: a first page with fewer pets than its limit. A
    limit the provider read leniently (``5.0``, ``+5``) is no evidence: its size is not
    known here, and 5 pets under it are not fewer than the default 20."""
    raw = s.facts.query.get("limit", ["20"])[-1]
    return raw.isdigit() and not _paged(s) and len(s.body) < _limit(s)


def _paged(s: Seen) -> bool:
    return any(name not in ("limit", "status") for name in s.facts.query)


def _style(linked: list[tuple[Seen, list[tuple[str, str]]]]) -> tuple[str | None, str, str]:
    """The style, its parameter and the evidence, from the next links of the recording."""
    for s, links in linked:
        target = dict(links).get("next")
        found = page_parameter(target) if target else None
        if found is None:
            continue
        name, value = found
        current = s.facts.query.get(name, [None])[-1]
        limit = _limit(s)
        note = f"next page: {name}={value[:40]}"
        if not value.isdigit():
            return "cursor", name, _cited(s, note)
        number = int(value)
        if current is None:
            if number == limit and limit != 2:
                return "offset", name, _cited(s, note)
            if number == 2 and limit != 2:
                return "page", name, _cited(s, note)
            continue  # a first page of 2: offset 2 or page 2; the next page tells
        if not current.isdigit():
            continue
        if number == int(current) + limit:
            return "offset", name, _cited(s, note)
        if number == int(current) + 1:
            return "page", name, _cited(s, note)
    for s, links in linked:
        for rel, target in links:
            found = page_parameter(target)
            if found is None:
                continue
            name, value = found
            note = f"{rel} page: {name}={value[:40]}"
            if not value.isdigit():
                return "cursor", name, _cited(s, note)
            if rel == "first":
                return ("offset" if value == "0" else "page"), name, _cited(s, note)
    for _, links in linked:
        target = dict(links).get("next")
        found = page_parameter(target) if target else None
        if found is not None and found[1].isdigit():
            return "offset", found[0], f"{found[0]}={found[1]}: an offset or a page (open)"
    return None, "", ""


def _cited(s: Seen, note: str) -> str:
    return f"{s.label} {s.describe()} -> {s.status}, Link; {note}"


def _order(listings: list[Seen], result: Calibration, cite: Cite) -> None:
    candidates: set[tuple[str, str, str]] | None = None
    example = None
    for s in listings:
        pets = [p for p in s.body if isinstance(p, dict)]
        if len(pets) < 2:
            continue
        found = orders_of(pets)
        candidates = found if candidates is None else candidates & found
        example = example or s
    if not candidates or example is None:
        return  # no listing of two, or none explains them all: behaviour.list_order's
    if any(by == "id" for by, _, _ in candidates):
        return  # by id: behaviour.list_order says it
    for by in ("name", "categoryId", "status"):
        matching = sorted(c for c in candidates if c[0] == by)
        if not matching:
            continue
        _, direction, case = next((c for c in matching if c[2] == "sensitive"), matching[0])
        evidence = cite(example, code=False, note=f"every listing by {by}, {direction}, {case}")
        result.settings.pop("behaviour.list_order", None)  # the older spelling: one of them
        result.set("collections.order.by", by, evidence)
        if direction != "ascending":
            result.set("collections.order.direction", direction, evidence)
        if case != "sensitive":
            result.set("collections.order.case", case, evidence)
        if by in ("name", "status") and len({c[2] for c in matching}) > 1:
            result.open(
                f"collections.order.case: no recorded listing tells case apart ({by} in one "
                "case throughout): written as sensitive"
            )
        return


def _filter(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    for s in seen:
        given = s.facts.query.get("status", [""])[-1]
        if s.facts.operation != "listPets" or given in _STATUSES or given.lower() not in _STATUSES:
            continue
        if s.status == 200:
            result.set("collections.filters.status_case", "insensitive",
                       cite(s, code=False, note=f"status={given} answered"))  # fmt: skip
            return
        if s.condition == "bad_status_filter":
            result.confirm("collections.filters.status_case")
            return


def _several_statuses(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    """``collections.filters.several_statuses``: a listing whose status filter named several
    statuses (``available,pending``, or repeated) answered with pets of more than one of
    them (of any, for a comma: a repeated status may be read first or last); refused
    (mockstore's own reading) when every such listing was refused for its filter."""
    read: dict[str, Seen] = {}
    refused = False
    for s in seen:
        values = s.facts.query.get("status", [])
        spelling = spelling_of(values)
        if s.facts.operation != "listPets" or s.item.method != "GET" or spelling is None:
            continue
        named = {status.lower() for status in named_statuses(values)}
        if not named <= set(_STATUSES):
            continue
        if s.status == 200 and isinstance(s.body, list):
            shown = {pet.get("status") for pet in s.body if isinstance(pet, dict)}
            if spelling == "comma" or len(shown & named) > 1:
                read.setdefault(spelling, s)
        elif s.condition == "bad_status_filter":
            refused = True
    if not read:
        if refused:
            result.confirm("collections.filters.several_statuses")
        return
    spellings = set(read)
    value = "both" if "both" in spellings or len(spellings) > 1 else spellings.pop()
    example = next(iter(read.values()))
    note = f"status={','.join(example.facts.query['status'])} answered with pets of each"
    result.set("collections.filters.several_statuses", value, cite(example, code=False, note=note))


def _numbers(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    for s in seen:
        raw = s.facts.query.get("limit", [""])[-1]
        if s.facts.operation != "listPets" or not raw or _STRICT_INTEGER.fullmatch(raw):
            continue
        if re.fullmatch(r"\s*\+?[0-9]+\.0*\s*", raw):
            if s.status == 200:
                result.set("collections.numbers.query", "lenient",
                           cite(s, code=False, note=f"limit={raw} answered"))  # fmt: skip
            elif s.condition == "bad_limit":
                result.confirm("collections.numbers.query")
            break
    strings: Seen | None = None
    strings_refused: Seen | None = None
    fractions: Seen | None = None
    fractions_refused: Seen | None = None
    for s in seen:
        if s.facts.operation != "createPet" or s.item.method != "POST":
            continue
        sent = json_of(s.item.body)
        if not isinstance(sent, dict):
            continue
        category = sent.get("categoryId")
        if isinstance(category, str) and re.fullmatch(r"\s*[+-]?[0-9]+(\.0*)?\s*", category):
            if 200 <= s.status < 300:
                strings = strings or s
            elif s.condition == "invalid_body":
                strings_refused = strings_refused or s
        if s.facts.fractions:
            if 200 <= s.status < 300:
                fractions = fractions or s
            elif s.condition == "invalid_body":
                fractions_refused = fractions_refused or s
    if strings is not None and fractions_refused is not None:
        # A string of digits read as the number, a zero fraction refused (form-encoded
        # APIs' reading: Stripe's, Tollgate's).
        result.set("collections.numbers.body", "digits",
                   cite(strings, code=False, note="categoryId as a string accepted"),
                   cite(fractions_refused))  # fmt: skip
    elif strings is not None:
        result.set("collections.numbers.body", "lenient",
                   cite(strings, code=False, note="categoryId as a string accepted"))  # fmt: skip
    elif fractions_refused is not None:
        result.set("collections.numbers.body", "strict", cite(fractions_refused))
    elif fractions is not None or strings_refused is not None:
        result.confirm("collections.numbers.body")


def _round(low: int, high: int, choices: tuple[int, ...]) -> int:
    return next((value for value in choices if low <= value <= high), high)


def _constraints(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    accepted, refused = [], []
    for s in seen:
        if s.facts.operation != "createPet" or s.item.method != "POST":
            continue
        sent = json_of(s.item.body)
        if not isinstance(sent, dict) or not isinstance(sent.get("name"), str):
            continue
        if 200 <= s.status < 300:
            accepted.append((s, sent))
        elif s.condition == "field_constraint":
            refused.append((s, sent))
    blank = [(s, sent) for s, sent in refused if not sent["name"].strip()]
    if blank:
        result.set("collections.constraints.name.blank", "refuse",
                   cite(blank[0][0], note="a name of spaces refused"))  # fmt: skip
        refused = [pair for pair in refused if pair not in blank]
    # Lengths in characters; where those do not pin a refusal, in UTF-8 bytes.
    size: Callable[[str], int] = len
    longest = max((len(sent["name"]) for _, sent in accepted), default=0)
    if not any(len(sent["name"]) > longest for _, sent in refused):
        in_bytes = max((_bytes(sent["name"]) for _, sent in accepted), default=0)
        if any(_bytes(sent["name"]) > in_bytes for _, sent in refused):
            size, longest = _bytes, in_bytes
    categories = [sent.get("categoryId") for _, sent in accepted]
    lowest = min((c for c in categories if isinstance(c, int)), default=None)
    pinned = bool(blank)
    names = [(s, sent) for s, sent in refused if size(sent["name"]) > longest]
    if names:
        s, sent = min(names, key=lambda pair: size(pair[1]["name"]))
        length = size(sent["name"])
        if size is _bytes:
            result.set("collections.constraints.name.unit", "bytes",
                       cite(s, note=f"{length} bytes refused, {longest} accepted"))  # fmt: skip
        value = _round(longest, length - 1, _ROUND_LENGTHS)
        result.set(
            "collections.constraints.name.max_length",
            value,
            cite(s, note=f"a name of {length} refused, one of {longest} accepted"),
        )
        if longest != length - 1:
            result.estimate(
                "collections.constraints.name.max_length",
                f"collections.constraints.name.max_length is {longest} to {length - 1}: "
                f"written as {value}",
            )
        pinned = True
    low = [
        (s, sent) for s, sent in refused
        if size(sent["name"]) <= longest and isinstance(sent.get("categoryId"), int)
        and lowest is not None and sent["categoryId"] < lowest
    ]  # fmt: skip
    if low:
        s, sent = max(low, key=lambda pair: pair[1]["categoryId"])
        category = sent["categoryId"]
        assert lowest is not None
        value = _round(category + 1, lowest, _ROUND_MINIMA)
        result.set(
            "collections.constraints.categoryId.minimum",
            value,
            cite(s, note=f"categoryId {category} refused, {lowest} accepted"),
        )
        if category + 1 != lowest:
            result.estimate(
                "collections.constraints.categoryId.minimum",
                f"collections.constraints.categoryId.minimum is {category + 1} to {lowest}: "
                f"written as {value}",
            )
        pinned = True
    if refused and not pinned:
        result.open(
            "collections.constraints: a NewPet refused for a limit the recording does not "
            "pin to a field: " + cite(refused[0][0])
        )


def _bytes(name: str) -> int:
    return len(name.encode("utf-8", "surrogatepass"))


def _defaults(seen: list[Seen], result: Calibration, cite: Cite) -> None:
    """A default the 201 leaves out and a later read shows: applied when read."""
    found = read_default(seen)
    if found is None:
        return
    status, made, read = found
    note = f"created without a status, read as {status}"
    result.set("behaviour.default_status", status, cite(made, code=False),
               cite(read, code=False, note=note))  # fmt: skip
    result.set("collections.defaults.applied", "read",
               cite(made, code=False, note="the 201 has no status"),
               cite(read, code=False, note=note))  # fmt: skip
