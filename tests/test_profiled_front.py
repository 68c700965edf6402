"""The profiled stand-in's front honours every HTTP choice its profile draws (``profiled_http``).

What a provider's gateway and web server add, walked over HTTP in process on a
clock the test moves (``test_profiled_standin.Tour``): conditional reads, content
coding, CORS preflights and cross-origin answers, a plain ``OPTIONS``, a trailing
slash, the advisory header, the client's request id answered back, a maintenance
window with its ``Retry-After``, message templates and computed Error fields. A
drawn profile's choices are each checked, so the fidelity tests that record it
(``test_fidelity_property.py``) meet a provider that does what its profile says.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import re
import zlib
from email.utils import formatdate, parsedate_to_datetime

import httpx
from hypothesis import given

from tests.test_profiled_standin import PROPERTY, Tour
from tests.upstream.profiled import Profile
from tests.upstream.profiled_http import ECHO_PATTERNS
from tests.upstream.profiles import GATEWAY, profiles

APP = "https://app.example.com"
RATE = ("X-RateLimit-Limit", "X-RateLimit-Remaining")


async def _raw(tour: Tour, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    """An answer as sent: no check of the service's own, the body not decoded."""
    request = tour.client.build_request(method, path, headers=headers)
    response = await tour.client.send(request, stream=True)
    response._content = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    return response


async def walk_front(profile: Profile) -> None:
    tour = Tour(profile)
    http = profile.http
    key = {"Authorization": tour.key}
    async with tour.client:
        created = await tour.client.post(
            "/v1/pets", json={"name": "Nala", "categoryId": 7, "nick": "n"}, headers=key
        )
        tour.fresh()
        if profile.semantics.unknown_fields != "refuse":
            assert created.status_code == 201, created.text
            advised = created.headers.get(http.advisory_header or "X-None")
            if http.advisory_header is not None:
                assert advised == http.advisory_value.replace("{fields}", "nick")
            pet_id = created.json()["id"]
        else:
            created = await tour.client.post(
                "/v1/pets", json={"name": "Nala", "categoryId": 7}, headers=key
            )
            assert created.status_code == 201, created.text
            pet_id = created.json()["id"]
        tour.fresh()
        # Conditional reads: 304 for * (and the pet's own date), in full otherwise.
        for operation, path in (("getPet", f"/v1/pets/{pet_id}"), ("listPets", "/v1/pets")):
            got = await tour.client.get(path, headers=key)
            if operation in http.last_modified:
                assert got.headers["Last-Modified"] == formatdate(
                    math.floor(tour.clock.now), usegmt=True
                ) or parsedate_to_datetime(got.headers["Last-Modified"]).timestamp() <= (
                    tour.clock.now
                )
            else:
                assert "Last-Modified" not in got.headers
            tour.fresh()
            again = await tour.client.get(path, headers={**key, "If-None-Match": "*"})
            if operation in http.conditional:
                assert (again.status_code, again.content) == (304, b"")
                assert "Content-Type" not in again.headers
            else:
                assert again.status_code == 200
            tour.fresh()
        # Content coding, above the size and where accepted.
        for _ in range(30):
            await tour.client.post("/v1/pets", json={"name": "Pip", "categoryId": 1}, headers=key)
            tour.fresh()
        listed = await _raw(
            tour, "GET", "/v1/pets?limit=50", {**key, "Accept-Encoding": "gzip, deflate"}
        )
        if http.encodings:
            coding = listed.headers.get("Content-Encoding")
            assert coding == http.encodings[0], (listed.status_code, len(listed.content))
            decode = gzip.decompress if coding == "gzip" else zlib.decompress
            assert isinstance(json.loads(decode(listed.content)), list)
            assert ("Accept-Encoding" in listed.headers.get_list("Vary")) == http.vary
        else:
            assert "Content-Encoding" not in listed.headers
        tour.fresh()
        plain = await _raw(tour, "GET", "/v1/pets?limit=50", {**key, "Accept-Encoding": "identity"})
        assert "Content-Encoding" not in plain.headers
        tour.fresh()
        # CORS.
        preflight = {"Origin": APP, "Access-Control-Request-Method": "POST"}
        anonymous = await tour.client.options("/v1/pets", headers=preflight)
        tour.fresh()
        keyed = await tour.client.options("/v1/pets", headers={**preflight, **key})
        tour.fresh()
        evil = await tour.client.options(
            "/v1/pets",
            headers={
                **key,
                "Origin": "https://evil.example",
                **{"Access-Control-Request-Method": "DELETE"},
            },
        )
        cors = http.cors
        if cors is None:
            # No CORS: an OPTIONS is a method the API does not serve, or a plain OPTIONS.
            assert keyed.status_code >= 400 or http.options != "none"
        else:
            assert keyed.status_code == cors.preflight_status
            said = keyed.headers["Access-Control-Allow-Origin"]
            assert said == (APP if cors.credentials or "*" not in cors.origins else "*")
            assert any(h in keyed.headers for h in RATE) == (cors.stage != "gateway")
            if cors.stage == "authenticated":
                assert anonymous.status_code >= 400  # the key (or the path) first
            else:
                assert anonymous.status_code == cors.preflight_status
            if cors.rejected_status is None:
                assert evil.status_code == cors.preflight_status
                assert "Access-Control-Allow-Origin" not in evil.headers
            else:
                assert (evil.status_code, evil.json()["code"]) == (
                    cors.rejected_status,
                    "cors_rejected",
                )
            tour.fresh()
            cross = await tour.client.get("/v1/pets?limit=1", headers={**key, "Origin": APP})
            assert "Access-Control-Allow-Origin" in cross.headers
        tour.fresh()
        # A plain OPTIONS.
        options = await tour.client.options("/v1/pets", headers=key)
        if http.options != "none":
            assert options.status_code == http.options_status
            assert "OPTIONS" in options.headers["Allow"]
        else:
            assert options.status_code != 204 or cors is not None
        tour.fresh()
        # A trailing slash.
        slashed = await tour.client.get("/v1/pets/?limit=1", headers=key)
        if http.trailing_slash == "redirect":
            assert slashed.status_code == http.trailing_status
            location = slashed.headers["Location"]
            assert location.endswith("/v1/pets?limit=1")
            assert location.startswith("http") == (http.trailing_location == "url")
        elif http.trailing_slash == "serve":
            assert slashed.status_code == 200 and len(slashed.json()) <= 1
        else:
            assert slashed.status_code == profile.refusals.unknown_path.status
        tour.fresh()
        # The client's own request id.
        spec = profile.headers.request_id
        if spec is not None:
            for sent in ("client-test-0001", "a:b", "id@{weird}/x"):
                answered = await tour.client.get(
                    "/v1/pets?limit=1", headers={**key, spec.name: sent}
                )
                echoed = answered.headers[spec.name] == sent
                assert echoed == (http.echo is not None and bool(re.fullmatch(http.echo, sent)))
                tour.fresh()
    # A maintenance window, from the service's start: a new tour on its own clock.
    window = http.maintenance
    if window is not None:
        tour = Tour(profile)
        async with tour.client:
            refused = await tour.client.get("/v1/store/orders", headers=key)
            assert refused.status_code == window.status
            assert refused.json()["code"] == window.code
            if window.retry_after == "none":
                assert "Retry-After" not in refused.headers
            else:
                retry = refused.headers["Retry-After"]
                shape = {"seconds": r"[0-9]+", "decimal": r"[0-9]+\.[0-9]", "http-date": r".*GMT"}
                assert re.fullmatch(shape[window.retry_after], retry)
            tour.clock.now += window.lasts_seconds + 1
            after = await tour.client.get("/v1/store/orders", headers=key)
            assert after.status_code != window.status or (
                window.status == 503 and after.json()["code"] != window.code
            )


@PROPERTY
@given(profiles())
def test_a_drawn_front_is_honoured_over_http(profile: Profile) -> None:
    asyncio.run(walk_front(profile))


def test_every_echo_pattern_tells_the_session_ids_apart() -> None:
    # tests/fidelity_session.py sends these; each pattern answers a different set back.
    from tests.fidelity_session import CLIENT_IDS

    answered = {
        pattern: frozenset(i for i in CLIENT_IDS if re.fullmatch(pattern, i))
        for pattern in ECHO_PATTERNS
    }
    assert len(set(answered.values())) == len(ECHO_PATTERNS)


def test_the_gateway_profile_front() -> None:
    asyncio.run(walk_front(GATEWAY))
