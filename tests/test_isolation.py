"""``isolation: per_key``: each key's tenant sees its own pets; the default is one shared store."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.scenario import load_scenario
from tests.support import TOOL, assert_conforms, auth, examples, mock_server

ISOLATED = """\
version: 1
name: isolated
description: One store per tenant; worker-a2 shares worker-a's tenant.
isolation: per_key
keys:
  - {key: worker-a, plan: pro}
  - {key: worker-b, plan: pro}
  - {key: worker-a2, plan: pro, tenant: worker-a}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
KEYS = ("worker-a", "worker-b", "worker-a2")


@contextmanager
def serving(text: str = ISOLATED) -> Iterator[TestClient]:
    with TestClient(create_app(load_scenario(text, "isolated.yaml"))) as client:
        yield client


def names(client: TestClient, key: str) -> list[str]:
    response = client.get("/v1/pets", params={"limit": 100}, headers=auth(key))
    return [pet["name"] for pet in assert_conforms(response)]


def create(client: TestClient, key: str, name: str) -> int:
    response = client.post("/v1/pets", json={"name": name, "categoryId": 2}, headers=auth(key))
    assert response.status_code == 201
    return assert_conforms(response)["id"]


def test_per_key_tenants_see_only_their_own_pets() -> None:
    with serving() as client:
        a_id = create(client, "worker-a", "Alpha")
        b_id = create(client, "worker-b", "Bravo")
        # Every tenant starts from the scenario's pets and counts its own ids.
        assert a_id == b_id == 2
        assert names(client, "worker-a") == ["Rex", "Alpha"]
        assert names(client, "worker-b") == ["Rex", "Bravo"]
        assert names(client, "worker-a2") == ["Rex", "Alpha"]
        assert assert_conforms(client.get("/v1/pets/2", headers=auth("worker-b")))["name"] == (
            "Bravo"
        )
        third = create(client, "worker-a2", "Charlie")
        missing = client.get(f"/v1/pets/{third}", headers=auth("worker-b"))
        assert assert_conforms(missing)["code"] == "not_found"
        assert assert_conforms(client.get(f"/v1/pets/{third}", headers=auth("worker-a"))) == {
            "id": third,
            "name": "Charlie",
            "categoryId": 2,
        }


def test_issued_keys_get_their_own_tenant_or_join_one() -> None:
    with serving() as client:
        create(client, "worker-b", "Bravo")
        alone = client.post("/__mockstore/keys", json={"plan": "free"}).json()["key"]
        joined = client.post(
            "/__mockstore/keys", json={"plan": "free", "tenant": "worker-b"}
        ).json()["key"]
        assert names(client, alone) == ["Rex"]
        assert names(client, joined) == ["Rex", "Bravo"]


def test_control_pets_shows_one_tenant_and_reset_empties_them_all() -> None:
    with serving() as client:
        create(client, "worker-a", "Alpha")
        by_tenant = client.get("/__mockstore/pets", params={"tenant": "worker-a"}).json()
        assert [p["name"] for p in by_tenant] == ["Rex", "Alpha"]
        assert client.post("/__mockstore/reset", headers=TOOL).status_code == 200
        assert names(client, "worker-a") == ["Rex"]
        assert create(client, "worker-a", "Again") == 2


def test_default_isolation_is_one_shared_store() -> None:
    with serving(ISOLATED.replace("isolation: per_key\n", "")) as client:
        assert client.get("/__mockstore/scenario").json()["isolation"] == "shared"
        created = create(client, "worker-a", "Alpha")
        assert names(client, "worker-b") == ["Rex", "Alpha"]
        shared = client.get(f"/v1/pets/{created}", headers=auth("worker-b"))
        assert assert_conforms(shared)["name"] == "Alpha"
        assert create(client, "worker-b", "Bravo") == created + 1


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(st.sampled_from(KEYS), max_size=25))
def test_any_interleaving_of_creates_stays_within_each_tenant(creators: list[str]) -> None:
    tenant = {"worker-a": "a", "worker-a2": "a", "worker-b": "b"}
    expected: dict[str, list[str]] = {"a": ["Rex"], "b": ["Rex"]}
    with serving() as client:
        for number, key in enumerate(creators):
            create(client, key, f"pet {number}")
            expected[tenant[key]].append(f"pet {number}")
        for key in KEYS:
            assert names(client, key) == expected[tenant[key]]


def test_parallel_workers_share_one_live_server_without_stepping_on_each_other(
    tmp_path: Path,
) -> None:
    """What pytest-xdist workers do: each issues its own key and works in its own tenant."""
    path = tmp_path / "isolated.yaml"
    path.write_text(ISOLATED)
    with mock_server(str(path)) as server:

        def worker(number: int) -> tuple[list[str], list[str]]:
            with server.client() as http:
                issued = http.post("/__mockstore/keys", json={"plan": "business"})
                key = issued.json()["key"]
                mine = [f"w{number}-{i}" for i in range(8)]
                for name in mine:
                    response = http.post(
                        "/v1/pets", json={"name": name, "categoryId": number}, headers=auth(key)
                    )
                    assert response.status_code == 201
                listing = http.get("/v1/pets", params={"limit": 100}, headers=auth(key))
                return ["Rex", *mine], [p["name"] for p in assert_conforms(listing)]

        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(worker, range(4)))
    for expected, seen in results:
        assert seen == expected
