"""What createPet accepts beyond the spec's schema: numbers as a provider reads them, constraints.

``collections.numbers.body`` says which spellings of a NewPet integer a provider
accepts: ``schema`` (JSON Schema's reading, mockstore's own: ``7`` and ``7.0``),
``strict`` (JSON integers only: ``7.0`` is refused), ``lenient`` (a string of
digits too: ``"7"``, ``"7.0"``) or ``digits`` (JSON integers and a string of whole
digits, ``"7"``: ``7.0`` and ``"7.0"`` are refused, as APIs that also take form-encoded
bodies read them); whatever is accepted is stored as an integer.
``collections.constraints`` limit a name's length and a categoryId's range beyond
what the spec states; a body past one is refused with the ``field_constraint``
condition (its code and status the scenario's, ``validation_failed`` and
``validation_status`` by default), naming the field, the limit and the value.

``Intake.of(collections)`` is None for a scenario with none of these, so the
default path pays one ``is None``. Pure functions of the parsed body.
"""

from __future__ import annotations

import re
from typing import Any

from mockstore import schemas
from mockstore.errors import ApiError, FieldProblem
from mockstore.scenario.collections import Collections

_DIGITS = re.compile(r"\s*([+-]?[0-9]{1,19})(?:\.0*)?\s*")
_WHOLE_DIGITS = re.compile(r"\s*([+-]?[0-9]{1,19})\s*")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


class Intake:
    """A scenario's rules for a NewPet beyond its schema, compiled."""

    __slots__ = ("_blank", "_bytes", "_category", "_integers", "_lenient", "_name", "_strict")

    def __init__(self, collections: Collections) -> None:
        self._integers = sorted(schemas.integer_fields("NewPet"))
        numbers = collections.body_numbers
        self._strict = numbers in ("strict", "digits")
        self._lenient = {"lenient": _DIGITS, "digits": _WHOLE_DIGITS}.get(numbers)
        self._name = collections.name_length
        self._category = collections.category_range
        self._bytes = collections.name_in_bytes
        self._blank = collections.blank_name_refused

    @classmethod
    def of(cls, collections: Collections) -> Intake | None:
        return None if collections.strict_intake else cls(collections)

    def prepare(self, value: Any) -> Any:
        """The body with its integers read as the provider reads them (before the schema).

        Raises ``ApiError`` (invalid_body) for a number ``strict`` refuses.
        """
        if not isinstance(value, dict):
            return value
        for name in self._integers:
            given = value.get(name)
            if isinstance(given, float) and self._strict:
                raise ApiError(
                    "validation_failed",
                    f"{name} must be an integer written without a fraction (got {_shown(given)})",
                    condition="invalid_body",
                    value=given,
                    parameter=name,
                    details=(
                        FieldProblem("body", (name,), "type", "an integer with a fraction", given),
                    ),
                )
            if isinstance(given, str) and self._lenient is not None:
                found = self._lenient.fullmatch(given)
                if found is not None:
                    value = {**value, name: int(found.group(1))}
        return value

    def check(self, pet: dict[str, Any]) -> None:
        """Refuse (``field_constraint``) a valid NewPet past one of the scenario's limits."""
        low, high = self._name
        name = pet.get("name")
        if isinstance(name, str):
            unit = "bytes" if self._bytes else "characters"
            size = len(name.encode("utf-8", "surrogatepass")) if self._bytes else len(name)
            if high is not None and size > high:
                _refuse(f"name is longer than {high} {unit} (got {size})", name, "name",
                        "maxLength")  # fmt: skip
            if low is not None and size < low:
                _refuse(f"name is shorter than {low} {unit} (got {size})", name, "name",
                        "minLength")  # fmt: skip
            if self._blank and not name.strip():
                _refuse("name must not be blank", name, "name", "pattern")
        low, high = self._category
        category = pet.get("categoryId")
        if isinstance(category, int):
            if low is not None and category < low:
                _refuse(
                    f"categoryId must be at least {low} (got {category})",
                    category,
                    "categoryId",
                    "minimum",
                )
            if high is not None and category > high:
                _refuse(
                    f"categoryId must be at most {high} (got {category})",
                    category,
                    "categoryId",
                    "maximum",
                )


def _refuse(message: str, value: Any, parameter: str, reason: str) -> None:
    # The field and value at fault (``reason`` in JSON Schema's words), for a scenario's
    # Error templates and details[].
    raise ApiError(
        "validation_failed",
        message,
        condition="field_constraint",
        value=value,
        parameter=parameter,
        details=(FieldProblem("body", (parameter,), reason, message, value),),
    )
