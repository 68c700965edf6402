"""Issue 25: a client suite per provider stand-in, and how far the mock agrees with each.

Each stand-in's client suite (``tests/client_suites/<name>/``), written from its
documentation, passes against the provider it was written for: that holds every
stand-in to the choices its docstring lists (the new ones have no test module of their
own; these suites are it). The verdict-agreement measure (``tests/agreement.py``) runs
end to end here on the original stand-in, whose differences today's scenario format
expresses, with the floor it meets; the full table for all six (``-m slow``, and
``bench/verdict_agreement.py``) checks only what holds for every one today: the
issue's 95% target waits on the mechanism branches (the limiter, HTTP semantics,
collections), and the table says how far each stand-in is from it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mockstore.fidelity.reasons import NOT_EXPRESSIBLE
from tests.agreement import STANDINS, Measure, measure, table

# A long run, in .ci/run's slow step (same MOCKSTORE_REQUIRE_* settings):
# a measurement: every client suite against every stand-in and its mock.
pytestmark = pytest.mark.slow

# The three written for issue 25: no test module of their own, so in the fast suite.
NEW = ["tollgate", "corral", "aviary"]
OLDER = ["kennel", "menagerie", "petstore_standin"]


def _check_own_suite(result: Measure) -> None:
    assert result.tests >= 30, f"{result.name}'s suite has {result.tests} tests"
    failing = {test: verdict for test, verdict in result.provider.items() if verdict != "passed"}
    assert failing == {}, (failing, (result.work / "provider.log").read_text()[-3000:])


@pytest.mark.parametrize("name", NEW)
def test_a_new_standin_passes_the_suite_its_clients_wrote(name: str, tmp_path: Path) -> None:
    _check_own_suite(measure(STANDINS[name], tmp_path, provider_only=True))


@pytest.mark.slow
@pytest.mark.parametrize("name", OLDER)
def test_an_older_standin_passes_the_suite_its_clients_wrote(name: str, tmp_path: Path) -> None:
    _check_own_suite(measure(STANDINS[name], tmp_path, provider_only=True))


def test_the_calibrated_mock_agrees_with_the_original_standin_on_its_clients_suite(
    tmp_path: Path,
) -> None:
    result = measure(STANDINS["petstore_standin"], tmp_path)
    print(table([result]))
    _check_own_suite(result)
    assert result.calibrate == "ok"
    assert result.exchanges > 100
    # The team's scenario (keys and plans from the docs) fails most of what a client
    # depends on; calibrated from a recording, the mock agrees on nearly all (97% on
    # the day this was written: the one difference left is a body field that counts down).
    assert result.agreement_before < 0.5, result.to_json()
    assert result.agreement_after >= 0.95, result.disagreeing()
    after = result.drift_after["causes"]
    assert after.get("setting", 0) == 0, result.drift_after
    assert set(result.drift_after["reasons"]) <= set(NOT_EXPRESSIBLE)


def test_the_calibrated_mock_agrees_with_tollgate_on_its_clients_suite(tmp_path: Path) -> None:
    # Issue 25's target for Tollgate (an Envoy-style edge): 98% on the day this was
    # written; the one test left is a 304 whose own answer already shows its token given
    # back (mockstore's ratelimit.not_counted gives it back after the answer).
    result = measure(STANDINS["tollgate"], tmp_path)
    print(table([result]))
    _check_own_suite(result)
    assert result.calibrate == "ok"
    assert result.agreement_after >= 0.95, result.disagreeing()
    assert result.drift_after["causes"].get("setting", 0) == 0, result.drift_after
    assert set(result.drift_after["reasons"]) <= set(NOT_EXPRESSIBLE)


@pytest.mark.slow
def test_the_table_for_every_standin(tmp_path: Path) -> None:
    measures = [measure(STANDINS[name], tmp_path / name) for name in STANDINS]
    print(table(measures))
    for result in measures:
        _check_own_suite(result)
        assert result.calibrate == "ok", result.calibrate
        for drift in (result.drift_before, result.drift_after):
            assert "error" not in drift, drift
            assert set(drift["reasons"]) <= set(NOT_EXPRESSIBLE), drift["reasons"]
        # Calibrated, the mock agrees at least as well as the team's scenario on every
        # stand-in whose keys calibrate learns today (Tollgate's bucket shows a reset with
        # milliseconds, which no plan of today's format reads: it waits on the limiter).
        if result.name != "tollgate":
            assert result.agreement_after > result.agreement_before, result.to_json()


# The stand-ins whose client suites meet issue 25's target today: 95% of the verdicts the
# provider gives, after calibrate with no opt-in, and drift after it with no setting left.
AT_TARGET = ["kennel"]


@pytest.mark.slow
@pytest.mark.parametrize("name", AT_TARGET)
def test_a_standin_at_the_target_stays_there(name: str, tmp_path: Path) -> None:
    result = measure(STANDINS[name], tmp_path)
    print(table([result]))
    assert result.calibrate == "ok", result.calibrate
    assert result.agreement_after >= 0.95, result.disagreeing()
    assert result.drift_after["causes"].get("setting", 0) == 0, result.drift_after
    assert set(result.drift_after["reasons"]) <= set(NOT_EXPRESSIBLE), result.drift_after
