"""The ``collections`` setting behind a difference drift finds, and the value that removes it.

``attribution`` asks here about differences the collection decides: a status
filter in capitals, an integer spelled ``7.0`` or ``"7"``, a NewPet past a
provider's own limit, a page parameter the mock does not read, a listing's
``Link`` (its relations, their order, the form of its URLs, its page parameter),
the total-count header, the order of a listing, a default the 201 leaves out.
Each answer is a (setting, value) pair: the setting by its path in the scenario
schema (checked when this module loads), the value a 0- or 1-tuple, as
``attribution.Cause`` holds it. A setting a scenario spells the older way
(``behaviour.list_order``, ``default_status``, ``unknown_fields``) is named the
way the scenario spells it, so the suggestion validates when applied.

Pure functions; no HTTP, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from mockstore.fidelity.conditions import Facts
from mockstore.fidelity.listings import LinkShape
from mockstore.scenario import Scenario, scenario_schema
from mockstore.scenario.collections import DEFAULT_PARAMETER, list_order_of
from mockstore.status_filter import named_statuses, spelling_of

Found = tuple[str, tuple[Any, ...]]
_STATUSES = ("available", "pending", "sold")


def _named(path: str) -> str:
    node: Any = scenario_schema()
    for part in path.split("."):
        node = (node.get("properties") or {}).get(part)
        if node is None:
            raise LookupError(f"drift names {path!r}, which the scenario schema does not have")
    return path


PAGINATION = _named("collections.pagination")
STYLE = _named("collections.pagination.style")
PARAMETER = _named("collections.pagination.parameter")
LINKS = _named("collections.pagination.links")
LINK_URLS = _named("collections.pagination.link_urls")
TOTAL_HEADER = _named("collections.pagination.total_header")
ORDER = _named("collections.order")
STATUS_CASE = _named("collections.filters.status_case")
SEVERAL_STATUSES = _named("collections.filters.several_statuses")
APPLIED = _named("collections.defaults.applied")
DEFAULT = _named("collections.defaults.status")
BODY_NUMBERS = _named("collections.numbers.body")
QUERY_NUMBERS = _named("collections.numbers.query")
NAME_MAX = _named("collections.constraints.name.max_length")
CATEGORY_MIN = _named("collections.constraints.categoryId.minimum")
UNKNOWN = _named("collections.unknown_fields")
LIST_ORDER = _named("behaviour.list_order")
DEFAULT_STATUS = _named("behaviour.default_status")
UNKNOWN_FIELDS = _named("behaviour.unknown_fields")

SETTINGS: tuple[str, ...] = (
    PAGINATION, STYLE, PARAMETER, LINKS, LINK_URLS, TOTAL_HEADER, ORDER, STATUS_CASE,
    SEVERAL_STATUSES,
    APPLIED, DEFAULT, BODY_NUMBERS, QUERY_NUMBERS, NAME_MAX, CATEGORY_MIN, UNKNOWN,
)  # fmt: skip


def _lenient_number(raw: str) -> bool:
    """A limit the spec's rules refuse that a lenient provider reads (``7.0``, `` 7``)."""
    return re.fullmatch(r"\s*\+?[0-9]+(\.0*)?\s*", raw) is not None and not raw.isdigit()


def status_cause(rc: str | None, mc: str | None, facts: Facts, scenario: Scenario) -> Found | None:
    """The collections setting behind a status difference, or None (not the collection's)."""
    if facts.operation == "listPets":
        several = _several_statuses(
            rc, mc, facts.query.get("status", []), scenario.collections.several_statuses
        )
        if several is not None:
            return several
        given = facts.query.get("status", [""])[-1]
        if (
            "bad_status_filter" in (rc, mc)
            and given not in _STATUSES
            and given.lower() in _STATUSES
        ):
            if rc is None:
                return STATUS_CASE, ("insensitive",)
            if mc is None:
                return STATUS_CASE, ("sensitive",)
        raw = facts.query.get("limit", [""])[-1]
        if "bad_limit" in (rc, mc) and raw and not raw.isdigit() and _lenient_number(raw):
            if rc is None:
                return QUERY_NUMBERS, ("lenient",)
            if mc is None:
                return QUERY_NUMBERS, ("strict",)
        if mc in ("bad_cursor", "bad_offset") and rc is None:
            return STYLE, ()
    if facts.operation != "createPet":
        return None
    collections = scenario.collections
    if "invalid_body" in (rc, mc) and (facts.strings or facts.fractions):
        if facts.strings:
            return BODY_NUMBERS, ("lenient" if rc is None else "schema",)
        if rc is None and mc == "invalid_body":
            return BODY_NUMBERS, ("schema",)
        if mc is None:
            return BODY_NUMBERS, ("strict",)
    if rc == "field_constraint" and mc is None:
        if facts.name_length is not None and facts.name_length > 32:
            return NAME_MAX, (facts.name_length - 1,)
        if facts.category is not None:
            return CATEGORY_MIN, (facts.category + 1,)
        return NAME_MAX, ()
    if mc == "field_constraint" and rc is None:
        longest = collections.name_length[1]
        if longest is not None and facts.name_length is not None and facts.name_length > longest:
            return NAME_MAX, (facts.name_length,)
        least = collections.category_range[0]
        if least is not None and facts.category is not None and facts.category < least:
            return CATEGORY_MIN, (facts.category,)
    return None


def _several_statuses(
    rc: str | None, mc: str | None, values: list[str], reading: str
) -> Found | None:
    """A filter naming several statuses that one side answered and the other refused
    (``reading``: the scenario's; a spelling the provider reads beside it makes both)."""
    spelling = spelling_of(values)
    if spelling is None or "bad_status_filter" not in (rc, mc):
        return None
    if not {status.lower() for status in named_statuses(values)} <= set(_STATUSES):
        return None
    if rc is None:
        return SEVERAL_STATUSES, (spelling if reading in ("refuse", spelling) else "both",)
    if mc is None and reading != "refuse":
        # The mock reads a spelling the provider refuses: the other one, or none.
        kept = {"both": {"comma": "repeated", "repeated": "comma"}.get(spelling)}.get(reading)
        return SEVERAL_STATUSES, (kept or "refuse",)
    return None


def link_cause(was: LinkShape, now: LinkShape, scenario: Scenario) -> Found:
    """The setting behind a listing's Link that differs (``listings.same_shape``)."""
    collections = scenario.collections
    if was.form == "none":
        return LINKS, ([],)
    if not collections.paged:
        # Pages and links at once: a style alone writes no Link, links alone do not validate.
        style = was.style or "cursor"
        value: dict[str, Any] = {"style": style, "links": list(was.rels)}
        if was.parameter and was.parameter != DEFAULT_PARAMETER[style]:
            value["parameter"] = was.parameter
        if was.form == "absolute":
            value["link_urls"] = "absolute"
        if collections.pagination.total_header is not None:
            value["total_header"] = collections.pagination.total_header
        return PAGINATION, (value,)
    if now.form == "none":
        return LINKS, (list(was.rels),)
    if was.form != now.form:
        return LINK_URLS, (was.form,)
    if was.parameter != now.parameter and was.parameter is not None:
        return PARAMETER, (was.parameter,)
    return LINKS, (list(was.rels),)


def total_cause(name: str, was: str | None) -> Found:
    """The setting behind a total-count header one listing has and the other has not."""
    return TOTAL_HEADER, (name if was is not None else None,)


def order_cause(candidates: set[tuple[str, str, str]], scenario: Scenario) -> Found:
    """The setting behind a listing in another order: the order the recording is in."""
    for by in ("id", "name", "categoryId", "status"):
        matching = sorted(c for c in candidates if c[0] == by)
        if not matching:
            continue
        _, direction, case = next((c for c in matching if c[2] == "sensitive"), matching[0])
        value: dict[str, str] = {"by": by}
        if direction != "ascending":
            value["direction"] = direction
        if case != "sensitive":
            value["case"] = case
        if "list_order" in scenario.collections.given:
            # The scenario spells its order the older way: say it so, where that can.
            older = list_order_of(scenario.collections.order.__class__(by, direction, case))
            if older is not None:
                return LIST_ORDER, (older,)
        return ORDER, (value,)
    return ORDER, ()


def spelled(path: str, scenario: Scenario) -> str:
    """``behaviour.default_status`` or ``behaviour.unknown_fields`` as the scenario spells it."""
    given = scenario.collections.given
    if path == DEFAULT_STATUS and "default_status" not in given and _set(scenario, "defaults"):
        return DEFAULT
    if path == UNKNOWN_FIELDS and "unknown_fields" not in given and _set(scenario, "unknown"):
        return UNKNOWN
    return path


def _set(scenario: Scenario, part: str) -> bool:
    """Whether the scenario states it in its collections section (not the default)."""
    collections = scenario.collections
    if part == "defaults":
        return collections.default_status is not None or collections.default_applied != "stored"
    return collections.unknown_fields != "drop"
