"""``mockstore record``: a reverse proxy that forwards as sent, answers unchanged, journals all.

Every test runs ``python -m mockstore record`` as a subprocess in front of a
real upstream on loopback (the echo upstream for the proxy's mechanics, the
Pet Store stand-in for the API) and talks to it with httpx over real sockets.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mockstore import schemas
from mockstore.keys import key_alias
from tests.upstream import Process, new_key, origin, recorder, standin
from tests.upstream.echo import Echo, echo_upstream, refused_upstream, silent_upstream

WAIT = 30.0  # generous: the machine is shared


def _error_body(response: httpx.Response) -> dict:
    body = response.json()
    problems = list(schemas.schema_validator("Error").iter_errors(body))
    assert not problems, problems[0].message
    assert body["status"] == response.status_code
    return body


def _journal(proxy_url: str) -> list[dict]:
    return httpx.get(origin(proxy_url) + "/__mockstore/requests", timeout=10).json()["entries"]


@pytest.fixture(scope="module")
def _plain_recording() -> Iterator[tuple[str, str, Echo, Process]]:
    """One echo upstream and one ``mockstore record`` subprocess in front of it, with no
    options, for the tests of this module that need nothing else (each start costs seconds)."""
    with echo_upstream() as (upstream, echo), recorder(upstream) as proxy:
        yield upstream, proxy.url, echo, proxy
    # Whatever the tests sent it, the proxy stopped cleanly and never printed a traceback.
    assert "Traceback" not in proxy.log(), proxy.log()[-3000:]


@pytest.fixture
def plain_recording(
    _plain_recording: tuple[str, str, Echo, Process],
) -> tuple[str, str, Echo, Process]:
    """The shared recording as fresh: the upstream has received nothing and holds nothing
    back, the proxy answers and its journal is empty."""
    _, proxy_url, echo, proxy = _plain_recording
    assert proxy.process.poll() is None, proxy.log()[-3000:]
    echo.received.clear()
    echo.release.clear()
    echo.first_chunk.clear()
    cleared = httpx.delete(origin(proxy_url) + "/__mockstore/requests", timeout=WAIT)
    assert cleared.status_code == 204, cleared.text
    assert _journal(proxy_url) == []
    return _plain_recording


def test_a_request_goes_upstream_as_sent_and_its_answer_comes_back_unchanged(
    plain_recording: tuple[str, str, Echo, Process],
) -> None:
    upstream, proxy_url, echo, _ = plain_recording
    body = b'{"any": "bytes", "kept": true}'
    response = httpx.post(
        proxy_url + "/echo?b=2&a=1&a=%20x",
        content=body,
        headers={
            "X-Custom": "value",
            "Connection": "keep-alive, X-Hop-Client",
            "X-Hop-Client": "must not travel",
            "Proxy-Authorization": "Basic c2VjcmV0",
            "TE": "trailers",
            "Content-Type": "application/octet-stream",
        },
        timeout=WAIT,
    )
    assert response.status_code == 200
    seen = response.json()
    assert seen == echo.received[0]
    assert seen["method"] == "POST"
    assert seen["raw_path"] == "/v1/echo"
    assert seen["query"] == "b=2&a=1&a=%20x"  # byte for byte, order and escapes kept
    assert seen["body_sha256"] == hashlib.sha256(body).hexdigest()
    sent = {name: value for name, value in seen["headers"]}
    assert sent["x-custom"] == "value"
    assert sent["content-type"] == "application/octet-stream"
    assert sent["host"] == upstream.split("/")[2]  # the upstream's, not the proxy's
    for hop in ("connection", "x-hop-client", "proxy-authorization", "te", "keep-alive"):
        assert hop not in sent, hop
    # Nothing added: the client's end-to-end headers, the upstream's Host, nothing else.
    assert sorted(sent) == sorted(
        [
            "host",
            "accept",
            "accept-encoding",
            "user-agent",
            "x-custom",
            "content-type",
            "content-length",
        ]
    )
    # The answer: the upstream's headers less its hop-by-hop ones.
    assert response.headers["x-upstream"] == "kept"
    assert "keep-alive" not in response.headers
    assert "x-hop-upstream" not in response.headers


def test_bodies_stream_through_in_both_directions(
    plain_recording: tuple[str, str, Echo, Process],
) -> None:
    _, proxy_url, echo, _ = plain_recording
    # Response: the first chunk reaches the client while the upstream still holds the rest.
    with httpx.stream("GET", proxy_url + "/stream", timeout=WAIT) as response:
        chunks = response.iter_raw()
        first = next(chunks)
        assert first.startswith(b'["first"')
        assert not echo.release.is_set()
        echo.release.set()
        rest = b"".join(chunks)
    assert json.loads(first + rest) == ["first", "second"]

    # Request: the upstream has the first chunk before the client sends the second.
    def upload() -> Iterator[bytes]:
        yield b"a" * 1000
        assert echo.first_chunk.wait(WAIT), "the proxy held the upload back"
        yield b"b" * 1000

    answer = httpx.post(proxy_url + "/upload", content=upload(), timeout=WAIT)
    assert answer.json() == {"size": 2000}


def test_keys_never_reach_the_recording_only_their_aliases(tmp_path: Path) -> None:
    first, second = new_key(), new_key()
    out = tmp_path / "session.har"
    with echo_upstream() as (upstream, _), recorder(upstream, "--out", str(out)) as proxy:
        for key in (first, first, second):
            response = httpx.get(
                proxy.url + "/echo-key?q=" + key,
                headers={"Authorization": f"Bearer {key}", "Cookie": f"s={key}"},
                timeout=WAIT,
            )
            # The client gets the upstream's answer as it was, key and all.
            assert response.json() == {"you_sent": key}
            assert response.headers["x-your-key"] == key
        control = origin(proxy.url) + "/__mockstore"
        shown = [
            httpx.get(control + path, timeout=WAIT).text
            for path in ("/requests", "/requests.har", "/requests.har?mask=true", "/report")
        ]
        entries = _journal(proxy.url)
    log = proxy.log()
    recorded = out.read_text()
    for text in [*shown, log, recorded]:
        assert first not in text and second not in text
    aliases = [e["key"] for e in entries]
    assert aliases == [key_alias(first), key_alias(first), key_alias(second)]
    assert key_alias(first) != key_alias(second)
    assert entries[0]["request"]["headers"][-2:] == [
        ["authorization", f"Bearer {key_alias(first)}"],
        ["cookie", key_alias(f"s={first}")],
    ]
    assert json.loads(entries[0]["response"]["body"]) == {"you_sent": key_alias(first)}
    har = json.loads(recorded)
    assert har["log"]["_mockstore"]["keys"] == "aliased"
    assert len(har["log"]["entries"]) == 3


def test_a_refused_upstream_is_a_502_error_and_is_journaled() -> None:
    with recorder(refused_upstream()) as proxy:
        response = httpx.get(proxy.url + "/pets", timeout=WAIT)
        entries = _journal(proxy.url)
    assert response.status_code == 502
    body = _error_body(response)
    assert body["code"] == "upstream_unreachable"
    assert "refused the connection" in body["message"]
    assert [(e["response"]["status"], e["outcome"]) for e in entries] == [(502, "upstream_refused")]


def test_an_upstream_that_does_not_answer_is_a_504_error_and_is_journaled() -> None:
    with silent_upstream() as upstream, recorder(upstream, "--timeout", "0.5") as proxy:
        response = httpx.get(proxy.url + "/pets", timeout=WAIT)
        entries = _journal(proxy.url)
    assert response.status_code == 504
    body = _error_body(response)
    assert body["code"] == "upstream_timeout"
    assert "did not answer within 0.5 s" in body["message"]
    assert entries[0]["outcome"] == "upstream_timeout"


def test_a_failed_tls_handshake_is_a_502_error_that_says_so() -> None:
    # The echo upstream speaks plain HTTP: an https:// client's handshake with it fails.
    with (
        echo_upstream() as (upstream, _),
        recorder(upstream.replace("http://", "https://")) as proxy,
    ):
        response = httpx.get(proxy.url + "/echo", timeout=WAIT)
        entries = _journal(proxy.url)
    assert response.status_code == 502
    body = _error_body(response)
    assert body["code"] == "upstream_unreachable"
    assert body["message"].startswith("TLS with the upstream https://127.0.0.1:")
    assert entries[0]["outcome"] == "upstream_tls_error"


def test_an_upstream_that_breaks_mid_answer_breaks_the_clients_answer_too(
    plain_recording: tuple[str, str, Echo, Process],
) -> None:
    _, proxy_url, _, proxy = plain_recording
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(proxy_url + "/broken", timeout=WAIT)
    # The proxy is unharmed, and says what happened.
    assert httpx.get(proxy_url + "/echo", timeout=WAIT).status_code == 200
    entries = _journal(proxy_url)
    assert [(e["response"]["status"], e["outcome"]) for e in entries] == [
        (200, "upstream_broke"),
        (200, "response"),
    ]
    assert "Traceback" not in proxy.log()


def test_compressed_answers_pass_unchanged_and_are_journaled_decoded(
    plain_recording: tuple[str, str, Echo, Process],
) -> None:
    proxy_url = plain_recording[1]
    raw = httpx.get(proxy_url + "/gzip", headers={"Accept-Encoding": "gzip"}, timeout=WAIT)
    entries = _journal(proxy_url)
    assert raw.headers["content-encoding"] == "gzip"
    assert raw.json() == {"compressed": True}  # httpx decoded the gzip bytes it was sent
    assert int(raw.headers["content-length"]) == len(
        gzip.compress(json.dumps({"compressed": True}).encode())
    )
    assert json.loads(entries[0]["response"]["body"]) == {"compressed": True}


@pytest.fixture(scope="module")
def petstore() -> Iterator[tuple[str, str]]:
    key = new_key()
    with standin({key: "starter"}) as upstream:
        yield upstream.url, key


def test_the_journal_report_and_har_work_during_a_recording(petstore: tuple[str, str]) -> None:
    upstream, key = petstore
    with recorder(upstream) as proxy:
        with httpx.Client(base_url=proxy.url, timeout=WAIT) as http:
            assert http.get("/pets").status_code == 401  # no key: ETQ007
            auth = {"Authorization": f"Bearer {key}"}
            assert http.get("/pets?limit=0", headers=auth).status_code == 422  # ETQ006
            assert http.get("/pets/101", headers=auth).status_code == 200  # ETQ004
        control = origin(proxy.url) + "/__mockstore"
        report = httpx.get(control + "/report", timeout=WAIT).json()
        har = httpx.get(control + "/requests.har", timeout=WAIT).json()
        entries = _journal(proxy.url)
        verified = httpx.post(
            control + "/verify", json={"operation": "getPet", "count": 1}, timeout=WAIT
        ).json()
    assert {f["id"] for f in report["findings"]} >= {"ETQ004", "ETQ006", "ETQ007"}
    assert [e["operation"] for e in entries] == ["listPets", "listPets", "getPet"]
    assert [e["key"] for e in entries] == [None, key_alias(key), key_alias(key)]
    assert len(har["log"]["entries"]) == 3
    assert verified["ok"] is True


@pytest.mark.parametrize(
    ("upstream", "message"),
    [
        ("ftp://staging.example.com/v1", "must be an http:// or https:// URL"),
        ("https://staging.example.com", "must end in its version segment"),
        ("https://staging.example.com/v1?x=1", "must not have a query"),
    ],
)
def test_an_unusable_upstream_is_refused_before_starting(upstream: str, message: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "record", "--upstream", upstream, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_an_unwritable_out_file_is_refused_before_starting(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mockstore",
            "record",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--port",
            "0",
            "--out",
            str(tmp_path / "missing-dir" / "out.har"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cannot write --out" in done.stderr


def test_a_recording_stops_cleanly_and_writes_its_har_on_sigterm(
    petstore: tuple[str, str], tmp_path: Path
) -> None:
    upstream, key = petstore
    out = tmp_path / "out.har"
    with recorder(upstream, "--out", str(out)) as proxy:
        httpx.get(proxy.url + "/pets", headers={"Authorization": f"Bearer {key}"}, timeout=WAIT)
        status = proxy.stop()
    assert status == 0
    har = json.loads(out.read_text())
    (entry,) = har["log"]["entries"]
    assert entry["request"]["url"].endswith("/v1/pets")
    assert entry["response"]["status"] == 200
    assert har["log"]["_mockstore"]["recorded_from"] == upstream
    assert f"wrote 1 exchange(s) to {out}" in proxy.log()


def test_the_proxy_keeps_serving_while_an_upstream_answer_is_held(
    plain_recording: tuple[str, str, Echo, Process],
) -> None:
    _, proxy_url, echo, _ = plain_recording
    held = threading.Thread(
        target=lambda: httpx.get(proxy_url + "/stream", timeout=WAIT), daemon=True
    )
    held.start()
    deadline = time.monotonic() + WAIT
    while not any(r["raw_path"] == "/v1/stream" for r in echo.received):
        assert time.monotonic() < deadline, "the held request never reached the upstream"
        time.sleep(0.01)
    # Another request is answered while the first is still waiting upstream.
    assert httpx.get(proxy_url + "/echo", timeout=WAIT).status_code == 200
    assert held.is_alive()
    echo.release.set()
    held.join(WAIT)
    assert not held.is_alive()
