"""``calibrate`` learns an Error field that names the parameter at fault, whichever it is.

A provider whose Error bodies carry ``param`` (the query parameter, path parameter or
body field at fault, Stripe's convention) shows it on refusals mockstore's defaults
would not make: a name past the provider's own length limit, a ``categoryId`` of
``4.0`` where the provider wants JSON integers. The learner must still write the
field as computed per answer (``generate: parameter``), never as one answer's
constant (which told clients ``petId`` for a bad ``limit``).
"""

from __future__ import annotations

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.fidelity.drift import drift
from mockstore.fidelity.recording import recording_of
from mockstore.scenario import load_scenario
from tests.fidelity_support import AUTH, BASE, JSON_BODY, record_mock

PROVIDER = BASE + (
    "collections:\n"
    "  numbers: {body: strict}\n"
    "  constraints: {name: {max_length: 64}}\n"
    "behaviour:\n"
    "  error_fields:\n"
    "    - {name: param, generate: parameter, conditions: [invalid_body, field_constraint,"
    " bad_limit, bad_status_filter, bad_pet_id, pet_not_found]}\n"
)
STEPS = [
    ("GET", "/v1/pets", "", AUTH, b"", 16.0),
    ("GET", "/v1/pets", "limit=0", AUTH, b"", 16.0),
    ("GET", "/v1/pets", "status=lost", AUTH, b"", 16.0),
    ("GET", "/v1/pets/abc", "", AUTH, b"", 16.0),
    ("GET", "/v1/pets/99", "", AUTH, b"", 16.0),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "' + b"n" * 65 + b'", "categoryId": 4}', 16.0),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Pip", "categoryId": 4.0}', 16.0),
]


def test_a_field_naming_the_parameter_at_fault_is_learned_as_computed() -> None:
    har = record_mock(PROVIDER, STEPS)
    shown = [
        e["response"]["content"].get("text", "") for e in har["log"]["entries"]
    ]  # the provider named each parameter: limit, status, petId, name, categoryId
    assert all(f'"param":"{p}"' in "".join(shown).replace(" ", "") for p in
               ("limit", "status", "petId", "name", "categoryId"))  # fmt: skip
    learned = learn(recording_of(har, "session.har"))
    fields = {entry.value["name"]: entry.value for entry in learned.items["behaviour.error_fields"]}
    assert fields["param"]["generate"] == "parameter", fields["param"]
    text = render_scenario(learned, Options(None, (), recording="session.har"), sent=0)
    report = drift(har, load_scenario(text, "<learned>"))
    about_param = [d.to_dict() for d in report.differences if "param" in str(d.to_dict())]
    assert not about_param, about_param
