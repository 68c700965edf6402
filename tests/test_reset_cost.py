"""A reset costs the same whatever the store's size: the scenario's pets are shared, copy on write.

Time is not asserted (the machine is shared and loaded; ``bench/reset.py`` measures
it). What a reset *allocates* is deterministic, and is what made it slow: copying
100,000 pets' indexes on every reset.
"""

from __future__ import annotations

import json
import tracemalloc

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.scenario import load_scenario_source
from mockstore.state import Runtime
from mockstore.store import PetStore
from tests.support import TOOL, auth, examples, mock_server

STATUSES = ["available", "pending", "sold", None]


def _allocated_by_reset(scenario: str) -> int:
    runtime = Runtime(load_scenario_source(scenario))
    runtime.reset()  # first use of every code path out of the way
    tracemalloc.start()
    try:
        runtime.reset()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_a_reset_allocates_the_same_for_20_pets_as_for_100000() -> None:
    small = _allocated_by_reset("default")
    large = _allocated_by_reset("large-inventory")
    assert large <= small + 16 * 1024, (
        f"a reset of large-inventory allocated {large:,} bytes, of default {small:,}: "
        "it copies the pets"
    )


def test_a_reset_restores_a_large_store_exactly() -> None:
    with mock_server("large-inventory") as server, server.client(headers=auth("pro")) as http:
        before = http.get("/v1/pets", params={"limit": 100, "status": "sold"}).json()
        created = http.post("/v1/pets", json={"name": "Nova", "categoryId": 1, "status": "sold"})
        assert created.json()["id"] == 100_001
        httpx.post(server.control_url + "/reset", headers=TOOL, timeout=10).raise_for_status()
        assert http.get("/v1/pets/100001").status_code == 404
        assert http.get("/v1/pets", params={"limit": 100, "status": "sold"}).json() == before
        again = http.post("/v1/pets", json={"name": "Nova", "categoryId": 1})
        assert again.json()["id"] == 100_001


_pet = st.fixed_dictionaries(
    {"name": st.text(max_size=5), "categoryId": st.integers(0, 9)},
    optional={"status": st.sampled_from(STATUSES[:3])},
)


@settings(max_examples=examples(150), deadline=None)
@given(
    listed=st.lists(_pet, max_size=8),
    first=st.lists(_pet, max_size=6),
    second=st.lists(_pet, max_size=6),
    limit=st.integers(1, 20),
    status=st.sampled_from(STATUSES),
)
def test_forks_share_the_pets_and_never_see_each_others_writes(
    listed: list[dict], first: list[dict], second: list[dict], limit: int, status: str | None
) -> None:
    template = PetStore([{**p, "id": 10 * (i + 1)} for i, p in enumerate(listed)])
    model = [dict(p) for p in template]
    stores = [template.fork(), template.fork()]
    models = [list(model), list(model)]
    for store, pets, created in zip(stores, models, (first, second), strict=True):
        for new_pet in created:
            pet, encoded = store.create(new_pet)
            pets.append(pet)
            assert json.loads(encoded) == pet
    for store, pets in zip(stores, models, strict=True):
        wanted = [p for p in pets if status is None or p.get("status") == status][:limit]
        assert json.loads(store.list_json(limit, status)) == wanted
        assert store.list(limit, status) == wanted
        assert list(store) == pets and len(store) == len(pets)
        for pet in pets:
            assert store.get(pet["id"]) == pet
    assert list(template) == model, "the template is never written"
    assert list(template.fork()) == model
