"""Issue 25's verdict agreement on the three older stand-ins (the original Pet Store
stand-in, Kennel, Menagerie): the other half of ``tests/test_verdict_agreement.py``, in a
file of its own so that ``.ci/run``'s slow step (``--dist loadfile``) runs the halves side
by side. Each stand-in is measured once (``tests/agreement.py``'s ``Measured``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockstore.fidelity.reasons import NOT_EXPRESSIBLE
from tests.agreement import Measured, check_calibrated, check_own_suite

# A long run, in .ci/run's slow step (same MOCKSTORE_REQUIRE_* settings):
# a measurement: every client suite against every stand-in and its mock.
pytestmark = pytest.mark.slow

OLDER = ["kennel", "menagerie", "petstore_standin"]
# The stand-ins whose client suites meet issue 25's target today: 95% of the verdicts the
# provider gives, after calibrate with no opt-in, and drift after it with no setting left.
AT_TARGET = ["kennel"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Measured]:
    yield Measured(tmp_path_factory.mktemp("agreement"))


@pytest.mark.parametrize("name", OLDER)
def test_an_older_standin_passes_its_clients_suite_and_calibrates(
    name: str, measured: Measured
) -> None:
    check_calibrated(measured(name))


def test_the_calibrated_mock_agrees_with_the_original_standin_on_its_clients_suite(
    measured: Measured,
) -> None:
    result = measured("petstore_standin")
    check_own_suite(result)
    assert result.calibrate == "ok", result.calibrate
    assert result.exchanges > 100
    # The team's scenario (keys and plans from the docs) fails most of what a client
    # depends on; calibrated from a recording, the mock agrees on nearly all (97% on
    # the day this was written: the one difference left is a body field that counts down).
    assert result.agreement_before < 0.5, result.to_json()
    assert result.agreement_after >= 0.95, result.disagreeing()
    after = result.drift_after["causes"]
    assert after.get("setting", 0) == 0, result.drift_after
    assert set(result.drift_after["reasons"]) <= set(NOT_EXPRESSIBLE)


@pytest.mark.parametrize("name", AT_TARGET)
def test_a_standin_at_the_target_stays_there(name: str, measured: Measured) -> None:
    result = measured(name)
    assert result.calibrate == "ok", result.calibrate
    assert result.agreement_after >= 0.95, result.disagreeing()
    assert result.drift_after["causes"].get("setting", 0) == 0, result.drift_after
    assert set(result.drift_after["reasons"]) <= set(NOT_EXPRESSIBLE), result.drift_after
