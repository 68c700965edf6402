"""The live dashboard at ``/__mockstore/ui``: static files, the event stream, and a few reads.

The page is plain HTML, CSS and JavaScript modules shipped in the package
(``mockstore/ui/``), read once when the control API is built and served from
memory under a strict Content-Security-Policy. Everything it shows comes from
the control API's public endpoints, plus the ones this module adds:

* ``GET /events``: the journal as server-sent events (``events.py``);
* ``GET /scenarios`` and ``GET /scenarios/{name}``: the bundled scenarios and
  their YAML, for the scenario editor's list;
* ``GET /requests/{seq}``: one journal entry, for a finding's evidence that has
  scrolled out of the page's buffer (``?tenant=`` for a tenant's evidence);
* ``GET /report.html``: the HTML report, as ``mockstore report --format html``
  (``?run=`` as the JSON report).

The page itself (``/ui`` and its files, and ``/`` which redirects there) needs
no control token: it holds no data, and asks the user for the token before it
reads anything.
"""

from __future__ import annotations

import functools
from importlib import resources

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from mockstore.control.events import JournalStream, StreamSlots
from mockstore.control.http import PiecewiseResponse, error_response, int_param, json_response
from mockstore.control.journal import TENANTS_PARAM, charged, report_builder, tenant_journal
from mockstore.control.journal_bodies import ENTRY, JOURNAL_TENANT, RUN_PARAM, SINCE
from mockstore.control.operations import (
    STRING,
    Answer,
    Operation,
    array,
    described,
    doc,
    obj,
)
from mockstore.reports.html import render_html
from mockstore.scenario import bundled_names
from mockstore.scenario.loader import parse_yaml
from mockstore.scenario.source import bundled_dir
from mockstore.state import Runtime
from mockstore.tenants import TenantRegistry
from mockstore.urls import CONTROL_PREFIX

PAGE = "index.html"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# No inline script or style anywhere, nothing fetched from another origin.
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# The HTML report styles itself inline and runs no script.
REPORT_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


HTML = "text/html; charset=utf-8"
EVENT_STREAM = "text/event-stream; charset=utf-8"
TEXT: dict[str, object] = {"type": "string"}
TO_PAGE = {307: Answer("To the page", headers={"Location": CONTROL_PREFIX + "/ui"})}
BUNDLED = obj({"name": STRING, "description": STRING})
SOURCE = obj(
    {"name": STRING, "file": STRING, "source": doc(STRING, "Its YAML")},
)


@functools.cache
def ui_files() -> dict[str, tuple[bytes, str]]:
    """Every file of ``mockstore/ui`` as (bytes, content type), read from the package once."""
    folder = resources.files("mockstore").joinpath("ui")
    files = {}
    for item in folder.iterdir():
        suffix = "." + item.name.rpartition(".")[2]
        if item.is_file() and suffix in CONTENT_TYPES:
            files[item.name] = (item.read_bytes(), CONTENT_TYPES[suffix])
    if PAGE not in files:
        raise RuntimeError(f"the dashboard's {PAGE} is missing from the installed package")
    return files


def bundled_source(name: str) -> tuple[str, str]:
    """A bundled scenario's YAML and display name, read from the package only.

    Not ``read_scenario_source``: it prefers a file of that name in the working
    directory, which the page must never be able to read.
    """
    return bundled_dir().joinpath(f"{name}.yaml").read_text("utf-8"), f"{name}.yaml (bundled)"


@functools.cache
def bundled_scenarios() -> list[dict[str, str]]:
    """Name and description of each bundled scenario (they never change while serving)."""
    listed = []
    for name in bundled_names():
        text, file = bundled_source(name)
        data, _ = parse_yaml(text, file)
        description = data.get("description", "") if isinstance(data, dict) else ""
        listed.append({"name": name, "description": str(description).strip()})
    return listed


class DashboardEndpoints:
    """The dashboard's endpoints, bound to one ``Runtime``."""

    def __init__(self, runtime: Runtime, tenants: TenantRegistry | None = None) -> None:
        self.runtime = runtime
        self.tenants = tenants
        self.files = ui_files()
        self.slots = StreamSlots()

    @described(Operation("dashboardRoot", "To the dashboard", "dashboard", TO_PAGE))
    async def root(self, request: Request) -> Response:
        return self._to_page()

    @described(Operation("dashboardFolder", "To the dashboard", "dashboard", TO_PAGE))
    async def ui_folder(self, request: Request) -> Response:
        return self._to_page()

    def _to_page(self) -> Response:
        return RedirectResponse(CONTROL_PREFIX + "/ui", status_code=307)

    @described(
        Operation(
            "dashboardPage",
            "The dashboard's page (no token needed: it asks for it)",
            "dashboard",
            {200: Answer("The page", TEXT, HTML)},
        )
    )
    async def page(self, request: Request) -> Response:
        return self._serve(PAGE, self.files[PAGE])  # ui_files() makes sure it is there

    @described(
        Operation(
            "dashboardFile",
            "One of the page's files (scripts, styles)",
            "dashboard",
            {
                200: Answer("The file", TEXT, tuple(sorted(set(CONTENT_TYPES.values())))),
            },
            errors={404: ("not_found",)},
        )
    )
    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        found = self.files.get(name)
        if found is None:
            return error_response("not_found", f"the dashboard has no file {name!r}", 404)
        return self._serve(name, found)

    def _serve(self, name: str, found: tuple[bytes, str]) -> Response:
        body, content_type = found
        headers = dict(SECURITY_HEADERS)
        if name == PAGE:
            headers["content-security-policy"] = PAGE_POLICY
        return Response(body, media_type=content_type, headers=headers)

    @described(
        Operation(
            "dashboardEvents",
            "The journal as server-sent events, as requests arrive",
            "dashboard",
            {200: Answer("A stream that lasts while the client listens", TEXT, EVENT_STREAM)},
            errors={400: ("invalid_request",), 503: ("too_many_streams",)},
            params=(SINCE,),
        )
    )
    async def events(self, request: Request) -> Response:
        return JournalStream(self.runtime.journal, self.slots, int_param(request, "since"))

    @described(
        Operation(
            "listBundledScenarios",
            "The bundled scenarios",
            "dashboard",
            {200: Answer("Each one's name and description", array(BUNDLED))},
        )
    )
    async def list_scenarios(self, request: Request) -> Response:
        return json_response(await run_in_threadpool(bundled_scenarios))

    @described(
        Operation(
            "getBundledScenario",
            "A bundled scenario's YAML",
            "dashboard",
            {200: Answer("Its source", SOURCE)},
            errors={404: ("unknown_scenario",)},
        )
    )
    async def scenario_source(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in bundled_names():
            known = ", ".join(bundled_names())
            return error_response(
                "unknown_scenario", f"no bundled scenario {name!r} ({known})", 404
            )
        text, file = bundled_source(name)
        return json_response({"name": name, "file": file, "source": text})

    @described(
        Operation(
            "getRequest",
            "One journal entry, by its sequence number",
            "dashboard",
            {200: Answer("The entry", ENTRY)},
            errors={404: ("not_found",)},
            params=(JOURNAL_TENANT,),
        )
    )
    async def one_request(self, request: Request) -> Response:
        seq = request.path_params["seq"]
        tenant = request.query_params.get("tenant")
        journal = tenant_journal(self.tenants, tenant) if tenant else self.runtime.journal
        # The first entry after seq - 1 is seq itself, unless it was evicted or cleared.
        after = journal.select(since=seq - 1)
        if after and after[0].seq == seq:
            return json_response(after[0].to_dict())
        where = f"tenant {tenant}'s journal" if tenant else "the journal"
        return error_response("not_found", f"request #{seq} is not in {where}", 404)

    @described(
        Operation(
            "getHtmlReport",
            "The report as a page, as mockstore report --format html writes it",
            "dashboard",
            {200: Answer("The page", TEXT, HTML)},
            errors={400: ("invalid_request",), 507: ("memory_budget",)},
            params=(RUN_PARAM, TENANTS_PARAM),
        )
    )
    async def html_report(self, request: Request) -> Response:
        size, build = report_builder(request, self.runtime, self.tenants, None, True, render_html)
        headers = {**SECURITY_HEADERS, "content-security-policy": REPORT_POLICY}
        return await charged(
            self.runtime,
            size,
            "this report",
            build,
            lambda page: PiecewiseResponse(
                page, media_type="text/html; charset=utf-8", headers=headers
            ),
        )
