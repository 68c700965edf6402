"""The pet store on its own: ids, ordering, the status index and the cached encodings.

``PetStore`` is a pure module (no HTTP, no limits), so its rules are checked
directly here; ``test_api.py`` checks the same rules again over HTTP.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore import schemas
from mockstore.store import PetStore, StoreFull
from tests.support import examples

STATUSES: list[str] = schemas.openapi_document()["components"]["schemas"]["PetStatus"]["enum"]


def _ids(pets: list[dict[str, object]]) -> list[int]:
    return [pet["id"] for pet in pets]  # type: ignore[misc]


def test_initial_pets_are_kept_in_id_order_whatever_order_they_come_in() -> None:
    store = PetStore(
        [
            {"id": 7, "name": "C", "categoryId": 1, "status": "sold"},
            {"id": 2, "name": "A", "categoryId": 1},
            {"id": 5, "name": "B", "categoryId": 2, "status": "sold"},
        ]
    )
    assert _ids(list(store)) == [2, 5, 7]
    assert _ids(store.list(10)) == [2, 5, 7]
    assert _ids(store.list(10, "sold")) == [5, 7]
    assert json.loads(store.list_json(10)) == list(store)


def test_ids_continue_after_the_highest_initial_id_and_only_grow() -> None:
    store = PetStore([{"id": 41, "name": "A", "categoryId": 1}])
    first, _ = store.create({"name": "B", "categoryId": 1})
    second, _ = store.create({"name": "C", "categoryId": 1})
    assert (first["id"], second["id"]) == (42, 43)
    assert store.next_id == 44


def test_an_empty_store_starts_at_one() -> None:
    store = PetStore()
    pet, encoded = store.create({"name": "Rex", "categoryId": 3})
    assert pet == {"id": 1, "name": "Rex", "categoryId": 3}
    # The stored JSON is what getPet and listPets send, field for field.
    assert json.loads(encoded) == pet
    assert store.get_json(1) == encoded
    assert store.get(1) == pet


def test_a_pet_without_status_has_no_status_field() -> None:
    store = PetStore()
    pet, encoded = store.create({"name": "Rex", "categoryId": 3})
    assert "status" not in pet
    assert "status" not in json.loads(encoded)
    # ... and it is in no status listing.
    assert all(store.list(100, status) == [] for status in STATUSES)


def test_list_json_is_refreshed_after_a_create() -> None:
    """The per-(status, limit) cache must never serve a listing older than the store."""
    store = PetStore()
    assert store.list_json(20) == b"[]"
    assert store.list_json(20, "sold") == b"[]"
    store.create({"name": "A", "categoryId": 1, "status": "sold"})
    assert _ids(json.loads(store.list_json(20))) == [1]
    assert _ids(json.loads(store.list_json(20, "sold"))) == [1]
    store.create({"name": "B", "categoryId": 1, "status": "available"})
    assert _ids(json.loads(store.list_json(20))) == [1, 2]
    assert _ids(json.loads(store.list_json(20, "sold"))) == [1]


def test_unknown_ids_are_none() -> None:
    store = PetStore([{"id": 1, "name": "A", "categoryId": 1}])
    for pet_id in (0, -1, 2, PetStore.MAX_ID):
        assert store.get(pet_id) is None
        assert store.get_json(pet_id) is None


def test_the_last_int64_id_is_assigned_then_the_store_is_full() -> None:
    store = PetStore([{"id": PetStore.MAX_ID - 1, "name": "A", "categoryId": 1}])
    pet, _ = store.create({"name": "B", "categoryId": 1})
    assert pet["id"] == PetStore.MAX_ID == schemas.INT64_MAX
    with pytest.raises(StoreFull):
        store.create({"name": "C", "categoryId": 1})
    # A refused create stores nothing.
    assert len(store) == 2


def test_a_name_with_a_lone_surrogate_is_stored_and_returned_unchanged() -> None:
    r"""JSON can carry ``"\ud800"`` although UTF-8 cannot: the stored JSON keeps the escape.

    This used to raise UnicodeEncodeError inside the store (a 500 over HTTP)
    after the pet had been half stored.
    """
    store = PetStore()
    pet, encoded = store.create({"name": "a\ud800b", "categoryId": 1})
    assert json.loads(encoded) == pet == {"id": 1, "name": "a\ud800b", "categoryId": 1}
    assert json.loads(store.list_json(5)) == [pet]
    assert len(store) == 1


new_pets = st.fixed_dictionaries(
    {
        "name": st.text(max_size=8),
        "categoryId": st.integers(schemas.INT64_MIN, schemas.INT64_MAX),
    },
    optional={"status": st.sampled_from(STATUSES)},
)


@settings(max_examples=examples(60), deadline=None)
@given(
    pets=st.lists(new_pets, max_size=40),
    limit=st.integers(1, 50),
    status=st.none() | st.sampled_from(STATUSES),
)
def test_listing_is_the_first_limit_pets_in_id_order(
    pets: list[dict[str, object]], limit: int, status: str | None
) -> None:
    store = PetStore()
    created = [store.create(pet)[0] for pet in pets]
    expected = [p for p in created if status is None or p.get("status") == status][:limit]
    assert store.list(limit, status) == expected
    assert json.loads(store.list_json(limit, status)) == expected
    ids = [p["id"] for p in created]
    assert ids == sorted(set(ids)), "ids must be distinct and increasing"


def test_a_copy_shares_nothing_that_a_write_could_change() -> None:
    original = PetStore([{"id": 1, "name": "Rex", "categoryId": 1, "status": "sold"}])
    twin = original.copy()
    twin.create({"name": "Max", "categoryId": 2, "status": "sold"})
    assert [p["id"] for p in original.list(10, "sold")] == [1]
    assert [p["id"] for p in twin.list(10, "sold")] == [1, 2]
    assert original.list_json(10) == b'[{"id":1,"name":"Rex","categoryId":1,"status":"sold"}]'
    assert original.next_id == 2 and twin.next_id == 3
