"""Properties that hold for all inputs, checked with hypothesis.

The request strategies are built from the OpenAPI document itself (types,
formats, enums, required fields), not from a copy of its rules, so a change
to ``openapi.yaml`` changes what is generated here too.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore import schemas
from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.ratelimit import DAY, MINUTE, BanPolicy, Decision, Plan, RateLimiter
from mockstore.scenario.model import default_ban_policy
from tests.support import assert_conforms, auth, examples

DOCUMENT = schemas.openapi_document()
NEW_PET_POINTER = "#/components/schemas/NewPet"
NEW_PET = DOCUMENT["components"]["schemas"]["NewPet"]
NEW_PET_VALIDATOR = schemas.validator_for(NEW_PET_POINTER)
# What an OpenAPI integer format means in numbers; the document names the format.
FORMAT_BOUNDS = {
    "int32": (schemas.INT32_MIN, schemas.INT32_MAX),
    "int64": (schemas.INT64_MIN, schemas.INT64_MAX),
}
KEY = auth("enterprise")  # the largest built-in allowance: the examples never hit a limit
JSON = {"Content-Type": "application/json"}
SETTINGS = settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        target: Any = DOCUMENT
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = target
    return schema


def property_pointer(name: str) -> str:
    return f"{NEW_PET_POINTER}/properties/{name}"


# -- strategies from the schema -------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
# Any Unicode string JSON can carry, lone surrogates included ("\ud800" is valid JSON).
any_text = st.text(st.characters(exclude_categories=()), max_size=40)


def valid_values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values the schema accepts."""
    schema = resolve(schema)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return any_text
    if kind == "integer":
        format_low, format_high = FORMAT_BOUNDS.get(schema.get("format", ""), (None, None))
        low = max((x for x in (format_low, schema.get("minimum")) if x is not None), default=None)
        high = min((x for x in (format_high, schema.get("maximum")) if x is not None), default=None)
        edges = [v for v in (low, high, 0, 1, -1) if v is not None]
        return st.sampled_from(edges) | st.integers(low, high)
    if kind == "object":
        required = schema.get("required", [])
        properties = schema["properties"]
        return st.fixed_dictionaries(
            {name: valid_values(properties[name]) for name in required},
            optional={
                name: valid_values(spec)
                for name, spec in properties.items()
                if name not in required
            },
        )
    raise NotImplementedError(f"no strategy for {schema}")


def invalid_values(pointer: str) -> st.SearchStrategy[Any]:
    """JSON values the schema at ``pointer`` rejects."""
    schema = resolve({"$ref": pointer})
    validator = schemas.validator_for(pointer)
    candidates = json_values
    if schema.get("type") == "integer":
        low, high = FORMAT_BOUNDS[schema["format"]]
        candidates = (
            candidates
            | st.integers(min_value=high + 1)
            | st.integers(max_value=low - 1)
            | st.integers(-5, 5).map(float)  # 1.0 is not an integer for the mock
        )
    if "enum" in schema:
        candidates = candidates | st.sampled_from(schema["enum"]).map(str.upper)
    return candidates.filter(lambda value: not validator.is_valid(value))


@st.composite
def rejected_bodies(draw: st.DrawFn) -> tuple[Any, str]:
    """(a body NewPet rejects, a word the Error message must contain)."""
    how = draw(st.sampled_from(["not an object", "missing field", "bad field"]))
    if how == "not an object":
        value = draw(json_values.filter(lambda v: not isinstance(v, dict)))
        return value, "object"
    pet = draw(valid_values(NEW_PET))
    if how == "missing field":
        name = draw(st.sampled_from(NEW_PET["required"]))
        del pet[name]
        return pet, name
    name = draw(st.sampled_from(sorted(NEW_PET["properties"])))
    pet[name] = draw(invalid_values(property_pointer(name)))
    return pet, name


def encode(value: Any) -> bytes:
    # ensure_ascii keeps lone surrogates as \\u escapes, so any str can be sent.
    return json.dumps(value).encode()


# -- the API properties ---------------------------------------------------


@pytest.fixture(scope="module")
def api() -> Iterator[TestClient]:
    app = create_app("default", clock=Clock(start=1772366430.0, mode="manual"))
    with TestClient(app) as client:
        yield client


def stored(client: TestClient) -> list[dict[str, Any]]:
    return client.get("/__mockstore/pets").json()


@SETTINGS
@given(pet=valid_values(NEW_PET))
def test_any_accepted_new_pet_is_created_and_read_back_unchanged(
    api: TestClient, pet: dict[str, Any]
) -> None:
    assert NEW_PET_VALIDATOR.is_valid(pet)
    created = api.post("/v1/pets", content=encode(pet), headers={**KEY, **JSON})
    assert created.status_code == 201, created.text
    body = assert_conforms(created)
    assert {k: v for k, v in body.items() if k != "id"} == pet
    fetched = api.get(f"/v1/pets/{body['id']}", headers=KEY)
    assert fetched.status_code == 200
    assert assert_conforms(fetched) == body
    if "status" in pet:
        # Found again under its status (it is the newest, so the last of a full page).
        listed = api.get("/v1/pets", params={"status": pet["status"], "limit": 100}, headers=KEY)
        pets = assert_conforms(listed)
        assert body in pets or len(pets) == 100


@pytest.fixture(scope="module")
def untouched_api() -> Iterator[TestClient]:
    """A server that only ever sees rejected bodies: its store must stay as it started."""
    app = create_app("default", clock=Clock(start=1772366430.0, mode="manual"))
    with TestClient(app) as client:
        yield client


@SETTINGS
@given(case=rejected_bodies())
def test_any_rejected_body_is_400_and_stores_nothing(
    untouched_api: TestClient, case: tuple[Any, str]
) -> None:
    body, names = case
    assert not NEW_PET_VALIDATOR.is_valid(body)
    before = stored(untouched_api)
    response = untouched_api.post("/v1/pets", content=encode(body), headers={**KEY, **JSON})
    assert response.status_code == 400, response.text
    error = assert_conforms(response)
    assert error["code"] == "validation_failed"
    assert names in error["message"]
    assert stored(untouched_api) == before


# -- the rate limiter ------------------------------------------------------

# 2026-03-01T00:00:00Z; requests start anywhere in the first two days after it.
EPOCH = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
plans = st.builds(Plan, name=st.just("p"), per_minute=st.integers(1, 6), per_day=st.integers(1, 25))
gaps = st.lists(
    st.sampled_from([0.0, 0.001, 59.999, 60.0])
    | st.floats(0, 5)
    | st.floats(0, 120)
    | st.floats(0, 2 * DAY),
    min_size=1,
    max_size=120,
)
starts = st.floats(EPOCH, EPOCH + 2 * DAY) | st.sampled_from([EPOCH + DAY - 0.5, EPOCH + 59.5])


def request_times(start: float, steps: list[float]) -> list[float]:
    times, now = [], start
    for step in steps:
        now += step
        times.append(now)
    return times


def check_figures(decision: Decision, plan: Plan, now: float) -> None:
    """What every set of rate-limit figures must satisfy: one story, never early."""
    assert 0 <= decision.remaining <= decision.limit
    assert decision.limit in (plan.per_minute, plan.per_day)
    assert 0 <= decision.minute_remaining <= plan.per_minute
    assert 0 <= decision.day_remaining <= plan.per_day
    assert decision.reset > now
    if decision.verdict == "allowed":
        assert decision.retry_after == 0
        assert decision.minute_reset == (int(now // MINUTE) + 1) * MINUTE
        assert decision.day_reset == (int(now // DAY) + 1) * DAY
        return
    # A client that waits exactly as told arrives no earlier than it may.
    assert decision.retry_at > now
    assert decision.retry_after == max(1, math.ceil(decision.retry_at - now))
    assert now + decision.retry_after >= decision.retry_at
    assert decision.remaining == 0
    if decision.verdict == "rate_limited":
        assert decision.reset == decision.retry_at
    else:
        # Banned: every window says nothing is left until the ban's end, rounded up.
        assert decision.minute_remaining == decision.day_remaining == 0
        assert decision.reset == decision.minute_reset == decision.day_reset
        assert decision.reset == math.ceil(decision.retry_at)


@settings(max_examples=examples(300), deadline=None, database=None)
@given(plan=plans, start=starts, steps=gaps)
def test_the_limiter_is_exactly_the_plans_allowance_per_window(
    plan: Plan, start: float, steps: list[float]
) -> None:
    """Without bans: a request is let through iff both of its windows have room."""
    limiter = RateLimiter(replace(default_ban_policy(), after_rejections=10**9))
    per_minute: Counter[int] = Counter()
    per_day: Counter[int] = Counter()
    for now in request_times(start, steps):
        minute, day = int(now // MINUTE), int(now // DAY)
        room = per_minute[minute] < plan.per_minute and per_day[day] < plan.per_day
        decision = limiter.check("bucket", plan, now)
        check_figures(decision, plan, now)
        assert decision.allowed == room
        if decision.allowed:
            per_minute[minute] += 1
            per_day[day] += 1
            minute_left = plan.per_minute - per_minute[minute]
            day_left = plan.per_day - per_day[day]
            # The window closest to exhaustion; a tie goes to the minute.
            if day_left < minute_left:
                expected = (plan.per_day, day_left, (day + 1) * DAY)
            else:
                expected = (plan.per_minute, minute_left, (minute + 1) * MINUTE)
            assert (decision.limit, decision.remaining, decision.reset) == expected
        else:
            day_spent = per_day[day] >= plan.per_day
            reset = (day + 1) * DAY if day_spent else (minute + 1) * MINUTE
            assert decision.remaining == 0
            assert decision.reset == reset
            assert decision.retry_after == max(1, math.ceil(reset - now))
        assert per_minute[minute] <= plan.per_minute
        assert per_day[day] <= plan.per_day


bans = st.builds(
    BanPolicy,
    after_rejections=st.integers(1, 5),
    within_seconds=st.sampled_from([1.0, 10.0, 60.0]),
    duration_seconds=st.sampled_from([60.0, 600.0, 3600.0]),
)


@settings(max_examples=examples(300), deadline=None, database=None)
@given(plan=plans, ban=bans, start=starts, steps=gaps)
def test_with_bans_the_allowance_still_holds_and_bans_follow_the_policy(
    plan: Plan, ban: BanPolicy, start: float, steps: list[float]
) -> None:
    """A model of the policy: N 429s within the span ban the bucket for the duration."""
    limiter = RateLimiter(ban)
    per_minute: Counter[int] = Counter()
    per_day: Counter[int] = Counter()
    rejections: list[float] = []
    banned_until: float | None = None
    for now in request_times(start, steps):
        decision = limiter.check("bucket", plan, now)
        check_figures(decision, plan, now)
        if banned_until is not None and now >= banned_until:
            banned_until, rejections = None, []
        minute, day = int(now // MINUTE), int(now // DAY)
        if banned_until is not None:
            assert decision.verdict == "key_banned"
            assert decision.retry_after == math.ceil(banned_until - now)
            assert decision.remaining == 0
        elif per_minute[minute] < plan.per_minute and per_day[day] < plan.per_day:
            assert decision.verdict == "allowed"
            per_minute[minute] += 1
            per_day[day] += 1
        else:
            assert decision.verdict == "rate_limited"
            rejections = [t for t in rejections if t > now - ban.within_seconds] + [now]
            if len(rejections) >= ban.after_rejections:
                banned_until = now + ban.duration_seconds
        assert per_minute[minute] <= plan.per_minute
        assert per_day[day] <= plan.per_day
