"""Issue 19, finding 3: one memory budget for the whole process, shares that cannot add up past it.

On main each component had a bound of its own, so they multiplied: 32
tenants, each with a journal and a store filled, took 2.79 GB; with
``isolation: per_key`` every key had its own 32 MiB store, and keys could be
issued without end. The accountant (``mockstore.memory``) is checked here by
its rules (hypothesis) and through the command line; ``test_budget_shares``
checks a real server's memory under the attacks.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.control.http import STREAMED, encode_json, json_stream
from mockstore.journal import Journal
from mockstore.memory import (
    DEFAULT_MEMORY_BUDGET,
    SHARES,
    Account,
    MemoryBudget,
    OverBudget,
    format_size,
    parse_size,
)
from mockstore.store import PetStore
from tests.attacks import ALLOWANCE, MiB
from tests.support import examples

# -- the accountant's rules --------------------------------------------------------

operations = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "release", "share", "close"]),
        st.integers(min_value=0, max_value=6),  # which account
        st.integers(min_value=0, max_value=400),  # a size
    ),
    max_size=60,
)


@settings(max_examples=examples(300), deadline=None)
@given(operations, st.integers(min_value=100, max_value=1000))
def test_nothing_reserved_ever_adds_up_past_the_whole(steps: list, total: int) -> None:
    budget = MemoryBudget(total * 16)
    accounts: list[Account] = [budget]
    held: dict[int, int] = {}  # what each open account holds, by our own count
    for action, which, size in steps:
        account = accounts[which % len(accounts)]
        if action == "reserve":
            if account.reserve(size) and not account.closed:
                held[id(account)] = held.get(id(account), 0) + size
        elif action == "release":
            size = min(size, held.get(id(account), 0))
            account.release(size)
            held[id(account)] = held.get(id(account), 0) - size
        elif action == "share":
            with contextlib.suppress(OverBudget):
                accounts.append(account.share(f"share {len(accounts)}", size * 4, size))
        elif action == "close" and account is not budget:
            account.close()
        # The invariants: the whole holds no more than its ceiling, no share more than its own.
        assert 0 <= budget.used <= budget.ceiling
        for each in accounts:
            assert each.used <= each.ceiling
            assert each.available >= 0
    # Closing every share and releasing the rest gives everything back (the
    # connections' floor and the first bytes' share aside, held from the start).
    for each in accounts[1:]:
        each.close()
    budget.release(held.get(id(budget), 0))
    assert budget.used == budget.connections.floor + budget.bodies.floor
    assert budget.connections.floor > 0 and budget.bodies.floor > 0


def test_a_floor_is_reserved_when_a_share_opens_and_refused_when_it_cannot_be() -> None:
    budget = MemoryBudget(64 * MiB)
    used = budget.used
    tenant = budget.open_share("tenant", "tenant 'a'")
    assert budget.used == used + tenant.floor
    assert tenant.floor == int(64 * MiB * SHARES["tenant"].floor)
    # Within its floor, a share needs nothing more from the whole.
    assert tenant.reserve(tenant.floor)
    assert budget.used == used + tenant.floor
    assert not tenant.reserve(tenant.ceiling)  # past its ceiling
    tenant.close()
    assert budget.used == used
    hog = budget.share("hog", budget.ceiling)
    assert hog.reserve(budget.available)
    with pytest.raises(OverBudget, match="its floor"):
        budget.open_share("tenant", "tenant 'b'")


def test_a_closed_share_counts_nothing_more() -> None:
    budget = MemoryBudget(64 * MiB)
    used = budget.used
    state = budget.share("state", 32 * MiB)
    assert state.reserve(MiB)
    state.close()
    assert budget.used == used
    # A request that began before the reset still stores into the old state: not counted.
    assert state.reserve(MiB)
    state.release(MiB)
    assert budget.used == used


def test_the_refusal_says_what_and_how_much() -> None:
    budget = MemoryBudget(64 * MiB)
    key = budget.share("key tenant 'k'", MiB)
    with pytest.raises(OverBudget) as refused:
        key.take(2 * MiB, "this pet")
    message = str(refused.value)
    assert "this pet needs 2 MiB" in message
    assert "key tenant 'k'" in message and "64 MiB" in message and "--memory-budget" in message


@pytest.mark.parametrize(
    ("text", "size"),
    [("256MiB", 256 * MiB), ("1GiB", 1024 * MiB), ("512M", 512 * MiB), ("1.5g", 1536 * MiB),
     ("300000000", 300_000_000), ("64 MiB", 64 * MiB)],
)  # fmt: skip
def test_sizes_are_read_in_binary_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "-1MiB", "12XB", "1e9"])
def test_a_size_that_is_not_one_is_refused_with_a_sentence(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_the_default_fits_a_512_mib_container() -> None:
    assert 512 * MiB >= DEFAULT_MEMORY_BUDGET + ALLOWANCE
    assert format_size(DEFAULT_MEMORY_BUDGET) == "256 MiB"


@pytest.mark.parametrize(
    ("value", "said"), [("lots", "not a size"), ("1MiB", "below the smallest budget")]
)
def test_serve_refuses_a_bad_budget_before_starting(value: str, said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "serve", "--memory-budget", value],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert said in done.stderr and "--memory-budget" in done.stderr


def test_serve_refuses_a_scenario_whose_pets_pass_the_budget() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "serve", "--port", "0", "--memory-budget", "16MiB",
         "--scenario", "large-inventory"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "memory budget" in done.stderr and "not starting" in done.stderr
    assert "Traceback" not in done.stderr


# -- what draws on it ----------------------------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=40_000), min_size=1, max_size=80),
    st.integers(min_value=64 * 1024, max_value=2 * MiB),
)
def test_a_journal_holds_no_more_than_its_share_gives_and_lets_the_oldest_go(
    bodies: list[int], share: int
) -> None:
    budget = MemoryBudget(64 * MiB)
    account = budget.share("a mock", share)
    journal = Journal(10_000, 65536, max_bytes=64 * MiB, account=account)
    for index, size in enumerate(bodies):
        journal.record(
            f"req-{index}", 0.0, 0.0, "POST", "/v1/pets", b"", ((b"host", b"x"),), b"b" * size,
            "127.0.0.1", "createPet", None, "free", 201, (), b"", 1.0, None, "response", 0.0,
        )  # fmt: skip
        assert journal.bytes <= account.used <= share
        entries = journal.select()
        assert [e.request_id for e in entries] == [
            f"req-{i}" for i in range(index + 1 - len(entries), index + 1)
        ], "the oldest go first, the rest stay in order"
        assert journal.dropped == index + 1 - len(entries)
    journal.close()
    assert account.used == 0


def test_a_store_that_cannot_reserve_a_pet_stores_nothing() -> None:
    budget = MemoryBudget(64 * MiB)
    account = budget.share("a key's store", 8 * 1024)
    store = PetStore(account=account)
    first, _ = store.create({"name": "Rex", "categoryId": 1})
    with pytest.raises(OverBudget, match="this pet needs"):
        store.create({"name": "n" * 10_000, "categoryId": 1})
    assert len(store) == 1 and store.next_id == first["id"] + 1
    assert store.get(first["id"] + 1) is None


documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=examples(300), deadline=None)
@given(documents, st.lists(documents, max_size=30), st.data())
def test_a_streamed_document_is_the_same_bytes_as_the_whole(
    around: object, items: list, data: st.DataObject
) -> None:
    # The streamed list goes in place of one value of ``around`` (or is the whole).
    def places(value: object, path: tuple = ()) -> list[tuple]:
        found = [path]
        if isinstance(value, dict):
            for key, item in value.items():
                found += places(item, (*path, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                found += places(item, (*path, index))
        return found

    path = data.draw(st.sampled_from(places(around)))

    def put(value: object, path: tuple, new: object) -> object:
        if not path:
            return new
        copy = dict(value) if isinstance(value, dict) else list(value)  # type: ignore[call-overload]
        copy[path[0]] = put(copy[path[0]], path[1:], new)
        return copy

    document = put(around, path, STREAMED)
    whole = put(around, path, [{"item": item} for item in items])
    streamed = b"".join(json_stream(document, items, lambda item: {"item": item}))  # type: ignore[arg-type]
    assert streamed == encode_json(whole)
