"""A listPets status filter naming several statuses (``collections.filters.several_statuses``).

The spec's ``status`` is one PetStatus; many providers take several, comma-separated
(``status=available,pending``) or repeated (``status=available&status=pending``), and
list the pets of any of them. Such a query fails the spec's validation first, so the
default path never comes here: only its ``bad_status_filter`` refusal is read again.

The statuses are passed on as one string, joined by ``mockstore.store.SEVERAL`` in the
PetStatus enum's order (``available,pending`` however the client wrote them), so a
cursor made for the listing names the same filter whichever order the next request
gives, and the store merges the statuses' ordered members into one listing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from mockstore.errors import ApiError
from mockstore.schemas import openapi_document
from mockstore.store import SEVERAL

# listPets's reading of a query without the status filter (the rest of its rules).
ReadRest = Callable[[bytes, "ApiError | None"], dict[str, Any]]


def pet_statuses() -> tuple[str, ...]:
    """The PetStatus enum, in the OpenAPI document's order."""
    return tuple(openapi_document()["components"]["schemas"]["PetStatus"]["enum"])


class SeveralStatuses:
    """How a provider reads a status filter that names several statuses.

    ``spelling``: comma, repeated or both (the schema's ``several_statuses``);
    ``any_case``: each status compared lower-cased (``status_case: insensitive``);
    ``repeated``: how a repeated status is read under ``comma`` (refuse, first, last).
    """

    def __init__(self, spelling: str, any_case: bool, repeated: str) -> None:
        self.spelling = spelling
        self.any_case = any_case
        self.repeated = repeated
        self.statuses = pet_statuses()

    def read(self, query: bytes, refusal: ApiError, read_rest: ReadRest) -> dict[str, Any]:
        """The listing's values with ``status`` naming every status asked for.

        ``refusal`` is the spec's; it stands when a status named is not a PetStatus
        (or a repeated one is refused), and a query that names one status at most is
        read as before (``read_rest``).
        """
        pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in pairs if name == "status"]
        if len(given) < 2 and not any(SEVERAL in value for value in given):
            return read_rest(query, refusal)
        named = self._named(given, refusal)
        wanted = set(named)
        if not named or not wanted <= set(self.statuses):
            raise refusal
        rest = urlencode([(name, value) for name, value in pairs if name != "status"])
        values = dict(read_rest(rest.encode("latin-1"), None))
        values["status"] = SEVERAL.join(status for status in self.statuses if status in wanted)
        return values

    def _named(self, given: list[str], refusal: ApiError) -> list[str]:
        """The statuses the values name, as written (lower-cased when case does not matter)."""
        if self.spelling == "repeated":
            named = given
        else:
            if self.spelling == "comma" and len(given) > 1:
                if self.repeated == "refuse":
                    raise refusal
                given = given[:1] if self.repeated == "first" else given[-1:]
            named = named_statuses(given)
        return [status.lower() for status in named] if self.any_case else named


def spelling_of(values: list[str]) -> str | None:
    """How a listing's ``status`` values name several statuses (comma, repeated, both),
    or None when they name one at most: what calibrate learns and drift attributes."""
    comma = any(SEVERAL in value for value in values)
    repeated = len(values) > 1
    if comma and repeated:
        return "both"
    return "comma" if comma else "repeated" if repeated else None


def named_statuses(values: list[str]) -> list[str]:
    """Every status ``values`` name, as written (``available,pending`` is two)."""
    return [part for value in values for part in value.split(SEVERAL)]
