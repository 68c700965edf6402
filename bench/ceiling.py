"""The ceiling for mockstore's stack: a bare Starlette app on uvicorn.

It answers ``GET /v1/pets`` with a constant body of a given size and does
nothing else — no authentication, no rate limiting, no headers beyond the
ones Starlette always sends. Served with the same uvicorn settings as
``mockstore serve`` (httptools + uvloop, access log, server and date headers
off, lifespan off), it is the fastest this stack can answer the benchmarked
request, so ``mockstore / ceiling`` is the share of the stack's speed mockstore
keeps while doing its job.

    python bench/ceiling.py --port 8081 --body-bytes 1165
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import uvicorn

# The body and the uvicorn settings are the floor's (which imports no Starlette).
from floor import constant_body, settings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def build_app(body: bytes) -> Starlette:
    """A Starlette app whose one route returns ``body`` as application/json."""

    async def pets(request: Request) -> Response:
        return Response(body, media_type="application/json")

    return Starlette(routes=[Route("/v1/pets", pets, methods=["GET"])])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--body-bytes", type=int, required=True)
    args = parser.parse_args(argv)
    uvicorn.run(build_app(constant_body(args.body_bytes)), **settings(args.host, args.port))
    return 0


__all__ = ["build_app", "constant_body", "settings"]


if __name__ == "__main__":
    sys.exit(main())
