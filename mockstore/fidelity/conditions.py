"""What a request is, apart from who answers it: the conditions it meets, by the spec's rules.

A provider answers a request by conditions (no key, a bad ``limit``, an unknown
path, a body that is not JSON, ...), each with its own status and Error code.
To learn a provider's choice for a condition from a recorded answer (calibrate)
or to say which setting a difference belongs to (drift), the request must be
classified on its own, the way the OpenAPI document describes it:
``classify`` does that, with mockstore's own validation rules, and never looks
at an answer. Which condition a provider checks *first* is its choice; the
facts name each one the request meets, in mockstore's order.

Pure functions of the request's parts: no HTTP, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from mockstore import schemas
from mockstore.errors import ApiError
from mockstore.fidelity.conformance import inlined
from mockstore.routing import Router
from mockstore.validation import (
    QueryValidator,
    is_json_media_type,
    loads_bounded,
    parse_json_body,
    path_parameters,
)

_OPERATIONS = schemas.operations()
_ROUTER = Router(_OPERATIONS.values())
_LIST_QUERY = QueryValidator(_OPERATIONS["listPets"])
_NEW_PET_FIELDS = frozenset(schemas.object_fields("NewPet"))
_INTEGER_FIELDS = schemas.integer_fields("NewPet")
_DIGITS = re.compile(r"\s*[+-]?[0-9]+(\.0*)?\s*")
_NEW_PET = inlined(str(_OPERATIONS["createPet"].body_schema))


@dataclass(frozen=True)
class Facts:
    """What one request is: its caller's credentials, its route, its own problems.

    ``auth`` is ``missing`` (no Authorization), ``malformed`` (not ``Bearer
    <token>``) or ``bearer``; ``operation`` the operation the method and path
    name (HEAD names the GET one), else ``route`` says ``unknown_path`` or
    ``method_not_allowed``. ``problems`` are the conditions the request itself
    meets, in the order mockstore checks them (a createPet body: empty, media
    type, JSON, NewPet, unknown fields); ``body_size`` the bytes of its body.
    """

    auth: str
    operation: str | None
    route: str | None = None
    problems: tuple[str, ...] = ()
    body_size: int = 0
    unknown_fields: tuple[str, ...] = ()
    pet_id: int | None = None
    query: dict[str, list[str]] = field(default_factory=dict)
    # A createPet body's integer fields written with a zero fraction (7.0): valid by the
    # schema, refused by a provider that reads numbers strictly (collections.numbers).
    fractions: tuple[str, ...] = ()
    # ... and those written as a string of digits ("7"): refused by the schema, read by a
    # provider that reads numbers leniently; the name's length and the category sent.
    strings: tuple[str, ...] = ()
    name_length: int | None = None
    category: int | None = None

    @property
    def problem(self) -> str | None:
        """The first condition the request meets (mockstore's order), if any."""
        return self.route or (self.problems[0] if self.problems else None)


def authorization_kind(headers: list[tuple[str, str]]) -> str:
    """``missing``, ``malformed`` or ``bearer``: the Authorization header, as a provider reads it.

    (Several Authorization headers are malformed.)
    """
    values = [value for name, value in headers if name.lower() == "authorization"]
    if not values:
        return "missing"
    if len(values) > 1:
        return "malformed"
    scheme, _, token = values[0].strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip() or " " in token.strip():
        return "malformed"
    return "bearer"


def classify(
    method: str,
    relative_path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    declared_size: int | None = None,
) -> Facts:
    """The facts of one request; ``relative_path`` is under the base path (``/pets/7``).

    A recording repeats its requests: the facts of one already seen are reused.
    """
    content_type = next((v for n, v in headers if n.lower() == "content-type"), None)
    key = (
        method,
        relative_path,
        query,
        authorization_kind(headers),
        content_type,
        body,
        declared_size,
    )
    found = _seen.get(key)
    if found is None:
        found = _classify(method, relative_path, query, headers, body, declared_size)
        if len(_seen) >= _SEEN_LIMIT:
            _seen.clear()
        _seen[key] = found
    return found


_seen: dict[tuple[Any, ...], Facts] = {}
_SEEN_LIMIT = 20_000


def _classify(
    method: str,
    relative_path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    declared_size: int | None,
) -> Facts:
    auth = authorization_kind(headers)
    resolved = _ROUTER.resolve(method, relative_path)
    size = declared_size if declared_size is not None else len(body)
    parsed_query: dict[str, list[str]] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        parsed_query.setdefault(name, []).append(value)
    if resolved.operation is None:
        route = "method_not_allowed" if resolved.allow else "unknown_path"
        return Facts(auth, None, route, body_size=size, query=parsed_query)
    operation = resolved.operation.operation_id
    problems: list[str] = []
    unknown: tuple[str, ...] = ()
    pet_id = None
    if operation == "listPets":
        try:
            _LIST_QUERY(query.encode("latin-1", "replace"))
        except ApiError as refusal:
            problems.append(refusal.condition)
    elif operation == "getPet":
        try:
            pet_id = path_parameters(resolved.operation, resolved.params)["petId"]
        except ApiError as refusal:
            problems.append(refusal.condition)
    elif operation == "createPet":
        # A body the recording cut short (its declared size is more): what it held is
        # unknown, so no problem of its content is assumed.
        cut = declared_size is not None and declared_size > len(body)
        problems, unknown = _body_problems(headers, body, cut)
    if operation != "createPet":
        return Facts(auth, operation, None, tuple(problems), size, unknown, pet_id, parsed_query)
    value = json_of(body) if not problems or problems == ["invalid_body"] else None
    sent = value if isinstance(value, dict) else {}
    name, category = sent.get("name"), sent.get("categoryId")
    return Facts(
        auth, operation, None, tuple(problems), size, unknown, pet_id, parsed_query,
        fractions=tuple(sorted(n for n in _INTEGER_FIELDS if isinstance(sent.get(n), float))),
        strings=tuple(sorted(
            n for n in _INTEGER_FIELDS
            if isinstance(sent.get(n), str) and _DIGITS.fullmatch(sent[n])
        )),
        name_length=len(name) if isinstance(name, str) else None,
        category=category if isinstance(category, int) and not isinstance(category, bool)
        else None,
    )  # fmt: skip


def _body_problems(
    headers: list[tuple[str, str]], body: bytes, cut: bool = False
) -> tuple[list[str], tuple[str, ...]]:
    content_type = next((value for name, value in headers if name.lower() == "content-type"), None)
    problems: list[str] = []
    empty = not body.strip() and not cut
    if empty:
        problems.append("missing_body")
    # No Content-Type is no JSON either (mockstore's reading; some providers assume it).
    not_json = content_type is None or not is_json_media_type(content_type.encode("latin-1"))
    if not_json and (content_type is not None or not empty):
        problems.append("unsupported_media_type")
    if empty or cut:
        return problems, ()
    try:
        value = parse_json_body(body)
    except ApiError:
        problems.append("malformed_json")
        return problems, ()
    # The NewPet schema with its references inlined: a recording holds thousands of bodies.
    if next(schemas.errors_of(_NEW_PET, value), None) is not None:
        problems.append("invalid_body")
    unknown: tuple[str, ...] = ()
    if isinstance(value, dict):
        unknown = tuple(sorted(set(value) - _NEW_PET_FIELDS))
        if unknown:
            problems.append("unknown_field")
    return problems, unknown


def json_of(body: bytes) -> Any:
    """The JSON value of a body, or None (not JSON, or nested too deep to read safely)."""
    try:
        return loads_bounded(body)
    except ValueError:
        return None
