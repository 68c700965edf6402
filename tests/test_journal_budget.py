"""The journal is bounded in bytes as well as entries, and each entry's headers are capped.

The issue measured 80 anonymous requests with an 8 MB header taking the server
from 41 to 697 MB, because each entry kept every header whole. Requests here
stay under the 16 KiB head limit, so they are served and journaled.
"""

from __future__ import annotations

import httpx
from hypothesis import example, given
from hypothesis import strategies as st

from mockstore.journal import JOURNAL_BLOCK, Journal, cap_headers
from mockstore.memory import Account
from tests.support import LiveServer, live_server

PAD = 12 * 1024  # under the 16 KiB head limit: these requests are served and journaled


def _flood(server: LiveServer, count: int, key: str | None) -> None:
    headers = {"X-Pad": "p" * PAD}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    with server.client() as client:
        for index in range(count):
            response = client.get("/v1/pets", params={"n": index}, headers=headers)
            assert response.status_code in (200, 401, 429), response.text


def _entry_header_bytes(entry: dict, key: str | None = None) -> int:
    """The request headers' bytes as journaled: the token is shown masked (with its
    alias, longer than a short key), so it is counted as it was sent."""
    total = 0
    for name, value in entry["request"]["headers"]:
        if key is not None and name.lower() == "authorization":
            value = f"Bearer {key}"
        total += len(name) + len(value)
    return total


BUDGET = """\
version: 1
name: small-journal
keys:
  - {key: big-key, plan: {per_minute: 100000, per_day: 1000000}}
journal: {size: 10000, max_bytes: 262144, header_bytes: 1024}
"""


def test_the_journal_keeps_to_its_byte_budget_and_caps_each_entry() -> None:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": BUDGET}) as server:
        _flood(server, 120, "big-key")
        journal = httpx.get(server.url + "/__mockstore/requests", timeout=30).json()
    assert journal["max_bytes"] == 262144
    assert 0 < journal["bytes"] <= 262144
    # 120 entries of 12 KiB headers cannot fit in 256 KiB whole, and did not.
    assert journal["dropped"] > 0
    assert len(journal["entries"]) < 120
    assert journal["last_seq"] == 120
    for entry in journal["entries"]:
        assert _entry_header_bytes(entry, "big-key") <= 1024
        # Small headers are kept whole, the padding is what gets cut: the
        # credentials a replay needs are still there.
        names = [name.lower() for name, _ in entry["request"]["headers"]]
        assert "authorization" in names and "x-pad" in names


def test_anonymous_floods_are_bounded_by_the_default_budget() -> None:
    # Callers without a key are journaled too (their 401s and 429s), capped alike.
    with live_server() as server:
        _flood(server, 150, None)
        journal = httpx.get(server.url + "/__mockstore/requests", timeout=30).json()
    assert journal["max_bytes"] == 48 * 1024 * 1024  # the documented default
    assert journal["bytes"] <= journal["max_bytes"]
    for entry in journal["entries"]:
        assert _entry_header_bytes(entry) <= 8192  # journal.header_bytes default
    assert len(journal["entries"]) == 150  # under budget, nothing is dropped


HEADERS = st.lists(
    st.tuples(st.binary(min_size=1, max_size=40), st.binary(max_size=3000)), max_size=30
).map(tuple)


@given(headers=HEADERS, cap=st.integers(min_value=256, max_value=65536))
def test_cut_headers_fit_the_cap_and_keep_what_fits_whole(
    headers: tuple[tuple[bytes, bytes], ...], cap: int
) -> None:
    cut = cap_headers(headers, cap)
    assert sum(len(n) + len(v) for n, v in cut) <= max(cap, 0)
    names = sum(len(n) for n, _ in headers)
    if names < cap:
        # Every header stays, in order, each value a prefix of the one sent...
        assert [n for n, _ in cut] == [n for n, _ in headers]
        assert all(
            value.startswith(kept) for (_, kept), (_, value) in zip(cut, headers, strict=True)
        )
        # ...and only values longer than every kept one were cut.
        level = max((len(v) for _, v in cut), default=0)
        for (_, kept), (_, value) in zip(cut, headers, strict=True):
            assert kept == value or len(kept) == level


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=5000), max_size=200),
    budget=st.integers(min_value=4096, max_value=65536),
)
def test_the_journal_never_holds_more_than_its_budget(sizes: list[int], budget: int) -> None:
    journal = Journal(size=1000, body_bytes=4096, max_bytes=budget, header_bytes=1024)
    for size in sizes:
        # Entry's fields after seq, in order (journal.record takes them by position).
        journal.record(
            "req-000001",  # request_id
            0.0,  # time
            0.0,  # elapsed
            "GET",  # method
            "/v1/pets",  # path
            b"",  # query
            ((b"x-pad", b"p" * size),),  # request_headers
            b"b" * size,  # request_body
            "127.0.0.1",  # client
            "listPets",  # operation
            None,  # key
            "free",  # plan
            200,  # status
            ((b"content-type", b"application/json"),),  # response_headers
            b"r" * size,  # response_body
            0.1,  # latency_ms
            None,  # rule
            "response",  # outcome
            0.0,  # wall
        )
        # Over budget only when the newest entry alone is (it is kept, cut to size).
        assert journal.bytes <= budget or len(journal) == 1
        assert journal.dropped + len(journal) == journal.last_seq


_STEP = st.one_of(
    st.tuples(st.just("record"), st.integers(min_value=0, max_value=20_000)),
    st.tuples(st.just("resize"), st.integers(min_value=2048, max_value=400_000)),
    st.tuples(st.just("clear"), st.just(0)),
)


@given(
    steps=st.lists(_STEP, max_size=120),
    ceiling=st.integers(min_value=0, max_value=3 * JOURNAL_BLOCK) | st.none(),
    budget=st.integers(min_value=2048, max_value=400_000),
)
# A smaller byte budget from a resize, then entries (no memory budget to hide it).
@example(steps=[("resize", 2048)] + [("record", 1000)] * 5, ceiling=None, budget=400_000)
# Blocks given back by a clear, then as many entries again.
@example(
    steps=[("record", 20_000)] * 12 + [("clear", 0)] + [("record", 20_000)] * 12,
    ceiling=3 * JOURNAL_BLOCK,
    budget=400_000,
)
def test_what_the_journal_holds_is_reserved_and_within_its_budget_after_any_steps(
    steps: list[tuple[str, int]], ceiling: int | None, budget: int
) -> None:
    """The request path makes one comparison per exchange (``Journal.add``): it must
    still see every lowered byte budget and every block given back, whatever came
    before (a resize to a smaller ``max_bytes``, a clear that gives blocks back)."""
    # None: a journal drawing on no budget (its byte budget alone bounds it).
    account = Account("journal", ceiling) if ceiling is not None else None
    journal = Journal(
        size=50, body_bytes=16_384, max_bytes=budget, header_bytes=1024, account=account
    )
    for action, value in steps:
        if action == "record":
            journal.add(
                (next(journal.sequence), b"req-1", 0.0, 0.0, "GET", "/v1/pets", b"",
                 ((b"x-pad", b"p" * value),), b"b" * value, ("127.0.0.1", 1), "listPets",
                 None, "free", 200, b"content-type: application/json\r\n", b"r" * value,
                 0.1, None, "response", 0.0, 0, -1, -1.0),
                -1,
            )  # fmt: skip
        elif action == "resize":
            journal.resize(50, 16_384, max_bytes=value)
        else:
            journal.clear()
        if account is not None:  # reserved before held: never more than it was given
            assert journal.bytes <= account.used <= account.ceiling
        # Over the byte budget only when the newest entry alone is.
        assert journal.bytes <= journal.max_bytes or len(journal) == 1
