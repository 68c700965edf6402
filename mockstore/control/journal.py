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

``?run=N`` (or ``current``) selects one run (``mockstore.runs``). A server's
report covers its tenants' journals too, the deleted ones' kept included
(``?tenants=none`` leaves them out); ``?tenant=ID`` reads one tenant's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from mockstore.control.http import (
    INTEGER_TEXT,
    JSON,
    STREAMED,
    PiecewiseResponse,
    encode_json,
    error_response,
    held_stream,
    int_param,
    json_object,
    json_response,
    json_stream,
    state_unavailable,
    yes_no,
)
from mockstore.control.journal_bodies import (
    EXPECTATION,
    HAR,
    JOURNAL,
    JOURNAL_TENANT,
    REPORT,
    RUN_PARAM,
    SINCE,
    VERIFICATION,
)
from mockstore.control.operations import (
    STRING,
    Answer,
    Body,
    Example,
    Operation,
    Param,
    described,
    query_integer,
)
from mockstore.errors import ApiError
from mockstore.journal import Entry, Journal
from mockstore.memory import Account, OverBudget, budget_of
from mockstore.reports.har import HarMeta, har_entry, har_shell
from mockstore.reports.model import ReportContext
from mockstore.reports.report import Journal as ReportedJournal
from mockstore.reports.report import build_report
from mockstore.reports.verify import (
    COUNTS,
    FIELDS,
    Expectation,
    InvalidExpectation,
    Verification,
    verify,
)
from mockstore.scenario.model import default_ban_policy
from mockstore.shared.backend import StateUnavailable
from mockstore.state import Runtime
from mockstore.tenants import TenantRegistry
from mockstore.version import __version__

TENANTS_PARAM = Param(
    "tenants",
    {"type": "string", "enum": ["all", "none"]},
    "all (default): the tenants' journals too, the deleted ones' kept; none: this one only",
)
VERIFY = Body(
    "The requests to count",
    {"application/json": EXPECTATION},
    examples=(
        Example(
            "once",
            "Exactly one createPet for Rex",
            {"operation": "createPet", "count": 1, "body_contains": {"name": "Rex"}},
        ),
        Example("throttled", "At least one 429", {"status": 429, "at_least": 1}),
    ),
)


def run_param(request: Request, runtime: Runtime) -> int | None:
    """``?run=``: a run number, ``current`` (the one the next request joins), or ``all`` (None)."""
    raw = request.query_params.get("run")
    if raw is None or raw in ("", "all"):
        return None
    if raw == "current":
        return runtime.run
    if not INTEGER_TEXT.fullmatch(raw):
        message = f"query parameter 'run' must be a run number, 'current' or 'all', got {raw!r}"
        raise ApiError("invalid_request", message, status=400)
    return int(raw)


def tenant_journal(tenants: TenantRegistry | None, tenant_id: str) -> Journal:
    """``?tenant=ID``: that tenant's journal, live or kept after its deletion."""
    journal = tenants.journal(tenant_id) if tenants is not None else None
    if journal is None:
        message = f"no journal of a tenant {tenant_id!r} on this server"
        raise ApiError("not_found", message, status=404)
    return journal


class JournalEndpoints:
    """Bound to one ``Runtime``, whose journal outlives resets and scenario swaps.

    ``tenants`` is the server's registry (None in a tenant's own control API).
    """

    def __init__(self, runtime: Runtime, tenants: TenantRegistry | None = None) -> None:
        self.runtime = runtime
        self.tenants = tenants

    def _journal(self, request: Request) -> Journal:
        tenant = request.query_params.get("tenant")
        return tenant_journal(self.tenants, tenant) if tenant else self.runtime.journal

    @described(
        Operation(
            "listRequests",
            "The request journal, filtered",
            "journal",
            {200: Answer("The journal", JOURNAL)},
            errors={400: ("invalid_request",), 404: ("not_found",), 507: ("memory_budget",)},
            params=(
                Param("operation", STRING, "Only this operationId"),
                Param("key", STRING, "Only requests with this (full) key"),
                Param("status", query_integer(), "Only answers of this status"),
                SINCE,
                RUN_PARAM,
                JOURNAL_TENANT,
            ),
        )
    )
    async def requests(self, request: Request) -> Response:
        since = int_param(request, "since")
        status = int_param(request, "status")
        run = run_param(request, self.runtime)
        journal = self._journal(request)
        # Made entries in the worker that encodes them (``journal_picks``), not here.
        entries = journal.pick(
            operation=request.query_params.get("operation") or None,
            key=request.query_params.get("key") or None,
            status=status,
            since=since,
            run=run,
        )
        document = {
            "entries": STREAMED,
            "dropped": journal.dropped,
            "last_seq": journal.last_seq,
            "size": journal.size,
            "enabled": journal.enabled,
            "bytes": journal.bytes,
            "max_bytes": journal.max_bytes,
            "run": "all" if run is None else run,
            "current_run": journal.run,
        }
        return held_stream(
            json_stream(document, entries, Entry.to_dict),
            self._reports(),
            journal.bytes if entries else 0,
            "this list of requests",
        )

    def _reports(self) -> Account | None:
        """The budget's share for reports: a stream's entries are charged to it while it lasts.

        What a stream holds is its snapshot of the journal, which outlives the
        entries the journal drops meanwhile: charged as the journal's bytes
        (the most it can be), as a report is.
        """
        budget = budget_of(self.runtime.account)
        return budget.reports if budget is not None else None

    @described(
        Operation(
            "clearRequests",
            "Forget the journal's entries (sequence numbers keep growing)",
            "journal",
            {204: Answer("Cleared, with the deleted tenants' kept journals")},
            errors={503: ("state_unavailable",)},
        )
    )
    async def clear(self, request: Request) -> Response:
        shared = self.runtime.shared
        if shared is not None and shared.journal is not None:
            # Every process's journal: what came before now goes everywhere.
            try:
                await shared.journal.clear()
            except StateUnavailable as exc:
                return state_unavailable(exc)
        else:
            self.runtime.journal.clear()
        if self.tenants is not None:
            self.tenants.kept.clear()  # deleted tenants' journals: kept for nothing else
        return Response(status_code=204)

    @described(
        Operation(
            "getHar",
            "The journal as HAR 1.2",
            "journal",
            {
                200: Answer(
                    "The HAR",
                    HAR,
                    headers={"Content-Disposition": 'inline; filename="mockstore.har"'},
                )
            },
            errors={400: ("invalid_request",), 403: ("forbidden",), 507: ("memory_budget",)},
            params=(
                SINCE,
                Param(
                    "mask",
                    {
                        "type": "string",
                        "enum": ["", "true", "false", "1", "0", "yes", "no", "on", "off"],
                    },
                    "false: the clients' raw keys (a token holder or a caller on this machine)",
                ),
            ),
        )
    )
    async def har(self, request: Request) -> Response:
        since = int_param(request, "since")
        entries = self.runtime.journal.pick(since=since)
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
        return held_stream(
            json_stream(shell, entries, lambda entry: har_entry(entry, meta.mask)),
            self._reports(),
            self.runtime.journal.bytes if entries else 0,
            "this HAR",
            headers={"content-disposition": 'inline; filename="mockstore.har"'},
        )

    @described(
        Operation(
            "verify",
            "Count the requests that match; explain a wrong count",
            "journal",
            {200: Answer("What was found (ok false: the count was wrong)", VERIFICATION)},
            errors={400: ("malformed_json", "invalid_request"), 507: ("memory_budget",)},
            body=VERIFY,
        )
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
        entries = self.runtime.journal.pick(since=since)  # made in the worker that checks them
        base = self.runtime.scenario.base_path
        if expectation.body_contains is None:
            outcome = await run_in_threadpool(verify, entries, expectation, base, since)
        else:
            try:
                outcome = await run_in_threadpool(
                    _scan, entries, expectation, base, since, self._reports()
                )
            except OverBudget as exc:
                # The worker's frames (with the journal's entries it made) are tied to the
                # error through the future that carried it, which they refer to: a cycle
                # only a full collection frees, on the event loop. Let go of them now.
                exc.__traceback__ = None
                return error_response("memory_budget", f"{exc}; retry shortly", 507)
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

    @described(
        Operation(
            "getReport",
            "Coverage, etiquette findings and a summary",
            "journal",
            {200: Answer("The report", REPORT)},
            errors={400: ("invalid_request",), 507: ("memory_budget",)},
            params=(
                SINCE,
                RUN_PARAM,
                TENANTS_PARAM,
                Param("include", STRING, "timeline: add one row per request"),
            ),
            description="Every run judged on its own, or one (run=N, run=current).",
        )
    )
    async def report(self, request: Request) -> Response:
        since = int_param(request, "since")
        include = {part.strip() for part in request.query_params.get("include", "").split(",")}
        size, build = report_builder(
            request, self.runtime, self.tenants, since, "timeline" in include
        )
        return await charged(
            self.runtime,
            size,
            "this report",
            build,
            lambda body: PiecewiseResponse(body, media_type=JSON),
        )


# Verifications that parse bodies (body_contains), one at a time in the
# process: each parse holds the GIL for as long as it runs and draws on the
# reports' share, so eight at once took turns with the API (3.6 s stalls) and
# held eight times the memory. Waiting here blocks a worker thread, never the loop.
_SCANS = threading.Lock()


def _scan(
    entries: list[Entry],
    expectation: Expectation,
    base: str,
    since: int | None,
    scratch: Account | None,
) -> Verification:
    with _SCANS:
        return verify(entries, expectation, base, since, scratch)


def tenants_param(request: Request) -> bool:
    """``?tenants=all`` (the default) or ``none``: whether a server's report covers its tenants."""
    raw = request.query_params.get("tenants", "all")
    if raw not in ("all", "none"):
        message = f"query parameter 'tenants' must be 'all' or 'none', got {raw!r}"
        raise ApiError("invalid_request", message, status=400)
    return raw == "all"


def report_builder(
    request: Request,
    runtime: Runtime,
    tenants: TenantRegistry | None,
    since: int | None,
    timeline: bool,
    render: Callable[[dict[str, Any]], Any] = encode_json,
) -> tuple[int, Callable[[], Any]]:
    """The report the request asks for (``?run``, ``?tenants``): what it holds, and its builder.

    The size is what the journals it reads hold (a report's peak is about that);
    the builder is for a worker thread (``charged``).
    """
    run = run_param(request, runtime)
    # Picked here, made entries in the builder's worker (``journal_picks``).
    entries = runtime.journal.pick(since=since, run=run)
    size = runtime.journal.bytes if entries else 0
    picked = []
    if tenants is not None and tenants_param(request):
        for tenant, journal, deleted in tenants.journals():
            selected = journal.pick(since=since, run=run)
            if selected:
                size += journal.bytes
            picked.append((selected, tenant, deleted, tuple(journal.runs)))
    context = report_context(runtime, since, run)
    runs = tuple(runtime.journal.runs)

    def build() -> Any:
        others = [ReportedJournal(list(made), *rest) for made, *rest in picked]
        return render(
            build_report(list(entries), context, timeline=timeline, tenants=others, runs=runs)
        )

    return size, build


def report_context(runtime: Runtime, since: int | None, run: int | None = None) -> ReportContext:
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
        run=run,
    )


Built = TypeVar("Built")


async def charged(
    runtime: Runtime,
    size: int,
    what: str,
    build: Callable[[], Built],
    answer: Callable[[Built], Response],
) -> Response:
    """``answer(build())``, ``build`` run in a worker thread with ``size`` bytes reserved first.

    What a report needs at its peak is about what its entries hold in the
    journals (measured: 0.6 to 1 times), so that is reserved from the budget's
    share for reports while it is built; 507 if it cannot be.
    """
    budget = budget_of(runtime.account)
    if budget is None or not size:
        return answer(await run_in_threadpool(build))
    if not budget.reports.reserve(size):
        refusal = OverBudget(what, size, budget.reports)
        return error_response("memory_budget", f"{refusal}; ask for less (since=N)", 507)
    try:
        return answer(await run_in_threadpool(build))
    finally:
        budget.reports.release(size)
