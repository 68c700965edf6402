"""The control API protects itself from web pages: cross-site requests, DNS rebinding, odd paths.

A page in any browser can send a POST without a preflight if it is a "simple"
request (a form, ``text/plain``, or no body); it cannot add a custom header or
a JSON content type without one, and the server answers no preflight. A
DNS-rebinding page reaches the server under the attacker's host name, which
the ``Host`` header then carries. All against a real server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore import Control
from mockstore.control.guard import ControlGuard
from tests.rawhttp import request
from tests.support import LiveServer, examples, live_server

EVIL = "http://evil.example"


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server() as running:
        yield running


def _clock(server: LiveServer) -> float:
    return httpx.get(server.url + "/__mockstore/clock", timeout=30).json()["unix"]


def _key_count(server: LiveServer) -> int:
    return len(httpx.get(server.url + "/__mockstore/keys", timeout=30).json())


# What a page can send cross-site without a preflight: a form, text/plain, or no body.
SIMPLE_BODIES = [
    ("text/plain", '{"plan": "pro"}'),
    ("application/x-www-form-urlencoded", "plan=pro"),
    ("multipart/form-data; boundary=x", "--x--"),
]
# What a browser says of a request from a page of another site (it always says one of them).
BROWSER_MARKS = [
    {"Origin": EVIL},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": EVIL, "Sec-Fetch-Site": "cross-site"},
]


@pytest.mark.parametrize(("content_type", "body"), SIMPLE_BODIES)
@pytest.mark.parametrize("origin", [EVIL, None])
def test_a_form_or_text_post_cannot_change_state(
    server: LiveServer, content_type: str, body: str, origin: str | None
) -> None:
    before = _key_count(server)
    headers = {"Content-Type": content_type}
    if origin:
        headers["Origin"] = origin
    response = httpx.post(server.url + "/__mockstore/keys", content=body, headers=headers)
    assert response.status_code == 403, response.text
    error = response.json()
    assert error["code"] == "cross_site_request" and error["status"] == 403
    assert "X-Mockstore-Client" in error["message"]
    assert _key_count(server) == before


@pytest.mark.parametrize("marks", BROWSER_MARKS)
def test_a_browsers_cross_site_post_without_a_body_is_refused(
    server: LiveServer, marks: dict[str, str]
) -> None:
    before = _clock(server)
    for path in ("/__mockstore/reset", "/__mockstore/keys"):
        response = request(server.url, "POST", path, list(marks.items()))
        assert response.status == 403, (marks, path, response.body[:200])
        assert response.json()["code"] == "cross_site_request"
    assert _clock(server) >= before  # not reset


def test_a_simple_post_cannot_reset_or_move_the_clock(server: LiveServer) -> None:
    moved = httpx.post(
        server.url + "/__mockstore/clock",
        content='{"advance_seconds": 86400}',
        headers={"Content-Type": "text/plain", "Origin": EVIL},
    )
    assert moved.status_code == 403
    refused = httpx.post(server.url + "/__mockstore/reset", headers={"Origin": EVIL})
    assert refused.status_code == 403


def test_curl_posts_without_any_header_are_served(server: LiveServer) -> None:
    """``curl -X POST http://127.0.0.1:8080/__mockstore/reset``: no Origin, no
    Sec-Fetch-Site, no Content-Type. Only a non-browser client sends that."""
    reset = request(server.url, "POST", "/__mockstore/reset", [("User-Agent", "curl/8.5.0")])
    assert reset.status == 200, reset.body[:300]
    assert reset.json()["status"] == "reset"
    # What scripts and CI jobs write, each exactly as curl sends it.
    assert httpx.post(server.url + "/__mockstore/reset").status_code == 200
    same_origin = httpx.post(
        server.url + "/__mockstore/reset", headers={"Sec-Fetch-Site": "same-origin"}
    )
    assert same_origin.status_code == 200


def test_json_from_another_origin_is_refused(server: LiveServer) -> None:
    before = _clock(server)
    response = httpx.post(
        server.url + "/__mockstore/clock",
        json={"advance_seconds": 86400},
        headers={"Origin": EVIL, "X-Mockstore-Client": "dashboard"},
    )
    assert response.status_code == 403
    assert response.json()["code"] == "cross_site_request"
    assert _clock(server) - before < 86400


def test_the_same_origin_dashboard_and_tools_are_let_through(server: LiveServer) -> None:
    origin = server.url  # http://127.0.0.1:PORT, as the page served from the mock sends it
    dashboard = {"Origin": origin, "X-Mockstore-Client": "dashboard"}
    issued = httpx.post(
        server.url + "/__mockstore/keys",
        json={"plan": "pro"},
        headers={**dashboard, "Content-Type": "application/json"},
    )
    assert issued.status_code == 201, issued.text
    reset = httpx.post(server.url + "/__mockstore/reset", headers=dashboard)
    assert reset.status_code == 200, reset.text
    # A script or test tool: JSON, no Origin.
    assert httpx.post(server.url + "/__mockstore/clock", json={"advance_seconds": 1}).is_success
    # YAML for a scenario, as curl --data-binary with a content type sends it.
    swapped = httpx.put(
        server.url + "/__mockstore/scenario",
        content="version: 1\nname: swapped\n",
        headers={"Content-Type": "application/yaml"},
    )
    assert swapped.status_code == 200, swapped.text
    # The Python client's body-less POSTs pass (it names itself in a header).
    with Control(server.url) as control:
        assert control.reset().status == "reset"
        control.load_scenario("version: 1\nname: default-again\n")


def test_a_put_without_a_json_or_yaml_type_still_works_for_curl(server: LiveServer) -> None:
    # curl --data-binary sends a form content type; a PUT is never a simple
    # request (a browser must preflight it, and gets no CORS answer), so it is safe.
    response = httpx.put(
        server.url + "/__mockstore/scenario",
        content="version: 1\nname: from-curl\n",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "path", ["/__mockstore/requests.har", "/__mockstore/keys", "/__mockstore/requests"]
)
def test_a_dns_rebinding_host_cannot_read_the_control_api(server: LiveServer, path: str) -> None:
    port = server.url.rsplit(":", 1)[1]
    response = request(server.url, "GET", path, [("Host", f"rebind.evil.example:{port}")])
    assert response.status == 403, response.body[:200]
    error = response.json()
    assert error["code"] == "host_not_allowed"
    assert "--allowed-host" in error["message"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "app.localhost"])
def test_loopback_names_are_allowed(server: LiveServer, host: str) -> None:
    port = server.url.rsplit(":", 1)[1]
    response = request(server.url, "GET", "/__mockstore/keys", [("Host", f"{host}:{port}")])
    assert response.status == 200, (host, response.body[:200])


def test_an_address_let_through_lets_no_other_name_through(server: LiveServer) -> None:
    # The guard remembers the last Host that was an IP address (parsing it is most
    # of the check): what follows it is judged afresh, an empty Host included.
    port = server.url.rsplit(":", 1)[1]
    hosts = ["127.0.0.1", f"rebind.evil.example:{port}", "127.0.0.1", "", "127.0.0.1"]
    statuses = [
        request(server.url, "GET", "/__mockstore/keys", [("Host", host)]).status for host in hosts
    ]
    assert statuses == [200, 403, 200, 403, 200]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["", "127.0.0.1", "::1", "10.0.0.7", "localhost", "evil.example"]),
            st.ip_addresses().map(str),
            st.text(max_size=12),
        ),
        max_size=12,
    )
)
def test_the_host_check_judges_each_name_as_a_fresh_guard_would(names: list[str]) -> None:
    scope = {"server": ("127.0.0.1", 8080)}
    remembering = ControlGuard()
    assert not remembering.host_allowed("", scope)  # nothing remembered yet lets anything in
    for name in names:
        assert remembering.host_allowed(name, scope) == ControlGuard().host_allowed(name, scope)


def test_names_given_with_the_option_are_allowed() -> None:
    with live_server("--allowed-host", "mockstore.ci") as server:
        port = server.url.rsplit(":", 1)[1]
        allowed = request(
            server.url, "GET", "/__mockstore/keys", [("Host", f"mockstore.ci:{port}")]
        )
        other = request(server.url, "GET", "/__mockstore/keys", [("Host", f"other.ci:{port}")])
    assert allowed.status == 200
    assert other.status == 403


@pytest.mark.parametrize(
    "path",
    [
        "/%5F_mockstore/keys",
        "/%5f%5fmockstore/keys",
        "/__mock%73tore/keys",
        "//__mockstore/keys",
        "/v1/../__mockstore/keys",
        "/./__mockstore/keys",
    ],
)
def test_only_the_literal_control_prefix_reaches_the_control_api(
    server: LiveServer, path: str
) -> None:
    response = request(server.url, "GET", path, {"Authorization": "Bearer pro-key"})
    assert response.status == 404, (path, response.status, response.body[:200])
    error = response.json()
    assert error["code"] == "not_found"
    assert "/__mockstore" in error["message"]


def _serve_output(*args: str, env: dict[str, str] | None = None) -> str:
    process = subprocess.Popen(
        [sys.executable, "-m", "mockstore", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "keys:" in line or '"keys"' in line:
                break
    finally:
        process.terminate()
        process.wait(10)
    return "".join(lines)


@pytest.mark.parametrize("command", ["serve", "record"])
def test_an_open_control_api_beyond_loopback_is_refused_before_it_starts(command: str) -> None:
    # Issue 27: main started with a warning, its whole control API open to the network.
    extra = ["--upstream", "http://127.0.0.1:9/v1"] if command == "record" else []
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", command, "--port", "0", "--host", "0.0.0.0", *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")},
    )
    assert done.returncode == 2, done.stderr
    assert "serving" not in done.stderr + done.stdout
    for remedy in ("--control-token", "--insecure-control-api", "127.0.0.1"):
        assert remedy in done.stderr


def test_the_flag_naming_the_risk_starts_it_with_a_warning() -> None:
    output = _serve_output("--host", "0.0.0.0", "--insecure-control-api")
    assert "warning" in output.lower()
    assert "--control-token" in output
    assert (
        "warning"
        in _serve_output("--host", "0.0.0.0", env={"MOCKSTORE_INSECURE_CONTROL_API": "1"}).lower()
    )


def test_no_warning_on_loopback_or_with_a_token() -> None:
    assert "warning" not in _serve_output("--host", "127.0.0.1").lower()
    assert "warning" not in _serve_output("--host", "0.0.0.0", "--control-token", "s3cret").lower()
