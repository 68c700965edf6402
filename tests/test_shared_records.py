"""Journal records read back from Redis are input: ``refused_until`` absent or malformed.

Every process of a mock ships the answers it journals to one Redis stream and
reads back what every other process shipped (``mockstore.shared.journal``,
``mockstore.shared.records``). A record now ends with ``refused_until`` (the
limiter's decision, which the etiquette verdicts judge waits by). A process of
the version before keeps no such field, and anyone who can write to that Redis
can write anything there. So, against a real ``redis-server`` and a real
``mockstore serve --state`` process, batches shipped as another process would:

* a record without the field (an older replica's) is read as the decision not
  known, as an entry read from a recording is: it is in the journal, the HAR and
  the report;
* a record whose field is not a finite number within 2**53 is skipped with a
  warning, and costs only itself: the rest of its batch is read, nothing is a 500.
"""

from __future__ import annotations

import math
import secrets
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.journal import Entry
from mockstore.shared import records, streams
from mockstore.shared.backend import PREFIX
from tests.redis_server import RedisServer, redis_available, required
from tests.support import PATIENT, live_server, patient

pytestmark = pytest.mark.skipif(
    not redis_available() and not required(), reason="redis-server is not installed"
)
SCENARIO = """\
version: 1
name: shared-records
clock: {start: "2026-03-01T12:00:05Z", mode: manual}
keys:
  - {key: pro-key, plan: pro}
"""
PRO = {"Authorization": "Bearer pro-key"}
# The CLI in a process whose monotonic clock starts at 0, as on a machine booted a moment
# ago (a fresh CI runner): a warning given at most once a minute is still given the first
# time (it was not, while the minute was counted from a monotonic reading of 0).
JUST_BOOTED = """\
import sys
import time

booted = time.monotonic()
reading = time.monotonic
time.monotonic = lambda: reading() - booted

from mockstore.cli.main import main

sys.exit(main(sys.argv[1:]))
"""
PATH = Entry._fields.index("path")
REFUSED_UNTIL = Entry._fields.index("refused_until")
# Values no limiter decides: not a number, not finite, out of range, another type.
MALFORMED = ["soon", None, True, math.nan, math.inf, -math.inf, 1e300, -(2.0**60), b"1", [1.0]]


def _redis(server: RedisServer) -> Any:
    import redis

    return redis.Redis.from_url(server.url)


def _a_shipped_record(client: Any) -> tuple[Any, ...]:
    """The newest record a process shipped, as it lies in the stream."""
    (_, fields), *_ = client.xrevrange(PREFIX + streams.STREAM, count=1)
    batch = msgpack.unpackb(fields[b"m"], use_list=False, raw=False)
    return batch[-1]


def _ship(client: Any, batch: list[tuple[Any, ...]]) -> None:
    """Ship ``batch`` as another process of the mock would (its own origin), then leave."""
    origin = secrets.token_hex(8)
    keys = [PREFIX + k for k in (streams.SEQ, streams.STREAM, streams.SYNC, streams.LIVE)]
    args = [origin, 0, 3600, 10_000, 10_000, "", len(batch), records.encode(batch)]
    client.eval(streams.SHIP, len(keys), *keys, *args)
    client.zrem(PREFIX + streams.LIVE, origin)  # gone: no read waits for it


def _with(record: tuple[Any, ...], path: str, *rest: Any) -> tuple[Any, ...]:
    """``record`` under another path, its fields after ``arrived_after`` replaced by ``rest``."""
    head = (*record[:PATH], path, *record[PATH + 1 : REFUSED_UNTIL])
    return (*head, *rest)


def test_records_without_refused_until_are_read_and_malformed_ones_skipped(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    scenario = tmp_path / "records.yaml"
    scenario.write_text(SCENARIO)
    client = _redis(redis_server)
    launcher = [sys.executable, "-c", JUST_BOOTED]
    with live_server(
        "--scenario", str(scenario), "--state", redis_server.url, launcher=launcher
    ) as server:
        assert patient.get(server.url + "/v1/pets", headers=PRO).status_code == 200
        # What the process shipped, once it has (a read makes it ship: read your writes).
        patient.get(server.url + "/__mockstore/requests")
        record = _a_shipped_record(client)
        assert len(record) == len(Entry._fields) and record[REFUSED_UNTIL] == 0.0
        older = _with(record, "/v1/pets/older")  # an older version's record: no field
        bad = [_with(record, f"/v1/pets/bad-{i}", value) for i, value in enumerate(MALFORMED)]
        newer = _with(record, "/v1/pets/newer", 0.0)
        _ship(client, [*bad[:5], older, *bad[5:], newer])

        entries = patient.get(server.url + "/__mockstore/requests").json()["entries"]
        paths = [e["request"]["path"] for e in entries]
        assert paths == ["/v1/pets", "/v1/pets/older", "/v1/pets/newer"], paths
        har = patient.get(server.url + "/__mockstore/requests.har")
        assert har.status_code == 200
        assert len(har.json()["log"]["entries"]) == 3
        report = patient.get(server.url + "/__mockstore/report")
        assert report.status_code == 200, report.text
        assert report.json()["summary"]["requests"] == 3
        # Its whole log, once it has stopped: no wait for a line that may be late.
        assert server.process is not None
        server.process.terminate()
        server.process.wait(PATIENT)
        server.drained(PATIENT)
        log = server.log()
    assert "journal entries read back were not valid: skipped" in log, log[-3000:]
    assert "Traceback" not in log


def test_one_kind_of_warning_does_not_silence_another(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    # Warnings about what is read back from Redis are given at most once a minute each
    # kind: a bad clear mark warned about must not hide, for a minute, that a batch's
    # entries were skipped (one shared slot made the second line never appear).
    scenario = tmp_path / "records.yaml"
    scenario.write_text(SCENARIO)
    client = _redis(redis_server)
    with live_server("--scenario", str(scenario), "--state", redis_server.url) as server:
        assert patient.get(server.url + "/v1/pets", headers=PRO).status_code == 200
        patient.get(server.url + "/__mockstore/requests")
        record = _a_shipped_record(client)
        client.zadd(PREFIX + streams.CLEARED, {"seq": 10**15})  # past every number handed out
        assert patient.get(server.url + "/__mockstore/requests").status_code == 200
        _ship(client, [_with(record, "/v1/pets/bad", "not a number")])
        entries = patient.get(server.url + "/__mockstore/requests").json()["entries"]
        assert [e["request"]["path"] for e in entries] == ["/v1/pets"]
        assert server.process is not None
        server.process.terminate()
        server.process.wait(PATIENT)
        server.drained(PATIENT)
        log = server.log()
    assert "no clear set: ignored" in log, log[-3000:]
    assert "journal entries read back were not valid: skipped" in log, log[-3000:]
    assert "Traceback" not in log


@given(
    value=st.none()
    | st.booleans()
    | st.floats()
    | st.integers(-(2**63), 2**64 - 1)  # what MessagePack holds
    | st.text(max_size=8)
)
def test_any_refused_until_read_back_is_a_number_within_range_or_the_record_is_skipped(
    value: Any,
) -> None:
    entry = Entry(
        1, "r", 1.0, 0.0, "GET", "/v1/pets", b"", (), b"", ("127.0.0.1", 1), "listPets",
        "k", "free", 200, b"", b"[]", 1.0, None, "response", 2.0, 1, -1, 0.0,
    )  # fmt: skip
    assert records.decode(records.encode([tuple(entry)])) == [tuple(entry)]
    (row,) = records.decode(records.encode([(*entry[:REFUSED_UNTIL], value)])) or [None]
    number = value.__class__ in (int, float) and math.isfinite(value)
    if number and abs(value) <= records.MAX_NUMBER:
        assert row == (*entry[:REFUSED_UNTIL], value)
    else:
        assert row is None
    # Without the field (a record of the version before): the decision not known.
    (older,) = records.decode(records.encode([entry[:REFUSED_UNTIL]])) or [None]
    assert older == (*entry[:REFUSED_UNTIL], -1.0)
