"""The in-memory pet inventory.

Pets are kept in id order with one ordered id list per status, so a listing
touches at most ``limit`` pets however large the store is. Each pet is encoded
to JSON once, when stored, and list bodies are cached per (status, limit)
until the next write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from mockstore.schemas import object_fields

Pet = dict[str, Any]
# The OpenAPI document's order (id, then the NewPet fields): every pet is encoded alike.
FIELD_ORDER = object_fields("Pet")
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


def _ordered(pet: Pet) -> Pet:
    ordered = {field: pet[field] for field in FIELD_ORDER if field in pet}
    if len(ordered) != len(pet):
        # Fields the document does not name (behaviour.unknown_fields: keep) follow.
        ordered.update(pet)
    return ordered


class StoreFull(Exception):
    """No int64 id is left to assign."""


class PetStore:
    """Pets by id, ordered, with an index per status."""

    MAX_ID = 2**63 - 1

    def __init__(self, pets: Iterable[Pet] = ()) -> None:
        self._pets: dict[int, Pet] = {}
        self._json: dict[int, bytes] = {}
        for pet in sorted(pets, key=lambda p: p["id"]):
            self._put(_ordered(pet))
        self._ids: list[int] = list(self._pets)
        self._by_status: dict[str | None, list[int]] = {}
        for pet_id, pet in self._pets.items():
            self._by_status.setdefault(pet.get("status"), []).append(pet_id)
        self._next_id = (max(self._pets) + 1) if self._pets else 1
        self._next_id = max(self._next_id, 1)
        self._list_cache: dict[tuple[str | None, int], bytes] = {}

    def copy(self) -> PetStore:
        """An independent store with the same pets, sharing their encoded JSON.

        Stored pets are never changed in place, so the copy shares them and only
        the indexes are copied: a new tenant costs O(pets) list copies, not a
        re-encoding of every pet.
        """
        twin = PetStore.__new__(PetStore)
        twin._pets = dict(self._pets)
        twin._json = dict(self._json)
        twin._ids = list(self._ids)
        twin._by_status = {status: list(ids) for status, ids in self._by_status.items()}
        twin._next_id = self._next_id
        twin._list_cache = dict(self._list_cache)
        return twin

    def _put(self, pet: Pet) -> None:
        try:
            encoded = _encode(pet).encode()
        except UnicodeEncodeError:
            # A JSON string may carry an escaped lone surrogate ("\\ud800") that
            # UTF-8 cannot hold; keeping the escape returns the name unchanged.
            encoded = _encode_ascii(pet).encode()
        # Encode before storing: a failure must not leave a half-stored pet.
        self._pets[pet["id"]] = pet
        self._json[pet["id"]] = encoded

    def create(self, new_pet: Pet) -> tuple[Pet, bytes]:
        """Store a NewPet under the next id; returns the Pet and its JSON."""
        if self._next_id > self.MAX_ID:
            raise StoreFull
        pet_id = self._next_id
        self._next_id += 1
        pet = _ordered({**new_pet, "id": pet_id})
        self._put(pet)
        # Ids only grow, so appending keeps every list in id order.
        self._ids.append(pet_id)
        self._by_status.setdefault(pet.get("status"), []).append(pet_id)
        self._list_cache.clear()
        return pet, self._json[pet_id]

    def get(self, pet_id: int) -> Pet | None:
        return self._pets.get(pet_id)

    def get_json(self, pet_id: int) -> bytes | None:
        return self._json.get(pet_id)

    def list_json(self, limit: int, status: str | None = None) -> bytes:
        """The JSON array of the first ``limit`` pets in id order."""
        cache_key = (status, limit)
        body = self._list_cache.get(cache_key)
        if body is None:
            ids = self._ids if status is None else self._by_status.get(status, [])
            encoded = self._json
            body = b"[" + b",".join([encoded[i] for i in ids[:limit]]) + b"]"
            if len(self._list_cache) > 1024:
                self._list_cache.clear()
            self._list_cache[cache_key] = body
        return body

    def list(self, limit: int, status: str | None = None) -> list[Pet]:
        ids = self._ids if status is None else self._by_status.get(status, [])
        return [self._pets[i] for i in ids[:limit]]

    def __len__(self) -> int:
        return len(self._pets)

    def __iter__(self) -> Iterator[Pet]:
        return (self._pets[i] for i in self._ids)

    @property
    def next_id(self) -> int:
        return self._next_id
