"""A provider's profile: what a scenario's answers carry beyond mockstore's own, compiled once.

Where the spec says "not shown" a provider makes its own choices, and a scenario
states them (the ``behaviour`` settings of ``scenario.schema.json``). Most of
them change a value mockstore already writes, and live where that value is
made (``headers.py``, ``service.py``, ``ratelimit.py``, ``store.py``). The ones
here *add* to an answer, per answer:

- constant headers, on every answer or on those of a status (class) or an
  operation (``behaviour.headers``), the first rule of each name deciding;
- ``Location`` on a 201 and ``ETag`` on a read's 200 (``location``, ``etag``);
- Error body fields beyond ``code``, ``message`` and ``status``, constant,
  templated or computed per answer (``error_fields``), and each condition's
  message as the provider words it (``error_messages``): ``error_bodies.py``.

``AnswerProfile.of(scenario)`` is None for a scenario that adds none of them,
so the hot path pays one ``is None`` for the default scenario. The headers of
each (operation, status) are worked out once and kept.

Pure Python over bytes: no Starlette, no ASGI.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

from mockstore.error_bodies import ErrorBodies, ErrorFacts
from mockstore.errors import ApiError
from mockstore.scenario.model import Scenario

Header = tuple[bytes, bytes]
# Rule blocks kept at once: one per (operation, status) in use, far fewer in practice.
_MAX_BLOCKS = 1024


# behaviour.etag_digest: the body's digest an ETag carries, in hex (all of it: behaviour.etag_digits
# says how many of its digits are kept, at most its length, checked at load).
ETAG_DIGESTS: dict[str, Callable[[bytes], str]] = {
    "sha256": lambda body: hashlib.sha256(body).hexdigest(),
    # A validator, not a secret.
    "sha1": lambda body: hashlib.sha1(body, usedforsecurity=False).hexdigest(),
    "md5": lambda body: hashlib.md5(body, usedforsecurity=False).hexdigest(),
}


class AnswerProfile:
    """What the answers of one scenario carry beyond mockstore's own headers and bodies."""

    __slots__ = (
        "_blocks",
        "_digest",
        "_rules",
        "base_path",
        "digits",
        "errors",
        "etag",
        "location",
    )

    def __init__(self, scenario: Scenario) -> None:
        behaviour = scenario.behaviour
        self.base_path = scenario.base_path
        self._rules = behaviour.headers
        self.location = behaviour.location
        self.etag = dict(behaviour.etag)
        self._digest = ETAG_DIGESTS[behaviour.etag_digest]
        self.digits = behaviour.etag_digits
        self.errors = ErrorBodies(behaviour, scenario.seed)
        self._blocks: dict[tuple[str | None, int], tuple[Header, ...]] = {}

    @classmethod
    def of(cls, scenario: Scenario) -> AnswerProfile | None:
        """The scenario's profile, or None when its answers carry nothing more."""
        behaviour = scenario.behaviour
        if (
            behaviour.headers
            or behaviour.location != "none"
            or behaviour.etag
            or behaviour.error_fields
            or behaviour.error_messages
        ):
            return cls(scenario)
        return None

    def headers(
        self,
        operation: str | None,
        status: int,
        body: bytes,
        extra: Sequence[Header],
        origin: str | None,
    ) -> Sequence[Header]:
        """``extra`` and the headers this profile adds to an answer.

        ``origin`` is the request's ``scheme://host`` (for an absolute ``Location``).
        """
        added: list[Header] = []
        if self._rules:
            added.extend(self._block(operation, status))
        if status == 201 and self.location != "none" and operation == "createPet":
            pet_id = _pet_id(body)
            if pet_id is not None:
                path = f"{self.base_path}/pets/{pet_id}"
                if self.location == "url" and origin:
                    path = origin + path
                added.append((b"location", path.encode("latin-1")))
        if status == 200 and operation in self.etag:
            digest = self._digest(body)[: self.digits].encode()
            weak = self.etag[operation] == "weak"
            added.append((b"etag", b'W/"%s"' % digest if weak else b'"%s"' % digest))
        if not added:
            return extra
        return [*extra, *added]

    def _block(self, operation: str | None, status: int) -> tuple[Header, ...]:
        where = (operation, status)
        block = self._blocks.get(where)
        if block is None:
            chosen: dict[str, Header] = {}
            for rule in self._rules:
                name = rule.name.lower()
                if name not in chosen and rule.matches(operation, status):
                    chosen[name] = (name.encode("latin-1"), rule.value.encode("latin-1"))
            block = tuple(chosen.values())
            if len(self._blocks) >= _MAX_BLOCKS:
                self._blocks.clear()
            self._blocks[where] = block
        return block

    @property
    def rewrites_errors(self) -> bool:
        """Whether this profile's Error bodies differ from ``ApiError.body``'s."""
        return self.errors.rewrites

    def error_body(self, error: ApiError, facts: ErrorFacts) -> bytes:
        """``error``'s Error body with this profile's fields and messages."""
        return self.errors.body(error, facts)


def _pet_id(body: bytes) -> int | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    pet_id = value.get("id") if isinstance(value, dict) else None
    return pet_id if isinstance(pet_id, int) else None
