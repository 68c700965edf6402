"""Content coding (``http.compression``): gzip and deflate when the client accepts them and the
body is large enough, ``Vary: Accept-Encoding``, and a journal that keeps the content.

Over a real uvicorn process (in Redis too under ``MOCKSTORE_TEST_STATE=redis``);
the negotiation rule itself for every ``Accept-Encoding`` (Hypothesis).
"""

from __future__ import annotations

import gzip
import json
import zlib

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.encoding import choose, weights
from tests.support import LiveServer, mock_server

KEY = {"Authorization": "Bearer zip-key"}
SCENARIO = """\
version: 1
clock: {start: 2026-03-01T12:00:00Z, mode: manual}
keys: [{key: zip-key, plan: {per_minute: 100, per_day: 1000}}]
generate: {pets: 40}
http:
  compression: {encodings: [gzip, deflate], min_bytes: 200}
"""


@pytest.fixture(scope="module")
def api() -> LiveServer:
    with mock_server(SCENARIO) as running:
        yield running


class Raw:
    """An answer as sent: its status, headers and the bytes of its body, not decoded."""

    def __init__(self, response: httpx.Response, body: bytes) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        self.body = body


def _raw(api: LiveServer, path: str, accept: str | None, method: str = "GET") -> Raw:
    headers = dict(KEY)
    if accept is not None:
        headers["Accept-Encoding"] = accept
    with httpx.Client(base_url=api.api) as http:
        request = http.build_request(method, path, headers=headers)
        if accept is None:
            del request.headers["accept-encoding"]
        response = http.send(request, stream=True)
        try:
            return Raw(response, b"".join(response.iter_raw()))
        finally:
            response.close()


def test_gzip_when_accepted_and_the_body_is_large_enough(api: LiveServer) -> None:
    plain = _raw(api, "/pets?limit=20", "identity")
    coded = _raw(api, "/pets?limit=20", "gzip")
    assert "content-encoding" not in plain.headers
    assert coded.headers["content-encoding"] == "gzip"
    assert coded.headers["vary"] == plain.headers["vary"] == "Accept-Encoding"
    content = gzip.decompress(coded.body)
    assert json.loads(content) == json.loads(plain.body)
    assert int(coded.headers["content-length"]) == len(coded.body)


def test_the_clients_weights_decide_then_the_providers_order(api: LiveServer) -> None:
    both = _raw(api, "/pets?limit=20", "deflate, gzip")
    deflate = _raw(api, "/pets?limit=20", "gzip;q=0.5, deflate")
    refused = _raw(api, "/pets?limit=20", "gzip;q=0, deflate;q=0")
    assert both.headers["content-encoding"] == "gzip"  # equal weights: the provider's first
    assert deflate.headers["content-encoding"] == "deflate"
    json.loads(zlib.decompress(deflate.body))  # type: ignore[attr-defined]
    assert "content-encoding" not in refused.headers


def test_small_bodies_and_a_client_that_says_nothing_get_the_body_as_it_is(
    api: LiveServer,
) -> None:
    small = _raw(api, "/pets/1", "gzip")
    silent = _raw(api, "/pets?limit=20", None)
    assert "content-encoding" not in small.headers
    assert "content-encoding" not in silent.headers
    assert small.headers["vary"] == "Accept-Encoding"


def test_head_states_the_coded_length(api: LiveServer) -> None:
    got = _raw(api, "/pets?limit=20", "gzip")
    head = _raw(api, "/pets?limit=20", "gzip", method="HEAD")
    assert head.headers["content-encoding"] == "gzip"
    assert head.headers["content-length"] == got.headers["content-length"]


def test_a_client_reads_it_as_it_would_any_coded_answer(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        listed = http.get("/pets?limit=30")
    assert listed.headers["content-encoding"] == "gzip"  # httpx accepts gzip by default
    assert len(listed.json()) == 30


def test_the_journal_and_the_har_keep_the_content(api: LiveServer) -> None:
    _raw(api, "/pets?limit=25", "gzip")
    har = api.mock.control.har()
    entry = har["log"]["entries"][-1]
    assert [h["value"] for h in entry["response"]["headers"] if h["name"] == "content-encoding"]
    assert len(json.loads(entry["response"]["content"]["text"])) == 25


def test_refusals_are_coded_too_when_large_enough() -> None:
    text = SCENARIO.replace("min_bytes: 200", "min_bytes: 10")
    with mock_server(text) as api:
        refused = _raw(api, "/pets?limit=0", "gzip")
    assert refused.status_code == 400
    assert refused.headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(refused.body))["code"] == "invalid_parameter"  # type: ignore[attr-defined]


# -- negotiation, for every Accept-Encoding -------------------------------------------------

_codings = st.sampled_from(["gzip", "deflate", "br", "identity", "*", "x-gzip", "zstd"])
_weights = st.one_of(st.none(), st.sampled_from(["0", "0.0", "0.1", "0.5", "1", "1.0", "0.999"]))


@given(
    listed=st.lists(st.tuples(_codings, _weights), max_size=6),
    offered=st.lists(st.sampled_from(["gzip", "deflate"]), unique=True, max_size=2),
)
def test_the_chosen_coding_is_one_the_client_weighs_highest(
    listed: list[tuple[str, str | None]], offered: list[str]
) -> None:
    header = ", ".join(name if q is None else f"{name};q={q}" for name, q in listed)
    chosen = choose(header.encode(), tuple(offered))
    given_weights = weights(header.encode())

    def weight(coding: str) -> float:
        fallback = given_weights.get("x-gzip", given_weights.get("*", 0.0))
        if coding == "gzip":
            return given_weights.get("gzip", fallback)
        return given_weights.get(coding, given_weights.get("*", 0.0))

    if chosen is None:
        assert all(weight(coding) == 0 for coding in offered)
    else:
        assert chosen in offered
        assert weight(chosen) > 0
        assert weight(chosen) == max(weight(coding) for coding in offered)
        # Ties go to the provider's order.
        assert chosen == next(c for c in offered if weight(c) == weight(chosen))
