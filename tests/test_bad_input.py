"""Bad input never hurts: a clear 4xx Error naming the culprit, never a 5xx, nothing stored.

Each case runs on a fresh in-process app and lists the store through the API
before and after. The body-size limit is also checked over real HTTP, with a
chunked body that declares no length.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from mockstore import schemas
from mockstore.scenario.model import Behaviour
from tests.support import assert_conforms, auth, live_server

KEY = auth("pro")
JSON = {"Content-Type": "application/json"}
MAX_BODY = Behaviour().max_body_bytes
assert MAX_BODY == 1024 * 1024  # the default: 1 MiB


def listing(client: TestClient) -> list[dict[str, Any]]:
    """The whole store through the API (the default scenario's 20 pets fit in one page)."""
    response = client.get("/v1/pets", params={"limit": 100}, headers=KEY)
    assert response.status_code == 200
    return assert_conforms(response)


def check_refused(response: Any, status: int, code: str, names: str) -> None:
    assert response.status_code < 500
    assert response.status_code == status, response.text
    body = assert_conforms(response)
    assert body["code"] == code
    assert names in body["message"], f"the message should name {names!r}: {body['message']!r}"


# (raw body, headers, status, code, what the message names)
BODIES: list[tuple[bytes, dict[str, str], int, str, str]] = [
    (b'{"name": "Rex",', JSON, 400, "malformed_json", "JSON"),
    (b'{"name": "Rex" "categoryId": 1}', JSON, 400, "malformed_json", "JSON"),
    (b'{"name": "Rex", "categoryId": NaN}', JSON, 400, "malformed_json", "JSON"),
    (b"\xff\xfe{}", JSON, 400, "malformed_json", "UTF-8"),
    (b"[" * 100_000, JSON, 400, "malformed_json", "JSON"),
    (b"[]", JSON, 400, "validation_failed", "object"),
    (b'[{"name": "Rex", "categoryId": 1}]', JSON, 400, "validation_failed", "object"),
    (b'"Rex"', JSON, 400, "validation_failed", "object"),
    (b"42", JSON, 400, "validation_failed", "object"),
    (b"null", JSON, 400, "validation_failed", "object"),
    (b"true", JSON, 400, "validation_failed", "object"),
    (b"", JSON, 400, "missing_body", "body"),
    (b"   \n", JSON, 400, "missing_body", "body"),
    (b"", {}, 400, "missing_body", "body"),
    (
        b'{"name": "Rex", "categoryId": 1}',
        {"Content-Type": "text/plain"},
        415,
        "unsupported_media_type",
        "application/json",
    ),
    (
        b'{"name": "Rex", "categoryId": 1}',
        {"Content-Type": "application/xml"},
        415,
        "unsupported_media_type",
        "application/json",
    ),
    (
        b'{"name": "Rex", "categoryId": 1}',
        {"Content-Type": "application/x-www-form-urlencoded"},
        415,
        "unsupported_media_type",
        "application/json",
    ),
    (b'{"name": "Rex", "categoryId": 1}', {}, 415, "unsupported_media_type", "application/json"),
    (b'{"categoryId": 1}', JSON, 400, "validation_failed", "name"),
    (b'{"name": "Rex"}', JSON, 400, "validation_failed", "categoryId"),
    (b"{}", JSON, 400, "validation_failed", "is required"),
]

# NewPet fields with a bad value: (field, JSON value, what the message names)
BAD_FIELDS: list[tuple[str, Any]] = [
    ("categoryId", True),
    ("categoryId", False),
    ("categoryId", "7"),
    ("categoryId", 1.5),
    # 1e30 is an integer by JSON Schema's rules (as 7.0 is), but far past int64.
    ("categoryId", 1e30),
    ("categoryId", None),
    ("categoryId", schemas.INT64_MAX + 1),
    ("categoryId", schemas.INT64_MIN - 1),
    ("categoryId", 10**30),
    ("categoryId", [1]),
    ("name", 5),
    ("name", None),
    ("name", True),
    ("name", ["Rex"]),
    ("name", {"first": "Rex"}),
    ("status", "lost"),
    ("status", "Available"),
    ("status", ""),
    ("status", None),
    ("status", 1),
]

QUERIES: list[tuple[str, str]] = [
    ("limit=0", "limit"),
    ("limit=101", "limit"),
    ("limit=-1", "limit"),
    ("limit=abc", "limit"),
    ("limit=1.5", "limit"),
    ("limit=", "limit"),
    ("limit=1e2", "limit"),
    ("limit=5&limit=5", "limit"),
    ("limit=5&limit=6", "limit"),
    (f"limit={2**64}", "limit"),
    ("status=lost", "status"),
    ("status=AVAILABLE", "status"),
    ("status=", "status"),
    ("status=sold&status=sold", "status"),
]


@pytest.mark.parametrize(("body", "headers", "status", "code", "names"), BODIES)
def test_bad_create_bodies(
    client: TestClient, body: bytes, headers: dict[str, str], status: int, code: str, names: str
) -> None:
    before = listing(client)
    response = client.post("/v1/pets", content=body, headers={**KEY, **headers})
    check_refused(response, status, code, names)
    assert listing(client) == before


@pytest.mark.parametrize(("field", "value"), BAD_FIELDS)
def test_bad_field_values(client: TestClient, field: str, value: Any) -> None:
    pet = {"name": "Rex", "categoryId": 7, "status": "available", field: value}
    assert not schemas.schema_validator("NewPet").is_valid(pet), "the case must be invalid"
    before = listing(client)
    response = client.post("/v1/pets", content=json.dumps(pet).encode(), headers={**KEY, **JSON})
    check_refused(response, 400, "validation_failed", field)
    assert listing(client) == before


@pytest.mark.parametrize(("query", "names"), QUERIES)
def test_bad_list_parameters(client: TestClient, query: str, names: str) -> None:
    response = client.get(f"/v1/pets?{query}", headers=KEY)
    check_refused(response, 400, "invalid_parameter", names)


@pytest.mark.parametrize(
    "pet_id",
    ["abc", "1.0", "1e3", "0x10", "%20", str(schemas.INT64_MAX + 1), str(schemas.INT64_MIN - 1)],
)
def test_bad_pet_ids(client: TestClient, pet_id: str) -> None:
    response = client.get(f"/v1/pets/{pet_id}", headers=KEY)
    check_refused(response, 400, "invalid_parameter", "petId")


@pytest.mark.parametrize("pet_id", ["-1", str(schemas.INT64_MIN), "0"])
def test_valid_int64_pet_ids_that_name_no_pet_are_404(client: TestClient, pet_id: str) -> None:
    """-1 is a valid int64: the id is well formed, there is just no such pet."""
    response = client.get(f"/v1/pets/{pet_id}", headers=KEY)
    check_refused(response, 404, "not_found", pet_id)


def test_body_over_the_limit_is_413(client: TestClient) -> None:
    before = listing(client)
    name = "a" * MAX_BODY
    response = client.post(
        "/v1/pets", content=json.dumps({"name": name, "categoryId": 1}), headers={**KEY, **JSON}
    )
    check_refused(response, 413, "payload_too_large", str(MAX_BODY))
    assert listing(client) == before


def test_a_body_of_exactly_the_limit_is_accepted(client: TestClient) -> None:
    frame = b'{"name":"","categoryId":1}'
    body = frame[:9] + b"a" * (MAX_BODY - len(frame)) + frame[9:]
    assert len(body) == MAX_BODY
    response = client.post("/v1/pets", content=body, headers={**KEY, **JSON})
    assert response.status_code == 201
    assert len(assert_conforms(response)["name"]) == MAX_BODY - len(frame)


def _peak_rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def test_oversized_bodies_over_real_http_with_and_without_content_length() -> None:
    chunk = b"a" * 65536
    total_mib = 64

    def chunked() -> Iterator[bytes]:
        # A generator: httpx sends it chunked, with no Content-Length to trust.
        yield b'{"name":"'
        for _ in range(total_mib * 16):
            yield chunk
        yield b'","categoryId":1}'

    # A process of its own, so its peak memory is the server's alone.
    with live_server() as server, server.client(headers=KEY) as http:
        before = listing_over(http)
        peak_before = _peak_rss_kib(server.process.pid)
        response = http.post("/v1/pets", content=chunked(), headers=JSON)
        assert response.request.headers.get("transfer-encoding") == "chunked"
        assert "content-length" not in response.request.headers
        check_refused(response, 413, "payload_too_large", str(MAX_BODY))
        peak_after = _peak_rss_kib(server.process.pid)
        if peak_before is not None and peak_after is not None:
            # 64 MiB went by; the server must not have held it.
            assert peak_after - peak_before < 16 * 1024, (peak_before, peak_after)
        declared = http.post("/v1/pets", content=b"{" + b" " * MAX_BODY + b"}", headers=JSON)
        check_refused(declared, 413, "payload_too_large", str(MAX_BODY))
        # The connection and the server are fine afterwards, and nothing was stored.
        assert listing_over(http) == before
        ok = http.post("/v1/pets", json={"name": "after", "categoryId": 1})
        assert ok.status_code == 201
        assert_conforms(ok)


def listing_over(http: Any) -> list[dict[str, Any]]:
    response = http.get("/v1/pets", params={"limit": 100})
    assert response.status_code == 200
    return assert_conforms(response)
