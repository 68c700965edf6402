"""``calibrate`` learns a window length per plan from a recording, and drift finds it gone.

A gateway whose plans each count over a window of their own (Kong's per-consumer
configuration: Corral's hobby plan counts 5 per 5 s while the others count per
minute) shows it in each plan's figures; no one length reproduces them all.
``calibrate`` replays each algorithm with a length per plan and keeps the one that
reproduces every answer: the plan's own length on its key's inline plan
(``minute_seconds``), the others' as ``ratelimit.minute.seconds``. The provider is
mockstore under a scenario that states it, recorded in process.
"""

from __future__ import annotations

import copy
import json

import yaml

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.fidelity.drift import drift
from mockstore.fidelity.proof import apply
from mockstore.fidelity.recording import recording_of
from mockstore.scenario import load_scenario
from tests.fidelity_support import record_mock

PROVIDER = """\
version: 1
clock: {start: 2026-03-01T12:00:30Z, mode: manual}
keys:
  - {key: main-key, plan: {per_minute: 6, per_day: 100}}
  - {key: hobby-key, plan: {per_minute: 3, per_day: 50, minute_seconds: 5}}
ratelimit:
  minute: {algorithm: sliding_window}
  counts: attempts
  headers: {per_window: {day: Day}, draft: success, retry_after: decimal}
"""
MAIN = [("authorization", "Bearer main-key")]
HOBBY = [("authorization", "Bearer hobby-key")]


def _get(headers: list[tuple[str, str]], wait: float) -> tuple:
    return ("GET", "/v1/pets", "limit=1", headers, b"", wait)


STEPS = [
    *[_get(MAIN, 1.0) for _ in range(3)],
    *[_get(HOBBY, 0.25) for _ in range(5)],  # the fourth and fifth refused, and counted
    _get(HOBBY, 2.0),  # refused still: the previous window weighs in
    _get(MAIN, 0.5),
    _get(HOBBY, 9.0),  # two of its windows on: let in
    *[_get(MAIN, 0.5) for _ in range(4)],  # the sixth and seventh of the minute: refused
    _get(HOBBY, 0.5),
]


def test_a_length_per_plan_is_learned_and_reproduces_every_answer() -> None:
    har = record_mock(PROVIDER, STEPS)
    statuses = [e["response"]["status"] for e in har["log"]["entries"]]
    assert statuses.count(429) >= 4  # both plans were refused
    learned = learn(recording_of(har, "plans.har"))
    text = render_scenario(learned, Options(None, (), recording="plans.har"), sent=0)
    scenario = load_scenario(text, "<learned>")
    plans = {key.key: scenario.plans[key.plan] for key in scenario.keys}
    hobby = next(plan for plan in plans.values() if plan.per_minute == 3)
    main = next(plan for plan in plans.values() if plan.per_minute == 6)
    assert (hobby.minute_seconds, main.minute_seconds) == (5, 0)
    limits = scenario.ratelimit
    assert (limits.minute.seconds, limits.minute.algorithm) == (60, "sliding_window")
    assert limits.lengths_per_plan
    assert "minute_seconds: 5 s, where the other plans count 60 s" in text
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_an_answer_given_before_counting_does_not_throw_the_windows_off() -> None:
    # A gateway that routes before it limits (Corral's Kong) answers a path it does not
    # serve with the caller's figures as they stand, counting nothing: whether such
    # answers count is the routes' to say, so the limiter's replay holds each to what it
    # shows, and the windows are still learned from the answers that did count.
    har = record_mock(PROVIDER, STEPS)
    entries = har["log"]["entries"]
    unrouted = copy.deepcopy(entries[0])
    unrouted["request"]["url"] = unrouted["request"]["url"].split("/v1/")[0] + "/v1/nowhere"
    unrouted["request"]["queryString"] = []
    body = json.dumps({"code": "routeNotFound", "message": "no route", "status": 404})
    unrouted["response"]["status"] = 404
    unrouted["response"]["content"].update(text=body, size=len(body))
    unrouted["_mockstore"]["operation"] = None
    entries.insert(1, unrouted)
    learned = learn(recording_of(har, "plans.har"))
    text = render_scenario(learned, Options(None, (), recording="plans.har"), sent=0)
    assert "no rule reproduces every answer" not in text
    scenario = load_scenario(text, "<learned>")
    assert scenario.ratelimit.minute.algorithm == "sliding_window"
    assert sorted(scenario.plans[k.plan].minute_seconds for k in scenario.keys) == [0, 5]


def test_drift_names_the_plans_own_length_and_the_advice_applied_removes_it() -> None:
    har = record_mock(PROVIDER, STEPS)
    # The scenario a team writes from the docs' table: the hobby plan's allowances, not
    # its window.
    team = PROVIDER.replace(", minute_seconds: 5", "")
    report = drift(har, load_scenario(team, "team.yaml"))
    policy = [d for d in report.differences if d.where == "header ratelimit-policy"]
    assert policy, [d.to_dict() for d in report.differences]
    assert {(d.cause, d.setting) for d in policy} == {("setting", "keys[].plan")}
    assert {json.dumps(d.value[0], sort_keys=True) for d in policy} == {
        json.dumps({"per_minute": 3, "per_day": 50, "minute_seconds": 5}, sort_keys=True)
    }
    fixed = apply(yaml.safe_load(team), "keys[].plan", policy[0].value[0], policy[0].key)
    again = drift(har, load_scenario(yaml.safe_dump(fixed), "fixed.yaml"))
    assert [d.to_dict() for d in again.differences] == []
