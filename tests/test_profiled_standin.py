"""The profiled stand-in honours every choice its profile draws, and the spec's rules always.

``tests/upstream/profiled.py`` is a Pet Store provider configured by a ``Profile``;
``tests/upstream/profiles.py`` draws profiles from the whole space. For a drawn
profile a ``Tour`` walks every condition over HTTP (in process, through
``httpx.ASGITransport``, on a clock the test moves, so no assertion depends on
time passing) and checks each answer against the profile and the spec. A few
tests start the stand-in as a real process, as the fidelity tests do.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings

from tests.support import examples
from tests.upstream import Process, new_key, profiled, profiled_standin
from tests.upstream.profiled import (
    INT64_MAX,
    Plan,
    Profile,
    ProfiledPetStore,
    ProfileError,
    Semantics,
    window_at,
)
from tests.upstream.profiled_collections import order_key
from tests.upstream.profiled_http import HttpChoices
from tests.upstream.profiles import GATEWAY, LEGACY, MOCKSTORE_LIKE, NAMED, profiles, with_windows

T0 = 1772323200  # 2026-03-01T00:00:00Z, a UTC midnight
ORIGIN = "http://petstore.test"
PROPERTY = settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
# A walk spends at most this many requests on one allowance (the drawn profiles'
# are far smaller; mockstore's own plans go to a million a day).
WALK_BUDGET = 200
RFC3339_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def seen(branch: str) -> None:
    """Count a branch a walk took (``pytest --hypothesis-show-statistics`` lists them)."""
    if currently_in_test_context():
        event(branch)


class ManualClock:
    """The service's clock in these tests: it moves only when the test moves it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Tour:
    """One profile's stand-in in process, a client, and the checks every answer passes."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.clock = ManualClock(T0 + 0.25)
        # Four keys per plan, each its own bucket, so walks start from nothing spent.
        self.keys = {
            name: [f"sk_test_{index}_{n}" for n in range(4)]
            for index, (name, _) in enumerate(profile.rate_limits.plans)
        }
        self.app = ProfiledPetStore(
            profile,
            {key: plan for plan, keys in self.keys.items() for key in keys},
            clock=self.clock,
        )
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url=ORIGIN
        )
        self.plan_name, self.plan = profile.rate_limits.plans[0]
        self.key = self.bearer(self.plan_name)
        self.created: list[dict[str, Any]] = []

    def bearer(self, plan: str, n: int = 0) -> str:
        return f"Bearer {self.keys[plan][n]}"

    def fresh(self) -> None:
        """Move past every window, ban and rejection the profile keeps."""
        limits = self.profile.rate_limits
        # Two of the longest window: a sliding-window counter remembers the previous one.
        self.clock.now += (
            max(2 * limits.day_seconds, limits.ban.duration_seconds, limits.ban.within_seconds) + 1
        )

    async def send(
        self,
        method: str,
        path: str,
        *,
        auth: str | None = "key",
        op: str | None = None,
        fresh: bool = True,
        **kwargs: Any,
    ) -> httpx.Response:
        """Send one request (after ``fresh()`` unless told) and check what always holds."""
        if fresh:
            self.fresh()
        authorization = self.key if auth == "key" else auth
        headers = dict(kwargs.pop("headers", {}))
        if authorization is not None:
            headers["Authorization"] = authorization
        response = await self.client.request(method, path, headers=headers, **kwargs)
        valid = authorization is not None and any(
            authorization == f"Bearer {key}" for keys in self.keys.values() for key in keys
        )
        self.check_answer(response, op, valid)
        return response

    # -- what every answer must show

    def check_answer(self, response: httpx.Response, op: str | None, valid: bool) -> None:
        profile, now, status = self.profile, self.clock.now, response.status_code
        headers = response.headers
        limits = profile.rate_limits
        gateway = limits.gateway
        if not valid and not gateway.anonymous_limited and gateway.uncounted == "zero":
            # A gateway that limits keys only, telling a caller without one it has nothing.
            for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining"):
                assert headers[name] == "0", (name, dict(headers))
            assert headers["X-RateLimit-Reset"]
        elif not valid and not gateway.anonymous_limited:
            # A gateway that limits keys only: a caller without one sees no figures.
            for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
                assert name not in headers, (name, dict(headers))
        else:
            self.check_figures(response)
        assert headers["Date"] == formatdate(math.floor(now), usegmt=True)
        assert headers["Content-Type"] == profile.headers.content_type
        assert headers["Content-Length"] == str(
            len(response.content)
            if response.request.method != "HEAD"
            else headers["Content-Length"]
        )
        if response.request.method == "HEAD":
            assert response.content == b""
        request_id = profile.headers.request_id
        if request_id is None:
            for name in ("X-Request-Id", "Request-Id", "X-Correlation-Id", "X-Trace-Id"):
                assert name not in headers
        else:
            value = headers[request_id.name]
            assert value.startswith(request_id.prefix)
            shape = {
                "counter": r"[0-9]{6,}",
                "uuid": UUID.pattern,
                "hex": r"[0-9a-f]{32}",
                "alphanumeric": f"[A-Za-z0-9]{{{request_id.length}}}",
            }
            assert re.fullmatch(shape[request_id.format], value[len(request_id.prefix) :])
        self.check_constant_headers(response, op)
        # The spec: every refusal is an Error whose status is the HTTP status.
        if status >= 400 and response.request.method != "HEAD":
            body = response.json()
            assert isinstance(body, dict)
            assert isinstance(body["code"], str) and body["code"]
            assert isinstance(body["message"], str) and body["message"]
            assert body["status"] == status
            extras = {extra.name for extra in profile.refusals.extra_fields}
            assert set(body) <= {"code", "message", "status"} | extras
        if status == 429:
            assert "Retry-After" in headers  # the spec
        challenge = profile.refusals.www_authenticate
        if status == 401 and challenge is not None:
            assert headers["WWW-Authenticate"].startswith("Bearer")
            if challenge.realm is not None:
                assert f'realm="{challenge.realm}"' in headers["WWW-Authenticate"]
            else:
                assert "realm" not in headers["WWW-Authenticate"]
        else:
            assert "WWW-Authenticate" not in headers
        if status == 405:
            assert headers["Allow"]
        self.check_deprecation(response, op, valid)
        self.check_caching(response, op)

    def check_figures(self, response: httpx.Response) -> None:
        """X-RateLimit-* on every answer (the spec), and the gateway's own figures."""
        headers, now = response.headers, self.clock.now
        limits = self.profile.rate_limits
        gateway = limits.gateway
        for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining"):
            assert re.fullmatch(r"[0-9]+", headers.get(name, "")), (name, dict(headers))
        limit, remaining = int(headers["X-RateLimit-Limit"]), int(headers["X-RateLimit-Remaining"])
        assert remaining <= limit
        digits = gateway.reset_decimals
        shape = r"[0-9]+" + (rf"\.[0-9]{{{digits}}}" if digits else "")
        raw = headers.get("X-RateLimit-Reset", "")
        assert re.fullmatch(shape, raw), ("X-RateLimit-Reset", dict(headers))
        # A sliding-window counter is whole again at the end of the window after this one.
        horizon = max(2 * limits.day_seconds, limits.ban.duration_seconds) + 1
        reset = float(raw)
        if limits.reset == "epoch":
            assert now <= reset <= now + horizon
        elif limits.reset == "epoch_ms":
            assert now * 1000 <= reset <= (now + horizon) * 1000
        else:
            assert 0 <= reset <= horizon
        used = headers.get("X-RateLimit-Used")
        assert (used is not None) == ("used" in gateway.figures)
        if used is not None:
            assert int(used) == limit - remaining
        assert headers.get("X-RateLimit-Resource") == (
            gateway.resource if "resource" in gateway.figures else None
        )
        for _, name in gateway.per_window:
            if f"X-RateLimit-Limit-{name}" in headers:
                assert int(headers[f"X-RateLimit-Remaining-{name}"]) <= int(
                    headers[f"X-RateLimit-Limit-{name}"]
                )
        success = 200 <= response.status_code < 300
        drafted = gateway.draft == "all" or (gateway.draft == "success" and success)
        assert ("RateLimit-Policy" in headers) == drafted, dict(headers)
        if drafted:
            names = dict(gateway.policies)
            assert headers["RateLimit-Policy"].startswith(f'"{names["minute"]}";q=')
            assert re.fullmatch(
                r'"[^"]+";r=[0-9]+;t=[0-9]+(, "[^"]+";r=[0-9]+;t=[0-9]+)?', headers["RateLimit"]
            )

    def check_constant_headers(self, response: httpx.Response, op: str | None) -> None:
        configured = self.profile.headers
        expected = dict(configured.always)
        expected.update(
            dict(configured.by_status_class).get(f"{response.status_code // 100}xx", ())
        )
        if op is not None:
            expected.update(dict(configured.by_operation).get(op, ()))
        names = {name for name, _ in configured.always}
        names |= {name for _, values in configured.by_status_class for name, _ in values}
        names |= {name for _, values in configured.by_operation for name, _ in values}
        for name in names:
            assert response.headers.get(name) == expected.get(name), (
                name,
                response.status_code,
                op,
            )

    def check_deprecation(self, response: httpx.Response, op: str | None, valid: bool) -> None:
        deprecation = self.profile.headers.deprecation
        answers = deprecation.answers
        carries = op == "getPet" and (
            answers == "all"
            or (answers == "authenticated" and valid)
            or (answers == "success" and 200 <= response.status_code < 300)
        )
        headers = response.headers
        if not carries:
            paged = op == "listPets" and bool(self.profile.semantics.collections.links)
            for name in ("Deprecation", "Sunset", *(() if paged else ("Link",))):
                assert name not in headers, (name, response.status_code, op)
            return
        expected = {
            "epoch": f"@{deprecation.since}",
            "http-date": formatdate(deprecation.since, usegmt=True),
            "true": "true",
            "none": None,
        }[deprecation.deprecation]
        assert headers.get("Deprecation") == expected
        sunset = formatdate(deprecation.sunset, usegmt=True) if deprecation.sunset_header else None
        assert headers.get("Sunset") == sunset
        assert parsedate_to_datetime(sunset).date().isoformat() == "2030-12-05" if sunset else True
        assert headers.get("Link") == deprecation.link

    def check_caching(self, response: httpx.Response, op: str | None) -> None:
        configured = self.profile.headers
        read_ok = response.status_code == 200 and op is not None
        etag = dict(configured.etag).get(op or "") if read_ok else None
        if etag is None:
            assert "ETag" not in response.headers
        else:
            pattern = r'W/"[0-9a-f]+"' if etag == "weak" else r'"[0-9a-f]+"'
            assert re.fullmatch(pattern, response.headers["ETag"])
        cache = dict(configured.cache_control).get(op or "") if read_ok else None
        assert response.headers.get("Cache-Control") == cache

    # -- what one answer must be

    def refused(self, response: httpx.Response, condition: str) -> None:
        """``response`` is the profile's answer to ``condition``."""
        refusal = self.profile.refusals.of(condition)
        assert response.status_code == refusal.status, (condition, response.text)
        challenge = self.profile.refusals.www_authenticate
        if refusal.status == 401 and challenge is not None:
            flagged = 'error="invalid_token"' in response.headers["WWW-Authenticate"]
            assert flagged == (condition == "unknown_key" and challenge.invalid_token_error)
        if response.request.method == "HEAD":
            return
        body = response.json()
        assert body["code"] == refusal.code, (condition, body)
        for extra in self.profile.refusals.extra_fields:
            if extra.only and condition not in extra.only:
                assert extra.name not in body, (condition, extra)
                continue
            if extra.kind in ("value", "parameter", "retry_after_s", "retry_after_ms"):
                # Values of the answer's own, where it has them (test_profiled_front.py).
                value = body.get(extra.name)
                if extra.kind.startswith("retry_after") and value is not None:
                    assert isinstance(value, int) and value > 0
                continue
            value = body[extra.name]
            if extra.kind == "details":
                assert isinstance(value, list)
                shape = (
                    {"pointer", "reason"}
                    if self.profile.refusals.details_item == "pointer_reason"
                    else {"field", "issue"}
                )
                assert all(set(item) == shape for item in value)
                continue
            if extra.kind == "constant":
                assert value == extra.value
            elif extra.kind == "uuid":
                assert UUID.fullmatch(value)
            elif extra.kind == "request_id":
                request_id = self.profile.headers.request_id
                assert value == (response.headers[request_id.name] if request_id else value)
                assert isinstance(value, str) and value
            else:
                moment = datetime.fromtimestamp(self.clock.now, UTC)
                assert RFC3339_MS.fullmatch(value)
                assert (
                    value
                    == moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
                )

    def limits(self, response: httpx.Response, limit: int, remaining: int, ends: float) -> None:
        """The X-RateLimit-* headers describe a window of ``limit`` ending at ``ends``."""
        headers = response.headers
        assert (int(headers["X-RateLimit-Limit"]), int(headers["X-RateLimit-Remaining"])) == (
            limit,
            remaining,
        ), (response.status_code, dict(headers))
        form = self.profile.rate_limits.reset
        expected = {
            "epoch": math.ceil(ends),
            "epoch_ms": math.ceil(ends * 1000),
            "delta": max(1, math.ceil(ends - self.clock.now)),
        }[form]
        assert int(headers["X-RateLimit-Reset"]) == expected

    def retry_after(self, response: httpx.Response, form: str, until: float) -> None:
        value = response.headers.get("Retry-After")
        wait = until - self.clock.now
        if form == "none":
            assert value is None
        elif form == "seconds":
            assert value == str(max(1, math.ceil(wait)))
        elif form == "decimal":
            digits = self.profile.rate_limits.gateway.retry_after_decimals
            assert value is not None and re.fullmatch(rf"[0-9]+\.[0-9]{{{digits}}}", value)
            assert wait <= float(value) < wait + 10**-digits + 1e-6
        else:
            assert value == formatdate(math.ceil(until), usegmt=True)

    def window_end(self, start: float, length: int) -> float:
        """When a window holding a first request at ``start`` ends."""
        limits = self.profile.rate_limits
        day = length == limits.day_seconds and length != limits.minute_seconds
        if limits.aligned("day" if day else "minute"):
            return (math.floor(start / length) + 1) * length
        return start + length


# ---------------------------------------------------------------------------
# The walks


async def walk_refusals(tour: Tour) -> None:
    profile, send, refused = tour.profile, tour.send, tour.refused
    numbers = profile.semantics.collections.numbers_body
    routing_first = profile.refusals.routing == "before_auth"

    response = await send("GET", "/v1/pets", auth=None, op="listPets")
    refused(response, "missing_key")
    for header in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer a b", "Token abc"):
        response = await send("GET", "/v1/pets", auth=header, op="listPets")
        refused(response, "malformed_authorization")
    response = await send("GET", "/v1/pets", auth="Bearer sk_never_issued", op="listPets")
    refused(response, "unknown_key")

    json_type = {"Content-Type": "application/json"}
    response = await send(
        "POST", "/v1/pets", op="createPet", content=b'{"name":', headers=json_type
    )
    refused(response, "malformed_json")
    for content, headers in ((b"", json_type), (b"", {"Content-Type": "text/plain"})):
        response = await send("POST", "/v1/pets", op="createPet", content=content, headers=headers)
        refused(response, "missing_body")
    for body in (
        {"name": 7, "categoryId": 1},
        {"categoryId": 1},
        {"name": "Rex"},
        *([{"name": "Rex", "categoryId": "1"}] if numbers not in ("lenient", "digits") else []),
        *([{"name": "Rex", "categoryId": 1.0}] if numbers in ("strict", "digits") else []),
        {"name": "Rex", "categoryId": 1.5},
        {"name": "Rex", "categoryId": True},
        {"name": "Rex", "categoryId": 2**63},
        {"name": "Rex", "categoryId": 1, "status": "lost"},
        {"name": "Rex", "categoryId": 1, "status": None},
        [],
        "Rex",
    ):
        response = await send("POST", "/v1/pets", op="createPet", json=body)
        refused(response, "invalid_body")
    response = await send(
        "POST", "/v1/pets", op="createPet", content=b'{"name":"Untyped","categoryId":1}'
    )
    if profile.semantics.missing_content_type == "json":
        # The gateway read it as JSON: created as any other (kept for the listings below).
        assert response.status_code == 201, response.text
        stored, default = response.json(), profile.semantics.default_status
        tour.created.append({**stored, "status": default} if default else stored)
    else:
        refused(response, "unsupported_media_type")
    response = await send(
        "POST",
        "/v1/pets",
        op="createPet",
        content=b'{"name":"Rex","categoryId":1}',
        headers={"Content-Type": "text/plain"},
    )
    refused(response, "unsupported_media_type")

    maximum = profile.semantics.max_body_bytes
    pet = b'{"name":"Edge","categoryId":4}'
    response = await send(
        "POST", "/v1/pets", op="createPet", content=pet.ljust(maximum + 1), headers=json_type
    )
    refused(response, "payload_too_large")
    response = await send(
        "POST", "/v1/pets", op="createPet", content=pet.ljust(maximum), headers=json_type
    )
    assert response.status_code == 201, "the maximum itself is accepted"
    stored, default = response.json(), profile.semantics.default_status
    # A default the 201 leaves out (collections.default_on_read) is read back later.
    tour.created.append({**stored, "status": default} if default else stored)

    lenient = profile.semantics.collections.numbers_query == "lenient"
    for limit in ("0", "-1", "abc", "", "1.5", *(() if lenient else ("+5", "2.0")), "00"):
        response = await send("GET", "/v1/pets", op="listPets", params={"limit": limit})
        refused(response, "bad_limit")
    for limit in ("101", "1000", "9" * 40):
        response = await send("GET", "/v1/pets", op="listPets", params={"limit": limit})
        if profile.semantics.limit_above_maximum == "refuse":
            refused(response, "limit_above_maximum")
        else:
            assert response.status_code == 200
            assert len(response.json()) == min(100, len(profile.semantics.pets) + len(tour.created))
    any_case = profile.semantics.collections.status_case_insensitive
    for status in ("lost", "", *(() if any_case else ("AVAILABLE",))):
        response = await send("GET", "/v1/pets", op="listPets", params={"status": status})
        refused(response, "bad_status_filter")
    for pet_id in ("abc", "1.5", "9" * 20, "0x10"):
        response = await send("GET", f"/v1/pets/{pet_id}", op="getPet")
        refused(response, "bad_pet_id")
    for pet_id in (str(INT64_MAX), "-1"):
        response = await send("GET", f"/v1/pets/{pet_id}", op="getPet")
        refused(response, "pet_not_found")
        response = await send("GET", f"/v1/pets/{pet_id}", op="getPet", auth=None)
        refused(response, "missing_key")

    for path in ("/v1/nothing", "/v1/pets/1/toys", "/v1/pets/", "/v1", "/pets", "/v2/pets"):
        response = await send("GET", path)
        refused(response, "unknown_path")
        response = await send("GET", path, auth=None)
        refused(response, "unknown_path" if routing_first else "missing_key")
    for method, path, allowed in (
        ("DELETE", "/v1/pets", {"GET", "POST"}),
        ("PUT", "/v1/pets/1", {"GET"}),
        ("POST", "/v1/store/orders", {"GET"}),
        ("OPTIONS", "/v1/pets", {"GET", "POST"}),
    ):
        response = await send(method, path)
        refused(response, "method_not_allowed")
        if response.status_code == 405:
            heads = {
                "/v1/pets": "listPets",
                "/v1/pets/1": "getPet",
                "/v1/store/orders": "listOrders",
            }
            served_head = {"HEAD"} if heads[path] in profile.semantics.head else set()
            assert set(response.headers["Allow"].split(", ")) == allowed | served_head
        else:
            assert "Allow" not in response.headers
        response = await send(method, path, auth=None)
        refused(response, "method_not_allowed" if routing_first else "missing_key")

    response = await send("GET", "/v1/store/orders", op="listOrders")
    if profile.refusals.list_orders is None:
        assert (response.status_code, response.json()) == (200, [])
    else:
        refused(response, "list_orders")


async def walk_semantics(tour: Tour) -> None:
    profile, send = tour.profile, tour.send
    semantics = profile.semantics
    created = tour.created
    collections = semantics.collections
    least = collections.category_minimum
    for body in (
        {"name": "Nala", "categoryId": 7},
        {"name": "Ziggy", "categoryId": -3, "status": "sold"},
        {"name": "", "categoryId": 0, "status": "pending"},
        {"name": "N" * 70, "categoryId": 7},
        {"name": "\u00e9" * 30, "categoryId": 7},
        {"name": "Big", "categoryId": 100_000},
    ):
        response = await send("POST", "/v1/pets", op="createPet", json=body)
        longest = collections.name_max_length
        name = body["name"]
        size = len(name.encode()) if collections.name_unit == "bytes" else len(name)
        most, shortest = collections.category_maximum, collections.name_min_length
        if (
            (least is not None and body["categoryId"] < least)
            or (most is not None and body["categoryId"] > most)
            or (longest is not None and size > longest)
            or (shortest is not None and size < shortest)
            or (collections.blank_name == "refuse" and not name.strip())
        ):
            tour.refused(response, "field_constraint")
            continue
        assert response.status_code == 201  # the spec: 201 with the assigned id
        pet = response.json()
        assert isinstance(pet["id"], int) and 1 <= pet["id"] <= INT64_MAX
        expected = dict(body)
        defaulted = "status" not in body and semantics.default_status is not None
        if defaulted and not collections.default_on_read:
            expected["status"] = semantics.default_status
        assert {name: value for name, value in pet.items() if name != "id"} == expected
        check_location(tour, response, pet["id"])
        if defaulted:  # later reads show it, whatever the 201 said
            pet = {**pet, "status": semantics.default_status}
        created.append(pet)

    response = await send(
        "POST",
        "/v1/pets",
        op="createPet",
        json={"name": "Odd", "categoryId": 2, "nickname": "o", "id": 1},
    )
    if semantics.unknown_fields == "refuse":
        tour.refused(response, "unknown_field")
    else:
        assert response.status_code == 201
        pet = response.json()
        assert pet["id"] != 1 or not any(seed.id == 1 for seed in semantics.pets)
        expected = {"name": "Odd", "categoryId": 2}
        if semantics.default_status is not None and not collections.default_on_read:
            expected["status"] = semantics.default_status
        if semantics.unknown_fields == "keep":
            expected["nickname"] = "o"
        assert {name: value for name, value in pet.items() if name != "id"} == expected
        assert list(pet)[:3] == ["id", "name", "categoryId"]
        if semantics.default_status is not None:
            pet = {**pet, "status": semantics.default_status}
        created.append(pet)

    for pet in created:
        response = await send("GET", f"/v1/pets/{pet['id']}", op="getPet")
        assert (response.status_code, response.json()) == (200, pet)

    everything = [seed.as_json() for seed in semantics.pets] + created
    positions = {seed.id: index for index, seed in enumerate(semantics.pets)}
    key, reverse = order_key(collections, semantics.list_order, positions)
    everything.sort(key=key, reverse=reverse)
    response = await send("GET", "/v1/pets", op="listPets", params={"limit": "100"})
    assert response.json() == everything[:100]
    response = await send("GET", "/v1/pets", op="listPets")
    assert response.json() == everything[:20]  # the spec: default 20
    for limit in (1, 2, 7):
        response = await send("GET", "/v1/pets", op="listPets", params={"limit": str(limit)})
        assert response.json() == everything[:limit]
    for status in ("available", "pending", "sold"):
        response = await send(
            "GET", "/v1/pets", op="listPets", params={"status": status, "limit": "3"}
        )
        assert response.json() == [pet for pet in everything if pet.get("status") == status][:3]
    response = await send("GET", "/v1/pets", op="listPets", params=[("limit", "1"), ("limit", "2")])
    if collections.repeated == "refuse":
        tour.refused(response, "bad_limit")
    else:
        read = 1 if collections.repeated == "first" else 2
        assert len(response.json()) == min(read, len(everything)), collections.repeated

    if semantics.limit_above_maximum == "clamp":
        while len(everything) <= 100:
            response = await send(
                "POST", "/v1/pets", op="createPet", json={"name": "Pip", "categoryId": 1}
            )
            pet = response.json()
            if semantics.default_status is not None:  # read back with it, whatever the 201 said
                pet = {**pet, "status": semantics.default_status}
            created.append(pet)
            everything.append(pet)
        everything.sort(key=key, reverse=reverse)
        response = await send("GET", "/v1/pets", op="listPets", params={"limit": "101"})
        assert response.json() == everything[:100], "clamped to the maximum"

    # HEAD where the profile serves it, 405 (or its refusal) where it does not.
    pet_path = f"/v1/pets/{created[0]['id']}"
    for path, op in (
        ("/v1/pets", "listPets"),
        (pet_path, "getPet"),
        ("/v1/store/orders", "listOrders"),
    ):
        served = op in semantics.head
        response = await send("HEAD", path, op=op if served else None)
        if not served:
            tour.refused(response, "method_not_allowed")
            continue
        twin = await send("GET", path, op=op)
        assert response.status_code == twin.status_code
        assert response.headers["Content-Length"] == str(len(twin.content))


def check_location(tour: Tour, response: httpx.Response, pet_id: int) -> None:
    location = tour.profile.headers.location
    expected = {
        "none": None,
        "path": f"/v1/pets/{pet_id}",
        "url": f"{ORIGIN}/v1/pets/{pet_id}",
    }[location]
    assert response.headers.get("Location") == expected


async def walk_rate_limits(tour: Tour, plan_name: str | None) -> None:
    """Spend a bucket's allowance at one instant, meet 429, keep going into a ban, leave it."""
    limits = tour.profile.rate_limits
    plan = limits.anonymous if plan_name is None else limits.plan(plan_name)
    assert plan is not None
    if plan.per_minute > WALK_BUDGET:
        return
    auth = None if plan_name is None else tour.bearer(plan_name, 1)
    tour.fresh()
    start = tour.clock.now
    minute_end = tour.window_end(start, limits.minute_seconds)
    day_end = tour.window_end(start, limits.day_seconds)
    allowed = min(plan.per_minute, plan.per_day or plan.per_minute)

    async def send() -> httpx.Response:
        return await tour.send("GET", "/v1/pets", auth=auth, op="listPets", fresh=False)

    for used in range(1, allowed + 1):
        response = await send()
        if plan_name is None:
            tour.refused(response, "missing_key")  # counted: the anonymous allowance
        else:
            assert response.status_code == 200
        minute = (plan.per_minute, plan.per_minute - used, minute_end)
        day = (plan.per_day, plan.per_day - used, day_end) if plan.per_day else None
        described = minute
        if day is not None and (
            limits.describe == "day" or (limits.describe == "tightest" and day[1] < minute[1])
        ):
            described = day
        tour.limits(response, *described)

    # Over the allowance: 429, the headers describe the window that blocks.
    # (end, is the day, limit): the one that resets last blocks, the day on a tie.
    spent = [(minute_end, False, plan.per_minute)] if allowed == plan.per_minute else []
    if plan.per_day == allowed:
        spent.append((day_end, True, plan.per_day))
    blocking_end, _, blocking_limit = max(spent)
    # What a 429's figures describe: the window that blocks, or the one always described.
    shown = (blocking_limit, 0, blocking_end)
    if limits.refusal_figures == "described" and limits.describe == "minute":
        shown = (plan.per_minute, plan.per_minute - allowed, minute_end)
    elif limits.refusal_figures == "described" and limits.describe == "day" and plan.per_day:
        shown = (plan.per_day, plan.per_day - allowed, day_end)
    for _ in range(limits.ban.rejections):
        response = await send()
        tour.refused(response, "rate_limited")
        tour.limits(response, *shown)
        tour.retry_after(response, limits.retry_after, blocking_end)

    if not limits.ban.enabled:
        # A provider that never bans: refused on, for as long as the window is spent.
        tour.refused(await send(), "rate_limited")
        return seen("ban: none, refused on")
    # Kept going: banned, and told until when.
    ban_end = tour.clock.now + limits.ban.duration_seconds
    response = await send()
    tour.refused(response, "key_banned")
    banned_limit = plan.per_day if limits.describe == "day" and plan.per_day else plan.per_minute
    tour.limits(response, banned_limit, 0, ban_end)
    tour.retry_after(response, limits.retry_after_banned, ban_end)

    tour.clock.now = ban_end - 0.25
    tour.refused(await send(), "key_banned")
    tour.clock.now = ban_end
    response = await send()
    still_spent = [end for end, _, _ in spent if end > ban_end]
    seen(f"ban: over with a window {'still' if still_spent else 'no longer'} spent")
    if still_spent:
        tour.refused(response, "rate_limited")
    else:
        assert response.status_code == (
            200 if plan_name else tour.profile.refusals.missing_key.status
        )


async def walk_ban_trigger(tour: Tour, plan_name: str) -> None:
    """``within`` counts 429s across windows; ``consecutive`` forgets them once one is admitted."""
    limits = tour.profile.rate_limits
    plan = limits.plan(plan_name)
    assert plan is not None
    ban = limits.ban
    auth = tour.bearer(plan_name, 2)
    if plan.per_minute > WALK_BUDGET or (plan.per_day or INT64_MAX) < 2 * plan.per_minute:
        return seen("ban trigger: not checked (no second minute)")
    tour.fresh()
    minute = limits.minute_seconds
    # Half a second before the minute's end (aligned windows): the next one is near.
    tour.clock.now = (math.floor(tour.clock.now / minute) + 1) * minute - 0.5
    start = tour.clock.now
    day_end = tour.window_end(start, limits.day_seconds)
    next_minute = tour.window_end(start, minute)
    if next_minute >= day_end:
        return seen("ban trigger: not checked (the day ends)")

    async def send() -> httpx.Response:
        return await tour.send("GET", "/v1/pets", auth=auth, op="listPets", fresh=False)

    for _ in range(plan.per_minute):
        assert (await send()).status_code == 200
    for _ in range(ban.rejections - 1):
        tour.refused(await send(), "rate_limited")
    tour.clock.now = next_minute
    assert (await send()).status_code == 200, "a new minute admits again"
    for _ in range(plan.per_minute - 1):
        assert (await send()).status_code == 200
    tour.refused(await send(), "rate_limited")
    counted = ban.enabled and ban.trigger == "within" and next_minute - start < ban.within_seconds
    tour.refused(await send(), "key_banned" if counted else "rate_limited")
    seen(f"ban trigger: checked, {ban.trigger}, {'counted' if counted else 'not counted'}")


async def walk_day(tour: Tour, plan_name: str) -> None:
    """A plan with a day allowance: spend it over several minutes; the day then blocks."""
    limits = tour.profile.rate_limits
    plan = limits.plan(plan_name)
    assert plan is not None
    if plan.per_day is None or plan.per_day == plan.per_minute or plan.per_day > WALK_BUDGET:
        return
    auth = tour.bearer(plan_name, 3)
    tour.fresh()
    start = tour.clock.now
    day_end = tour.window_end(start, limits.day_seconds)
    used_day = 0
    while used_day < plan.per_day:
        minute_end = tour.window_end(tour.clock.now, limits.minute_seconds)
        if minute_end > day_end:
            return seen("day: not spent (it ends first)")
        for used_minute in range(1, min(plan.per_minute, plan.per_day - used_day) + 1):
            response = await tour.send("GET", "/v1/pets", auth=auth, op="listPets", fresh=False)
            assert response.status_code == 200
            used_day += 1
            minute_left, day_left = plan.per_minute - used_minute, plan.per_day - used_day
            if limits.describe == "day" or (
                limits.describe == "tightest" and day_left < minute_left
            ):
                tour.limits(response, plan.per_day, day_left, day_end)
            else:
                tour.limits(response, plan.per_minute, minute_left, minute_end)
        if used_day < plan.per_day:
            tour.clock.now = minute_end
    response = await tour.send("GET", "/v1/pets", auth=auth, op="listPets", fresh=False)
    tour.refused(response, "rate_limited")
    if limits.refusal_figures == "blocking" or limits.describe != "minute":
        tour.limits(response, plan.per_day, 0, day_end)
    tour.retry_after(response, limits.retry_after, day_end)
    seen(f"day: spent, described by {limits.describe}")


async def walk_sunset(tour: Tour) -> None:
    """getPet is served until the sunset instant and answers ``gone`` from it on."""
    pet = tour.created[0]
    sunset = tour.profile.headers.deprecation.sunset
    # Years after every earlier request: each key's windows are fresh.
    tour.clock.now = sunset - 1
    response = await tour.send("GET", f"/v1/pets/{pet['id']}", op="getPet", fresh=False)
    assert (response.status_code, response.json()) == (200, pet)
    tour.clock.now = sunset
    other_key = tour.bearer(tour.plan_name, 1)
    response = await tour.send(
        "GET", f"/v1/pets/{pet['id']}", op="getPet", auth=other_key, fresh=False
    )
    tour.refused(response, "gone")
    response = await tour.send("GET", "/v1/pets/not-a-number", op="getPet")
    tour.refused(response, "gone")
    response = await tour.send("GET", f"/v1/pets/{pet['id']}", op="getPet", auth=None)
    tour.refused(response, "missing_key")
    response = await tour.send("GET", "/v1/pets", op="listPets", params={"limit": "1"})
    assert response.status_code == 200, "the replacement stays"


def classic(profile: Profile) -> bool:
    """A gateway that counts as the walks below expect: fixed windows in UTC, served requests
    (none given back), whole-second resets."""
    gateway = profile.rate_limits.gateway
    return (
        gateway.minute_algorithm == gateway.day_algorithm == "fixed"
        and gateway.time_zone == "UTC"
        and gateway.counts == "served"
        and gateway.anonymous_limited
        and not gateway.not_counted
        and gateway.reset_decimals == 0
    )


async def walk_gateway(tour: Tour, plan_name: str | None) -> None:
    """Any gateway: spend a fresh bucket's allowance at one instant, then meet the refusal.

    At one instant every algorithm admits the whole allowance (a bucket starts full,
    a log and a counter empty), and each says when the window is whole again and when
    to come back in its own way.
    """
    limits = tour.profile.rate_limits
    gateway = limits.gateway
    if plan_name is None and not gateway.anonymous_limited:
        for _ in range(3):
            response = await tour.send("GET", "/v1/pets", auth=None, op="listPets")
            tour.refused(response, "missing_key")
        return seen("gateway: callers without a key never limited")
    plan = limits.anonymous if plan_name is None else limits.plan(plan_name)
    assert plan is not None
    if plan.per_minute > WALK_BUDGET:
        return
    auth = None if plan_name is None else tour.bearer(plan_name, 1)
    tour.fresh()
    now = tour.clock.now
    windows = [("minute", plan.per_minute, limits.minute_seconds, gateway.minute_algorithm)]
    if plan.per_day is not None:
        windows.append(("day", plan.per_day, limits.day_seconds, gateway.day_algorithm))
    allowed = min(limit for _, limit, _, _ in windows)

    def full_at(used: int, limit: int, length: int, algorithm: str) -> float:
        if algorithm == "fixed":
            day = length == limits.day_seconds and length != limits.minute_seconds
            if limits.aligned("day" if day else "minute"):
                return window_at(now, length, gateway.time_zone)[1]
            return now + length
        if algorithm == "sliding_log":
            return now + length
        if algorithm == "sliding_window":
            return window_at(
                window_at(now, length, gateway.time_zone)[1], length, gateway.time_zone
            )[1]
        return now + used * length / limit  # a bucket refills one request a length/limit

    async def send() -> httpx.Response:
        return await tour.send("GET", "/v1/pets", auth=auth, op="listPets", fresh=False)

    # A gateway that gives back what a 401 took (not_counted: 4xx) counts each refusal of
    # a caller without a key, then gives it back: every answer shows one request spent.
    given_back = plan_name is None and gateway.gives_back(401)
    for sent in range(1, allowed + 1):
        response = await send()
        if plan_name is None:
            tour.refused(response, "missing_key")
        else:
            assert response.status_code == 200, response.text
        used = 1 if given_back else sent
        states = [
            (name, limit, limit - used, full_at(used, limit, length, algorithm))
            for name, limit, length, algorithm in windows
        ]
        described = states[0]
        if len(states) > 1 and (
            limits.describe == "day"
            or (limits.describe == "tightest" and states[1][2] < states[0][2])
        ):
            described = states[1]
        assert int(response.headers["X-RateLimit-Limit"]) == described[1]
        assert int(response.headers["X-RateLimit-Remaining"]) == described[2]
        reset = float(response.headers["X-RateLimit-Reset"])
        scale = 1000 if limits.reset == "epoch_ms" else 1
        expected = described[3] * scale if limits.reset != "delta" else described[3] - now
        assert expected - 1e-6 <= reset <= expected + 1, (reset, expected, gateway)
    response = await send()
    if given_back:
        tour.refused(response, "missing_key")  # never limited: each one given back
        return seen("gateway: a caller without a key's refusals given back")
    tour.refused(response, "rate_limited")
    assert response.headers.get("Retry-After") is not None or limits.retry_after == "none"
    seen(f"gateway: {gateway.minute_algorithm} minute, {gateway.day_algorithm} day")


async def walk(profile: Profile) -> None:
    # The provider's service as its profile says; what its front adds (CORS, 304s, gzip,
    # maintenance, ...) is walked by tests/test_profiled_front.py.
    tour = Tour(replace(profile, http=HttpChoices()))
    async with tour.client:
        await walk_refusals(tour)
        await walk_semantics(tour)
        if not classic(profile):
            await walk_gateway(tour, None)
            for plan_name, _ in profile.rate_limits.plans:
                await walk_gateway(tour, plan_name)
            await walk_sunset(tour)
            return
        await walk_rate_limits(tour, None)
        for plan_name, _ in profile.rate_limits.plans:
            await walk_rate_limits(tour, plan_name)
            await walk_day(tour, plan_name)
        await walk_ban_trigger(tour, tour.plan_name)
        await walk_sunset(tour)


# ---------------------------------------------------------------------------
# Properties


@PROPERTY
@given(profiles())
def test_a_drawn_profile_is_honoured_over_http(profile: Profile) -> None:
    asyncio.run(walk(profile))


@pytest.mark.slow
@settings(PROPERTY, max_examples=100)
@given(profiles())
def test_a_drawn_profile_is_honoured_over_http_many(profile: Profile) -> None:
    asyncio.run(walk(profile))


@pytest.mark.parametrize("name", sorted(NAMED))
def test_a_named_profile_is_honoured_over_http(name: str) -> None:
    asyncio.run(walk(NAMED[name]))


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profiles())
def test_a_drawn_profile_holds_and_survives_json(profile: Profile) -> None:
    assert profile.problems() == []
    assert Profile.from_json(profile.to_json()) == profile
    assert Profile.from_json(profile.to_json(indent=None)) == profile


def test_the_default_profile_is_mockstore_like() -> None:
    assert replace(MOCKSTORE_LIKE, semantics=Semantics()) == Profile()
    assert Profile.from_json("{}") == Profile()
    assert len(MOCKSTORE_LIKE.semantics.pets) == 20


def test_the_far_profiles_differ_from_mockstore_in_every_class() -> None:
    default = Profile()
    for far in (GATEWAY, LEGACY):
        for part in ("headers", "refusals", "rate_limits", "semantics"):
            mine, theirs = getattr(far, part), getattr(default, part)
            same = [name for name in vars(mine) if getattr(mine, name) == getattr(theirs, name)]
            # The windows' lengths are a test convenience, not a provider's choice.
            same = [name for name in same if name not in ("minute_seconds", "day_seconds")]
            # An ETag's digest and its length are one choice (how the tag is made).
            same = [name for name in same if name != "etag_digits" or "etag_digest" not in same]
            # The shape of details[] items is a choice only where an Error carries them.
            if part == "refusals" and all(x.kind != "details" for x in far.refusals.extra_fields):
                same = [name for name in same if name != "details_item"]
            assert len(same) <= 1, (part, same)
        # The gateway's choices: two of them are yes-or-no (what counts, callers without
        # a key limited), which two far profiles cannot both leave mockstore's; what an
        # uncounted caller is told is a choice only where some caller is not counted.
        mine, theirs = far.rate_limits.gateway, default.rate_limits.gateway
        same = [name for name in vars(mine) if getattr(mine, name) == getattr(theirs, name)]
        if mine.anonymous_limited:
            same = [name for name in same if name != "uncounted"]
        if mine.day_algorithm != "fixed":  # only fixed windows start somewhere
            same = [name for name in same if name != "day_windows"]
        if mine.second_set is None:  # a second set of headers is one more, not another
            same = [name for name in same if not name.startswith("second_set")]
        assert len(same) <= 2, ("gateway", same)
    for part in ("headers", "refusals", "rate_limits", "semantics"):
        one, other = getattr(GATEWAY, part), getattr(LEGACY, part)
        assert one != other


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '{"refusals": {"missing_key": {"status": 403, "code": "x"}}}',
            "$.refusals.missing_key.status",
        ),
        (
            '{"refusals": {"rate_limited": {"status": 500, "code": "x"}}}',
            "$.refusals.rate_limited.status",
        ),
        (
            '{"refusals": {"bad_limit": {"status": 400, "code": "no spaces"}}}',
            "$.refusals.bad_limit.code",
        ),
        ('{"headers": {"always": {"X-RateLimit-Limit": "1"}}}', "the stand-in writes it itself"),
        ('{"headers": {"content_type": "text/json"}}', "$.headers.content_type"),
        ('{"headers": {"deprecation": {"sunset": 1922745600}}}', "5 December 2030"),
        ('{"headers": {"by_operation": {"deletePet": {}}}}', "$.headers.by_operation.deletePet"),
        ('{"rate_limits": {"windows": "sliding"}}', '"clock" | "first_request"'),
        ('{"rate_limits": {"plans": {"free": {"per_minute": 5, "per_day": 2}}}}', "per_day"),
        (
            '{"refusals": {"key_banned": {"status": 429, "code": "b"}}, '
            '"rate_limits": {"retry_after_banned": "none"}}',
            "carries Retry-After",
        ),
        ('{"semantics": {"pets": [{"id": 1, "name": "a"}]}}', "missing field 'categoryId'"),
        ('{"semantics": {"colour": "blue"}}', "unknown field 'colour'"),
        ('{"semantics": {"max_body_bytes": true}}', "expected an integer"),
        ('{"semantics": {"head": ["createPet"]}}', "$.semantics.head[0]"),
        (
            '{"headers": {"always": {"X-A": "1"}, "by_status_class": {"4xx": {"x-a": "2"}}}}',
            "more than once",
        ),
        (
            '{"refusals": {"extra_fields": [{"name": "trace", "kind": "uuid", "value": 1}]}}',
            "generated",
        ),
    ],
)
def test_a_profile_that_cannot_hold_is_refused_naming_where(text: str, problem: str) -> None:
    with pytest.raises(ProfileError) as refused:
        Profile.from_json(text, source="p.json")
    assert problem in str(refused.value)
    assert str(refused.value).startswith("p.json: ")


def test_a_key_naming_no_plan_is_refused() -> None:
    with pytest.raises(ProfileError, match="no plan 'gold'"):
        ProfiledPetStore(Profile(), {"sk_test_1": "gold"})


# ---------------------------------------------------------------------------
# As a real process


def _get(url: str, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(url, headers=headers, timeout=10)


def _wait_for_line(upstream: Process, line: str) -> None:
    """The access log is read by a thread: poll for ``line`` with a deadline."""
    deadline = time.monotonic() + 20
    while line not in upstream.output:
        assert time.monotonic() < deadline, upstream.log()
        time.sleep(0.05)


def test_the_process_serves_its_profile_over_real_http() -> None:
    key = new_key()
    with profiled_standin(GATEWAY, {key: "growth"}) as upstream:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", upstream.url)
        response = _get(upstream.url + "/pets?limit=2", key)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json; charset=utf-8"
        assert UUID.fullmatch(response.headers["x-correlation-id"])
        assert response.headers["x-api-version"] == "2024-06-01"
        assert int(response.headers["x-ratelimit-reset"]) > 10**12, "epoch milliseconds"
        assert "server" not in response.headers
        assert [pet["id"] for pet in response.json()] == [101, 58]
        head = httpx.head(
            upstream.url + "/pets?limit=2", headers={"Authorization": f"Bearer {key}"}
        )
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-length"] == str(len(response.content))
        created = httpx.post(
            upstream.url + "/pets",
            json={"name": "Nala", "categoryId": 7},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert created.status_code == 201
        pet = created.json()
        # The default status is left out of the 201 (collections.default_on_read).
        assert pet == {"id": 102, "name": "Nala", "categoryId": 7}
        assert created.headers["location"] == f"{upstream.url}/pets/102"
        missing = httpx.get(upstream.url + "/nowhere")
        assert (missing.status_code, missing.json()["code"]) == (404, "ROUTE_NOT_FOUND")
        assert missing.headers["x-error-source"] == "gateway"
        _wait_for_line(upstream, "GET /v1/nowhere 404")
        lines = [line for line in upstream.output if line.startswith(("GET", "HEAD", "POST"))]
        assert lines == [
            "GET /v1/pets?limit=2 200",
            "HEAD /v1/pets?limit=2 200",
            "POST /v1/pets 201",
            "GET /v1/nowhere 404",
        ]


def test_the_process_runs_on_the_wall_clock_and_a_short_window_passes() -> None:
    """A 3-second "minute" (a test convenience): spend it, wait as told, be admitted."""
    fast = with_windows(GATEWAY, 3, 60)
    fast = replace(fast, rate_limits=replace(fast.rate_limits, plans=(("starter", Plan(2, 20)),)))
    key = new_key()
    with profiled_standin(fast, {key: "starter"}) as upstream:
        deadline = time.monotonic() + 30
        statuses: list[int] = []
        while time.monotonic() < deadline and 429 not in statuses:
            response = _get(upstream.url + "/pets", key)
            statuses.append(response.status_code)
        assert statuses[-1] == 429, statuses
        assert response.json()["code"] == "TOO_MANY_REQUESTS"
        retry_at = parsedate_to_datetime(response.headers["retry-after"]).timestamp()
        reset_ms = int(response.headers["x-ratelimit-reset"])
        assert reset_ms <= retry_at * 1000, "Retry-After is no earlier than the reset"
        # As a client does: wait until the date it was given (the service's clock is
        # the wall clock), then retry once.
        time.sleep(min(5.0, max(0.0, retry_at - time.time())))
        response = _get(upstream.url + "/pets", key)
        assert response.status_code == 200, response.text
        assert int(response.headers["x-ratelimit-reset"]) > reset_ms, "a new window"
        assert response.headers["x-ratelimit-remaining"] == "1"


def test_the_process_bans_a_key_that_keeps_going() -> None:
    key = new_key()
    with profiled_standin(LEGACY, {key: "basic"}) as upstream:
        codes = []
        for _ in range(40):
            response = _get(upstream.url + "/pets", key)
            codes.append(response.json()["code"] if response.status_code != 200 else 200)
            if response.status_code == 503:
                break
        assert codes[-1] == "temporarily_blocked", codes
        assert "Retry-After" not in response.headers
        assert codes.count("slow_down") >= LEGACY.rate_limits.ban.rejections
        _wait_for_line(upstream, "GET /v1/pets 503")


def test_the_process_refuses_a_bad_profile_before_starting(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "rate_limits": {\n    "reset": "epoch",\n  }\n}\n')
    command = [
        sys.executable,
        "-m",
        "tests.upstream.profiled",
        "--port",
        "0",
        "--profile",
        str(bad),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent
    )
    assert done.returncode == 2
    assert f"{bad}:4:3:" in done.stderr, done.stderr
    bad.write_text(json.dumps({"refusals": {"gone": {"status": 200, "code": "ok"}}}))
    done = subprocess.run(
        [*command, "--key", "k=free"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 2
    assert "$.refusals.gone.status" in done.stderr
    assert done.stdout == ""


def test_status_sets_follow_the_spec() -> None:
    statuses = profiled.PLAUSIBLE_STATUSES
    assert set(statuses) == set(profiled.CONDITIONS)
    for condition in ("missing_key", "malformed_authorization", "unknown_key"):
        assert statuses[condition] == (401,)
    assert statuses["pet_not_found"] == (404,)
    # The spec's 429; gateways refuse with 403 (GitHub's secondary limits) or 503 (nginx).
    assert statuses["rate_limited"] == (429, 403, 503)
    assert all(400 <= status < 600 for options in statuses.values() for status in options)
