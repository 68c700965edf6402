"""Endpoints over the journal: the recorded requests, HAR, verification, the report.

They only translate HTTP to the pure modules of ``mockstore.reports`` and back.
The journal is read on the event loop (a snapshot, so the server can keep
appending); verification, the HAR and the report (with its encoding) run in
a worker thread: on a full 10,000-entry journal they take a noticeable
fraction of a second, and the API must keep answering meanwhile.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from mockstore.control.http import (
    JSON,
    encode_json,
    error_response,
    int_param,
    json_object,
    json_response,
    yes_no,
)
from mockstore.reports.har import HarMeta, to_har
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
        return json_response(
            {
                "entries": [e.to_dict() for e in entries],
                "dropped": journal.dropped,
                "last_seq": journal.last_seq,
                "size": journal.size,
                "enabled": journal.enabled,
                "bytes": journal.bytes,
                "max_bytes": journal.max_bytes,
            }
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
        body = await run_in_threadpool(lambda: encode_json(to_har(entries, meta)))
        return Response(
            body,
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
        body = await run_in_threadpool(
            lambda: encode_json(build_report(entries, context, timeline="timeline" in include))
        )
        return Response(body, media_type=JSON)


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
