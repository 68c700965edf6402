"""Nothing read back from Redis is trusted: any value in any key the mock reads, for two
processes, gives no 500, no crash, no traceback, and never a stuck state.

Hypothesis writes random bytes or random JSON, as any Redis type, into a key the mock
reads (the configuration and its generation, a bucket, the refusals, the request and
fault counters, the store, the run counter, the journal's streams and marks, the tenant
registry), then drives both processes through the API and the control API. Each answer
is a status the API documents, never 500; both processes stay up and log no traceback;
and once the key is deleted again both answer 200 (nothing stuck). ``/health`` answers
within the documented 5 s while the test's own Redis sleeps (``DEBUG SLEEP``).
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockstore.shared.deadline import CONTROL_SECONDS
from tests.redis_server import RedisServer, redis_available, required
from tests.support import TOOL, examples, live_server

pytestmark = pytest.mark.skipif(
    not redis_available() and not required(), reason="redis-server is not installed"
)
PRO = {"Authorization": "Bearer pro-key"}

# Keys after ``mockstore:``; ``{e}`` is the epoch in service.
KEYS = [
    "gen", "config", "runs", "{e}:b:key:pro-key", "{e}:r:key:pro-key", "{e}:n",
    "{e}:s:0::next", "{e}:s:0::bytes", "{e}:s:0::pets", "{e}:s:0::ids", "journal",
    "journal:seq", "journal:sync", "journal:live", "journals:cleared", "tenants",
    "tenants:serial", "tenants:auto",
]  # fmt: skip
JSONS = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
VALUES = st.binary(max_size=64) | JSONS.map(lambda value: json.dumps(value).encode())
CALLS = [
    ("GET", "/v1/pets?limit=3", None),
    ("POST", "/v1/pets", {"name": "Rex", "categoryId": 1}),
    ("GET", "/v1/pets/21", None),
    ("GET", "/__mockstore/health", None),
    ("GET", "/__mockstore/requests", None),
    ("POST", "/__mockstore/verify", {"operation": "listPets", "at_least": 0}),
    ("GET", "/__mockstore/keys", None),
    ("GET", "/__mockstore/tenants", None),
    ("GET", "/__mockstore/report", None),
    ("POST", "/__mockstore/reset", None),
]


@pytest.fixture(scope="module")
def redis_once():  # type: ignore[no-untyped-def]
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def two(redis_once: RedisServer):  # type: ignore[no-untyped-def]
    with live_server("--state", redis_once.url) as a, live_server("--state", redis_once.url) as b:
        yield a, b


def _write(redis: RedisServer, key: str, kind: str, value: bytes) -> None:
    text = value.decode("latin-1")
    redis.command("DEL", key)
    if kind == "string":
        redis.command("SET", key, text)
    elif kind == "hash":
        redis.command("HSET", key, "epoch", text, "seq", text, "ms", text, "mu", text)
    elif kind == "list":
        redis.command("RPUSH", key, text, text)
    elif kind == "zset":
        redis.command("ZADD", key, "1", text)
        redis.command("ZADD", key, "inf", "seq")
    else:
        redis.command("XADD", key, "*", "o", text, "m", text, "k", text)


def _epoch(redis: RedisServer) -> str:
    reply = redis.command("HGET", "mockstore:config", "epoch").split(b"\r\n")
    return reply[1].decode("latin-1") if len(reply) > 2 else "1"


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(key=st.sampled_from(KEYS), kind=st.sampled_from(["string", "hash", "list", "zset",
       "stream"]), value=VALUES)  # fmt: skip
def test_any_value_in_any_key_is_never_a_500_a_crash_or_a_stuck_state(
    two, redis_once: RedisServer, key: str, kind: str, value: bytes
) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    name = "mockstore:" + key.format(e=_epoch(redis_once))
    _write(redis_once, name, kind, value)
    for server in (a, b):
        with httpx.Client(base_url=server.url, timeout=30) as client:
            for method, path, body in CALLS:
                headers = PRO if path.startswith("/v1") else TOOL
                answer = client.request(method, path, json=body, headers=headers)
                assert answer.status_code != 500, (name, kind, value, path, answer.text)
                assert answer.status_code < 500 or answer.json()["code"] == "state_unavailable"
    redis_once.command("DEL", name)
    for server in (a, b):
        assert server.process is not None and server.process.poll() is None
        deadline = time.monotonic() + 30
        while True:  # nothing stuck: the next requests are answered again
            answer = httpx.get(server.url + "/v1/pets?limit=1", headers=PRO, timeout=30)
            if answer.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert answer.status_code == 200, (name, kind, value, answer.text)
        assert "Traceback" not in server.log(), server.log()[-3000:]


def test_health_and_control_calls_answer_within_5_s_while_redis_sleeps() -> None:
    # The promise is kept by one deadline for a whole control call, under the 5 s the docs
    # state; the calls below show each is answered by it, not by Redis waking up. (No wall
    # time is asserted: on a loaded machine 4 s of waiting can take longer to be answered.)
    assert CONTROL_SECONDS < 5.0
    with (
        RedisServer(debug=True) as redis_server,
        live_server("--state", redis_server.url) as server,
    ):
        sleeper = threading.Thread(target=redis_server.command, args=("DEBUG", "SLEEP", "120"))
        # Redis sleeps from some instant after this one until 120 s after it.
        wakes = time.monotonic() + 120
        sleeper.start()
        try:
            # Until Redis is seen asleep (the command may take a moment to reach it).
            seen_asleep = False
            until = time.monotonic() + 60
            while not seen_asleep and time.monotonic() < until:
                answer = httpx.get(server.url + "/__mockstore/health", timeout=150)
                seen_asleep = answer.status_code == 503
            assert seen_asleep
            # The journal is still read as this process last had it (200); any other
            # a call that needs the state says the state cannot be reached (503), and
            # every answer comes while Redis still sleeps: none waited for it.
            for path, status in (
                ("/__mockstore/health", 503),
                ("/__mockstore/requests", 200),
                ("/__mockstore/keys", 503),
                ("/__mockstore/reset", 503),
            ):
                method = "POST" if path.endswith("reset") else "GET"
                answer = httpx.request(method, server.url + path, headers=TOOL, timeout=150)
                assert time.monotonic() < wakes, (path, "answered only once Redis woke")
                assert answer.status_code == status, (path, answer.text)
                if status == 503:
                    body = answer.json()  # /health says it in its status, the rest as an Error
                    said = body.get("status") if path.endswith("health") else body.get("code")
                    assert said == "state_unavailable", answer.text
                if path.endswith(("keys", "reset")):  # given up by the deadline, not a socket's
                    assert f"did not answer within {CONTROL_SECONDS:g} s" in body["message"], body
        finally:
            sleeper.join(10)
            # Redis asleep under DEBUG SLEEP heeds no SIGTERM until it wakes: RedisServer's
            # stop would wait 10 s for nothing before killing it, so kill it now.
            assert redis_server.process is not None
            redis_server.process.kill()
            redis_server.process.wait(10)
