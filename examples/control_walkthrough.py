"""Every method of the Python control client, in the order a test suite meets them.

``python examples/control_walkthrough.py URL`` runs it against a server (the docs'
walk-through: ``tests/test_docs_examples.py`` runs it against a fresh one).
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from mockstore import Control, ControlError, VerificationError

HERE = Path(__file__).resolve().parent


def walk_through(url: str) -> None:
    with Control(url, token=None) as mock:
        mock.load_scenario(HERE / "scenarios" / "checkout.yaml")  # a name, a path, YAML, a dict
        since = mock.reset().journal_seq  # ResetResult(status, scenario, journal_seq)
        mock.advance(60)  # ClockState(now, unix, mode, start, ...)
        mock.set_time("2030-12-04T00:00:00Z")
        key = mock.issue_key("pro").key  # KeyInfo(key, plan, limits, minute, day, ...)
        for name in ("Rex", "Rex"):  # the scenario's first create fails (503): retried
            httpx.post(
                mock.url + "/v1/pets",
                json={"name": name, "categoryId": 1},
                headers={"Authorization": f"Bearer {key}"},
            )
        mock.revoke_key(key)
        assert mock.lift_ban("ci-free-key") is False  # bool: it was not banned
        mock.requests(operation="createPet", since=since)  # list[JournalEntry]
        mock.verify("createPet", count=2, since=since)  # Verification(ok, count, matched, ...)
        try:
            mock.verify("getPet", count=1, since=since)
        except VerificationError as missing:  # an AssertionError too: a failed test in pytest
            assert missing.code == "verification_failed", missing
        mock.report(since=since, timeline=True)  # Report(summary, findings, coverage, ...)
        mock.har(mask=True)  # the HAR document (a dict)
        mock.keys()  # list[KeyInfo]
        mock.clock()
        mock.health()  # Health(status, version, scenario, time)
        mock.scenario()  # ScenarioInfo(name, file, ..., source)
        mock.pets()
        tenant = mock.create_tenant("tenant-1")  # TenantInfo(id, path, url, ...)
        mock.tenants()
        mock.delete_tenant(tenant.id)
        try:
            mock.delete_tenant("tenant-1")  # gone already
        except ControlError as gone:
            assert gone.status == 404, gone


if __name__ == "__main__":
    walk_through(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080")
