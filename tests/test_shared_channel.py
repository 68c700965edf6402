"""The request script's own line to Redis (``mockstore.shared.channel``), against a real Redis.

Through a real ``mockstore serve --state`` process wherever a user can see the
behaviour: many requests at once, the scripts flushed and Redis restarted mid-run,
a Redis that refuses a write, one that wants a password (and a user), the
database the URL names. The channel alone where only a stand-in can misbehave on
cue (a connection lost with calls waiting, a Redis that stops answering), and to
compare its replies with redis-py's for any arguments.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mockstore.shared.channel import NAME, ReplyError, ScriptChannel, channel_for
from tests.redis_server import RedisServer
from tests.support import examples, live_server

SCENARIO = """\
version: 1
name: shared-channel
clock: {start: "2026-03-01T12:00:05Z", mode: manual}
keys:
  - {key: tight-key, plan: {per_minute: 20, per_day: 1000}}
  - {key: pro-key, plan: pro}
ban: {after_rejections: 5, within_seconds: 60, duration_seconds: 300}
"""
TIGHT = {"Authorization": "Bearer tight-key"}
PRO = {"Authorization": "Bearer pro-key"}


@pytest.fixture
def scenario_file(tmp_path: Path) -> str:
    path = tmp_path / "channel.yaml"
    path.write_text(SCENARIO)
    return str(path)


def _at_once(count: int, send: Any) -> list[httpx.Response]:
    """``count`` calls of ``send(index)`` from 24 threads at once."""
    with ThreadPoolExecutor(max_workers=24) as pool:
        return list(pool.map(send, range(count)))


def _client() -> httpx.Client:
    """One client for every thread (making one per request costs more than the request)."""
    return httpx.Client(timeout=30, limits=httpx.Limits(max_connections=24))


def _channel_clients(client: redis.Redis) -> list[dict[str, str]]:
    """The channel's connections as ``CLIENT LIST`` shows them."""
    return [c for c in client.client_list() if c.get("name") == NAME]


def test_many_requests_at_once_count_exactly_on_one_named_connection(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as server, _client() as http:

        def listing(_: int) -> httpx.Response:
            return http.get(server.url + "/v1/pets", headers=TIGHT)

        def create(index: int) -> httpx.Response:
            pet = {"name": f"pet-{index}", "categoryId": 1}
            return http.post(server.url + "/v1/pets", json=pet, headers=PRO)

        statuses = Counter(r.status_code for r in _at_once(60, listing))
        assert statuses == Counter({200: 20, 429: 40})  # its plan: 20 a minute
        created = _at_once(40, create)
        assert {r.status_code for r in created} == {201}
        ids = [r.json()["id"] for r in created]
        assert len(set(ids)) == 40
        # Every one of them is stored, whole, under the id it was answered with.
        for answer in created[:10]:
            pet = answer.json()
            got = httpx.get(f"{server.url}/v1/pets/{pet['id']}", headers=PRO)
            assert got.json() == pet
        # All of it rode one pipelined connection, named for what it carries.
        with redis.Redis.from_url(redis_server.url) as client:
            lines = _channel_clients(client)
        assert len(lines) == 1
        assert lines[0]["cmd"] == "evalsha"


def test_scripts_flushed_then_redis_restarted_mid_run(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as server, _client() as http:

        def listing(_: int) -> httpx.Response:
            return http.get(server.url + "/v1/pets", headers=PRO)

        assert {r.status_code for r in _at_once(40, listing)} == {200}
        with redis.Redis.from_url(redis_server.url) as client:
            (before,) = _channel_clients(client)
            # Redis forgets the scripts: the next requests load it again, on the same line.
            client.script_flush()
            assert {r.status_code for r in _at_once(40, listing)} == {200}
            (after,) = _channel_clients(client)
        assert after["id"] == before["id"]
        redis_server.stop()
        # Every request waiting when Redis went, and every one after, is told so.
        lost = _at_once(40, listing)
        assert {r.status_code for r in lost} == {503}
        assert {r.json()["code"] for r in lost} == {"state_unavailable"}
        redis_server.start()
        back = _poll_until_served(listing)
        assert back.status_code == 200
        assert {r.status_code for r in _at_once(40, listing)} == {200}


def _poll_until_served(send: Any, seconds: float = 30.0) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while True:
        answer = send(0)
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def test_a_redis_refusing_the_script_is_503_until_it_takes_it_again(
    redis_server: RedisServer, scenario_file: str
) -> None:
    with live_server("--scenario", scenario_file, "--state", redis_server.url) as server:
        first = httpx.get(server.url + "/v1/pets", headers=PRO)
        assert first.status_code == 200
        with redis.Redis.from_url(redis_server.url) as client:
            # No room left: Redis refuses a script that writes (an error reply, not a
            # lost connection); that is Redis's own error, not a bad value: nothing is
            # dropped (the request counter went once, the ids ran on from 1).
            client.config_set("maxmemory", "1")
            try:
                refused = httpx.get(server.url + "/v1/pets", headers=PRO)
            finally:
                client.config_set("maxmemory", "0")
        assert refused.status_code == 503
        assert refused.json()["code"] == "state_unavailable"
        assert "OOM" in refused.json()["message"]
        after = httpx.get(server.url + "/v1/pets", headers=PRO)
        assert after.status_code == 200
        assert first.headers["x-request-id"] == "req-000001"
        assert after.headers["x-request-id"] == "req-000002"


@pytest.mark.parametrize("user", [None, "mock"], ids=["password", "user-and-password"])
def test_a_redis_that_wants_a_password(
    redis_server: RedisServer, scenario_file: str, user: str | None
) -> None:
    admin = redis.Redis(host="127.0.0.1", port=redis_server.port)
    if user is None:
        admin.config_set("requirepass", "s3cret pass")
        url = f"redis://:s3cret%20pass@127.0.0.1:{redis_server.port}/0"
    else:
        admin.acl_setuser(user, enabled=True, passwords=["+pw:2"], keys="*", commands=["+@all"])
        admin.acl_setuser("default", enabled=False)
        url = f"redis://{user}:pw%3A2@127.0.0.1:{redis_server.port}/0"
    admin.close()
    with live_server("--scenario", scenario_file, "--state", url) as server:
        answers = [httpx.get(server.url + "/v1/pets", headers=PRO) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert answers[-1].headers["x-ratelimit-remaining"] == "297"
        with redis.Redis.from_url(url) as client:
            (line,) = _channel_clients(client)
        assert line["user"] == (user or "default")


def test_the_database_the_url_names_is_the_one_used(
    redis_server: RedisServer, scenario_file: str
) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}/7"
    with live_server("--scenario", scenario_file, "--state", url) as server:
        pet = {"name": "Seven", "categoryId": 1}
        created = httpx.post(server.url + "/v1/pets", json=pet, headers=PRO)
        assert created.status_code == 201
        assert httpx.get(server.url + "/v1/pets", headers=PRO).status_code == 200
        with redis.Redis.from_url(url) as seven:
            (line,) = _channel_clients(seven)
            assert line["db"] == "7"
            buckets = list(seven.scan_iter("mockstore:*:b:*"))
            pets = list(seven.scan_iter("mockstore:*:s:*:pets"))
        assert len(buckets) == 1 and len(pets) == 1
        with redis.Redis.from_url(redis_server.url) as zero:
            assert zero.dbsize() == 0


# -- the channel alone ---------------------------------------------------------

ECHO = """
local out = {}
for i, value in ipairs(ARGV) do out[i] = value end
return {KEYS[1], out, #ARGV, tonumber(ARGV[1]) or false, {{KEYS[1]}, {}}}
"""
ARGUMENT = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)


@pytest.fixture
def loop() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(key=st.text(min_size=1, max_size=20), args=st.lists(ARGUMENT, max_size=8))
@example(key="k", args=[1, 1.0, "1", b"1", 0, 0.0, -0.0, 1])  # equal as keys, not as text
def test_replies_are_redis_pys_for_any_arguments(
    redis_server: RedisServer, loop: asyncio.Runner, key: str, args: list[Any]
) -> None:
    async def both() -> tuple[Any, Any]:
        channel = channel_for(redis_server.url, ECHO)
        assert channel is not None
        client = redis.asyncio.Redis.from_url(redis_server.url)
        try:
            ours = await channel.call([key], args)
            theirs = await client.register_script(ECHO)(keys=[key], args=args)
        finally:
            channel.close()
            await client.aclose()
        return ours, theirs

    ours, theirs = loop.run(both())
    assert ours == theirs


def test_a_url_only_redis_py_can_honour_is_left_to_it() -> None:
    assert channel_for("rediss://127.0.0.1:6379/0", ECHO) is None
    assert channel_for("redis://127.0.0.1:6379/0?socket_keepalive=true", ECHO) is None
    unix = channel_for("unix:///run/redis.sock?db=3", ECHO)
    assert unix is not None and unix.path == "/run/redis.sock"


class StandIn:
    """A server that says OK to the channel's greeting, then does what the test says."""

    def __init__(self, answer: bool, close_after: int | None) -> None:
        self.answer = answer  # answer each EVALSHA (with an integer), or stay silent
        self.close_after = close_after  # EVALSHAs after which the connection is cut
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        received = b""
        greeted = False
        answered = 0
        while chunk := await reader.read(65536):
            received += chunk
            if not greeted:
                # The greeting comes alone: the channel waits for its answer first.
                greeted = NAME.encode() + b"\r\n" in received
                if greeted:
                    writer.write(b"+OK\r\n")
                    received = b""
                continue
            calls = received.count(b"EVALSHA")
            if self.answer:
                writer.write(b":1\r\n" * (calls - answered))
                answered = calls
            if self.close_after is not None and calls >= self.close_after:
                writer.close()
                return

    def close(self) -> None:
        assert self.server is not None
        self.server.close()


def test_a_connection_lost_with_calls_waiting_fails_them_all_and_the_next_connects_again(
    loop: asyncio.Runner,
) -> None:
    async def scenario() -> tuple[list[Any], int]:
        stand_in = StandIn(answer=False, close_after=5)
        port = await stand_in.start()
        channel = ScriptChannel(ECHO, host="127.0.0.1", port=port)
        outcomes = await asyncio.gather(
            *(channel.call(["k"], [i]) for i in range(5)), return_exceptions=True
        )
        # The next calls connect again (and the stand-in cuts them too).
        again = await asyncio.gather(
            *(channel.call(["k"], [i]) for i in range(5)), return_exceptions=True
        )
        channel.close()
        stand_in.close()
        return [*outcomes, *again], stand_in.connections

    outcomes, connections = loop.run(scenario())
    assert [type(o) for o in outcomes] == [ConnectionError] * 10
    assert connections == 2


def test_a_redis_that_stops_answering_fails_the_waiting_calls_after_the_reply_timeout(
    loop: asyncio.Runner,
) -> None:
    async def scenario() -> list[Any]:
        stand_in = StandIn(answer=False, close_after=None)
        port = await stand_in.start()
        channel = ScriptChannel(ECHO, host="127.0.0.1", port=port, reply_timeout=0.2)
        try:
            return await asyncio.gather(
                *(channel.call(["k"], [i]) for i in range(5)), return_exceptions=True
            )
        finally:
            channel.close()
            stand_in.close()

    outcomes = loop.run(scenario())
    assert [type(o) for o in outcomes] == [TimeoutError] * 5


def test_a_wrong_password_is_a_refused_connection(redis_server: RedisServer) -> None:
    with redis.Redis(host="127.0.0.1", port=redis_server.port) as admin:
        admin.config_set("requirepass", "right")

    async def call() -> Any:
        channel = channel_for(f"redis://:wrong@127.0.0.1:{redis_server.port}/0", ECHO)
        assert channel is not None
        try:
            return await channel.call(["k"], [])
        finally:
            channel.close()

    with pytest.raises(ConnectionError, match="refused the connection"):
        asyncio.run(call())


def test_an_error_reply_is_a_reply_error(redis_server: RedisServer) -> None:
    async def call() -> Any:
        channel = channel_for(redis_server.url, "return redis.error_reply('no such thing')")
        assert channel is not None
        try:
            return await channel.call([], [])
        finally:
            channel.close()

    with pytest.raises(ReplyError, match="no such thing"):
        asyncio.run(call())
