"""The ``collections`` section of a scenario: the pets collection as its provider keeps it.

How ``listPets`` pages (a cursor, an offset, a page number; ``Link`` and a
total-count header), orders (by any field, either direction, with or without
case) and filters (``status`` with or without case) the pets, and what
``createPet`` accepts and stores (defaults when stored or when read, lenient
or strict numbers, constraints beyond the spec's, unknown fields). ``Collections``
is the frozen model; ``build_collections`` reads it from a scenario file's data,
noting what the schema cannot check. Every default is the schema's (mockstore's
own behaviour), so a scenario without the section answers as before.

Three ``behaviour`` settings are the older spellings of three of these
(``list_order``, ``default_status``, ``unknown_fields``): they map in here, and a
file gives a setting in one spelling only. ``given`` remembers which spellings a
file used, so advice (drift) names the one the file uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mockstore import schemas
from mockstore.scenario.loader import did_you_mean, scenario_schema

Path = tuple[str | int, ...]

# The parameter each style names its page with, unless the scenario names another.
DEFAULT_PARAMETER = {"limit": "", "cursor": "cursor", "offset": "offset", "page": "page"}
# behaviour.<alias> -> the collections setting it spells (and how its values map).
ALIASES = {
    "list_order": ("order",),
    "default_status": ("defaults", "status"),
    "unknown_fields": ("unknown_fields",),
}
# The listPets parameters the spec names: a page parameter may not take one of them.
_TAKEN_PARAMETERS = frozenset({"limit", "status"})


_NAME = ("collections", "constraints", "name")


def _node(*path: str) -> dict[str, Any]:
    node: dict[str, Any] = scenario_schema()["properties"]["collections"]
    for part in path:
        node = node["properties"][part]
    return node


def _default(*path: str) -> Any:
    return _node(*path).get("default")


@dataclass(frozen=True, slots=True)
class Pagination:
    """``collections.pagination``: how a following page is asked for, and what answers say."""

    style: str = _default("pagination", "style")
    parameter: str = ""  # the style's own by default (DEFAULT_PARAMETER)
    links: tuple[str, ...] = tuple(_default("pagination", "links"))
    link_urls: str = _default("pagination", "link_urls")
    total_header: str | None = _default("pagination", "total_header")
    # figure (page, per_page, total_pages, next_page, prev_page) -> its header's name
    page_headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Order:
    """``collections.order``: the field, the direction and how text compares."""

    by: str = _default("order", "by")
    direction: str = _default("order", "direction")
    case: str = _default("order", "case")

    @property
    def descending(self) -> bool:
        return self.direction == "descending"

    @property
    def by_position(self) -> bool:
        """Ordered by id or by arrival: the scenario's pets all come before the created ones
        (or all after, descending), so no listing interleaves the two."""
        return self.by in ("id", "insertion")


@dataclass(frozen=True, slots=True)
class Collections:
    """The pets collection's rules: the schema's ``collections`` (and its three aliases)."""

    pagination: Pagination = Pagination()
    order: Order = Order()
    status_case: str = _default("filters", "status_case")
    several_statuses: str = _default("filters", "several_statuses")
    default_status: str | None = None  # the schema's "omit"
    default_applied: str = _default("defaults", "applied")
    body_numbers: str = _default("numbers", "body")
    query_numbers: str = _default("numbers", "query")
    name_length: tuple[int | None, int | None] = (None, None)  # (min_length, max_length)
    category_range: tuple[int | None, int | None] = (None, None)  # (minimum, maximum)
    name_in_bytes: bool = False  # constraints.name.unit: bytes (UTF-8)
    blank_name_refused: bool = False  # constraints.name.blank: refuse
    unknown_fields: str = _default("unknown_fields")
    repeated_parameters: str = _default("repeated_parameters")
    # The behaviour aliases the file spelled its settings with (list_order, ...).
    given: frozenset[str] = frozenset()

    @property
    def paged(self) -> bool:
        """Pages beyond the first can be asked for (a cursor, an offset or a page)."""
        return self.pagination.style != "limit"

    @property
    def page_parameter(self) -> str:
        return self.pagination.parameter or DEFAULT_PARAMETER[self.pagination.style]

    @property
    def plain_listing(self) -> bool:
        """A listing as mockstore's own: the first ``limit`` by id or arrival, nothing more.

        Such a scenario keeps the store's own O(limit) listing of id lists; any other
        listing (pages, a field's order, newest first by arrival, a total count) is a page
        of the store's ordered members (``mockstore.pages``).
        """
        # Several statuses are a merge of their ordered members: a page of them.
        return (
            not self.paged
            and self.several_statuses == "refuse"
            and self.pagination.total_header is None
            and not self.pagination.page_headers
            and list_order_of(self.order) is not None
        )

    @property
    def strict_intake(self) -> bool:
        """createPet reads a body as the schema alone says (no rule of this section's)."""
        return (
            self.body_numbers == "schema"
            and self.name_length == (None, None)
            and self.category_range == (None, None)
            and not self.blank_name_refused
        )


def list_order_of(order: Order) -> str | None:
    """``behaviour.list_order``'s value for ``order``, or None when it has none."""
    if order.by == "id":
        return order.direction
    if order.by == "insertion" and not order.descending:
        return "insertion"
    return None


def _order_of_list_order(value: str) -> Order:
    if value == "insertion":
        return Order(by="insertion")
    return Order(by="id", direction=value)


Problem = Callable[[Path, str], None]
Getter = Callable[[Path, Any], Any]


def build_collections(
    data: dict[str, Any], get: Getter, problem: Problem, written: dict[str, str]
) -> Collections:
    """The ``Collections`` a file's data states, its problems reported through ``problem``.

    ``get(path, default)`` reads a clean value of the file (``default`` where it is
    absent or refused by the schema); ``written`` maps each header mockstore writes
    itself (lower case) to the setting that decides it.
    """
    section = data.get("collections")
    section = section if isinstance(section, dict) else {}
    behaviour = data.get("behaviour")
    behaviour = behaviour if isinstance(behaviour, dict) else {}
    given = frozenset(alias for alias in ALIASES if alias in behaviour)
    for alias, target in ALIASES.items():
        node: Any = section
        for part in target:
            node = node.get(part) if isinstance(node, dict) else None
        if alias in behaviour and node is not None:
            problem(
                ("collections", *target),
                f"behaviour.{alias} is the older spelling of collections.{'.'.join(target)}: "
                "give one of them",
            )

    style = get(("collections", "pagination", "style"), _default("pagination", "style"))
    parameter = get(("collections", "pagination", "parameter"), "")
    links = tuple(get(("collections", "pagination", "links"), ()))
    total = get(("collections", "pagination", "total_header"), None)
    if links and style == "limit":
        problem(
            ("collections", "pagination", "links"),
            "links need pages: set collections.pagination.style to cursor, offset or page",
        )
    if parameter in _TAKEN_PARAMETERS:
        problem(
            ("collections", "pagination", "parameter"),
            f"{parameter!r} is a listPets parameter of the spec's: name the page otherwise",
        )
    page_headers = get(("collections", "pagination", "page_headers"), {})
    page_headers = tuple(page_headers.items()) if isinstance(page_headers, dict) else ()
    if page_headers and style != "page":
        problem(
            ("collections", "pagination", "page_headers"),
            "page headers state page numbers: set collections.pagination.style to page",
        )
    for figure, header in page_headers:
        if header.lower() in written:
            problem(
                ("collections", "pagination", "page_headers", figure),
                f"mockstore writes {header} itself ({written[header.lower()]})",
            )
    if isinstance(total, str) and total.lower() in written:
        problem(
            ("collections", "pagination", "total_header"),
            f"mockstore writes {total} itself ({written[total.lower()]})",
        )
    pagination = Pagination(
        style,
        parameter,
        links,
        get(("collections", "pagination", "link_urls"), "relative"),
        total,
        page_headers,
    )

    if "list_order" in given:
        order = _order_of_list_order(get(("behaviour", "list_order"), "ascending"))
    else:
        order = Order(
            get(("collections", "order", "by"), _default("order", "by")),
            get(("collections", "order", "direction"), _default("order", "direction")),
            get(("collections", "order", "case"), _default("order", "case")),
        )
    if "default_status" in given:
        status = get(("behaviour", "default_status"), "omit")
    else:
        status = get(("collections", "defaults", "status"), "omit")
    if "unknown_fields" in given:
        unknown = get(("behaviour", "unknown_fields"), "drop")
    else:
        unknown = get(("collections", "unknown_fields"), "drop")

    name = (
        get(("collections", "constraints", "name", "min_length"), None),
        get(("collections", "constraints", "name", "max_length"), None),
    )
    category = (
        get(("collections", "constraints", "categoryId", "minimum"), None),
        get(("collections", "constraints", "categoryId", "maximum"), None),
    )
    if None not in name and name[0] > name[1]:
        problem(
            ("collections", "constraints", "name", "min_length"),
            f"min_length ({name[0]}) is more than max_length ({name[1]})",
        )
    if None not in category and category[0] > category[1]:
        problem(
            ("collections", "constraints", "categoryId", "minimum"),
            f"minimum ({category[0]}) is more than maximum ({category[1]})",
        )
    return Collections(
        pagination=pagination,
        order=order,
        status_case=get(("collections", "filters", "status_case"), "sensitive"),
        several_statuses=get(("collections", "filters", "several_statuses"), "refuse"),
        default_status=None if status == "omit" else status,
        default_applied=get(("collections", "defaults", "applied"), "stored"),
        body_numbers=get(("collections", "numbers", "body"), "schema"),
        query_numbers=get(("collections", "numbers", "query"), "strict"),
        name_length=name,
        category_range=category,
        name_in_bytes=get((*_NAME, "unit"), "characters") == "bytes",
        blank_name_refused=get((*_NAME, "blank"), "allow") == "refuse",
        unknown_fields=unknown,
        repeated_parameters=get(("collections", "repeated_parameters"), "refuse"),
        given=given,
    )


def scenario_pets(
    items: list[tuple[int, dict[str, Any]]],
    clean: Callable[[Path], bool],
    problem: Callable[..., None],
    line_of: Callable[[int], int],
    keep: bool,
    known: bool = False,
) -> list[dict[str, Any]]:
    """The collection's first pets, ``pets:`` in the file: each a valid Pet, each id once.

    ``items`` are the list's (index, mapping) entries, ``clean(path)`` whether the schema
    found nothing wrong there, ``line_of(index)`` the line an entry starts on; ``keep``:
    the provider keeps unknown fields, so its pets may carry some; ``known``: jsonschema
    found these pets valid before (``mockstore.verdicts``), so it is not asked again.
    """
    validator = None if known else schemas.schema_validator("Pet")
    fields = set(schemas.object_fields("Pet"))
    integers = schemas.integer_fields("Pet")
    seen: dict[Any, int] = {}
    pets = []
    for index, pet in items:
        if not clean(("pets", index)):
            continue
        errors = [] if validator is None else list(schemas.errors_of(validator, pet))
        for error in errors:
            problem(
                ("pets", index, *error.absolute_path),
                "not a valid Pet: " + schemas.describe(error, ""),
            )
        extra = [] if keep else sorted(set(pet) - fields)
        for name in extra:
            problem(
                ("pets", index, name),
                f"unknown Pet field {name!r}{did_you_mean(name, fields)}"
                f" (a Pet has {', '.join(sorted(fields))})",
                key=True,
            )
        pet_id = pet.get("id")
        id_ok = not any(tuple(e.absolute_path)[:1] == ("id",) for e in errors)
        if pet_id is not None and id_ok:
            # Checked even on an otherwise broken pet, so every clash shows at once.
            if pet_id in seen:
                problem(
                    ("pets", index, "id"),
                    f"pet id {pet_id} is used twice (first on line {line_of(seen[pet_id])})",
                )
                continue
            seen[pet_id] = index
        if not errors and not extra:
            pets.append(schemas.as_integers(dict(pet), integers))
    return pets


__all__ = [
    "ALIASES",
    "DEFAULT_PARAMETER",
    "Collections",
    "Order",
    "Pagination",
    "build_collections",
    "list_order_of",
    "scenario_pets",
]
