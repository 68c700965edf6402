"""A client generated from the served document parses every answer of every bundled scenario.

openapi-python-client (the generator Python teams reach for) builds a client from
``/__mockstore/openapi.json`` as each bundled scenario's mock serves it, with
``raise_on_unexpected_status``: a status the document does not declare for an
operation raises, and every declared one is parsed into its model. The client then
drives the mock through what a test suite does (every operation, refusals, a fault
rule's answers: flaky-create's 503, chaos's 500 and 503), and every answer must parse.
Only chaos's broken connections (and the bodies it cuts or garbles) send no answer to
parse. ``.ci/artifacts/generated-clients/<scenario>.json`` tallies the requests sent, the
answers parsed and the broken ones.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockstore import MockServer
from mockstore.scenario import bundled_names, load_scenario_source

ARTIFACTS = Path(__file__).resolve().parent.parent / ".ci" / "artifacts"
# Rounds of a test suite's calls: chaos answers 500 at 2% and 503 at 3% (seeded), so it
# gets enough rounds to meet both; the others answer the same way every round.
ROUNDS = {"chaos": 25, "flaky-create": 3}  # (pro-key's third create fails)
# The generator's post hooks run ruff; its own settings, with no hook, keep it off the PATH.
CONFIG = "post_hooks: []\n"


def _generate(document: Path, package: str, where: Path) -> Any:
    """The client openapi-python-client generates from ``document``, imported."""
    config = where / "generator.yaml"
    config.write_text(CONFIG)
    command = [
        str(Path(sys.executable).parent / "openapi-python-client"),
        "generate", "--path", str(document), "--output-path", str(where / package),
        "--meta", "none", "--config", str(config),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module(package)
    finally:
        sys.path.remove(str(where))


def _calls(generated: Any, key: str | None) -> list[tuple[str, Any]]:
    """(what, the call) for one round of what a test suite sends."""
    api = importlib.import_module(generated.__name__ + ".api.default")
    models = importlib.import_module(generated.__name__ + ".models")
    list_pets = importlib.import_module(api.__name__ + ".list_pets")
    create_pet = importlib.import_module(api.__name__ + ".create_pet")
    get_pet = importlib.import_module(api.__name__ + ".get_pet")
    list_orders = importlib.import_module(api.__name__ + ".list_orders")
    return [
        ("listPets", lambda c: list_pets.sync_detailed(client=c, limit=2)),
        ("listPets limit 0", lambda c: list_pets.sync_detailed(client=c, limit=0)),
        ("createPet", lambda c: create_pet.sync_detailed(
            client=c, body=models.NewPet(name="Gen", category_id=1))),
        ("getPet", lambda c: get_pet.sync_detailed(client=c, pet_id=1)),
        ("getPet missing", lambda c: get_pet.sync_detailed(client=c, pet_id=987654)),
        ("listOrders", lambda c: list_orders.sync_detailed(client=c)),
    ]  # fmt: skip


def _exercise(server: MockServer, generated: Any, keys: list[str], rounds: int) -> dict[str, Any]:
    errors = importlib.import_module(generated.__name__ + ".errors")
    models = importlib.import_module(generated.__name__ + ".models")
    sent = parsed = broken = 0
    statuses: Counter[str] = Counter()
    problems: list[str] = []
    clients = [
        generated.AuthenticatedClient(
            base_url=server.url, token=key, raise_on_unexpected_status=True, timeout=30
        )
        for key in keys
    ]
    clients.append(generated.Client(base_url=server.url, raise_on_unexpected_status=True))
    for _ in range(rounds):
        for client in clients:
            for what, call in _calls(generated, None):
                sent += 1
                try:
                    response = call(client)
                except errors.UnexpectedStatus as undeclared:
                    problems.append(f"{what}: undeclared {undeclared.status_code}")
                    continue
                except (httpx.TransportError, json.JSONDecodeError):
                    # A fault that breaks the connection, or cuts or garbles the body
                    # (chaos's): no answer to parse.
                    broken += 1
                    continue
                statuses[f"{what} {int(response.status_code)}"] += 1
                body = response.parsed
                if response.status_code >= 400 and not isinstance(body, models.Error):
                    problems.append(f"{what}: {response.status_code} parsed as {body!r}")
                elif body is None and response.content:
                    problems.append(f"{what}: {response.status_code} not parsed")
                else:
                    parsed += 1
    for client in clients:
        client.get_httpx_client().close()
    return {
        "sent": sent,
        "parsed": parsed,
        "broken": broken,
        "statuses": dict(statuses),
        "problems": problems,
    }


@pytest.mark.parametrize("name", bundled_names())
def test_a_generated_client_parses_every_answer_of_a_bundled_scenario(
    name: str, tmp_path: Path
) -> None:
    keys = [spec.key for spec in load_scenario_source(name).keys][:2]
    with MockServer(name) as server:
        document = tmp_path / "openapi.json"
        served = httpx.get(server.base_url + "/__mockstore/openapi.json")
        assert served.status_code == 200
        document.write_bytes(served.content)
        package = "generated_" + name.replace("-", "_")
        generated = _generate(document, package, tmp_path)
        outcome = _exercise(server, generated, keys, ROUNDS.get(name, 2))
    counts = {k: outcome[k] for k in ("sent", "parsed", "broken")}
    (ARTIFACTS / "generated-clients").mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "generated-clients" / f"{name}.json").write_text(json.dumps(counts) + "\n")
    assert not outcome["problems"], outcome["problems"][:10]
    assert outcome["parsed"] + outcome["broken"] == outcome["sent"]
    if name == "chaos":
        # Not an empty verdict: the fault rules' answers were met, and parsed.
        met = {status.rsplit(" ", 1)[1] for status in outcome["statuses"]}
        assert {"500", "503"} <= met, outcome["statuses"]
    else:
        assert outcome["broken"] == 0
    if name == "flaky-create":
        assert any(s.endswith(" 503") for s in outcome["statuses"]), outcome["statuses"]
