"""The rules of a listing written twice, in Python and in the request script's Lua, agree.

A created pet's member ends with its id, which the script writes (``ordering.LUA_ID_PART``);
an offset into a listing where the scenario's and the created pets interleave is found by
the same binary search in both (``pages.split`` and ``pages.LUA_SPLIT``). Both are driven
here against a real redis-server, on the same inputs; and a server whose state is in
Redis pages a listing past the script's first search window exactly as one in memory.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

import httpx
import pytest
import redis
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockstore import MockServer
from mockstore.ordering import LUA_ID_PART, id_of, id_part
from mockstore.pages import LUA_SPLIT, split
from mockstore.shared.store import FIRST_GUESS
from tests.redis_server import RedisServer, redis_available, required
from tests.support import examples

_MEMBER = LUA_ID_PART + "return member_of(ARGV[1], ARGV[2])"
_ID = LUA_ID_PART + "return id_of(ARGV[1])"
_SPLIT = (
    LUA_SPLIT
    + """
local window = {}
for i = 5, #ARGV do window[#window + 1] = ARGV[i] end
return split(KEYS[1], window, tonumber(ARGV[1]), tonumber(ARGV[1]), tonumber(ARGV[2]),
  tonumber(ARGV[3]), ARGV[4] == '1')
"""
)
_SETTINGS = settings(
    max_examples=examples(80),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_the_id_part_is_the_same_in_lua(redis_server: RedisServer) -> None:
    client = redis.Redis(port=redis_server.port)
    for pet_id in (1, 7, 10, 999_999, 2**63 - 1):
        for prefix in (b"", b"\x01", b"rex\x00\x00"):
            assert client.eval(_MEMBER, 0, prefix, str(pet_id)) == prefix + id_part(pet_id)
            assert int(client.eval(_ID, 0, prefix + id_part(pet_id))) == pet_id
            assert id_of(prefix + id_part(pet_id)) == pet_id
    assert id_of(id_part(-5)) == -5 and id_part(-5) < id_part(0) < id_part(3) < id_part(20)


@_SETTINGS
@given(
    inventory=st.lists(st.binary(min_size=1, max_size=3), unique=True, max_size=12),
    created=st.lists(st.binary(min_size=1, max_size=3), unique=True, max_size=12),
    offset=st.integers(0, 26),
    descending=st.booleans(),
)
def test_the_offset_search_is_the_same_in_lua(
    inventory: list[bytes], created: list[bytes], offset: int, descending: bool
) -> None:
    if not redis_available() and not required():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    inventory = sorted(set(inventory) - set(created))
    created = sorted(created)
    with _SERVER.lock:
        client = _SERVER.client()
        client.delete("members")
        if created:
            client.zadd("members", dict.fromkeys(created, 0))
        if descending:
            before = split(
                inventory, offset, True, lambda m: len(created) - bisect_right(created, m)
            )
        else:
            before = split(inventory, offset, False, lambda m: bisect_left(created, m))
        size = len(inventory)
        high = min(offset, size)
        window = [inventory[size - 1 - a] if descending else inventory[a] for a in range(high)]
        found = client.eval(
            _SPLIT, 1, "members", 0, high, offset, "1" if descending else "0", *window
        )
    assert found == before
    # And it is the place: that many inventory members come before the offset.
    merged = sorted(inventory + created, reverse=descending)
    assert sum(1 for m in merged[:offset] if m in set(inventory)) == before


class _Shared:
    """One redis-server for the hypothesis examples above (a fixture per example is slow)."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self._server: RedisServer | None = None

    def client(self) -> Any:
        if self._server is None:
            import atexit

            self._server = RedisServer().start()
            atexit.register(self._server.close)
        return redis.Redis(port=self._server.port)


_SERVER = _Shared()


# The classic limiter's request script, and the general one's (ratelimit:), whose
# arguments and keys lie elsewhere: a page asked again, wider, counts once in both.
_LIMITERS = {
    "classic": {},
    "sliding-log": {"ratelimit": {"minute": {"algorithm": "sliding_log"}}},
}


@pytest.mark.parametrize("limiter", sorted(_LIMITERS))
def test_a_page_past_the_first_search_window_is_exact(
    redis_server: RedisServer, limiter: str
) -> None:
    pets = [{"id": i, "name": f"pet{i:03d}", "categoryId": 1} for i in range(1, 41)]
    text = yaml.safe_dump(
        {
            "version": 1,
            # The scenario's clock stands still: every request in the one minute.
            "clock": {"start": "2026-03-01T12:00:00Z", "mode": "manual"},
            "keys": [{"key": "k", "plan": {"per_minute": 10_000}}],
            "pets": pets,
            "collections": {"pagination": {"style": "offset"}, "order": {"by": "name"}},
            **_LIMITERS[limiter],
        }
    )
    remaining: list[str] = []
    answers: list[list[list[str]]] = []
    for state in (None, f"redis://127.0.0.1:{redis_server.port}/1"):
        with MockServer(text, state=state) as server:
            auth = {"Authorization": "Bearer k"}
            with httpx.Client(base_url=server.url, headers=auth, timeout=10) as client:
                # More created pets than the script's first window is sized for, interleaved.
                for i in range(FIRST_GUESS + 20):
                    name = f"pet{i % 40:03d}~{i}"
                    assert client.post("/pets", json={"name": name, "categoryId": 2}).is_success
                pages = []
                for offset in (0, 3, 37, 70, 100, 123, 124, 200):
                    page = client.get(f"/pets?limit=7&offset={offset}")
                    assert page.status_code == 200, page.text
                    pages.append([pet["name"] for pet in page.json()])
                remaining.append(page.headers["x-ratelimit-remaining"])
        answers.append(pages)
    assert answers[0] == answers[1]
    # Each request counted once, the pages asked again included.
    assert remaining == [str(10_000 - (FIRST_GUESS + 20 + 8))] * 2
    every = sorted([pet["name"] for pet in pets] + [f"pet{i % 40:03d}~{i}" for i in range(84)])
    offsets = (0, 3, 37, 70, 100, 123, 124, 200)
    assert answers[0] == [every[offset : offset + 7] for offset in offsets]
