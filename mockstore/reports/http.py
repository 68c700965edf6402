"""Control API routes over the journal (requests, HAR, verify, report)."""

from __future__ import annotations

from starlette.routing import Route

from mockstore.state import Runtime


def journal_routes(runtime: Runtime) -> list[Route]:
    """The journal's endpoints under /__mockstore; filled in by the reports work."""
    return []
