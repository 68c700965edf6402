"""Endpoints over the journal: the recorded requests, HAR, verification, the report.

They only translate HTTP to the pure modules of ``mockstore.reports`` and back.
The journal is read on the event loop (a snapshot, so the server can keep
appending); verification, the HAR and the report (with its encoding) run in
a worker thread: on a full 10,000-entry journal they take a noticeable
fraction of a second, and the API must keep answering meanwhile.

The HAR and the list of requests are written a batch of entries at a time
(``json_stream``): built whole, a full journal's HAR held three times the
journal. A report is built whole, so what it needs (about the size of the
entries it covers) is reserved from the memory budget first: 507 when the
budget has no room.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mockstore.control.http import (
    JSON,
    STREAMED,
    PiecewiseResponse,
    encode_json,
    error_response,
    in_worker,
    int_param,
    json_object,
    json_response,
    json_stream,
    yes_no,
)
from mockstore.journal import Entry
from mockstore.memory import OverBudget, budget_of
from mockstore.reports.har import HarMeta, har_entry, har_shell
from mockstore.reports.model import ReportContext
from mockstore.reports.report import build_report
from mockstore.reports.verify import COUNTS, FIELDS, Expectation, InvalidExpectation, verify
from mockstore.scenario.model import default_ban_policy
from mockstore.state import Runtime
from mockstore.version import __version__


class JournalEndpoints:
    """Bound to one ``Runtime``, whose journal outlives resets and scenario swaps."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def requests(self, request: Request) -> Response:
        since = int_param(request, "since")
        status = int_param(request, "status")
        journal = self.runtime.journal
        entries = journal.select(
            operation=request.query_params.get("operation") or None,
            key=request.query_params.get("key") or None,
            status=status,
            since=since,
        )
        document = {
            "entries": STREAMED,
            "dropped": journal.dropped,
            "last_seq": journal.last_seq,
            "size": journal.size,
            "enabled": journal.enabled,
            "bytes": journal.bytes,
            "max_bytes": journal.max_bytes,
        }
        return StreamingResponse(
            in_worker(json_stream(document, entries, Entry.to_dict)), media_type=JSON
        )

    async def clear(self, request: Request) -> Response:
        self.runtime.journal.clear()
        return Response(status_code=204)

    async def har(self, request: Request) -> Response:
        since = int_param(request, "since")
        entries = self.runtime.journal.select(since=since)
        state = self.runtime.state
        scenario = state.scenario
        listed = {k.key for k in scenario.keys}
        issued = tuple(
            {
                "key": key.key,
                "plan": key.plan,
                "per_minute": state.plans[key.plan].per_minute,
                "per_day": state.plans[key.plan].day,
                "tenant": key.tenant,
            }
            for key in state.keys
            if key.key not in listed
        )
        meta = HarMeta(
            creator_version=__version__,
            scenario=scenario.name,
            seed=scenario.seed,
            base_path=scenario.base_path,
            clock_mode=state.clock.mode,
            issued_keys=issued,
            dropped=self.runtime.journal.dropped,
            mask=yes_no(request, "mask", default=True),
            scenario_source=scenario.source,
            scenario_file=scenario.file,
        )
        shell = har_shell(entries, meta)
        shell["log"]["entries"] = STREAMED
        return StreamingResponse(
            in_worker(json_stream(shell, entries, lambda entry: har_entry(entry, meta.mask))),
            media_type=JSON,
            headers={"content-disposition": 'inline; filename="mockstore.har"'},
        )

    async def verify(self, request: Request) -> Response:
        body = await json_object(request)
        known = {*FIELDS, *COUNTS, "since"}
        unknown = sorted(set(body) - known)
        if unknown:
            return error_response(
                "invalid_request",
                f"unknown field(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})",
                400,
            )
        since = body.pop("since", None)
        if since is not None and (isinstance(since, bool) or not isinstance(since, int)):
            return error_response(
                "invalid_request", f"since must be an integer, got {since!r}", 400
            )
        try:
            expectation = Expectation(**body)
        except InvalidExpectation as exc:
            return error_response("invalid_request", str(exc), 400)
        entries = self.runtime.journal.select(since=since)
        base = self.runtime.scenario.base_path
        outcome = await run_in_threadpool(verify, entries, expectation, base, since)
        closest = []
        for entry, reasons in outcome.closest:
            shown = entry.to_dict()
            shown["unmet"] = reasons
            closest.append(shown)
        return json_response(
            {
                "ok": outcome.ok,
                "count": outcome.count,
                "message": outcome.message,
                "matched": [e.seq for e in outcome.matched],
                "closest": closest,
            }
        )

    async def report(self, request: Request) -> Response:
        since = int_param(request, "since")
        include = {part.strip() for part in request.query_params.get("include", "").split(",")}
        entries = self.runtime.journal.select(since=since)
        context = report_context(self.runtime, since)
        return await charged(
            self.runtime,
            entries,
            "this report",
            lambda: encode_json(build_report(entries, context, timeline="timeline" in include)),
            lambda body: PiecewiseResponse(body, media_type=JSON),
        )


def report_context(runtime: Runtime, since: int | None) -> ReportContext:
    """What a report needs to know of the running scenario and the journal."""
    scenario = runtime.scenario
    journal = runtime.journal
    ban = scenario.ban
    return ReportContext(
        scenario=scenario.name,
        base_path=scenario.base_path,
        ban_after_rejections=ban.after_rejections if ban else None,
        ban_within_seconds=(ban or default_ban_policy()).within_seconds,
        journal_size=journal.size,
        journal_enabled=journal.enabled,
        dropped=journal.dropped,
        since=since,
    )


Built = TypeVar("Built")


async def charged(
    runtime: Runtime,
    entries: Sequence[Entry],
    what: str,
    build: Callable[[], Built],
    answer: Callable[[Built], Response],
) -> Response:
    """``answer(build())``, ``build`` run in a worker thread with its memory reserved first.

    What a report of ``entries`` needs at its peak is about what they hold in
    the journal (measured: 0.6 to 1 times), so what the journal holds is
    reserved from the budget's share for reports while it is built; 507 if it
    cannot be.
    """
    budget = budget_of(runtime.account)
    if budget is None or not entries:
        return answer(await run_in_threadpool(build))
    size = runtime.journal.bytes
    if not budget.reports.reserve(size):
        refusal = OverBudget(what, size, budget.reports)
        return error_response("memory_budget", f"{refusal}; ask for less (since=N)", 507)
    try:
        return answer(await run_in_threadpool(build))
    finally:
        budget.reports.release(size)
