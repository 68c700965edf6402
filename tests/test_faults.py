"""Scenario fault rules and scripted routes: every matcher, every action, on the wire too.

The FaultEngine is tested directly (it is pure) and through HTTP, where a rule
that fires answers ``503 scripted`` and one that does not leaves the API's own
answer; connection-level faults need a real socket and run on a live server.
"""

from __future__ import annotations

import hashlib
import math
import random
import statistics
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.faults import FaultEngine, RequestFacts, RouteTable, draw
from mockstore.scenario import load_scenario
from mockstore.scenario.model import Delay
from tests.support import TOOL, assert_conforms, auth, examples, mock_server

BASE = """\
version: 1
name: faults-test
seed: 5
clock: {start: "2026-03-01T12:00:00Z", mode: manual}
keys:
  - {key: pro-key, plan: pro}
  - {key: free-key, plan: free}
  - {key: business-key, plan: business}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
  - {id: 2, name: Bella, categoryId: 2, status: sold}
"""
SCRIPTED = "{status: 503, body: {code: scripted, message: a rule fired, status: 503}}"
NEW_PET = {"name": "Nova", "categoryId": 3}


def scenario_text(faults: str = "", routes: str = "") -> str:
    text = BASE
    if faults:
        text += "faults:\n" + textwrap.indent(textwrap.dedent(faults).strip("\n"), "  ") + "\n"
    if routes:
        text += "routes:\n" + textwrap.indent(textwrap.dedent(routes).strip("\n"), "  ") + "\n"
    return text


@contextmanager
def serving(faults: str = "", routes: str = "") -> Iterator[TestClient]:
    scenario = load_scenario(scenario_text(faults, routes), "faults.yaml")
    with TestClient(create_app(scenario)) as client:
        yield client


def fired(response: httpx.Response) -> bool:
    """True when the scripted 503 answered; otherwise the API's own answer, checked."""
    body = assert_conforms(response)
    return response.status_code == 503 and body["code"] == "scripted"


# -- FaultEngine, directly ----------------------------------------------------


def engine(faults: str, seed: int = 5) -> FaultEngine:
    scenario = load_scenario(scenario_text(faults), "faults.yaml")
    return FaultEngine(scenario.faults, seed)


def facts(operation: str = "getPet", **overrides: Any) -> RequestFacts:
    values: dict[str, Any] = {
        "operation": operation,
        "method": {"listPets": "GET", "createPet": "POST"}.get(operation, "GET"),
        "path": {"listPets": "/pets", "createPet": "/pets"}.get(operation, "/pets/1"),
        "key": "pro-key",
        "plan": "pro",
        "elapsed": 0.0,
    }
    values.update(overrides)
    return RequestFacts(**values)


def fires(rules: FaultEngine, request: RequestFacts) -> bool:
    return rules.evaluate(request).rule is not None


def test_engine_operation_and_method_path_matchers() -> None:
    rules = engine(f"""
        - match: {{operation: createPet}}
          respond: {SCRIPTED}
        - match: {{method: DELETE, path: "/pets/{{petId}}"}}
          respond: {SCRIPTED}
    """)
    assert fires(rules, facts("createPet"))
    assert not fires(rules, facts("listPets"))
    assert fires(rules, facts(None, method="DELETE", path="/pets/42"))
    assert not fires(rules, facts(None, method="DELETE", path="/pets/42/toys"))
    assert not fires(rules, facts(None, method="DELETE", path="/pets"))
    assert not fires(rules, facts("getPet", method="GET", path="/pets/42"))


def test_engine_key_plan_query_header_and_body_matchers() -> None:
    rules = engine(f"""
        - match: {{key: free-key}}
          respond: {SCRIPTED}
    """)
    assert fires(rules, facts(key="free-key", plan="free"))
    assert not fires(rules, facts())

    rules = engine(f"""
        - match: {{plan: business}}
          respond: {SCRIPTED}
    """)
    assert fires(rules, facts(key="business-key", plan="business"))
    assert not fires(rules, facts())

    rules = engine(f"""
        - match: {{query: {{status: sold}}}}
          respond: {SCRIPTED}
    """)
    assert fires(rules, facts("listPets", query={"status": ["sold"]}))
    assert fires(rules, facts("listPets", query={"status": ["available", "sold"]}))
    assert not fires(rules, facts("listPets", query={"status": ["available"]}))
    assert not fires(rules, facts("listPets"))

    rules = engine(f"""
        - match: {{headers: {{X-Env: staging}}}}
          respond: {SCRIPTED}
    """)
    assert fires(rules, facts(headers={"x-env": "staging"}))
    assert not fires(rules, facts(headers={"x-env": "Staging"}))
    assert not fires(rules, facts())

    rules = engine(f"""
        - match: {{body: {{name: Boom, categoryId: 1}}}}
          respond: {SCRIPTED}
    """)
    needs = rules.applies("createPet", "pro-key")
    assert needs is not None and needs.body and not needs.query and not needs.headers
    assert fires(rules, facts("createPet", body={"name": "Boom", "categoryId": 1, "x": 0}))
    assert not fires(rules, facts("createPet", body={"name": "Boom", "categoryId": 2}))
    assert not fires(rules, facts("createPet", body={"name": "Boom"}))
    assert not fires(rules, facts("createPet", body=["name", "Boom"]))
    assert not fires(rules, facts("createPet", body=None))


@pytest.mark.parametrize(
    "condition, pattern",
    [
        ("calls: [2, 4]", [False, True, False, True, False, False]),
        ("from_call: 3", [False, False, True, True, True, True]),
        ("until_call: 2", [True, True, False, False, False, False]),
        ("from_call: 2, until_call: 3", [False, True, True, False, False, False]),
        ("every: 3", [False, False, True, False, False, True]),
        ("every: 2, from_call: 3", [False, False, False, True, False, True]),
    ],
)
def test_engine_counts_only_the_calls_that_meet_the_other_conditions(
    condition: str, pattern: list[bool]
) -> None:
    rules = engine(f"""
        - match: {{operation: getPet, key: pro-key, {condition}}}
          respond: {SCRIPTED}
    """)
    seen = []
    for _ in pattern:
        # Other keys and operations in between do not move the count.
        assert not fires(rules, facts(key="free-key", plan="free"))
        assert not fires(rules, facts("listPets"))
        seen.append(fires(rules, facts()))
    assert seen == pattern


def test_engine_between_seconds_is_a_half_open_window_of_scenario_time() -> None:
    rules = engine(f"""
        - match: {{operation: getPet, between_seconds: [30, 90]}}
          respond: {SCRIPTED}
    """)
    outcomes = [fires(rules, facts(elapsed=t)) for t in (0, 29.999, 30, 60, 89.999, 90, 500)]
    assert outcomes == [False, False, True, True, True, False, False]


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**32), probability=st.floats(0, 1))
def test_engine_probability_is_the_rules_draw_for_each_call(seed: int, probability: float) -> None:
    rules = engine(
        f"""
        - match: {{operation: getPet, probability: {probability!r}}}
          respond: {SCRIPTED}
        """,
        seed,
    )
    pattern = [fires(rules, facts()) for _ in range(30)]
    # The n-th matching call fires when the rule's n-th draw, a function of the
    # scenario's seed, the rule and n alone, is under the probability; calls no
    # rule names draw nothing and move nothing.
    assert pattern == [draw(str(seed), 0, n) < probability for n in range(1, 31)]
    assert not fires(rules, facts("listPets"))
    assert fires(rules, facts()) == (draw(str(seed), 0, 31) < probability)


@given(seed=st.integers(0, 2**64), index=st.integers(0, 1000), count=st.integers(1, 2**40))
def test_a_draw_is_the_first_52_bits_of_a_sha1_of_seed_rule_and_call(
    seed: int, index: int, count: int
) -> None:
    # The request script in Redis computes the same from redis.sha1hex: this is
    # the definition both sides follow.
    digest = hashlib.sha1(f"{seed}:{index}:{count}:0".encode()).digest()
    expected = (int.from_bytes(digest[:7], "big") >> 4) / 2**52
    assert draw(str(seed), index, count) == expected
    assert 0.0 <= expected < 1.0


def test_adding_a_rule_does_not_move_another_rules_draws() -> None:
    alone = engine(f"""
        - match: {{operation: getPet, probability: 0.5}}
          respond: {SCRIPTED}
    """)
    # Another probabilistic rule after it draws too, between its calls: with one
    # generator for all, its draws would have moved this rule's.
    crowded = engine(f"""
        - match: {{operation: getPet, probability: 0.5}}
          respond: {SCRIPTED}
        - match: {{operation: listPets, probability: 0.5}}
          delay: {{uniform_ms: [1, 2]}}
    """)
    mixed = []
    for n in range(40):
        if n % 3 == 0:
            crowded.evaluate(facts("listPets"))
        mixed.append(fires(crowded, facts()))
    assert mixed == [fires(alone, facts()) for _ in range(40)]


def test_engine_probability_fires_at_about_its_rate() -> None:
    rules = engine(f"""
        - match: {{operation: getPet, probability: 0.1}}
          respond: {SCRIPTED}
    """)
    hits = sum(fires(rules, facts()) for _ in range(5000))
    assert 400 <= hits <= 600  # a fixed seed: this count is always the same


def test_engine_delays_add_up_and_the_first_answer_wins() -> None:
    rules = engine(f"""
        - name: slow-a
          match: {{operation: getPet}}
          delay: {{fixed_ms: 30}}
        - name: slow-b
          match: {{}}
          delay: {{fixed_ms: 12}}
        - name: answer
          match: {{operation: getPet}}
          respond: {SCRIPTED}
        - name: never-reached
          match: {{operation: getPet}}
          fault: connection_reset
    """)
    outcome = rules.evaluate(facts())
    assert outcome.delay_ms == 42
    assert outcome.fired == ("slow-a", "slow-b", "answer")
    assert outcome.rule is not None and outcome.rule.name == "answer"
    # A rule without an operation applies to every operation, in file order.
    other = rules.evaluate(facts("listPets"))
    assert (other.delay_ms, other.fired, other.rule) == (12, ("slow-b",), None)
    assert rules.candidates("createPet") == [1]
    # Every rule counts the calls that meet its conditions, even after an earlier answer.
    assert rules.counts == [1, 2, 1, 1]


def test_engine_with_no_rules_is_falsy_and_has_no_candidates() -> None:
    rules = engine("")
    assert not rules
    assert rules.candidates("getPet") == []


def test_delay_kinds_draw_what_they_say() -> None:
    rng = random.Random(1)

    def draws() -> tuple[float, float]:
        return rng.random(), rng.random()

    assert Delay("fixed", 250).draw_ms(*draws()) == 250
    uniform = [Delay("uniform", 100, 400).draw_ms(*draws()) for _ in range(2000)]
    assert min(uniform) >= 100 and max(uniform) <= 400
    assert min(uniform) < 110 and max(uniform) > 390
    lognormal = [Delay("lognormal", 80, 0.5).draw_ms(*draws()) for _ in range(4001)]
    assert 72 <= statistics.median(lognormal) <= 88
    assert min(lognormal) > 0
    assert Delay("lognormal", 80, 0).draw_ms(*draws()) == 80
    # Spread as a lognormal with sigma 0.5: the quartiles of log(x / 80) are -/+0.337.
    logs = sorted(math.log(x / 80) for x in lognormal)
    assert -0.40 < logs[1000] < -0.28 and 0.28 < logs[3000] < 0.40


@given(
    low=st.floats(0, 1000),
    span=st.floats(0, 1000),
    u=st.floats(0, 1, exclude_max=True),
    v=st.floats(0, 1, exclude_max=True),
)
def test_uniform_delay_stays_within_its_bounds(low: float, span: float, u: float, v: float) -> None:
    drawn = Delay("uniform", low, low + span).draw_ms(u, v)
    assert low <= drawn <= low + span


@given(seed=st.integers(0, 2**32), count=st.integers(1, 10_000))
def test_a_rules_delay_is_the_same_for_the_same_call(seed: int, count: int) -> None:
    rules = engine(
        """
        - match: {operation: getPet}
          delay: {uniform_ms: [10, 500]}
        """,
        seed,
    )
    rule = rules.rules[0]
    first = rules.delay_ms(rule, 0, count)
    assert first == rules.delay_ms(rule, 0, count)
    assert 10 <= first <= 500


def test_delay_kinds_load_from_yaml() -> None:
    rules = load_scenario(
        scenario_text("""
            - match: {operation: getPet}
              delay: {fixed_ms: 5}
            - match: {operation: getPet}
              delay: {uniform_ms: [1, 2]}
            - match: {operation: getPet}
              delay: {lognormal: {median_ms: 80, sigma: 0.5}}
        """),
        "faults.yaml",
    ).faults
    assert [rule.delay for rule in rules] == [
        Delay("fixed", 5),
        Delay("uniform", 1, 2),
        Delay("lognormal", 80, 0.5),
    ]


def test_route_table_finds_routes_by_operation_and_by_path() -> None:
    scenario = load_scenario(
        scenario_text(
            routes="""
            - operation: listOrders
              respond: {status: 200, body: []}
            - method: GET
              path: "/store/orders/{orderId}"
              respond: {status: 200, body: {id: 1}}
            - method: PUT
              path: "/store/orders/{orderId}"
              respond: {status: 204}
            """
        ),
        "faults.yaml",
    )
    table = RouteTable(scenario.routes)
    assert table.by_operation["listOrders"].reply.body == b"[]"
    found, allowed = table.for_path("GET", "/store/orders/7")
    assert found is not None and found.reply.body == b'{"id": 1}'
    assert allowed == ["GET", "PUT"]
    found, allowed = table.for_path("DELETE", "/store/orders/7")
    assert found is None and allowed == ["GET", "PUT"]
    assert table.for_path("GET", "/store/orders/7/lines") == (None, [])


# -- matchers over HTTP -------------------------------------------------------


def test_http_operation_matcher() -> None:
    with serving(f"- {{match: {{operation: getPet}}, respond: {SCRIPTED}}}") as client:
        assert fired(client.get("/v1/pets/1", headers=auth("pro")))
        assert not fired(client.get("/v1/pets", headers=auth("pro")))
        assert not fired(client.post("/v1/pets", json=NEW_PET, headers=auth("pro")))


def test_http_method_and_path_matcher_runs_before_validation() -> None:
    rule = f'- {{match: {{method: GET, path: "/pets/{{petId}}"}}, respond: {SCRIPTED}}}'
    with serving(rule) as client:
        assert fired(client.get("/v1/pets/1", headers=auth("pro")))
        assert fired(client.get("/v1/pets/not-a-number", headers=auth("pro")))
        assert not fired(client.get("/v1/pets", headers=auth("pro")))
        assert not fired(client.post("/v1/pets", json=NEW_PET, headers=auth("pro")))


def test_http_key_and_plan_matchers() -> None:
    with serving(f"- {{match: {{key: free-key}}, respond: {SCRIPTED}}}") as client:
        assert fired(client.get("/v1/pets", headers=auth("free")))
        assert not fired(client.get("/v1/pets", headers=auth("pro")))
    with serving(f"- {{match: {{plan: business}}, respond: {SCRIPTED}}}") as client:
        assert fired(client.get("/v1/pets/2", headers=auth("business")))
        assert not fired(client.get("/v1/pets/2", headers=auth("free")))
        issued = client.post("/__mockstore/keys", json={"plan": "business"}).json()["key"]
        assert fired(client.get("/v1/pets/2", headers=auth(issued)))


def test_http_query_header_and_body_matchers() -> None:
    with serving(f"- {{match: {{query: {{status: sold}}}}, respond: {SCRIPTED}}}") as client:
        assert fired(client.get("/v1/pets?status=sold&limit=5", headers=auth("pro")))
        assert not fired(client.get("/v1/pets?status=available", headers=auth("pro")))
    with serving(f"- {{match: {{headers: {{X-Env: staging}}}}, respond: {SCRIPTED}}}") as client:
        assert fired(client.get("/v1/pets", headers={**auth("pro"), "x-env": "staging"}))
        assert not fired(client.get("/v1/pets", headers={**auth("pro"), "X-Env": "prod"}))
    with serving(f"- {{match: {{body: {{name: Boom}}}}, respond: {SCRIPTED}}}") as client:
        boom = {"name": "Boom", "categoryId": 1}
        assert fired(client.post("/v1/pets", json=boom, headers=auth("pro")))
        assert not fired(client.post("/v1/pets", json=NEW_PET, headers=auth("pro")))
        broken = client.post(
            "/v1/pets",
            content=b'{"name": "Boom"',
            headers={**auth("pro"), "content-type": "application/json"},
        )
        assert assert_conforms(broken)["code"] == "malformed_json"


def test_http_call_count_matchers() -> None:
    rules = f"""
        - {{match: {{operation: getPet, calls: [2, 3]}}, respond: {SCRIPTED}}}
        - {{match: {{operation: listPets, from_call: 2, until_call: 3}}, respond: {SCRIPTED}}}
        - {{match: {{operation: createPet, every: 2}}, respond: {SCRIPTED}}}
    """
    with serving(rules) as client:
        gets = [fired(client.get("/v1/pets/1", headers=auth("pro"))) for _ in range(5)]
        lists = [fired(client.get("/v1/pets", headers=auth("pro"))) for _ in range(5)]
        creates = [
            fired(client.post("/v1/pets", json=NEW_PET, headers=auth("pro"))) for _ in range(5)
        ]
    assert gets == [False, True, True, False, False]
    assert lists == [False, True, True, False, False]
    assert creates == [False, True, False, True, False]


def test_http_probability_is_seeded_and_the_same_on_every_fresh_server() -> None:
    rule = f"- {{match: {{operation: getPet, probability: 0.5}}, respond: {SCRIPTED}}}"
    patterns = []
    for _ in range(2):
        with serving(rule) as client:
            patterns.append(
                [fired(client.get("/v1/pets/1", headers=auth("pro"))) for _ in range(24)]
            )
    # The scenario's seed is 5; the rule is rule 0; its n-th call draws draw("5", 0, n).
    assert patterns[0] == patterns[1] == [draw("5", 0, n) < 0.5 for n in range(1, 25)]


def test_http_between_seconds_follows_the_scenario_clock() -> None:
    rule = f"- {{match: {{operation: getPet, between_seconds: [30, 90]}}, respond: {SCRIPTED}}}"
    with serving(rule) as client:
        seen = []
        for advance in (0, 29, 1, 59, 1):
            client.post("/__mockstore/clock", json={"advance_seconds": advance})
            seen.append(fired(client.get("/v1/pets/1", headers=auth("pro"))))
        assert seen == [False, False, True, True, False]
        client.post("/__mockstore/reset", headers=TOOL)
        assert not fired(client.get("/v1/pets/1", headers=auth("pro")))


def test_http_matchers_combine_all_must_hold() -> None:
    rule = f"""
        - match: {{operation: listPets, key: pro-key, query: {{status: sold}}, calls: [1, 2]}}
          respond: {SCRIPTED}
    """
    with serving(rule) as client:
        assert not fired(client.get("/v1/pets?status=sold", headers=auth("free")))
        assert not fired(client.get("/v1/pets", headers=auth("pro")))
        assert fired(client.get("/v1/pets?status=sold", headers=auth("pro")))
        assert fired(client.get("/v1/pets?status=sold", headers=auth("pro")))
        assert not fired(client.get("/v1/pets?status=sold", headers=auth("pro")))


# -- respond ------------------------------------------------------------------


def test_scripted_answers_keep_rate_limit_headers_and_spend_allowance() -> None:
    rule = """
        - match: {operation: getPet}
          respond:
            status: 503
            body: {code: unavailable, message: later, status: 503}
            headers: {Retry-After: "2", X-Scripted: "yes"}
    """
    with serving(rule) as client:
        first = client.get("/v1/pets/1", headers=auth("free"))
        second = client.get("/v1/pets/1", headers=auth("free"))
    assert assert_conforms(first)["code"] == "unavailable"
    assert first.status_code == 503
    assert first.headers["retry-after"] == "2"
    assert first.headers["x-scripted"] == "yes"
    assert first.headers["x-ratelimit-limit"] == "60"
    assert [first.headers["x-ratelimit-remaining"], second.headers["x-ratelimit-remaining"]] == [
        "59",
        "58",
    ]
    assert first.headers["x-request-id"] != second.headers["x-request-id"]
    # getPet stays deprecated, whoever answers it.
    assert first.headers["deprecation"].startswith("@") and "sunset" in first.headers


def test_scripted_answers_can_drop_rate_limit_headers_and_send_raw_bodies() -> None:
    rules = """
        - match: {operation: getPet}
          respond: {status: 200, body: {id: 1}, ratelimit_headers: false}
        - match: {operation: listPets}
          respond: {status: 502, body: "<html>Bad gateway</html>", raw: true,
                    headers: {Content-Type: text/html}}
    """
    with serving(rules) as client:
        bare = client.get("/v1/pets/1", headers=auth("pro"))
        raw = client.get("/v1/pets", headers=auth("pro"))
    assert (bare.status_code, bare.json()) == (200, {"id": 1})
    assert not [name for name in bare.headers if name.startswith("x-ratelimit")]
    assert raw.status_code == 502
    assert raw.content == b"<html>Bad gateway</html>"
    assert "text/html" in raw.headers.get_list("content-type")
    assert raw.headers["x-ratelimit-remaining"] == "298"


def test_a_scripted_header_replaces_the_default_of_the_same_name() -> None:
    rule = """
        - match: {operation: listPets}
          respond: {status: 502, body: "<html>Bad gateway</html>", raw: true,
                    headers: {Content-Type: text/html}}
    """
    with serving(rule) as client:
        raw = client.get("/v1/pets", headers=auth("pro"))
    assert raw.headers.get_list("content-type") == ["text/html"]


def test_scripted_answers_never_hide_a_401_or_a_429() -> None:
    rule = f"- {{match: {{}}, respond: {SCRIPTED}}}"
    with serving(rule) as client:
        assert assert_conforms(client.get("/v1/pets"))["code"] == "unauthorized"
        unknown = client.get("/v1/pets", headers=auth("nobody"))
        assert assert_conforms(unknown)["code"] == "invalid_token"
        missing = client.get("/v1/nowhere", headers=auth("pro"))
        assert assert_conforms(missing)["code"] == "not_found"
    spent = BASE.replace(
        "{key: free-key, plan: free}", "{key: free-key, plan: free, used: {minute: 60}}"
    )
    scenario = load_scenario(
        spent + f"faults:\n  - {{match: {{}}, respond: {SCRIPTED}}}\n", "f.yaml"
    )
    with TestClient(create_app(scenario)) as client:
        limited = client.get("/v1/pets", headers=auth("free"))
    assert assert_conforms(limited)["code"] == "rate_limited"


def test_a_delay_answers_late_with_the_normal_answer() -> None:
    rule = "- {match: {operation: listPets}, delay: {fixed_ms: 60}}"
    with serving(rule) as client:
        started = time.perf_counter()
        response = client.get("/v1/pets", headers=auth("pro"))
        elapsed = time.perf_counter() - started
    assert elapsed >= 0.05  # a lower bound only: the delay happened
    assert [p["id"] for p in assert_conforms(response)] == [1, 2]


# -- routes -------------------------------------------------------------------


def test_list_orders_is_501_until_a_route_scripts_it() -> None:
    with serving() as client:
        response = client.get("/v1/store/orders", headers=auth("pro"))
        assert assert_conforms(response)["code"] == "not_implemented"
    route = "- {operation: listOrders, respond: {status: 200, body: []}}"
    with serving(routes=route) as client:
        response = client.get("/v1/store/orders", headers=auth("pro"))
        assert (response.status_code, response.json()) == (200, [])
        assert response.headers["x-ratelimit-remaining"] == "299"
        assert response.headers["content-type"] == "application/json"
        assert client.get("/v1/store/orders").status_code == 401


def test_routes_add_paths_with_their_methods() -> None:
    routes = """
        - method: GET
          path: "/store/orders/{orderId}"
          respond: {status: 200, body: {id: 7, status: placed}}
    """
    with serving(routes=routes) as client:
        found = client.get("/v1/store/orders/7", headers=auth("pro"))
        assert (found.status_code, found.json()) == (200, {"id": 7, "status": "placed"})
        wrong = client.delete("/v1/store/orders/7", headers=auth("pro"))
        assert assert_conforms(wrong)["code"] == "method_not_allowed"
        assert wrong.headers["allow"] == "GET, HEAD"
        head = client.head("/v1/store/orders/7", headers=auth("pro"))
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-length"] == found.headers["content-length"]
        assert assert_conforms(client.get("/v1/store/other", headers=auth("pro")))["code"] == (
            "not_found"
        )


def test_a_fault_on_a_scripted_route_fires_first() -> None:
    fault = f"- {{match: {{operation: listOrders, calls: [1]}}, respond: {SCRIPTED}}}"
    route = "- {operation: listOrders, respond: {status: 200, body: []}}"
    with serving(fault, route) as client:
        assert fired(client.get("/v1/store/orders", headers=auth("pro")))
        second = client.get("/v1/store/orders", headers=auth("pro"))
        assert (second.status_code, second.json()) == (200, [])


# -- connection-level faults, on a real socket --------------------------------

CONNECTION_FAULTS = """\
faults:
  - {match: {headers: {X-Fault: reset}}, fault: connection_reset}
  - {match: {headers: {X-Fault: empty}}, fault: empty_response}
  - {match: {headers: {X-Fault: truncated}}, fault: truncated_body}
  - {match: {headers: {X-Fault: malformed}}, fault: malformed_json}
  - {match: {headers: {X-Fault: slow}}, fault: slow_body}
"""


def test_connection_faults_break_the_connection_the_way_they_say(tmp_path: Any) -> None:
    path = tmp_path / "connection-faults.yaml"
    path.write_text(BASE + CONNECTION_FAULTS)
    with mock_server(str(path)) as server:

        def call(fault: str | None = None) -> httpx.Response:
            headers = {**auth("pro"), **({"X-Fault": fault} if fault else {})}
            # A fresh connection each time: a broken one must not poison the next call.
            with server.client() as http:
                return http.get("/v1/pets", headers=headers)

        with pytest.raises(httpx.ReadError):
            call("reset")
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            call("empty")
        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            call("truncated")

        malformed = call("malformed")
        assert malformed.status_code == 200
        assert malformed.headers["content-type"] == "application/json"
        assert "x-ratelimit-remaining" in malformed.headers
        with pytest.raises(ValueError):
            malformed.json()

        started = time.perf_counter()
        slow = call("slow")
        assert time.perf_counter() - started >= 1.5  # sent in pieces over about 2 s
        assert [p["id"] for p in assert_conforms(slow)] == [1, 2]

        # The server is unharmed and the faults still counted against the allowance.
        after = call()
        assert [p["id"] for p in assert_conforms(after)] == [1, 2]
        assert after.headers["x-ratelimit-remaining"] == str(300 - 6)
        with server.client() as http:
            assert (
                assert_conforms(http.get("/v1/pets", headers={"X-Fault": "reset"})).get("code")
                == "unauthorized"
            )


def test_delivery_faults_deliver_the_answer_the_operation_gave(tmp_path: Any) -> None:
    # A fault that damages the delivery damages *this* operation's answer:
    # Pet 2 for GET /pets/2 (not a list of pets), the created Pet for a create,
    # which is stored, as a real server stores it before the write breaks.
    path = tmp_path / "delivery-faults.yaml"
    path.write_text(BASE + CONNECTION_FAULTS)
    with mock_server(str(path)) as server:

        def call(method: str, target: str, fault: str, **kwargs: Any) -> httpx.Response:
            headers = {**auth("pro"), "X-Fault": fault}
            with server.client() as http:
                return http.request(method, target, headers=headers, **kwargs)

        slow = call("GET", "/v1/pets/2", "slow")
        assert slow.status_code == 200
        assert assert_conforms(slow) == {
            "id": 2,
            "name": "Bella",
            "categoryId": 2,
            "status": "sold",
        }
        assert slow.headers["deprecation"]  # getPet's own headers come along

        malformed = call("GET", "/v1/pets/2", "malformed")
        assert malformed.status_code == 200
        assert malformed.content.startswith(b'{"id":2,')  # the start of Pet 2, cut short
        with pytest.raises(ValueError):
            malformed.json()

        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            call("GET", "/v1/pets/2", "truncated")

        missing = call("GET", "/v1/pets/99", "slow")  # the operation's refusal, delivered slowly
        assert (missing.status_code, assert_conforms(missing)["code"]) == (404, "not_found")

        created = call("POST", "/v1/pets", "slow", json=NEW_PET)
        assert created.status_code == 201
        pet = assert_conforms(created)
        assert {k: pet[k] for k in NEW_PET} == NEW_PET
        with pytest.raises(httpx.RemoteProtocolError):
            call("POST", "/v1/pets", "truncated", json={"name": "Cut", "categoryId": 4})
        with server.client() as http:
            stored = http.get("/__mockstore/pets").json()
        assert [p["name"] for p in stored] == ["Rex", "Bella", "Nova", "Cut"]
        with pytest.raises(httpx.ReadError):
            call("POST", "/v1/pets", "reset", json={"name": "Never", "categoryId": 5})
        with server.client() as http:
            assert len(http.get("/__mockstore/pets").json()) == 4  # a reset stores nothing


SLOW_LIST = """\
version: 1
name: slow-list
keys: [{key: pro-key, plan: {per_minute: 1000, per_day: 100000}}]
faults:
  - match: {operation: listPets}
    delay: {fixed_ms: 20}
"""


def test_a_delay_is_never_shorter_than_the_scenario_says() -> None:
    """On the real server (uvloop, whose timers may fire up to a millisecond early)."""
    with mock_server(SLOW_LIST) as server, server.client(headers=auth("pro-key")) as http:
        for _ in range(60):
            assert http.get("/v1/pets").status_code == 200
        entries = http.get("/__mockstore/requests").json()["entries"]
    assert len(entries) == 60
    short = [e["latency_ms"] for e in entries if e["latency_ms"] < 20]
    assert not short, f"{len(short)} of 60 delays of 20 ms were shorter: {short[:5]}"
