"""Authentication: ``Authorization: Bearer <key>``, and nothing else, opens the API.

A caller without a valid key must learn nothing about what exists, so the key
is checked before the path is matched and before anything is validated.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from mockstore.keys import ApiKey, KeyRing, parse_authorization
from tests.support import assert_conforms, auth

# Every operation and a request that would fail later in the pipeline if auth
# did not come first: (method, path, query, body).
OPERATIONS: list[tuple[str, str, dict[str, str], Any]] = [
    ("GET", "/v1/pets", {}, None),
    ("POST", "/v1/pets", {}, {"name": "Rex", "categoryId": 1}),
    ("GET", "/v1/pets/1", {}, None),
    ("GET", "/v1/store/orders", {}, None),
]
WOULD_FAIL_LATER: list[tuple[str, str, dict[str, str], Any]] = [
    ("GET", "/v1/pets", {"limit": "0"}, None),  # 400 with a key
    ("GET", "/v1/pets", {"limit": "abc", "status": "lost"}, None),
    ("POST", "/v1/pets", {}, {"name": 5}),  # 400 with a key
    ("POST", "/v1/pets", {}, "not json"),
    ("GET", "/v1/pets/abc", {}, None),  # 400 with a key
    ("GET", "/v1/pets/424242", {}, None),  # 404 with a key
    ("GET", "/v1/nothing", {}, None),  # 404 with a key
    ("GET", "/elsewhere", {}, None),
    ("DELETE", "/v1/pets", {}, None),  # 405 with a key
    ("PUT", "/v1/pets/1", {}, None),
]


def _send(
    client: TestClient,
    method: str,
    path: str,
    query: dict[str, str],
    body: Any,
    headers: dict[str, str] | None = None,
) -> Any:
    headers = dict(headers or {})
    if body is None:
        return client.request(method, path, params=query, headers=headers)
    content = body.encode() if isinstance(body, str) else None
    headers["Content-Type"] = "application/json"
    if content is not None:
        return client.request(method, path, params=query, headers=headers, content=content)
    return client.request(method, path, params=query, headers=headers, json=body)


def _pet_count(client: TestClient) -> int:
    return len(client.get("/__mockstore/pets").json())


def _assert_missing_or_malformed(response: Any) -> None:
    """401 ``unauthorized`` with a bare Bearer challenge (no ``error``: no key was given)."""
    assert response.status_code == 401
    assert assert_conforms(response)["code"] == "unauthorized"
    challenge = response.headers["www-authenticate"]
    assert challenge.split()[0] == "Bearer"
    assert "error=" not in challenge


def _assert_invalid_token(response: Any) -> None:
    """401 ``invalid_token`` with ``error="invalid_token"`` (RFC 6750 section 3.1)."""
    assert response.status_code == 401
    assert assert_conforms(response)["code"] == "invalid_token"
    challenge = response.headers["www-authenticate"]
    assert challenge.split()[0] == "Bearer"
    assert 'error="invalid_token"' in challenge


@pytest.mark.parametrize(("method", "path", "query", "body"), OPERATIONS)
def test_every_operation_needs_a_key(
    client: TestClient, method: str, path: str, query: dict[str, str], body: Any
) -> None:
    before = _pet_count(client)
    _assert_missing_or_malformed(_send(client, method, path, query, body))
    _assert_invalid_token(
        _send(client, method, path, query, body, {"Authorization": "Bearer no-such-key"})
    )
    assert _pet_count(client) == before


@pytest.mark.parametrize(
    "header",
    [
        "Basic cHJvLWtleTo=",  # pro-key as a Basic user name: still not Bearer
        "Bearer",
        "Bearer ",
        "Bearer    ",
        "Token pro-key",
        "pro-key",
        "Bearer pro-key extra",
        "Bearerpro-key",
        "",
    ],
)
def test_malformed_authorization_is_401_without_invalid_token(
    client: TestClient, header: str
) -> None:
    response = client.get("/v1/pets", headers={"Authorization": header})
    _assert_missing_or_malformed(response)


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_scheme_is_case_insensitive(client: TestClient, scheme: str) -> None:
    """RFC 9110 section 11.1: the auth scheme is a case-insensitive token."""
    response = client.get("/v1/pets/1", headers={"Authorization": f"{scheme} pro-key"})
    assert response.status_code == 200
    assert assert_conforms(response)["id"] == 1


@pytest.mark.parametrize("key", ["nope", "pro-ke", "pro-key2", "PRO-KEY", "free-key-", "x" * 300])
def test_unknown_key_is_invalid_token(client: TestClient, key: str) -> None:
    """A near miss of a real key is as unknown as any other string."""
    _assert_invalid_token(client.get("/v1/pets", headers={"Authorization": f"Bearer {key}"}))


def test_a_revoked_key_is_invalid_token(client: TestClient) -> None:
    accepted = client.get("/v1/pets", headers=auth("pro"))
    assert accepted.status_code == 200
    assert_conforms(accepted)
    assert client.delete("/__mockstore/keys/pro-key").status_code == 204
    _assert_invalid_token(client.get("/v1/pets", headers=auth("pro")))


@pytest.mark.parametrize(("method", "path", "query", "body"), WOULD_FAIL_LATER)
def test_auth_is_checked_before_validation_routing_and_lookup(
    client: TestClient, method: str, path: str, query: dict[str, str], body: Any
) -> None:
    before = _pet_count(client)
    missing = _send(client, method, path, query, body)
    _assert_missing_or_malformed(missing)
    assert "allow" not in missing.headers, "a 405's Allow would tell what exists"
    unknown = _send(client, method, path, query, body, {"Authorization": "Bearer nope"})
    _assert_invalid_token(unknown)
    assert "allow" not in unknown.headers
    assert _pet_count(client) == before
    # With a valid key the same request fails later, for its own reason.
    with_key = _send(client, method, path, query, body, auth("pro"))
    assert with_key.status_code in {400, 404, 405}
    assert_conforms(with_key)


def test_401_body_is_the_same_whatever_exists(client: TestClient) -> None:
    """Without a key an existing pet, a missing pet and a missing path look alike."""
    bodies = {
        path: assert_conforms(client.get(path))
        for path in ("/v1/pets/1", "/v1/pets/999", "/v1/nothing")
    }
    assert len({repr(body) for body in bodies.values()}) == 1, bodies


def test_401_counts_in_the_anonymous_bucket_with_free_limits(client: TestClient) -> None:
    first = client.get("/v1/pets")
    second = client.get("/v1/pets", headers={"Authorization": "Bearer nope"})
    assert first.status_code == second.status_code == 401
    assert_conforms(first)
    assert_conforms(second)
    # Free plan: 60 a minute; unknown keys share the address's anonymous bucket.
    assert first.headers["x-ratelimit-limit"] == "60"
    assert int(first.headers["x-ratelimit-remaining"]) == 59
    assert int(second.headers["x-ratelimit-remaining"]) == 58


# -- the pure parts -------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "kind", "token"),
    [
        (None, "missing", ""),
        (b"Bearer abc", "bearer", "abc"),
        (b"bearer abc", "bearer", "abc"),
        (b"BEARER abc", "bearer", "abc"),
        (b"  Bearer abc  ", "bearer", "abc"),
        (b"Bearer", "malformed", ""),
        (b"Bearer  ", "malformed", ""),
        (b"Basic YWJjOg==", "malformed", ""),
        (b"Bearer a b", "malformed", ""),
        (b"Bearer \xff\xfe", "malformed", ""),
        (b"", "malformed", ""),
    ],
)
def test_parse_authorization(header: bytes | None, kind: str, token: str) -> None:
    credentials = parse_authorization(header)
    assert (credentials.kind, credentials.token) == (kind, token)


def test_key_ring_lookup_issue_revoke() -> None:
    ring = KeyRing([ApiKey("k1", "free", "t1")])
    assert ring.lookup("k1") == ApiKey("k1", "free", "t1")
    assert ring.lookup("k") is None and ring.lookup("k12") is None and ring.lookup("") is None
    ring.issue(ApiKey("k2", "pro", "t2"))
    assert "k2" in ring and len(ring) == 2
    assert ring.revoke("k1") == ApiKey("k1", "free", "t1")
    assert ring.lookup("k1") is None
    assert ring.revoke("k1") is None


def test_a_remembered_key_is_forgotten_when_it_is_revoked_or_reissued() -> None:
    # The ring remembers keys it confirmed (hashing each request's token cost
    # most of what authentication cost): a revoke or a reissue must not leave
    # the old answer behind.
    ring = KeyRing([ApiKey("k1", "free", "t1")])
    assert ring.lookup("k1") == ApiKey("k1", "free", "t1")
    assert ring.lookup("k1") == ApiKey("k1", "free", "t1")  # from the memo
    ring.revoke("k1")
    assert ring.lookup("k1") is None
    ring.issue(ApiKey("k1", "pro", "t9"))
    assert ring.lookup("k1") == ApiKey("k1", "pro", "t9")
    ring.issue(ApiKey("k1", "business", "t9"))  # the same secret, another plan
    assert ring.lookup("k1") == ApiKey("k1", "business", "t9")
    assert ring.lookup("k1").bucket == "key:k1"


def test_parsed_headers_are_remembered_within_their_budget() -> None:
    from mockstore import keys

    before = dict(keys._parsed)
    try:
        for n in range(5000):
            parse_authorization(b"Bearer guess-%d-" % n + b"x" * 200)
        held = sum(len(header) for header in keys._parsed)
        assert held <= keys._parsed_budget.max_bytes
        assert parse_authorization(b"Bearer " + b"y" * 2000).token == "y" * 2000  # never kept
        assert b"Bearer " + b"y" * 2000 not in keys._parsed
    finally:
        keys._parsed.clear()
        keys._parsed.update(before)


def test_the_plan_of_a_reissued_key_reaches_its_answers(client: TestClient) -> None:
    # Through the control API: a key revoked and issued again on another plan
    # is answered with the new plan's figures at once.
    tool = {"X-Mockstore-Client": "tests"}
    issued = client.post("/__mockstore/keys", json={"key": "swap-key", "plan": "free"})
    assert issued.status_code == 201
    first = client.get("/v1/pets", headers=auth("swap-key"))
    assert first.headers["x-ratelimit-limit"] == "60"
    assert client.delete("/__mockstore/keys/swap-key", headers=tool).status_code == 204
    assert client.get("/v1/pets", headers=auth("swap-key")).status_code == 401
    again = client.post("/__mockstore/keys", json={"key": "swap-key", "plan": "business"})
    assert again.status_code == 201
    assert client.get("/v1/pets", headers=auth("swap-key")).headers["x-ratelimit-limit"] == "1000"
