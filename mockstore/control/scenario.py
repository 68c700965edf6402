"""Endpoints over the scenario: show the running one, swap in another.

``PUT /scenario`` takes a scenario's YAML or JSON, or a bundled scenario's name
(``curl -X PUT --data default …/scenario``): a body that is one word is a name,
looked up among the bundled scenarios only (never a file of the server's).

Loading a scenario is slow work in pure Python (YAML with line marks, the
schema, the pets of the store): up to seconds for the largest one the bounds
allow. It runs in a worker thread, so the API and ``/health`` keep answering
meanwhile; only the swap itself, one assignment, runs on the event loop, so
it stays atomic, and the replaced state is freed in the worker too. Loads are
taken one at a time: a second PUT waits for the first, rather than building
two large states at once.

A thread alone is not enough: the cyclic garbage collector, triggered by the
hundreds of thousands of objects a large load allocates, stops every thread
while it scans (100-200 ms per collection, measured), so it is paused for the
duration of the build (nothing the build makes is cyclic garbage; requests
served meanwhile make little, collected once the build is done), and the GIL
is handed over more often (``_loop_first``).

A build is priced: it draws on the memory budget's share for builds while it
reads the document (``loader.NODE_COST`` a node, refused with 507 as soon as
the share has no room, before the rest is read), and the scenario and pets it
puts in service on the mock's share (``Runtime.prepare``). Builds take turns
across the whole process (``MemoryBudget.building``), tenants included.
"""

from __future__ import annotations

import asyncio
import gc
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from mockstore.control.dashboard import bundled_source
from mockstore.control.http import error_response, json_response, state_unavailable
from mockstore.control.operations import (
    INTEGER,
    STRING,
    Answer,
    Body,
    Example,
    Operation,
    Param,
    Schema,
    array,
    described,
    doc,
    nullable,
    obj,
    setting,
)
from mockstore.memory import OverBudget, budget_of
from mockstore.scenario import ScenarioError, bundled_names, load_scenario, scenario_schema
from mockstore.scenario.loader import priced
from mockstore.shared.backend import StateUnavailable
from mockstore.state import Prepared, Runtime, release

# A body that is one word, as a scenario's name is: never a YAML mapping.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _scenario_document() -> Schema:
    """The scenario JSON Schema as a component, its own references pointing into it."""
    document = {k: v for k, v in scenario_schema().items() if k not in ("$schema", "$id")}
    text = json.dumps(document).replace(
        '"#/$defs/', '"#/components/schemas/ScenarioDocument/$defs/'
    )
    return Schema("ScenarioDocument", json.loads(text))


SCENARIO_DOCUMENT = _scenario_document()
PLAN = obj({"per_minute": INTEGER, "per_day": doc(nullable(INTEGER), "null: no day allowance")})
SCENARIO = Schema(
    "Scenario",
    obj(
        {
            "name": STRING,
            "description": STRING,
            "file": doc(STRING, "Where it was loaded from"),
            "seed": INTEGER,
            "base_path": setting("base_path"),
            "isolation": setting("isolation"),
            "clock": obj(
                {
                    "start": doc(nullable({"type": "number"}), "Unix seconds; null: real time"),
                    "mode": setting("clock", "mode"),
                    "headers": setting("clock", "headers"),
                }
            ),
            "plans": {"type": "object", "additionalProperties": PLAN},
            "keys": array(obj({"key": STRING, "plan": STRING, "tenant": STRING})),
            "faults": doc(INTEGER, "How many fault rules"),
            "routes": doc(INTEGER, "How many scripted routes"),
            "pets": doc(INTEGER, "How many pets it starts with"),
            "source": doc(STRING, "The YAML (or JSON) it was loaded from"),
        },
        description="The running scenario: a summary and its source",
    ),
)
EXAMPLE_YAML = """\
version: 1
name: two-keys
keys:
  - {key: ci-free, plan: free}
  - {key: ci-pro, plan: pro}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
LOAD = Body(
    "A scenario's YAML or JSON (at most the control body limit, 8 MiB by default), "
    "or a bundled scenario's name alone",
    {
        "application/yaml": doc(STRING, "A scenario in YAML"),
        "application/json": SCENARIO_DOCUMENT,
        "text/plain": doc(
            {"type": "string", "enum": list(bundled_names())},
            "A bundled scenario's name, read from the package (never a file of the server's)",
        ),
    },
    examples=(
        Example("yaml", "Two keys and a pet", EXAMPLE_YAML, "application/yaml"),
        Example("bundled", "A bundled scenario by name", "free-tier-exhaustion", "text/plain"),
        Example(
            "json",
            "A scenario as JSON",
            {"version": 1, "name": "json-one", "keys": [{"key": "ci-key", "plan": "pro"}]},
        ),
    ),
    required=True,
)


class ScenarioEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._loading: asyncio.Lock | None = None

    @described(
        Operation(
            "getScenario",
            "The running scenario",
            "scenario",
            {200: Answer("Its summary and source", SCENARIO)},
        )
    )
    async def show(self, request: Request) -> Response:
        return json_response(self.runtime.scenario.to_json())

    @described(
        Operation(
            "loadScenario",
            "Load a scenario: the state starts afresh from it",
            "scenario",
            {200: Answer("The scenario now running", SCENARIO)},
            errors={
                400: ("invalid_scenario",),
                503: ("state_unavailable",),
                507: ("memory_budget",),
            },
            params=(Param("file", STRING, "The name error messages give the body"),),
            body=LOAD,
            description="Parsed, validated and built while the API keeps answering, then "
            "swapped in atomically; a scenario with problems is refused with each one "
            "(`problems`, as mockstore validate prints them) and the running one stays.",
        )
    )
    async def swap(self, request: Request) -> Response:
        name = request.query_params.get("file", "<PUT /__mockstore/scenario>")
        # The body's size and arrival time are bounded by ControlAPI.
        raw = await request.body()
        word = raw.strip()
        if not word:
            # What curl sends for ``--data-binary @FILE`` when FILE cannot be read (it only
            # warns): say so, not only that a scenario needs content.
            problem = (
                f"{name}: the body is empty: send a scenario's YAML or JSON, or a bundled "
                "scenario's name (curl's --data-binary @FILE sends an empty body when FILE "
                "does not exist or cannot be read: check the path)"
            )
            return error_response(
                "invalid_scenario",
                "the body is empty (a file that is missing or unreadable sends nothing); "
                "the running scenario is unchanged",
                400,
                problems=[problem],
            )
        if len(word) <= 64 and _NAME.fullmatch(word.decode("latin-1")):
            bundled = word.decode("ascii").removesuffix(".yaml")
            if bundled not in bundled_names():
                return error_response(
                    "invalid_scenario",
                    f"{bundled!r} is not a bundled scenario; send a scenario's YAML or JSON, "
                    "or one of their names",
                    400,
                    problems=[
                        f"{name}: not a bundled scenario's name: {bundled!r} (bundled: "
                        f"{', '.join(bundled_names())})"
                    ],
                )
            text, name = bundled_source(bundled)
            raw = text.encode()
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            try:
                prepared = await run_in_threadpool(self._prepare, raw, name)
            except (UnicodeDecodeError, ScenarioError, OverBudget) as exc:
                # The worker's frames (the YAML composer's, with every node it made) are
                # tied to the error through the future that carried it, which the frames
                # refer to: a cycle of thousands of objects a refused scenario, freed only
                # by a full collection on the event loop (the mix's alias bombs: 100 ms
                # and more each). The answer needs only the error's fields.
                exc.__traceback__ = None
                return _refused(exc)
            shared = self.runtime.shared
            try:
                replaced = [
                    await shared.install(prepared) if shared else self.runtime.install(prepared)
                ]
            except StateUnavailable as exc:
                prepared.discard()
                return state_unavailable(exc)
            await run_in_threadpool(release, replaced)
        return json_response(prepared.scenario.to_json())

    def _prepare(self, raw: bytes, name: str) -> Prepared:
        """Decode, parse, validate and build the new state: in a worker thread."""
        budget = budget_of(self.runtime.account)
        if budget is None:
            with _loop_first():
                return self.runtime.prepare(load_scenario(raw.decode("utf-8"), name))
        with budget.building(f"building {name}") as share, priced(share), _loop_first():
            return self.runtime.prepare(load_scenario(raw.decode("utf-8"), name))


def _refused(exc: UnicodeDecodeError | ScenarioError | OverBudget) -> Response:
    """The answer to a scenario that could not be read, built or held."""
    if isinstance(exc, UnicodeDecodeError):
        return error_response(
            "invalid_scenario", f"the scenario is not UTF-8 text (byte {exc.start})", 400
        )
    if isinstance(exc, ScenarioError):
        return error_response(
            "invalid_scenario",
            f"the scenario has {len(exc.problems)} problem(s); the running one is unchanged",
            400,
            problems=[str(p) for p in exc.problems],
            details=[p.as_dict() for p in exc.problems],
        )
    return error_response("memory_budget", f"{exc}; the running scenario is unchanged", 507)


@contextmanager
def _loop_first() -> Iterator[None]:
    """While a build runs: no cyclic collection, and the event loop gets the GIL sooner.

    The interpreter hands the GIL from a busy thread to a waiting one every
    switch interval (5 ms); each answer needs it a few times, so during a build
    1 ms cuts the API's 99th-percentile latency about threefold (measured with
    bench/scenario_load.py). Both settings are the process's, restored after.
    """
    collecting = gc.isenabled()
    interval = sys.getswitchinterval()
    gc.disable()
    sys.setswitchinterval(0.001)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        if collecting:
            gc.enable()
