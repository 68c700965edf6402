"""Issue 25, point 9: drift's advice is proven, and what it cannot prove says why.

On main drift suggested ``behaviour.ratelimit_reset: "invalid"`` (which validate refuses)
for a provider whose ``X-RateLimit-Reset`` has milliseconds, named settings with no value
(``keys[].plan``, ``behaviour.ratelimit_draft_headers``), suggested values that swapped one
difference for another (``behaviour.retry_after: http-date`` for Kennel, whose ordinary
``429`` says seconds and only its ban an HTTP-date), and gave ``header-presence`` (whose text
says mockstore writes a header the provider leaves out) to headers the provider writes.

Now a difference keeps a setting only when drift, having written the value into the
scenario and replayed the recording, saw it go and nothing else come. These tests check
that claim independently on recordings of real providers (``tests/upstream/``, through
``mockstore record``): every suggestion is a value validate accepts, and applied it removes
its difference and adds none.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from mockstore.fidelity import proof
from mockstore.fidelity.discrepancy import Discrepancy
from mockstore.fidelity.drift import DriftReport, drift
from mockstore.fidelity.reasons import NOT_EXPRESSIBLE
from mockstore.fidelity.recording import Recording, read_recording, recording_of
from mockstore.scenario import load_scenario
from tests.agreement import STANDINS, record_session, team_scenario
from tests.fidelity_support import AUTH, BASE, apply, record_mock


@dataclass
class Case:
    standin: str
    recording: Recording
    team: str
    report: DriftReport


# Tollgate in the fast suite (its reset is in no unit mockstore writes); every stand-in under
# -m slow (Kennel's ban says an HTTP-date where its 429 says seconds: on main drift suggested
# retry_after: http-date, which adds a difference on every ordinary 429).
SLOW = ("kennel", "corral", "aviary", "menagerie", "petstore_standin")


@pytest.fixture(
    scope="module",
    params=["tollgate", *(pytest.param(name, marks=pytest.mark.slow) for name in SLOW)],
)
def recorded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Case]:
    """A stand-in recorded under the fidelity session, the team's scenario for it, and drift's
    report (with its proofs) of the one against the other."""
    standin = STANDINS[request.param]
    har, keys = record_session(standin, tmp_path_factory.mktemp(request.param))
    recording, team = read_recording(str(har)), team_scenario(standin, keys)
    yield Case(request.param, recording, team, drift(recording, load_scenario(team)))


def _places(differences: list[Discrepancy]) -> set[tuple[int, str]]:
    return {(d.entry, d.where) for d in differences}


def test_every_suggestion_is_a_value_validate_accepts(recorded: Case) -> None:
    team, report = recorded.team, recorded.report
    data = yaml.safe_load(team)
    suggested = [d for d in report.differences if d.cause == "setting"]
    assert suggested, "the team's scenario leaves settings to name"
    for difference in suggested:
        assert difference.value, difference.to_dict()  # a setting always with its value
        load_scenario(yaml.safe_dump(apply(data, difference)))  # ScenarioError on a bad one
        assert difference.proven


def test_each_suggestion_applied_removes_its_difference_and_adds_none(recorded: Case) -> None:
    recording, team, report = recorded.recording, recorded.team, recorded.report
    data = yaml.safe_load(team)
    before = {(d.entry, d.kind, d.where) for d in report.differences}
    by_suggestion: dict[str, list[Discrepancy]] = {}
    for d in report.differences:
        if d.cause == "setting":
            key = json.dumps([d.setting, d.set_to, d.key if d.setting == "keys[].plan" else None])
            by_suggestion.setdefault(key, []).append(d)
    for claimed in by_suggestion.values():
        fixed = yaml.safe_dump(apply(data, claimed[0]))
        after = drift(recording, load_scenario(fixed), prove=False).differences
        places = _places(claimed)
        masked = {d.entry for d in claimed if d.kind == "status"}
        left = [d.to_dict() for d in after if (d.entry, d.where) in places]
        added = [
            d.to_dict() for d in after
            if (d.entry, d.kind, d.where) not in before and d.entry not in masked
            and (d.entry, d.where) not in places
        ]  # fmt: skip
        # What is left where it was is another setting's, proven too (a header's name,
        # then its value's form): drift tries those together.
        assert all(d["cause"] == "setting" for d in left), (claimed[0].to_dict(), left)
        assert not added, (claimed[0].to_dict(), added[:3])


def test_what_drift_cannot_prove_keeps_the_setting_it_tried(recorded: Case) -> None:
    report = recorded.report
    for d in report.differences:
        if d.cause == "not_expressible":
            assert d.reason in NOT_EXPRESSIBLE, d.to_dict()
            if d.reason.startswith("value-"):
                assert d.tried is not None and d.to_dict()["tried"]["setting"], d.to_dict()


# Each stand-in's X-RateLimit-Reset: the unit drift proves, or None where it proves none.
RESET_UNITS = {
    # A Unix time with milliseconds (1772366431.250): mockstore's unit with three decimals
    # (ratelimit.headers.reset_decimals, the limiter's).
    "tollgate": "epoch.3",
    "kennel": "epoch-ms",
    "corral": "delta",
    "aviary": "epoch-ms",
    "menagerie": "epoch",  # the unit of mockstore's own: no difference
    "petstore_standin": "delta",
}


def test_a_reset_in_a_unit_mockstore_does_not_write_is_no_setting(recorded: Case) -> None:
    resets = [d for d in recorded.report.differences if d.where == "header x-ratelimit-reset"]
    unit = RESET_UNITS[recorded.standin]
    if unit == "epoch":
        assert resets == []
    elif unit == "epoch.3":
        assert resets and {(d.setting, d.set_to, d.proven) for d in resets} == {
            ("ratelimit.headers.reset_decimals", 3, True)
        }, [d.to_dict() for d in resets]
    elif unit is not None:
        assert resets and {(d.setting, d.set_to, d.proven) for d in resets} == {
            ("behaviour.ratelimit_reset", unit, True)
        }
    else:
        assert resets and {d.reason for d in resets} == {"value-invalid"}
        assert {d.to_dict()["tried"]["setting"] for d in resets} == {"behaviour.ratelimit_reset"}
        assert all("set_to" not in d.to_dict()["tried"] for d in resets)  # no value shown


def _recorded_with(change: Any) -> Recording:
    har = record_mock(BASE, [("GET", "/v1/pets", "", AUTH, b"", 0.0)])
    change(har["log"]["entries"][0]["response"]["headers"])
    return recording_of(har)


def test_a_managed_header_the_provider_sends_is_header_presence_and_one_it_omits_absence() -> None:
    sent = _recorded_with(lambda headers: headers.append({"name": "Retry-After", "value": "5"}))
    omitted = _recorded_with(
        lambda headers: headers.remove(next(h for h in headers if h["name"] == "content-type"))
    )
    scenario = load_scenario(BASE)
    presence = [d for d in drift(sent, scenario).differences if d.where == "header retry-after"]
    absence = [d for d in drift(omitted, scenario).differences if d.where == "header content-type"]
    assert [(d.recorded, d.mock, d.reason) for d in presence] == [
        ("present (5)", "absent", "header-presence")
    ]
    assert [(d.recorded, d.reason) for d in absence] == [("absent", "header-absence")]
    assert "provider sends" in NOT_EXPRESSIBLE["header-presence"]
    assert "leaves out" in NOT_EXPRESSIBLE["header-absence"]


def test_past_the_bound_on_replays_a_suggestion_says_it_was_not_tried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    knobs = BASE + "behaviour: {validation_status: 422, ratelimit_reset: delta}\n"
    steps = [
        ("GET", "/v1/pets", "limit=0", AUTH, b"", 0.0),
        ("GET", "/v1/pets", "", AUTH, b"", 1.0),
    ]
    recording = recording_of(record_mock(knobs, steps))
    # Room for the proof of one suggestion (its rounds), not of two.
    monkeypatch.setattr(proof, "MAX_REPLAYED", proof.ROUNDS * len(steps))
    report = drift(recording, load_scenario(BASE))
    settings = {d.setting: d.proven for d in report.differences if d.setting}
    unproven = [d for d in report.differences if d.reason == "value-unproven"]
    assert list(settings.values()) == [True] and unproven
    assert {d.tried[0] for d in unproven if d.tried} - set(settings)  # the other one
    assert report.replays == 1
