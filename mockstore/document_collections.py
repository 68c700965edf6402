"""What a scenario's ``collections`` section changes in the OpenAPI document its mock serves.

``document.py`` builds the document a scenario's mock serves; this module adds
what ``collections`` makes the mock answer beyond the package's document, so a
client generated from it knows every parameter it may send and every header it
may read: the page's parameter (a cursor, an offset or a page number), ``Link``
and the total-count header on a listing, a status filter in any case, integers
written as strings or with a zero fraction, a NewPet's constraints, a default
status. Pure: a function of the scenario and the document being built.
"""

from __future__ import annotations

from typing import Any

from mockstore.scenario.collections import Collections

# The conditions each setting adds to an operation's refusals.
PAGE_CONDITIONS = ("bad_cursor", "bad_offset")


def conditions_added(collections: Collections, operation: str) -> tuple[str, ...]:
    """The conditions ``collections`` lets ``operation`` refuse beyond the package's."""
    if operation == "listPets" and collections.paged:
        return ("bad_cursor",) if collections.pagination.style == "cursor" else ("bad_offset",)
    if operation == "createPet" and (
        collections.name_length != (None, None)
        or collections.category_range != (None, None)
        or collections.blank_name_refused
    ):
        return ("field_constraint",)
    return ()


def _any_case(words: list[str]) -> str:
    """A pattern (ECMA 262 has no flag for it in JSON Schema) matching ``words`` in any case."""
    spelled = [
        "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word) for word in words
    ]
    return "^(" + "|".join(spelled) + ")$"


def _several_statuses(parameter: dict[str, Any], spelling: str) -> None:
    """The status filter as a list of statuses (``collections.filters.several_statuses``):
    comma-separated (form, not exploded), repeated (exploded), or either (said)."""
    parameter["schema"] = {"type": "array", "minItems": 1, "items": parameter["schema"]}
    parameter["style"] = "form"
    parameter["explode"] = spelling != "comma"
    parameter["description"] = (
        f"{parameter.get('description', '')} Several may be named, "
        + {
            "comma": "comma-separated (available,pending).",
            "repeated": "the parameter repeated (status=available&status=pending).",
            "both": "comma-separated or the parameter repeated.",
        }[spelling]
    ).strip()


def list_pets(spec: dict[str, Any], collections: Collections, document: dict[str, Any]) -> None:
    """listPets' parameters and its 200's headers as the scenario's mock reads and writes them."""
    parameters = spec.setdefault("parameters", [])
    pagination = collections.pagination
    for parameter in parameters:
        if parameter.get("name") == "status" and collections.status_case == "insensitive":
            words = document["components"]["schemas"]["PetStatus"]["enum"]
            parameter["schema"] = {"type": "string", "pattern": _any_case(words)}
            parameter["description"] = f"{parameter.get('description', '')} In any case.".strip()
        if parameter.get("name") == "status" and collections.several_statuses != "refuse":
            _several_statuses(parameter, collections.several_statuses)
        if parameter.get("name") == "limit" and collections.query_numbers == "lenient":
            parameter["description"] = (
                f"{parameter.get('description', '')} Also read written 20.0, with spaces."
            ).strip()
    style = pagination.style
    if style != "limit":
        name = collections.page_parameter
        schema: dict[str, Any] = {
            "cursor": {"type": "string", "maxLength": 512},
            "offset": {"type": "integer", "minimum": 0},
            "page": {"type": "integer", "minimum": 1, "default": 1},
        }[style]
        description = {
            "cursor": "Where the page starts: the opaque cursor of a Link the mock sent "
            "(made for the same status filter).",
            "offset": "How many pets to skip.",
            "page": "The page's number, from 1, of pages of limit pets.",
        }[style]
        parameters.append(
            {"name": name, "in": "query", "required": False, "description": description,
             "schema": schema}
        )  # fmt: skip
    answer = spec["responses"]["200"]
    headers = answer.setdefault("headers", {})
    if pagination.links:
        headers["Link"] = {
            "description": "The pages around this one (RFC 8288): "
            + ", ".join(f'rel="{rel}"' for rel in pagination.links)
            + ("; absolute URLs on the mock's address" if pagination.link_urls == "absolute"
               else "; paths under the mock's root"),
            "schema": {"type": "string"},
        }  # fmt: skip
    if pagination.total_header is not None:
        headers[pagination.total_header] = {
            "description": "How many pets the listing's filter keeps.",
            "schema": {"type": "integer", "minimum": 0},
        }
    for figure, header in pagination.page_headers:
        headers[header] = {
            "description": _PAGE_FIGURES[figure],
            # A next or previous page that does not exist is written empty.
            "schema": {"type": "string", "pattern": "^[0-9]*$"},
        }


_PAGE_FIGURES = {
    "page": "The page's number, from 1.",
    "per_page": "The pets a page holds (the limit).",
    "total_pages": "How many pages the listing's filter keeps.",
    "next_page": "The next page's number; empty on the last page.",
    "prev_page": "The previous page's number; empty on the first page.",
}


def new_pet_body(body: dict[str, Any], collections: Collections) -> None:
    """createPet's body schema (``body``: its own copy) under the scenario's intake rules."""
    schema = body["schema"]
    properties = schema.setdefault("properties", {})
    low, high = collections.name_length
    if low is not None or high is not None or collections.blank_name_refused:
        name = dict(properties.get("name", {"type": "string"}))
        if collections.name_in_bytes:
            # JSON Schema counts characters: a limit in bytes is said in words.
            name["description"] = (
                f"{name.get('description', '')} Its length in UTF-8 bytes: "
                f"{low if low is not None else 0} to {high if high is not None else 'any'}."
            ).strip()
        else:
            if low is not None:
                name["minLength"] = low
            if high is not None:
                name["maxLength"] = high
        if collections.blank_name_refused:
            name["pattern"] = r"\S"
        properties["name"] = name
    low, high = collections.category_range
    category = dict(properties.get("categoryId", {"type": "integer"}))
    if low is not None:
        category["minimum"] = low
    if high is not None:
        category["maximum"] = high
    if collections.body_numbers in ("lenient", "digits"):
        fraction = r"(\.0*)?" if collections.body_numbers == "lenient" else ""
        category = {
            "anyOf": [category, {"type": "string", "pattern": rf"^\s*[+-]?[0-9]+{fraction}\s*$"}],
            "description": "An integer, or one written as a string of digits.",
        }
    properties["categoryId"] = category
