"""The in-memory pet inventory.

Pets are kept in id order with one ordered id list per status, so a listing
touches at most ``limit`` pets however large the store is. Each pet is encoded
to JSON once, when stored, and list bodies are cached per (status, limit)
until the next write, within a byte budget.

**Copy on write.** A store is a frozen ``Inventory`` (the scenario's pets,
built and encoded once) under a small layer of the pets created since. Pets
are never changed or deleted and ids only grow, so every created pet sorts
after every scenario pet: a listing reads the inventory first, then the layer.
``fork()`` gives a store of its own over the same inventory with an empty
layer, so a reset, a new tenant or a new test costs the same for 20 pets as
for 100,000.

The pets a scenario lists or generates are bounded by the scenario schema;
those created through the API are bounded in bytes: ``create`` refuses a pet
that would take the store's created pets past the budget it is given
(``behaviour.max_store_bytes``), or that its share of the process's memory
budget (``mockstore.memory``) has no room for. An ``Inventory`` knows what it
costs (``cost``), for its owner to charge.

**Order.** A listing is in ascending id order, unless the scenario's provider
lists otherwise (``behaviour.list_order``): ``descending`` (newest first) walks
the same lists from their ends; ``insertion`` keeps the scenario's pets in the
order it gives them, then the pets created, in the order they came.

**Pages.** A scenario whose listings page (``collections.pagination``) or order by
a field (``collections.order``) gives the store an ``Ordering``: the inventory
then keeps each pet's member (``mockstore.ordering``) in a sorted list per status,
built once, and the created pets' members are kept sorted as they come, so
``page`` reads any page in O(limit + log n) (``mockstore.pages``).
"""

from __future__ import annotations

import heapq
import json
from bisect import insort
from collections.abc import Iterable, Iterator
from typing import Any

from mockstore.budget import ByteBudget
from mockstore.json_array import JsonArray, array_of, as_bytes
from mockstore.memory import Account, OverBudget
from mockstore.ordering import Ordering, id_of
from mockstore.pages import MemberList, Page, Position, read_page
from mockstore.schemas import object_fields

Pet = dict[str, Any]
# What joins the statuses of a listing filtered by several (collections.filters.several_statuses).
SEVERAL = ","
# The OpenAPI document's order (id, then the NewPet fields): every pet is encoded alike.
FIELD_ORDER = object_fields("Pet")
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
# The memory a stored pet holds beyond twice its JSON (it is kept as a dict and
# as its encoding): the dict, its ints and strings' headers, index slots.
PET_OVERHEAD = 500
# What a member takes beyond its bytes, in each of its two sorted lists (a list slot, the
# bytes object's header).
_MEMBER_OVERHEAD = 48
# 4 MiB of cached list bodies; a body over 256 KiB is rebuilt on each request.
_LIST_CACHE_BYTES = 4 * 1024 * 1024
_LIST_CACHE_ITEM = 256 * 1024


def _ordered(pet: Pet) -> Pet:
    ordered = {field: pet[field] for field in FIELD_ORDER if field in pet}
    if len(ordered) != len(pet):
        # Fields the document does not name (behaviour.unknown_fields: keep) follow.
        ordered.update(pet)
    return ordered


class StoreFull(Exception):
    """No int64 id is left to assign, or the created pets' budget is spent."""

    @classmethod
    def over_budget(cls, created: int, max_bytes: int | None, cost: int) -> StoreFull:
        return cls(
            f"the pets created so far take {created} of the store's "
            f"{max_bytes} bytes (behaviour.max_store_bytes); this one needs {cost} more"
        )


def listed_members(members: dict[str | None, list[bytes]], status: str | None) -> list[bytes]:
    """The sorted members a listing filtered by ``status`` reads: one status's, or the
    merge of several's (``available,pending``: ``mockstore.status_filter``).

    Each status's members are sorted already, so their merge keeps the listing's order
    and a page of it is as exact as a page of one status.
    """
    found = members.get(status)
    if found is not None:
        return found
    if status is None or SEVERAL not in status:
        return []
    return list(heapq.merge(*(members.get(name, ()) for name in status.split(SEVERAL))))


class Inventory:
    """The pets a store starts from: indexed and encoded once, never changed after.

    Shared by every store forked from it (resets, ``per_key`` tenants, server
    tenants), in every thread: nothing here is written after ``__init__``
    except the bounded cache of listings, whose entries never go stale.
    """

    __slots__ = (
        "by_status",
        "cost",
        "descending",
        "ids",
        "json",
        "list_budget",
        "list_cache",
        "members",
        "next_id",
        "ordering",
        "pets",
    )

    def __init__(
        self, pets: Iterable[Pet] = (), order: str = "ascending", ordering: Ordering | None = None
    ) -> None:
        self.pets: dict[int, Pet] = {}
        self.json: dict[int, bytes] = {}
        self.descending = order == "descending"
        # The estimated memory of the pets, as a created pet is counted (see PetStore.create)
        # plus the cache of listings at its most.
        self.cost = _LIST_CACHE_BYTES
        for pet in pets if order == "insertion" else sorted(pets, key=lambda p: p["id"]):
            pet = _ordered(pet)
            encoded = _encoded(pet)
            self.pets[pet["id"]] = pet
            self.json[pet["id"]] = encoded
            self.cost += PET_OVERHEAD + 2 * len(encoded)
        self.ids: list[int] = list(self.pets)
        self.by_status: dict[str | None, list[int]] = {}
        for pet_id, pet in self.pets.items():
            self.by_status.setdefault(pet.get("status"), []).append(pet_id)
        self.next_id = max(max(self.pets) + 1 if self.pets else 1, 1)
        # Listings of inventory pets only, shared by every fork (bounded in bytes).
        self.list_cache: dict[tuple[str | None, int], bytes] = {}
        self.list_budget = ByteBudget(_LIST_CACHE_BYTES, _LIST_CACHE_ITEM)
        # Each listing's members, sorted (None: every pet): for scenarios that page.
        self.ordering = ordering
        self.members: dict[str | None, list[bytes]] = {}
        if ordering is not None:
            for position, pet in enumerate(self.pets.values()):
                member = ordering.member(pet, position)
                self.members.setdefault(None, []).append(member)
                if pet.get("status") is not None:  # None is every pet's listing
                    self.members.setdefault(pet["status"], []).append(member)
                self.cost += 2 * (len(member) + _MEMBER_OVERHEAD)
            for members in self.members.values():
                members.sort()

    def held(self) -> list[object]:
        """Every pet and encoding the inventory holds (to free them a slice at a time)."""
        return [*self.pets.values(), *self.json.values()]


class PetStore:
    """Pets by id, ordered, indexed by status: an ``Inventory`` and the pets created since."""

    MAX_ID = 2**63 - 1

    def __init__(
        self,
        pets: Iterable[Pet] = (),
        *,
        inventory: Inventory | None = None,
        account: Account | None = None,
        order: str = "ascending",
        ordering: Ordering | None = None,
    ) -> None:
        """``order`` is ``behaviour.list_order`` (for a store built from ``pets``)."""
        self.inventory = inventory if inventory is not None else Inventory(pets, order, ordering)
        # The share of the memory budget its created pets and listings draw on.
        self.account = account
        self._pets: dict[int, Pet] = {}  # created since the inventory
        self._json: dict[int, bytes] = {}
        self._ids: list[int] = []  # their ids, in id order
        self._by_status: dict[str | None, list[int]] = {}
        self._next_id = self.inventory.next_id
        self._list_cache: dict[tuple[str | None, int], bytes] = {}
        self._list_budget = ByteBudget(_LIST_CACHE_BYTES, _LIST_CACHE_ITEM, account)
        self.created_bytes = 0  # the estimated memory of the pets created through create()
        # The created pets' members per listing, sorted (with an ordering: see Inventory).
        self._members: dict[str | None, list[bytes]] = {}

    def fork(self, account: Account | None = None) -> PetStore:
        """A store of its own over the same inventory, without the pets created since: O(1).

        ``account``: the share of the memory budget it draws on.
        """
        return PetStore(inventory=self.inventory, account=account)

    def copy(self) -> PetStore:
        """An independent store with the same pets (the inventory shared, the rest copied).

        Not charged to any share of the memory budget: for reading in process.
        """
        twin = self.fork()
        twin._pets = dict(self._pets)
        twin._json = dict(self._json)
        twin._ids = list(self._ids)
        twin._by_status = {status: list(ids) for status, ids in self._by_status.items()}
        twin._members = {status: list(found) for status, found in self._members.items()}
        twin._next_id = self._next_id
        twin.created_bytes = self.created_bytes
        return twin

    def create(self, new_pet: Pet, max_bytes: int | None = None) -> tuple[Pet, bytes]:
        """Store a NewPet under the next id; returns the Pet and its JSON.

        Raises StoreFull when no id is left, or when the pets created so far and
        this one would take more than ``max_bytes`` (estimated memory);
        ``OverBudget`` when the store's share of the memory budget has no room.
        """
        if self._next_id > self.MAX_ID:
            raise StoreFull("no int64 id is left to assign")
        pet_id = self._next_id
        pet = _ordered({**new_pet, "id": pet_id})
        # Encode before storing: a failure must not leave a half-stored pet.
        encoded = _encoded(pet)
        cost = PET_OVERHEAD + 2 * len(encoded)
        if max_bytes is not None and self.created_bytes + cost > max_bytes:
            raise StoreFull.over_budget(self.created_bytes, max_bytes, cost)
        ordering = self.inventory.ordering
        member = ordering.member(pet) if ordering is not None else None
        # Its member is held too, in two sorted lists (not counted against max_store_bytes,
        # which a store in Redis counts alike, but against this process's memory).
        held = cost if member is None else cost + 2 * (len(member) + _MEMBER_OVERHEAD)
        if self.account is not None and not self.account.reserve(held):
            raise OverBudget("this pet", held, self.account)
        self._next_id += 1
        self.created_bytes += cost
        self._pets[pet_id] = pet
        self._json[pet_id] = encoded
        self._ids.append(pet_id)
        # Ids only grow, so appending keeps every list in id order.
        self._by_status.setdefault(pet.get("status"), []).append(pet_id)
        if member is not None:
            insort(self._members.setdefault(None, []), member)
            if pet.get("status") is not None:  # None is every pet's listing
                insort(self._members.setdefault(pet["status"], []), member)
        self._list_budget.clear(self._list_cache)
        return pet, encoded

    def page(self, position: Position, limit: int, status: str | None) -> tuple[Page, list[bytes]]:
        """The page at ``position`` of the listing filtered by ``status``, and its pets' JSON."""
        inventory = self.inventory
        assert inventory.ordering is not None, "a store without an ordering has no pages"
        listed = listed_members(inventory.members, status)
        created = listed_members(self._members, status)
        page = read_page(listed, MemberList(created), inventory.ordering, position, limit)
        return page, [self._encoded_of(id_of(member)) for member in page.members]

    def get(self, pet_id: int) -> Pet | None:
        pet = self.inventory.pets.get(pet_id)
        return pet if pet is not None else self._pets.get(pet_id)

    def get_json(self, pet_id: int) -> bytes | None:
        found = self.inventory.json.get(pet_id)
        return found if found is not None else self._json.get(pet_id)

    def list_json(self, limit: int, status: str | None = None) -> bytes:
        """The JSON array of the first ``limit`` pets in the store's order."""
        return as_bytes(self.listing(limit, status))

    def listing(self, limit: int, status: str | None = None) -> bytes | JsonArray:
        """``list_json``'s body; a large one as its ``JsonArray``, to be charged before it is made.

        Only small bodies are cached (``_LIST_CACHE_ITEM``), so a large one is never made here.
        """
        cache_key = (status, limit)
        body = self._list_cache.get(cache_key)
        if body is None:
            made = self._list_body(cache_key)
            if type(made) is not bytes:
                return made
            body = made
            if self._list_budget.admit(self._list_cache, len(body)):
                self._list_cache[cache_key] = body
        return body

    def _list_body(self, cache_key: tuple[str | None, int]) -> bytes | JsonArray:
        status, limit = cache_key
        inventory = self.inventory
        if inventory.descending:
            pets = self.list(limit, status)
            return array_of([self._encoded_of(p["id"]) for p in pets], _LIST_CACHE_ITEM)
        ids = inventory.ids if status is None else inventory.by_status.get(status, ())
        created = self._created_ids(status)
        if len(ids) >= limit or not created:
            # Inventory pets only: the same for every fork, so kept with the inventory.
            shared = inventory.list_cache
            body = shared.get(cache_key)
            if body is None:
                encoded = inventory.json
                made = array_of([encoded[i] for i in ids[:limit]], _LIST_CACHE_ITEM)
                if type(made) is not bytes:
                    return made
                body = made
                if inventory.list_budget.admit(shared, len(body)):
                    shared[cache_key] = body
            return body
        parts = [inventory.json[i] for i in ids]
        parts += [self._json[i] for i in created[: limit - len(ids)]]
        return array_of(parts, _LIST_CACHE_ITEM)

    def _created_ids(self, status: str | None) -> list[int]:
        return self._ids if status is None else self._by_status.get(status, [])

    def list(self, limit: int, status: str | None = None) -> list[Pet]:
        inventory = self.inventory
        ids = inventory.ids if status is None else inventory.by_status.get(status, [])
        if inventory.descending:
            # Newest first: the created pets from the last, then the inventory's.
            created = self._created_ids(status)
            pets = [self._pets[i] for i in created[: -limit - 1 : -1]] if limit else []
            if len(pets) < limit:
                pets += [inventory.pets[i] for i in ids[: -(limit - len(pets)) - 1 : -1]]
            return pets
        pets = [inventory.pets[i] for i in ids[:limit]]
        if len(pets) < limit:
            pets += [self._pets[i] for i in self._created_ids(status)[: limit - len(pets)]]
        return pets

    def _encoded_of(self, pet_id: int) -> bytes:
        found = self.inventory.json.get(pet_id)
        return found if found is not None else self._json[pet_id]

    def __len__(self) -> int:
        return len(self.inventory.pets) + len(self._pets)

    def held(self) -> list[object]:
        """The pets created in this store and their encodings (see ``Inventory.held``)."""
        return [*self._pets.values(), *self._json.values()]

    def __iter__(self) -> Iterator[Pet]:
        yield from self.inventory.pets.values()
        yield from self._pets.values()

    @property
    def next_id(self) -> int:
        return self._next_id


def pet_json(pet: Pet) -> bytes:
    """A pet's JSON as the store encodes it (the document's fields first)."""
    return _encoded(_ordered(pet))


def _encoded(pet: Pet) -> bytes:
    try:
        return _encode(pet).encode()
    except UnicodeEncodeError:
        # A JSON string may carry an escaped lone surrogate ("\\ud800") that
        # UTF-8 cannot hold; keeping the escape returns the name unchanged.
        return _encode_ascii(pet).encode()
