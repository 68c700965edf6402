"""``collections``: pages, order, filters, defaults, numbers, constraints, unknown fields.

Each setting over a real uvicorn process (``MockServer``; with
``MOCKSTORE_TEST_STATE=redis`` its state is in Redis, as ``.ci/run`` runs this
file again), and the rule every paged listing keeps for all inputs (walked page
by page, forwards and backwards, a listing shows each pet its filter keeps
once, in the order's sort) with hypothesis, against the app in process.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.document import openapi_for
from mockstore.scenario import ScenarioError, load_scenario
from tests.support import assert_conforms, examples, mock_server, shared_state_url

KEY = {"Authorization": "Bearer col-key"}
PETS = [
    {"id": 1, "name": "rex", "categoryId": 2, "status": "available"},
    {"id": 2, "name": "Bella", "categoryId": 1, "status": "sold"},
    {"id": 3, "name": "apollo", "categoryId": 3},
    {"id": 4, "name": "Zed", "categoryId": 3, "status": "pending"},
    {"id": 5, "name": "bob", "categoryId": 9, "status": "sold"},
]


def scenario(collections: dict[str, Any] | None = None, **more: Any) -> str:
    data: dict[str, Any] = {
        "version": 1,
        "keys": [{"key": "col-key", "plan": "enterprise"}],
        "pets": PETS,
        **more,
    }
    if collections is not None:
        data["collections"] = collections
    return yaml.safe_dump(data, sort_keys=False)


def links(response: httpx.Response) -> dict[str, str]:
    """The Link header's targets by relation."""
    found = {}
    for part in response.headers.get("link", "").split(","):
        match = re.fullmatch(r'\s*<([^>]*)>;\s*rel="([a-z]+)"\s*', part)
        if match:
            found[match.group(2)] = match.group(1)
    return found


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    """A client of a real server on the scenario the test's ``collections`` marker gives."""
    marker = request.node.get_closest_marker("collections")
    with (
        mock_server(scenario(*marker.args, **marker.kwargs)) as server,
        httpx.Client(base_url=server.url, headers=KEY, timeout=10) as client,
    ):
        yield client


def names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    assert_conforms(response)
    return [pet["name"] for pet in response.json()]


def walk(client: httpx.Client, first: str, rel: str = "next") -> list[list[str]]:
    pages, target = [], first
    for _ in range(50):
        response = client.get(target)
        pages.append(names(response))
        target = links(response).get(rel, "")
        if not target:
            return pages
    raise AssertionError("a walk of more than 50 pages")


# -- pages ------------------------------------------------------------------------------

CURSOR = {
    "pagination": {"style": "cursor", "links": ["next", "prev", "first", "last"],
                   "total_header": "X-Total-Count"},
    "order": {"by": "name", "case": "insensitive"},
}  # fmt: skip


@pytest.mark.collections(CURSOR)
def test_a_cursor_walk_shows_every_pet_once_in_order_and_says_the_total(
    served: httpx.Client,
) -> None:
    first = served.get("/v1/pets?limit=2")
    assert first.headers["x-total-count"] == "5"
    assert set(links(first)) == {"next", "first", "last"}  # no prev on the first page
    assert walk(served, "/v1/pets?limit=2") == [["apollo", "Bella"], ["bob", "rex"], ["Zed"]]
    # Backwards from the last page, by prev.
    last = links(first)["last"]
    assert walk(served, last, "prev") == [["rex", "Zed"], ["Bella", "bob"], ["apollo"]]


@pytest.mark.collections(CURSOR)
def test_a_cursor_is_stable_while_pets_are_added(served: httpx.Client) -> None:
    page = served.get("/v1/pets?limit=2")
    following = links(page)["next"]
    # One that sorts before the cursor (not shown again), one after it (shown in its place).
    for name in ("aaron", "carl"):
        created = served.post("/v1/pets", json={"name": name, "categoryId": 1})
        assert created.status_code == 201, created.text
    assert names(served.get(following)) == ["bob", "carl"]
    assert served.get(following).headers["x-total-count"] == "7"


@pytest.mark.collections(CURSOR)
def test_a_cursor_altered_or_made_for_another_filter_is_refused_with_a_clear_400(
    served: httpx.Client,
) -> None:
    following = links(served.get("/v1/pets?limit=1&status=sold"))["next"]
    cursor = following.rsplit("cursor=", 1)[1]
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[5] ^= 1  # one bit of the position
    forged = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    for target, said in [
        (f"/v1/pets?limit=1&status=sold&cursor={forged}", "altered"),
        (f"/v1/pets?limit=2&cursor={cursor}", "status=sold"),
        ("/v1/pets?cursor=not-a-cursor", "not a cursor"),
        ("/v1/pets?cursor=" + "A" * 600, "not a cursor"),
        (f"/v1/pets?status=sold&cursor={cursor}&cursor={cursor}", "given 2 times"),
    ]:
        refused = served.get(target)
        assert refused.status_code == 400, target
        assert_conforms(refused)
        body = refused.json()
        assert body["code"] == "invalid_parameter"
        assert said in body["message"]
    assert names(served.get(following)) == ["bob"]


@pytest.mark.collections(
    {"pagination": {"style": "cursor", "links": ["next"], "link_urls": "absolute"}}
)
def test_absolute_links_name_the_address_the_client_used(served: httpx.Client) -> None:
    response = served.get("/v1/pets?limit=2", headers={"Host": "pets.example.test:8443"})
    assert links(response)["next"].startswith("http://pets.example.test:8443/v1/pets?limit=2&")
    relative = served.get("/v1/pets?limit=2")
    assert links(relative)["next"].startswith(f"http://{served.base_url.netloc.decode()}/v1/")


@pytest.mark.collections(
    {"pagination": {"style": "offset", "links": ["next", "prev", "last"],
                    "total_header": "X-Total"},
     "order": {"by": "categoryId", "direction": "descending"},
     "numbers": {"query": "lenient"}}
)  # fmt: skip
def test_offset_pages_by_category_descending(served: httpx.Client) -> None:
    assert walk(served, "/v1/pets?limit=2") == [["bob", "Zed"], ["apollo", "rex"], ["Bella"]]
    response = served.get("/v1/pets?limit=2&offset=2")
    assert links(response) == {
        "next": "/v1/pets?limit=2&offset=4",
        "prev": "/v1/pets?limit=2&offset=0",
        "last": "/v1/pets?limit=2&offset=4",
    }
    assert names(served.get("/v1/pets?limit=2.0&offset=%202.0")) == ["apollo", "rex"]
    assert names(served.get("/v1/pets?offset=9")) == []
    for bad in ("-1", "two", "1e3", "99999999999999999999"):
        refused = served.get(f"/v1/pets?offset={bad}")
        assert refused.status_code == 400, bad
        assert refused.json()["code"] == "invalid_parameter"


@pytest.mark.collections(
    {"pagination": {"style": "page", "parameter": "p", "links": ["next", "prev"]},
     "order": {"by": "id", "direction": "descending"}}
)  # fmt: skip
def test_numbered_pages_newest_first(served: httpx.Client) -> None:
    served.post("/v1/pets", json={"name": "new", "categoryId": 1})
    assert walk(served, "/v1/pets?limit=4") == [["new", "bob", "Zed", "apollo"], ["Bella", "rex"]]
    assert links(served.get("/v1/pets?limit=4&p=2")) == {"prev": "/v1/pets?limit=4&p=1"}
    assert served.get("/v1/pets?p=0").status_code == 400


# -- order and filters ------------------------------------------------------------------


@pytest.mark.collections({"order": {"by": "name"}, "filters": {"status_case": "insensitive"}})
def test_case_sensitive_order_and_a_filter_in_any_case(served: httpx.Client) -> None:
    assert names(served.get("/v1/pets")) == ["Bella", "Zed", "apollo", "bob", "rex"]
    assert names(served.get("/v1/pets?status=SOLD")) == ["Bella", "bob"]
    assert names(served.get("/v1/pets?status=Sold&limit=1")) == ["Bella"]
    assert served.get("/v1/pets?status=lost").status_code == 400


@pytest.mark.collections({"order": {"by": "status", "direction": "descending"}})
def test_order_by_status_puts_pets_without_one_first_when_descending(
    served: httpx.Client,
) -> None:
    assert names(served.get("/v1/pets")) == ["apollo", "bob", "Bella", "Zed", "rex"]


@pytest.mark.collections()
def test_the_status_filter_is_case_sensitive_by_default(served: httpx.Client) -> None:
    refused = served.get("/v1/pets?status=SOLD")
    assert refused.status_code == 400
    assert "link" not in refused.headers and "x-total-count" not in refused.headers


# -- what createPet accepts and stores --------------------------------------------------


@pytest.mark.collections({"defaults": {"status": "available", "applied": "read"}})
def test_a_default_applied_when_read(served: httpx.Client) -> None:
    created = served.post("/v1/pets", json={"name": "Nala", "categoryId": 7})
    assert created.status_code == 201
    assert "status" not in created.json()
    pet_id = created.json()["id"]
    assert served.get(f"/v1/pets/{pet_id}").json()["status"] == "available"
    assert "Nala" in names(served.get("/v1/pets?status=available"))
    sold = served.post("/v1/pets", json={"name": "Max", "categoryId": 7, "status": "sold"})
    assert sold.json()["status"] == "sold"


@pytest.mark.collections({"defaults": {"status": "pending"}})
def test_a_default_applied_when_stored(served: httpx.Client) -> None:
    created = served.post("/v1/pets", json={"name": "Nala", "categoryId": 7})
    assert created.json()["status"] == "pending"


@pytest.mark.collections({"numbers": {"body": "lenient"}})
def test_lenient_numbers_store_an_integer(served: httpx.Client) -> None:
    for sent in ("7", " 7 ", "7.0", 7.0, 7):
        created = served.post("/v1/pets", json={"name": "Nala", "categoryId": sent})
        assert created.status_code == 201, (sent, created.text)
        assert created.json()["categoryId"] == 7
    assert served.post("/v1/pets", json={"name": "x", "categoryId": "7.5"}).status_code == 400


@pytest.mark.collections({"numbers": {"body": "strict"}})
def test_strict_numbers_refuse_a_fraction(served: httpx.Client) -> None:
    refused = served.post("/v1/pets", json={"name": "Nala", "categoryId": 7.0})
    assert refused.status_code == 400
    assert refused.json()["code"] == "validation_failed"
    assert "categoryId" in refused.json()["message"]
    assert served.get("/v1/pets").json() == served.get("/v1/pets").json()  # nothing stored
    assert len(served.get("/v1/pets").json()) == len(PETS)


@pytest.mark.collections()
def test_numbers_as_the_schema_reads_them_by_default(served: httpx.Client) -> None:
    assert served.post("/v1/pets", json={"name": "a", "categoryId": 7.0}).status_code == 201
    assert served.post("/v1/pets", json={"name": "a", "categoryId": "7"}).status_code == 400
    assert served.get("/v1/pets?limit=2.0").status_code == 400


@pytest.mark.collections(
    {"constraints": {"name": {"max_length": 64}, "categoryId": {"minimum": 1}}},
    behaviour={"validation_status": 422, "error_codes": {"field_constraint": "NAME_TOO_LONG"}},
)
def test_constraints_refuse_with_the_scenarios_error(served: httpx.Client) -> None:
    assert served.post("/v1/pets", json={"name": "n" * 64, "categoryId": 1}).status_code == 201
    refused = served.post("/v1/pets", json={"name": "n" * 65, "categoryId": 1})
    assert refused.status_code == 422
    assert_conforms(refused)
    assert refused.json() == {
        "code": "NAME_TOO_LONG",
        "message": "name is longer than 64 characters (got 65)",
        "status": 422,
    }
    low = served.post("/v1/pets", json={"name": "x", "categoryId": 0})
    assert low.json()["message"] == "categoryId must be at least 1 (got 0)"
    assert len(served.get("/v1/pets?limit=100").json()) == len(PETS) + 1


@pytest.mark.collections({"unknown_fields": "keep"})
def test_unknown_fields_kept(served: httpx.Client) -> None:
    created = served.post("/v1/pets", json={"name": "Nala", "categoryId": 7, "nick": "N"})
    assert created.json()["nick"] == "N"


@pytest.mark.collections({"unknown_fields": "refuse"})
def test_unknown_fields_refused(served: httpx.Client) -> None:
    refused = served.post("/v1/pets", json={"name": "Nala", "categoryId": 7, "nick": "N"})
    assert refused.json()["code"] == "unknown_field"


# -- the served document, tenants, the scenario file --------------------------------------


@pytest.mark.collections(CURSOR | {"filters": {"status_case": "insensitive"}})
def test_the_served_document_declares_the_page_parameter_and_headers(
    served: httpx.Client,
) -> None:
    document = served.get("/__mockstore/openapi.json").json()
    listing = document["paths"]["/pets"]["get"]
    assert "cursor" in [p["name"] for p in listing["parameters"]]
    assert {"Link", "X-Total-Count"} <= set(listing["responses"]["200"]["headers"])
    refusal = served.get("/v1/pets?cursor=nope")
    assert str(refusal.status_code) in listing["responses"]


def test_links_keep_a_tenants_prefix() -> None:
    with (
        mock_server(scenario(CURSOR)) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        created = client.post("/__mockstore/tenants", json={"id": "team-a"})
        assert created.status_code in (200, 201), created.text
        prefix = "/__mockstore/tenants/team-a"
        response = client.get(f"{prefix}/v1/pets?limit=2", headers=KEY)
        assert response.status_code == 200, response.text
        assert links(response)["next"].startswith(f"{prefix}/v1/pets?limit=2&cursor=")
        assert client.get(links(response)["next"], headers=KEY).json()[0]["name"] == "bob"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"behaviour": {"list_order": "descending"}, "collections": {"order": {"by": "name"}}},
         "older spelling of collections.order"),
        ({"behaviour": {"default_status": "sold"},
          "collections": {"defaults": {"status": "sold"}}}, "collections.defaults.status"),
        ({"collections": {"pagination": {"links": ["next"]}}}, "links need pages"),
        ({"collections": {"pagination": {"style": "offset", "parameter": "limit"}}},
         "a listPets parameter"),
        ({"collections": {"pagination": {"total_header": "X-RateLimit-Limit"}}},
         "mockstore writes X-RateLimit-Limit itself"),
        ({"collections": {"constraints": {"name": {"min_length": 5, "max_length": 2}}}},
         "min_length (5) is more than max_length (2)"),
        ({"collections": {"pagination": {"total_header": "X-Total"}},
          "behaviour": {"headers": [{"name": "X-Total", "value": "1"}]}},
         "collections.pagination.total_header"),
        ({"collections": {"order": {"by": "color"}}}, "collections.order.by"),
    ],
)  # fmt: skip
def test_a_collections_section_that_cannot_hold_is_refused_with_its_place(
    data: dict[str, Any], said: str
) -> None:
    text = yaml.safe_dump({"version": 1, **data}, sort_keys=False)
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text, "bad.yaml")
    assert said in str(refused.value)
    assert re.search(r"bad\.yaml:\d+:\d+:", str(refused.value))


def test_the_older_spellings_map_in() -> None:
    old = load_scenario(
        "version: 1\nbehaviour: {list_order: descending, default_status: sold, "
        "unknown_fields: keep}\n"
    ).collections
    assert (old.order.by, old.order.direction) == ("id", "descending")
    assert (old.default_status, old.unknown_fields) == ("sold", "keep")
    assert old.given == {"list_order", "default_status", "unknown_fields"}
    assert (
        openapi_for(load_scenario("version: 1\n"))["paths"]["/pets"]["get"]["parameters"][-1][
            "name"
        ]
        == "status"
    )


# -- for all inputs ---------------------------------------------------------------------

_names = st.text(alphabet="abAB_é", min_size=1, max_size=4)
_pets = st.lists(
    st.tuples(_names, st.integers(0, 3), st.sampled_from([None, "available", "sold"])),
    max_size=9,
)
_orders = st.fixed_dictionaries(
    {
        "by": st.sampled_from(["id", "insertion", "name", "categoryId", "status"]),
        "direction": st.sampled_from(["ascending", "descending"]),
        "case": st.sampled_from(["sensitive", "insensitive"]),
    }
)


def _reference(
    pets: list[dict[str, Any]], order: dict[str, Any], scenario_ids: list[int]
) -> list[int]:
    """The listing's ids by the documented rule, written apart from mockstore's encoding."""
    lower = order["case"] == "insensitive"

    def key(pet: dict[str, Any]) -> tuple[Any, ...]:
        by = order["by"]
        if by == "id":
            return (pet["id"],)
        if by == "insertion":
            place = scenario_ids.index(pet["id"]) if pet["id"] in scenario_ids else None
            return (0, place, 0) if place is not None else (1, 0, pet["id"])
        if by == "name":
            return (pet["name"].lower() if lower else pet["name"], pet["id"])
        if by == "categoryId":
            return (pet["categoryId"], pet["id"])
        status = pet.get("status")
        return ((0, status.lower() if lower else status) if status else (1, ""), pet["id"])

    ordered = sorted(pets, key=key, reverse=order["direction"] == "descending")
    return [pet["id"] for pet in ordered]


@settings(max_examples=examples(60), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    seeded=_pets,
    created=_pets,
    order=_orders,
    style=st.sampled_from(["cursor", "offset", "page"]),
    limit=st.integers(1, 4),
    status=st.sampled_from([None, "sold", "available"]),
)
def test_any_listing_walked_either_way_shows_each_pet_once_in_its_order(
    seeded: list[Any], created: list[Any], order: dict[str, Any], style: str, limit: int,
    status: str | None,
) -> None:  # fmt: skip
    pets = [
        {"id": 100 - 7 * index, "name": name, "categoryId": category}
        | ({"status": state} if state else {})
        for index, (name, category, state) in enumerate(seeded)
    ]
    text = yaml.safe_dump(
        {
            "version": 1,
            "keys": [{"key": "col-key", "plan": "enterprise"}],
            "pets": pets,
            "collections": {
                "pagination": {
                    "style": style,
                    "links": ["next", "prev", "last"],
                    "total_header": "X-Total-Count",
                },
                "order": order,
            },
        }
    )
    app = create_app(text, state=shared_state_url())
    with TestClient(app, base_url="http://testserver", headers=KEY) as client:
        everything = list(pets)
        for name, category, state in created:
            body = {"name": name, "categoryId": category} | ({"status": state} if state else {})
            answer = client.post("/v1/pets", json=body)
            assert answer.status_code == 201, answer.text
            everything.append(answer.json())
        kept = [p for p in everything if status is None or p.get("status") == status]
        expected = _reference(kept, order, [p["id"] for p in pets])
        first = f"/v1/pets?limit={limit}" + (f"&status={status}" if status else "")
        forwards, backwards = [], []
        target = first
        while target:
            response = client.get(target)
            assert response.status_code == 200, response.text
            assert response.headers["x-total-count"] == str(len(kept))
            forwards.append([pet["id"] for pet in response.json()])
            assert len(forwards[-1]) <= limit
            target = links(response).get("next", "")
            assert len(forwards) <= len(kept) + 1
        assert [i for page in forwards for i in page] == expected
        target = links(client.get(first)).get("last", "")
        while target:
            response = client.get(target)
            backwards.insert(0, [pet["id"] for pet in response.json()])
            target = links(response).get("prev", "")
            assert len(backwards) <= len(kept) + 1
        assert [i for page in backwards for i in page] == expected
