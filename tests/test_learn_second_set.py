"""``calibrate`` learns a second set of rate-limit headers, and drift names it where it is gone.

Menagerie's gateway states the day in ``X-RateLimit-*`` and the minute in
``X-RateLimit-Burst-Limit``, ``-Remaining`` and ``-Reset``: calibrate reads the set's
name, its window (by the allowance its limit states), its figures and its reset's
form, holds the limiter's replay to its figures, and drift, against a scenario
without it, names ``ratelimit.headers.second_set`` with the value that, applied,
removes every difference. The provider is mockstore under a scenario that states
it, recorded in process.
"""

from __future__ import annotations

import yaml

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.fidelity.drift import drift
from mockstore.fidelity.proof import apply
from mockstore.fidelity.recording import recording_of
from mockstore.limiter.model import SecondSet
from mockstore.scenario import load_scenario
from tests.fidelity_support import record_mock

TEAM = """\
version: 1
clock: {start: 2026-03-01T12:00:30Z, mode: manual}
keys:
  - {key: dev-key, plan: {per_minute: 3, per_day: 40}}
  - {key: pro-key, plan: pro}
ratelimit:
  headers: {describes: day, refusals: described}
"""
PROVIDER = TEAM.replace(
    "refusals: described}",
    "refusals: described,"
    " second_set: {name: Burst, window: minute, figures: [limit, remaining, reset, used]}}",
)
DEV = [("authorization", "Bearer dev-key")]
PRO = [("authorization", "Bearer pro-key")]
STEPS = [
    *[("GET", "/v1/pets", "limit=1", DEV, b"", 1.5) for _ in range(4)],  # the fourth refused
    ("GET", "/v1/pets", "limit=1", PRO, b"", 0.5),
    ("GET", "/v1/pets", "limit=1", DEV, b"", 60.0),  # the next minute
    ("GET", "/v1/pets", "limit=1", PRO, b"", 0.5),
]


def test_the_second_set_is_learned_and_reproduces_every_answer() -> None:
    har = record_mock(PROVIDER, STEPS)
    assert [e["response"]["status"] for e in har["log"]["entries"]].count(429) == 1
    learned = learn(recording_of(har, "burst.har"))
    text = render_scenario(learned, Options(None, (), recording="burst.har"), sent=0)
    scenario = load_scenario(text, "<learned>")
    assert scenario.ratelimit.headers.second == SecondSet(
        "Burst", "minute", ("limit", "remaining", "reset", "used"), "delta"
    )
    # The allowances: the day's in X-RateLimit-Limit, the minute's in the burst's.
    assert {(p.per_minute, p.per_day) for p in (scenario.plans[k.plan] for k in scenario.keys)} >= {
        (3, 40)
    }
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_drift_names_the_second_set_and_the_advice_applied_removes_it() -> None:
    har = record_mock(PROVIDER, STEPS)
    report = drift(har, load_scenario(TEAM, "team.yaml"))
    burst = [d for d in report.differences if d.where.startswith("header x-ratelimit-burst-")]
    assert burst and {(d.cause, d.setting) for d in burst} == {
        ("setting", "ratelimit.headers.second_set")
    }
    value = burst[0].value[0]
    assert value == {
        "name": "Burst",
        "window": "minute",
        "figures": ["limit", "remaining", "reset", "used"],
    }
    fixed = apply(yaml.safe_load(TEAM), "ratelimit.headers.second_set", value)
    again = drift(har, load_scenario(yaml.safe_dump(fixed), "fixed.yaml"))
    assert [d.to_dict() for d in again.differences] == []
