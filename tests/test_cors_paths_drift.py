"""Drift's attribution of a preflight the mock answers as CORS and the provider does not.

Aviary allows preflights on ``/v1/pets`` and answers one on ``/v1/pets/7`` as a plain
``OPTIONS`` (405): drift used to suggest removing ``http.cors`` altogether, which its proof
then reported as adding differences (every preflight on ``/v1/pets`` lost). It names
``http.cors.match: exact`` where that is what differs, or the paths without the one the
provider leaves out, and each suggestion, applied, removes its difference and adds none.
"""

from __future__ import annotations

import pytest
import yaml

from mockstore.fidelity.drift import drift
from mockstore.scenario import load_scenario
from tests.fidelity_support import AUTH, BASE, apply, record_mock

ORIGIN = ("origin", "https://app.example.com")
PREFLIGHT = [ORIGIN, ("access-control-request-method", "GET")]


def _with_cors(cors: str) -> str:
    return BASE + f"http:\n  cors: {cors}\n"


@pytest.mark.parametrize(
    ("provider", "team", "setting", "value"),
    [
        ("{paths: [/pets], match: exact}", "{paths: [/pets]}", "http.cors.match", "exact"),
        ("{paths: [/store]}", "{paths: [/pets, /store]}", "http.cors.paths", ["/store"]),
    ],
)
def test_a_preflight_on_a_path_the_provider_leaves_out_names_the_paths(
    provider: str, team: str, setting: str, value: object
) -> None:
    # With a key, as the stand-in's clients send one: a preflight the provider does not
    # treat as one is then a plain OPTIONS (405), not a missing key (http.cors.stage's).
    steps = [
        ("OPTIONS", "/v1/pets", "", [*PREFLIGHT, *AUTH], b"", 0.0),
        ("OPTIONS", "/v1/pets/1", "", [*PREFLIGHT, *AUTH], b"", 0.0),
        ("GET", "/v1/pets/1", "", [*AUTH, ORIGIN], b"", 0.0),
        ("OPTIONS", "/v1/store/orders", "", [*PREFLIGHT, *AUTH], b"", 0.0),
    ]
    recording = record_mock(_with_cors(provider), steps)
    report = drift(recording, load_scenario(_with_cors(team)))
    named = [d for d in report.differences if d.setting and d.setting.startswith("http.cors")]
    assert named, [d.to_dict() for d in report.differences]
    assert {(d.setting, json_of(d.set_to)) for d in named} == {(setting, json_of(value))}, [
        d.to_dict() for d in named
    ]
    assert all(d.cause == "setting" and d.proven for d in named), [d.to_dict() for d in named]
    fixed = apply(yaml.safe_load(_with_cors(team)), named[0])
    assert drift(recording, load_scenario(yaml.safe_dump(fixed))).differences == []


def json_of(value: object) -> str:
    return yaml.safe_dump(value)
