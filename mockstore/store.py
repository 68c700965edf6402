"""The in-memory pet inventory.

Pets are kept in id order with one ordered id list per status, so a listing
touches at most ``limit`` pets however large the store is. Each pet is encoded
to JSON once, when stored, and list bodies are cached per (status, limit)
until the next write, within a byte budget.

The pets a scenario lists or generates are bounded by the scenario schema;
those created through the API are bounded in bytes: ``create`` refuses a pet
that would take the store's created pets past the budget it is given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from mockstore.budget import ByteBudget
from mockstore.schemas import object_fields

Pet = dict[str, Any]
# The OpenAPI document's order (id, then the NewPet fields): every pet is encoded alike.
FIELD_ORDER = object_fields("Pet")
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
# The memory a stored pet holds beyond twice its JSON (it is kept as a dict and
# as its encoding): the dict, its ints and strings' headers, index slots.
PET_OVERHEAD = 500
# 4 MiB of cached list bodies; a body over 256 KiB is rebuilt on each request.
_LIST_CACHE_BYTES = 4 * 1024 * 1024
_LIST_CACHE_ITEM = 256 * 1024


def _ordered(pet: Pet) -> Pet:
    return {field: pet[field] for field in FIELD_ORDER if field in pet}


class StoreFull(Exception):
    """No int64 id is left to assign, or the created pets' budget is spent."""


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
        self._list_budget = ByteBudget(_LIST_CACHE_BYTES, _LIST_CACHE_ITEM)
        self.created_bytes = 0  # the estimated memory of the pets created through create()

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
        twin._list_budget = self._list_budget.copy()
        twin.created_bytes = self.created_bytes
        return twin

    def _put(self, pet: Pet, encoded: bytes | None = None) -> None:
        if encoded is None:
            encoded = _encoded(pet)
        # Encode before storing: a failure must not leave a half-stored pet.
        self._pets[pet["id"]] = pet
        self._json[pet["id"]] = encoded

    def create(self, new_pet: Pet, max_bytes: int | None = None) -> tuple[Pet, bytes]:
        """Store a NewPet under the next id; returns the Pet and its JSON.

        Raises StoreFull when no id is left, or when the pets created so far and
        this one would take more than ``max_bytes`` (estimated memory).
        """
        if self._next_id > self.MAX_ID:
            raise StoreFull("no int64 id is left to assign")
        pet_id = self._next_id
        pet = _ordered({**new_pet, "id": pet_id})
        encoded = _encoded(pet)
        cost = PET_OVERHEAD + 2 * len(encoded)
        if max_bytes is not None and self.created_bytes + cost > max_bytes:
            raise StoreFull(
                f"the pets created so far take {self.created_bytes} of the store's "
                f"{max_bytes} bytes (behaviour.max_store_bytes); this one needs {cost} more"
            )
        self._next_id += 1
        self.created_bytes += cost
        self._put(pet, encoded)
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
            if self._list_budget.admit(self._list_cache, len(body)):
                self._list_cache[cache_key] = body
        return body

    def list(self, limit: int, status: str | None = None) -> list[Pet]:
        ids = self._ids if status is None else self._by_status.get(status, [])
        return [self._pets[i] for i in ids[:limit]]

    def __len__(self) -> int:
        return len(self._pets)

    def held(self) -> list[object]:
        """Every pet and encoding the store holds (to free them a slice at a time elsewhere)."""
        return [*self._pets.values(), *self._json.values()]

    def __iter__(self) -> Iterator[Pet]:
        return (self._pets[i] for i in self._ids)

    @property
    def next_id(self) -> int:
        return self._next_id


def _encoded(pet: Pet) -> bytes:
    try:
        return _encode(pet).encode()
    except UnicodeEncodeError:
        # A JSON string may carry an escaped lone surrogate ("\\ud800") that
        # UTF-8 cannot hold; keeping the escape returns the name unchanged.
        return _encode_ascii(pet).encode()
