"""Control API routes over the journal: requests, HAR, verify, report.

This module only translates HTTP to the pure report modules and back. The
journal is read on the event loop (a snapshot, so the server can keep
appending) and the report itself is built in a worker thread: on a full
10,000-entry journal it takes a noticeable fraction of a second, and the API
must keep answering meanwhile.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mockstore import __version__
from mockstore.reports.har import HarMeta, to_har
from mockstore.reports.model import ReportContext
from mockstore.reports.report import build_report
from mockstore.reports.verify import COUNTS, FIELDS, Expectation, InvalidExpectation, verify
from mockstore.state import Runtime

_TRUE = {"1", "true", "yes", "on"}


def _problem(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message, "status": status}, status)


class _BadQuery(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise _BadQuery(f"query parameter {name!r} must be an integer, got {raw!r}") from None


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in _TRUE


class JournalAPI:
    """The endpoints, bound to one ``Runtime`` (whose journal outlives resets and swaps)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def context(self, since: int | None = None) -> ReportContext:
        scenario = self.runtime.scenario
        journal = self.runtime.journal
        ban = scenario.ban
        return ReportContext(
            scenario=scenario.name,
            base_path=scenario.base_path,
            ban_after_rejections=ban.after_rejections if ban else None,
            ban_within_seconds=ban.within_seconds if ban else 60.0,
            journal_size=journal.size,
            journal_enabled=journal.enabled,
            dropped=journal.dropped,
            since=since,
        )

    async def list_requests(self, request: Request) -> Response:
        try:
            since = _int_param(request, "since")
            status = _int_param(request, "status")
        except _BadQuery as exc:
            return _problem(400, "invalid_request", exc.message)
        journal = self.runtime.journal
        entries = journal.select(
            operation=request.query_params.get("operation") or None,
            key=request.query_params.get("key") or None,
            status=status,
            since=since,
        )
        return JSONResponse(
            {
                "entries": [e.to_dict() for e in entries],
                "dropped": journal.dropped,
                "last_seq": journal.last_seq,
                "size": journal.size,
                "enabled": journal.enabled,
            }
        )

    async def clear_requests(self, request: Request) -> Response:
        self.runtime.journal.clear()
        return Response(status_code=204)

    async def har(self, request: Request) -> Response:
        try:
            since = _int_param(request, "since")
        except _BadQuery as exc:
            return _problem(400, "invalid_request", exc.message)
        entries = self.runtime.journal.select(since=since)
        state = self.runtime.state
        scenario = state.scenario
        listed = {k.key for k in scenario.keys}
        issued = tuple(
            {
                "key": key.key,
                "plan": key.plan,
                "per_minute": state.plans[key.plan].per_minute,
                "per_day": state.plans[key.plan].per_day,
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
            mask=_flag(request, "mask"),
        )
        document = await run_in_threadpool(to_har, entries, meta)
        return JSONResponse(
            document, headers={"content-disposition": 'inline; filename="mockstore.har"'}
        )

    async def verify(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            return _problem(400, "malformed_json", f"the body is not valid JSON: {exc}")
        if not isinstance(body, dict):
            return _problem(400, "invalid_request", "the body must be a JSON object")
        known = {*FIELDS, *COUNTS, "since"}
        unknown = sorted(set(body) - known)
        if unknown:
            return _problem(
                400,
                "invalid_request",
                f"unknown field(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})",
            )
        since = body.pop("since", None)
        if since is not None and (isinstance(since, bool) or not isinstance(since, int)):
            return _problem(400, "invalid_request", f"since must be an integer, got {since!r}")
        try:
            expectation = Expectation(**body)
        except InvalidExpectation as exc:
            return _problem(400, "invalid_request", str(exc))
        entries = self.runtime.journal.select(since=since)
        base = self.runtime.scenario.base_path
        outcome = await run_in_threadpool(verify, entries, expectation, base, since)
        closest = []
        for entry, reasons in outcome.closest:
            shown = entry.to_dict()
            shown["unmet"] = reasons
            closest.append(shown)
        return JSONResponse(
            {
                "ok": outcome.ok,
                "count": outcome.count,
                "message": outcome.message,
                "matched": [e.seq for e in outcome.matched],
                "closest": closest,
            }
        )

    async def report(self, request: Request) -> Response:
        try:
            since = _int_param(request, "since")
        except _BadQuery as exc:
            return _problem(400, "invalid_request", exc.message)
        include = {part.strip() for part in request.query_params.get("include", "").split(",")}
        entries = self.runtime.journal.select(since=since)
        context = self.context(since)
        report = await run_in_threadpool(
            lambda: build_report(entries, context, timeline="timeline" in include)
        )
        return JSONResponse(report)


def journal_routes(runtime: Runtime) -> list[Route]:
    """The journal's endpoints, mounted under /__mockstore by the control API."""
    api = JournalAPI(runtime)
    return [
        Route("/requests", api.list_requests, methods=["GET"]),
        Route("/requests", api.clear_requests, methods=["DELETE"]),
        Route("/requests.har", api.har, methods=["GET"]),
        Route("/verify", api.verify, methods=["POST"]),
        Route("/report", api.report, methods=["GET"]),
    ]
