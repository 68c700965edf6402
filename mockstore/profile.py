"""A provider's profile: what a scenario's answers carry beyond mockstore's own, compiled once.

Where the spec says "not shown" a provider makes its own choices, and a scenario
states them (the ``behaviour`` settings of ``scenario.schema.json``). Most of
them change a value mockstore already writes, and live where that value is
made (``headers.py``, ``service.py``, ``ratelimit.py``, ``store.py``). The ones
here *add* to an answer, per answer:

- constant headers, on every answer or on those of a status (class) or an
  operation (``behaviour.headers``), the first rule of each name deciding;
- ``Location`` on a 201 and ``ETag`` on a read's 200 (``location``, ``etag``);
- Error body fields beyond ``code``, ``message`` and ``status``, constant or
  generated per answer (``error_fields``).

``AnswerProfile.of(scenario)`` is None for a scenario that adds none of them,
so the hot path pays one ``is None`` for the default scenario. The headers of
each (operation, status) are worked out once and kept.

Pure Python over bytes: no Starlette, no ASGI.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from mockstore.errors import ApiError, error_body
from mockstore.scenario.model import ErrorField, Scenario

Header = tuple[bytes, bytes]
# Rule blocks kept at once: one per (operation, status) in use, far fewer in practice.
_MAX_BLOCKS = 1024


def timestamp(now: float) -> str:
    """RFC 3339 UTC with milliseconds, as APIs write an Error's instant."""
    moment = datetime.fromtimestamp(now, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class AnswerProfile:
    """What the answers of one scenario carry beyond mockstore's own headers and bodies."""

    __slots__ = ("_blocks", "_rules", "_seed", "base_path", "error_fields", "etag", "location")

    def __init__(self, scenario: Scenario) -> None:
        behaviour = scenario.behaviour
        self._seed = f"mockstore-error-field-{scenario.seed}"
        self.base_path = scenario.base_path
        self._rules = behaviour.headers
        self.location = behaviour.location
        self.etag = dict(behaviour.etag)
        self.error_fields: tuple[ErrorField, ...] = behaviour.error_fields
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
            digest = hashlib.sha256(body).hexdigest()[:32].encode()
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

    def error_body(self, error: ApiError, request_id: str, now: float) -> bytes:
        """``error``'s Error body with this profile's fields."""
        extra: dict[str, Any] = {}
        for item in self.error_fields:
            if item.conditions is not None and error.condition not in item.conditions:
                continue
            if item.generate is None:
                extra[item.name] = item.value
            elif item.generate == "request_id":
                extra[item.name] = request_id
            elif item.generate == "uuid":
                extra[item.name] = self._uuid(item.name, request_id)
            else:
                extra[item.name] = timestamp(now)
        return error_body(error.code, error.message, error.status, **extra)

    def _uuid(self, field: str, request_id: str) -> str:
        """A random-looking UUID for one answer's field: a hash of the seed, the field and
        the answer's request id, so the same scenario and requests give the same bodies
        (and every process of a shared state the same as one)."""
        text = f"{self._seed}:{field}:{request_id}".encode()
        return str(uuid.UUID(bytes=hashlib.blake2b(text, digest_size=16).digest(), version=4))


def _pet_id(body: bytes) -> int | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    pet_id = value.get("id") if isinstance(value, dict) else None
    return pet_id if isinstance(pet_id, int) else None
