"""One request's view of a store whose created pets live in Redis.

The operations (``service.PetStoreService``) read a store through
``create``, ``list_json`` and ``get_json``. With a shared state the request's
one script has already run the store operation (``mockstore.sharing`` says
which, before the caller is counted), unless a fault rule that fired answers in
its place; a ``RequestStore`` hands its result to the operation, with the
scenario's own pets read from the process's inventory, so the answer is built
from the same bytes as in memory.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mockstore.errors import ApiError
from mockstore.json_array import JsonArray, array_of, as_bytes
from mockstore.ordering import id_of
from mockstore.pages import Fetched, Page, Position, page_query, read_page
from mockstore.shared.connection import Connection
from mockstore.shared.deadline import StateUnavailable, bounded
from mockstore.store import (
    PET_OVERHEAD,
    SEVERAL,
    Pet,
    PetStore,
    StoreFull,
    _encoded,
    _ordered,
    listed_members,
)

log = logging.getLogger("mockstore.shared")

_ID_PLACEHOLDER = b'{"id":0,'
# The largest int64 and the text the id sequence holds once it is spent.
MAX_ID = str(PetStore.MAX_ID)
PAST_MAX_ID = str(PetStore.MAX_ID + 1)


class Operation:
    """A store operation for the request script: its keys (after the epoch's) and arguments.

    ``ordered``: the scenario's listings page (``mockstore.pages``), so the store keeps
    its created pets' members too (two more keys); ``query``: a page's.
    """

    __slots__ = ("args", "group", "kind", "ordered", "query", "status")

    def __init__(
        self,
        kind: str,
        group: str | None,
        status: str | None,
        args: list[Any],
        ordered: bool = False,
    ) -> None:
        self.kind = kind
        self.group = group
        self.status = status
        self.args = [kind, *args]
        self.ordered = ordered
        self.query: Any = None

    def keys(self, epoch: str) -> list[str]:
        group = self.group or ""
        store = f"{epoch}s:{len(group)}:{group}:"
        ids = store + "ids"
        keys = [
            store + "next",
            store + "bytes",
            store + "pets",
            ids,
            ids + ":" + self.status if self.status else ids,
        ]
        if self.ordered:
            members = store + "ord"
            keys += [members, members + ":" + self.status if self.status else members]
            if self.status and SEVERAL in self.status:
                # A page of several statuses: their member sets follow, and the script
                # makes the key before them their union while it runs (scripts.EPILOGUE).
                keys += [members + ":" + name for name in self.status.split(SEVERAL)]
        return keys


class Resize(Exception):
    """A page's search window was sized for fewer created pets than there are (``size``)."""

    def __init__(self, size: int) -> None:
        self.size = size


def create_operation(
    group: str | None, new_pet: Pet, store: PetStore, max_bytes: int | None
) -> Operation:
    """The script's create: the pet's JSON after its id, which the script writes in front."""
    encoded = _encoded(_ordered({**new_pet, "id": 0}))
    # Every pet is encoded id first (the OpenAPI document's order), so the
    # script's '{"id":' .. id .. ',' .. tail is byte for byte the in-memory JSON.
    assert encoded.startswith(_ID_PLACEHOLDER), encoded[:16]
    status = new_pet.get("status")
    status_text = status if isinstance(status, str) else ""
    args = [
        str(store.inventory.next_id),
        MAX_ID,
        PAST_MAX_ID,
        encoded[len(_ID_PLACEHOLDER) :],
        "" if max_bytes is None else str(max_bytes),
        status_text,
        str(PET_OVERHEAD),
    ]
    ordering = store.inventory.ordering
    if ordering is not None:
        # Its member, less the id the script assigns (mockstore.ordering.LUA_ID_PART).
        args.append(ordering.prefix(new_pet))
    return Operation("create", group, status_text or None, args, ordered=ordering is not None)


# A page at an offset where the lists interleave searches a window of the inventory as
# wide as the pets created might be; the script asks again when more were (Resize).
FIRST_GUESS = 64


def page_operation(
    group: str | None,
    store: PetStore,
    position: Position,
    limit: int,
    status: str | None,
    guess: int = FIRST_GUESS,
) -> Operation:
    """The script's part of a page: the one query ``read_page`` makes of the created pets."""
    inventory = store.inventory
    assert inventory.ordering is not None
    members = listed_members(inventory.members, status)
    query = page_query(members, inventory.ordering, position, limit, guess)
    args: list[object] = [
        query.mode,
        query.bound,
        str(query.count),
        "1" if query.descending else "0",
        str(query.start),
        str(query.low),
        str(query.high),
        str(len(query.window)),
        str(query.guess),
        *query.window,
    ]
    operation = Operation("page", group, status, args, ordered=True)
    operation.query = query
    return operation


def list_operation(
    group: str | None, store: PetStore, limit: int, status: str | None
) -> Operation | None:
    """The script's listing of created pets, or None when the scenario's pets fill the page."""
    inventory = store.inventory
    if inventory.descending:  # newest first: the created pets come first
        return Operation("list", group, status, [str(limit), "desc"])
    ids = inventory.ids if status is None else inventory.by_status.get(status, ())
    if len(ids) >= limit:
        return None
    return Operation("list", group, status, [str(limit - len(ids))])


def get_operation(group: str | None, store: PetStore, pet_id: int) -> Operation | None:
    if pet_id in store.inventory.json:
        return None
    return Operation("get", group, None, [str(pet_id)])


class RequestStore:
    """The store as one request sees it: the scenario's pets here, the created ones fetched."""

    __slots__ = ("local", "operation", "result")

    def __init__(self, local: PetStore, operation: Operation | None, result: Any) -> None:
        self.local = local  # the scenario's pets (nothing is ever created in it)
        self.operation = operation
        self.result = result

    def create(self, new_pet: Pet, max_bytes: int | None = None) -> tuple[Pet, bytes]:
        result = self.result
        assert self.operation is not None and self.operation.kind == "create" and result
        if result[0] == b"full_id":
            raise StoreFull("no int64 id is left to assign")
        if result[0] == b"full_bytes":
            raise StoreFull.over_budget(int(result[1]), max_bytes, int(result[2]))
        pet = _ordered({**new_pet, "id": int(result[1])})
        return pet, result[2]

    def list_json(self, limit: int, status: str | None = None) -> bytes:
        return as_bytes(self.listing(limit, status))

    def listing(self, limit: int, status: str | None = None) -> bytes | JsonArray:
        """``list_json``'s body; a large one not yet made (``PetStore.listing``)."""
        if not self.result:  # the scenario's pets fill the page, or none were created
            return self.local.listing(limit, status)
        inventory = self.local.inventory
        ids = inventory.ids if status is None else inventory.by_status.get(status, ())
        if inventory.descending:
            created = self.result
            older = ids[: -(limit - len(created)) - 1 : -1] if len(created) < limit else ()
            return array_of([*created, *(inventory.json[i] for i in older)])
        return array_of([*(inventory.json[i] for i in ids), *self.result])

    def get_json(self, pet_id: int) -> bytes | None:
        found = self.local.inventory.json.get(pet_id)
        if found is not None:
            return found
        return self.result[0] if self.result else None

    def page(self, position: Position, limit: int, status: str | None) -> tuple[Page, list[bytes]]:
        """The page the script fetched the created pets of (``page_operation``), and its JSON.

        What came back from Redis is input: a reply of the wrong shape, or a member
        whose pet is missing or not a pet, is refused (503) rather than answered.
        """
        operation, result = self.operation, self.result
        assert operation is not None and operation.kind == "page"
        inventory = self.local.inventory
        assert inventory.ordering is not None
        try:
            total, before = int(result[0]), int(result[1])
            pairs = result[2:]
            if len(pairs) % 2 or total < 0:
                raise ValueError("a reply of the wrong shape")
            members = [bytes(m) for m in pairs[0::2]]
            if any(len(m) < 21 or not m[-20:].isdigit() for m in members):
                raise ValueError("a member that names no pet")
            found = dict(zip(members, pairs[1::2], strict=True))
        except (TypeError, ValueError, IndexError) as exc:
            raise _inconsistent(f"a page's reply could not be read ({exc})") from None
        fetched = Fetched(operation.query, total, before, members)
        listed = listed_members(inventory.members, status)
        page = read_page(listed, fetched, inventory.ordering, position, limit)
        bodies = []
        for member in page.members:
            encoded = inventory.json.get(id_of(member))
            if encoded is None:
                encoded = found.get(member) or None
                if encoded is None or pet_json(encoded) is None:
                    raise _inconsistent(f"pet {id_of(member)} is listed but not stored")
            bodies.append(encoded)
        return page, bodies


def _inconsistent(reason: str) -> ApiError:
    return ApiError(
        "state_unavailable",
        f"the mock's shared state is inconsistent: {reason}; nothing was changed",
        headers=((b"retry-after", b"1"),),
    )


async def read_created(connection: Connection, epoch: str, group: str | None) -> list[bytes]:
    """The JSON of every pet created in a store (``group``: per-key isolation), in id order
    (``epoch``: the prefix of the epoch's keys)."""
    keys = Operation("list", group, None, []).keys(epoch)
    client = connection.client()
    try:
        ids = await bounded(client.lrange(keys[3], 0, -1))
        found = await bounded(client.hmget(keys[2], ids)) if ids else []
    except StateUnavailable:
        raise
    except Exception as exc:
        raise StateUnavailable(connection.unreachable(exc)) from exc
    return pets_only(connection.url, found)


def pets_only(url: str, found: list[Any]) -> list[Any]:
    """The created pets a listing or a get read back, but any that is not a pet (skipped,
    said in the log): what Redis holds is input too."""
    pets = [pet for pet in found if pet is not None and pet_json(pet) is not None]
    if len(pets) != len(found):
        log.warning(
            "the shared state at %s holds %d created pet(s) that are not pets: skipped",
            url,
            len(found) - len(pets),
        )
    return pets


def pet_json(raw: bytes) -> Any:
    """A created pet read back (its JSON, as answered), or None when it is not a pet."""
    try:
        pet = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(pet, dict)
        or not isinstance(pet.get("id"), int)
        or not isinstance(pet.get("name"), str)
    ):
        return None
    return pet
