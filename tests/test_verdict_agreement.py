"""Issue 25: a client suite per provider stand-in, and how far the mock agrees with each.

Each stand-in's client suite (``tests/client_suites/<name>/``), written from its
documentation, passes against the provider it was written for: that holds every
stand-in to the choices its docstring lists (the new ones have no test module of their
own; these suites are it). The verdict-agreement measure (``tests/agreement.py``) runs
end to end on every stand-in, once each (``Measured``): what holds for every one today
is checked on all six; the issue's 95% target on those that meet it (the original
stand-in, Tollgate, Kennel); ``bench/verdict_agreement.py`` prints the whole table.

The three new stand-ins here, the three older ones in
``tests/test_verdict_agreement_older.py``: a file each to a worker in ``.ci/run``'s slow
step (``--dist loadfile``), so the two halves run side by side.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockstore.fidelity.reasons import NOT_EXPRESSIBLE
from tests.agreement import Measured, check_calibrated, check_own_suite

# A long run, in .ci/run's slow step (same MOCKSTORE_REQUIRE_* settings):
# a measurement: every client suite against every stand-in and its mock.
pytestmark = pytest.mark.slow

# The three written for issue 25 (no test module of their own).
NEW = ["tollgate", "corral", "aviary"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Measured]:
    yield Measured(tmp_path_factory.mktemp("agreement"))


@pytest.mark.parametrize("name", NEW)
def test_a_new_standin_passes_its_clients_suite_and_calibrates(
    name: str, measured: Measured
) -> None:
    check_calibrated(measured(name))


def test_the_calibrated_mock_agrees_with_tollgate_on_its_clients_suite(
    measured: Measured,
) -> None:
    # Issue 25's target for Tollgate (an Envoy-style edge): 98% on the day this was
    # written; the one test left is a 304 whose own answer already shows its token given
    # back (mockstore's ratelimit.not_counted gives it back after the answer).
    result = measured("tollgate")
    check_own_suite(result)
    assert result.calibrate == "ok", result.calibrate
    assert result.agreement_after >= 0.95, result.disagreeing()
    assert result.drift_after["causes"].get("setting", 0) == 0, result.drift_after
    assert set(result.drift_after["reasons"]) <= set(NOT_EXPRESSIBLE)
