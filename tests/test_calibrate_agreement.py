"""What the verdict-agreement loop (issue 25) found calibrate could not learn, each from a
small recording: a preflight a gateway refused with CORS headers on, a ban's end stated to
the millisecond beside a rounded HTTP-date, a repeated query parameter, and an ETag of a
provider's own length. Each recording is mockstore's own answers (``record_mock``), edited
where a provider writes what mockstore does not.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx

from mockstore.scenario import load_scenario
from tests.fidelity_support import record_mock
from tests.support import mock_server

KEY = "sk_test_abcdefgh12345678"
AUTH = [("authorization", f"Bearer {KEY}")]
APP = "https://app.example.com"
PETS = "pets:\n" + "".join(
    f"  - {{id: {n}, name: Pet {n}, categoryId: 1, status: available}}\n" for n in range(1, 6)
)


def _calibrate(har: dict[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "session.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _header(entry: dict[str, Any], name: str) -> str | None:
    for header in entry["response"]["headers"]:
        if header["name"].lower() == name:
            return str(header["value"])
    return None


def _set_header(entry: dict[str, Any], name: str, value: str) -> None:
    for header in entry["response"]["headers"]:
        if header["name"].lower() == name:
            header["value"] = value


def test_a_preflight_refused_by_the_limiter_with_cors_headers_is_not_an_allowed_one(
    tmp_path: Path,
) -> None:
    # Corral's gateway writes Access-Control-Allow-Origin on every answer to its app's
    # origin, a 429 to a preflight included; calibrate took that 429 for the preflight
    # status and wrote a scenario that does not validate.
    har = record_mock(
        f"version: 1\nhttp:\n  cors: {{origins: [{APP}], max_age: 600}}\n",
        [
            (
                "OPTIONS",
                "/v1/pets",
                "",
                [("origin", APP), ("access-control-request-method", "POST")],
                b"",
                0.0,
            )
        ],
    )
    allowed = har["log"]["entries"][0]
    assert allowed["response"]["status"] == 204
    refused = copy.deepcopy(allowed)
    refused["response"]["status"] = 429
    refused["response"]["headers"].append({"name": "Retry-After", "value": "30"})
    har["log"]["entries"].insert(0, refused)
    done = _calibrate(har, tmp_path)
    assert done.returncode == 0, done.stderr
    cors = load_scenario(done.stdout).http.cors
    assert cors is not None and cors.preflight_status == 204
    assert cors.origins == (APP,)


def test_a_bans_length_is_read_from_a_reset_in_milliseconds_not_a_rounded_http_date(
    tmp_path: Path,
) -> None:
    provider = (
        f"version: 1\nplans: {{tiny: {{per_minute: 2, per_day: 100}}}}\n"
        f"keys: [{{key: {KEY}, plan: tiny}}]\n"
        "ban: {enabled: true, after_rejections: 2, duration_seconds: 300}\n"
        "behaviour: {ratelimit_reset: epoch-ms, retry_after_banned: http-date}\n"
    )
    har = record_mock(provider, [("GET", "/v1/pets", "", AUTH, b"", 0.2)] * 6)
    # Kennel's HTTP-date rounds the ban's end up to the next whole second (a client that
    # waits for it is never early); its X-RateLimit-Reset says the end to the millisecond.
    for entry in har["log"]["entries"]:
        date = _header(entry, "retry-after")
        if date is not None and not date.isdigit():
            later = parsedate_to_datetime(date).timestamp() + 0.9
            _set_header(entry, "retry-after", formatdate(later, usegmt=True))
            reset = _header(entry, "x-ratelimit-reset")
            assert reset is not None
            _set_header(entry, "x-ratelimit-reset", str(int(reset) + 100))
    done = _calibrate(har, tmp_path)
    assert done.returncode == 0, done.stderr
    assert load_scenario(done.stdout).ban.duration_seconds == 300


def test_a_repeated_parameter_and_the_etags_length_are_learned_and_served(
    tmp_path: Path,
) -> None:
    provider = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n{PETS}"
        "collections: {repeated_parameters: last}\n"
        "behaviour: {etag_digits: 16, etag: {getPet: strong}}\n"
    )
    har = record_mock(
        provider,
        [
            ("GET", "/v1/pets", "limit=1&limit=3", AUTH, b"", 0.0),
            ("GET", "/v1/pets/1", "", AUTH, b"", 0.0),
        ],
    )
    listed, read = har["log"]["entries"]
    assert listed["response"]["status"] == 200
    assert len(json.loads(listed["response"]["content"]["text"])) == 3
    assert len((_header(read, "etag") or "").strip('"')) == 16
    done = _calibrate(har, tmp_path)
    assert done.returncode == 0, done.stderr
    learned = load_scenario(done.stdout)
    assert learned.collections.repeated_parameters == "last"
    assert learned.behaviour.etag_digits == 16
    assert learned.behaviour.etag_digest == "sha256"


def test_each_repeated_parameter_policy_through_http() -> None:
    base = f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n{PETS}"
    expected = {"refuse": None, "first": 1, "last": 3}
    for policy, count in expected.items():
        with mock_server(base + f"collections: {{repeated_parameters: {policy}}}\n") as server:
            answer = httpx.get(
                f"{server.api}/pets?limit=1&limit=3", headers={"Authorization": f"Bearer {KEY}"}
            )
        if count is None:
            assert answer.status_code == 400, answer.text
            assert {"code", "message", "status"} <= set(answer.json())
        else:
            assert answer.status_code == 200 and len(answer.json()) == count, policy


def test_details_per_field_are_learned_though_the_provider_words_them_its_own_way(
    tmp_path: Path,
) -> None:
    # Corral's details[]: an entry per field at fault, in its own words, an unknown field
    # listed beside a wrong type, and [] on every refusal with no field at fault.
    provider = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n{PETS}"
        "behaviour:\n  error_fields:\n"
        '    - {name: details, generate: details, item: {field: "{field}", issue: "{message}"}}\n'
    )
    json_body = [*AUTH, ("content-type", "application/json")]
    har = record_mock(
        provider,
        [
            ("POST", "/v1/pets", "", json_body, b'{"name": 5, "categoryId": 1}', 0.0),
            ("POST", "/v1/pets", "", json_body, b'{"name": "Rex", "categoryId": "x"}', 0.0),
            ("GET", "/v1/pets/987654", "", AUTH, b"", 0.0),
            ("GET", "/v1/pets", "limit=0", AUTH, b"", 0.0),
        ],
    )
    words = iter(["must be text", "must be an int64", "must be a positive integer"])
    for entry in har["log"]["entries"]:
        body = json.loads(entry["response"]["content"]["text"])
        for item in body.get("details", []):
            item["issue"] = next(words)
        if entry["request"].get("postData", {}).get("text", "").startswith('{"name": 5'):
            body["details"].append({"field": "nickname", "issue": "is not a NewPet field"})
            entry["request"]["postData"]["text"] = '{"name": 5, "categoryId": 1, "nickname": 1}'
        entry["response"]["content"]["text"] = json.dumps(body)
    assert next(words, None) is None  # each field at fault had its entry
    done = _calibrate(har, tmp_path)
    assert done.returncode == 0, done.stderr
    fields = {f.name: f for f in load_scenario(done.stdout).behaviour.error_fields}
    assert "details" in fields, done.stdout
    details = fields["details"]
    assert details.generate == "details", details
    assert dict(details.item or {})["field"] == "{field}"


def test_a_wait_in_ms_is_computed_from_a_decimal_retry_after(tmp_path: Path) -> None:
    # Corral's 429: Retry-After 7.3 and retryAfterMs 7291; calibrate read no decimal wait
    # and wrote one answer's retryAfterMs as a constant.
    provider = (
        f"version: 1\nplans: {{tiny: {{per_minute: 1, per_day: 100}}}}\n"
        f"keys: [{{key: {KEY}, plan: tiny}}]\n"
        "ratelimit: {headers: {retry_after: decimal}}\n"
        "behaviour:\n  error_fields:\n"
        "    - {name: retryAfterMs, generate: retry_after_ms, conditions: [rate_limited]}\n"
    )
    har = record_mock(provider, [("GET", "/v1/pets", "", AUTH, b"", 0.3)] * 4)
    waits = [_header(e, "retry-after") for e in har["log"]["entries"][1:]]
    assert all(w is not None and "." in w for w in waits) and len(set(waits)) > 1, waits
    done = _calibrate(har, tmp_path)
    assert done.returncode == 0, done.stderr
    fields = {f.name: f for f in load_scenario(done.stdout).behaviour.error_fields}
    assert fields["retryAfterMs"].generate == "retry_after_ms", done.stdout


def test_constant_cors_headers_of_a_provider_without_cors_stay_constant_headers(
    tmp_path: Path,
) -> None:
    # A provider that writes Access-Control-Allow-Origin on every answer as a constant,
    # its refusal of a preflight included (a random profile drew it, behind a limiter
    # refusing with 503): that refusal is no allowed preflight, so the header is no CORS
    # setting; calibrate left it to CORS and the mock's 503s lacked it.
    har = record_mock(
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n{PETS}",
        [
            ("GET", "/v1/pets", "limit=1", AUTH, b"", 0.0),
            (
                "OPTIONS",
                "/v1/pets",
                "",
                [("origin", APP), ("access-control-request-method", "POST")],
                b"",
                0.0,
            ),
            ("GET", "/v1/pets", "limit=2", AUTH, b"", 0.0),
        ],
    )
    statuses = [entry["response"]["status"] for entry in har["log"]["entries"]]
    assert statuses[0] == statuses[2] == 200 and not 200 <= statuses[1] < 300, statuses
    for entry in har["log"]["entries"]:
        entry["response"]["headers"].append({"name": "Access-Control-Allow-Origin", "value": "*"})
    done = _calibrate(har, tmp_path)
    assert done.returncode == 0, done.stderr
    scenario = load_scenario(done.stdout)
    assert scenario.http.cors is None
    with mock_server(done.stdout) as server:
        answer = httpx.get(server.api + "/pets?limit=1")
    assert answer.status_code == 401
    assert answer.headers.get("access-control-allow-origin") == "*"
