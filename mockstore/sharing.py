"""The API's one step to a shared state (``mockstore.shared``): count the caller, run the store.

With ``--state redis://…`` the pipeline of ``mockstore.api`` asks here, in
place of ``PetStoreService.identify``, who the caller is. ``admit`` works out
what the request would do to the store if its caller is admitted (the page
of a listing, the id of a get, the pet of a create: a create's body is read
and checked first) and which fault rules' request conditions it meets, and
makes ONE call to Redis that counts the caller, numbers the request and, if
admitted, counts and fires the rules and does the operation unless a rule
answers in its place, atomically. The rest of the pipeline then runs as in
memory, its store being the request's ``RequestStore`` and its rules' outcome
the one Redis decided.

The body of a create is read before the caller is counted here (in memory it
is read after): what was read is handed back to the pipeline as it came
(``_replay``), which reads it again and so answers exactly as in memory:
refused callers are refused without regard to their body, a body over the
limit is 413, one that stopped coming is an aborted request.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.types import Message, Receive

from mockstore.errors import ApiError
from mockstore.faults import SharedRules, shared_outcome, shared_rules
from mockstore.keys import Credentials, client_bucket, key_bucket
from mockstore.ratelimit import RateLimiter
from mockstore.service import OPERATIONS, UNCOUNTED, Bystander, Caller
from mockstore.shared.backend import MAX_RELOADS, SharedState, StateUnavailable
from mockstore.shared.buckets import decision_of
from mockstore.shared.deadline import Stale
from mockstore.shared.request import run_refund, run_request
from mockstore.shared.store import (
    FIRST_GUESS,
    Operation,
    RequestStore,
    Resize,
    create_operation,
    get_operation,
    list_operation,
    page_operation,
    pets_only,
)
from mockstore.shared.tenants import TenantGone
from mockstore.sharing_errors import Restart, Unavailable
from mockstore.state import NO_BAN
from mockstore.store import PetStore
from mockstore.validation import path_parameters

log = logging.getLogger("mockstore.shared")
# How often this request was started again because the configuration changed under it.
RESTARTS = "mockstore.restarts"
_GET = OPERATIONS["getPet"]
_RETRY_SOON = ((b"retry-after", b"1"),)


async def admit(
    api: Any,
    ex: Any,
    credentials: Credentials,
    client: str,
    relative: str,
    receive: Receive,
    content_length: bytes | None,
) -> tuple[Receive, Caller]:
    """Count the caller, fire the fault rules and run its store operation in one call.

    Returns the caller and the body's source. Sets ``ex.number`` (the request's
    number, for its id), ``ex.outcome`` (the rules that fired; None when none
    could) and, for an admitted caller with a store operation, ``ex.shared``.
    ``Restart`` when the configuration changed (this process has reloaded it),
    ``Unavailable`` when Redis is out of reach (``ex.caller`` is set, for the
    answer's headers and the journal).
    """
    shared: SharedState = api.runtime.shared
    state = ex.state
    key = state.keys.lookup(credentials.token) if credentials.kind == "bearer" else None
    counted = True
    if key is not None:
        plan = state.plans[key.plan]
        bucket = key_bucket(key.key)
    else:
        plan = state.plans[state.scenario.anonymous_plan]
        bucket = client_bucket(client)
        # Callers without a key that the limiter does not count (ratelimit.anonymous: none).
        counted = state.scenario.ratelimit.anonymous == "per_address"
    operation: Operation | None = None
    local: PetStore | None = None
    rules: SharedRules | None = None
    resolved = ex.resolved.operation
    semantics = ex.compiled.semantics
    if (
        key is not None
        and semantics is not None
        and semantics.answers_after_the_limiter(
            ex.request,
            ex.now,
            ex.now - state.clock.start,
            lambda path: semantics.served(ex.compiled.service, state.routes, path),
        )
    ):
        # The scenario's HTTP semantics answer it once the caller is counted (a
        # maintenance window, an OPTIONS): in memory no operation runs and no fault
        # rule counts it, so none does here.
        key_for_operation = None
    else:
        key_for_operation = key
    if key_for_operation is not None:
        service = ex.compiled.service
        route, _ = state.routes.for_path(ex.scope["method"], relative, service.serve_head)
        scripted = route is not None or ex.operation in state.routes.by_operation
        body_read = True
        if resolved is not None and resolved.body_schema is not None:
            receive, body_read = await _read_body(api, ex, receive, content_length)
        if resolved is not None and not scripted and body_read:
            local = state.stores.store_for(key.tenant)
            group = key.tenant if state.stores.per_key else None
            operation = _operation(ex, group, local)
        if state.faults and body_read and (resolved is not None or route is not None):
            # What the rules read, as the pipeline gives it them once admitted.
            name = ex.operation if resolved is not None else f"{route.method} {route.path}"
            needs = state.faults.applies(name, key.key)
            if needs is not None:
                facts = api._facts(ex, needs, relative, key, name)
                rules = shared_rules(state.faults, facts)
    now = ex.now
    try:
        reply, operation = await _request(
            shared, ex, bucket, plan if counted else None, operation, rules, local
        )
    except Stale:
        restarts = ex.scope.get(RESTARTS, 0)
        if restarts >= MAX_RELOADS:
            raise _unavailable(ex, credentials, plan, bucket, "it kept changing") from None
        ex.scope[RESTARTS] = restarts + 1
        raise Restart(receive) from None
    except StateUnavailable as exc:
        raise _unavailable(ex, credentials, plan, bucket, exc) from None
    ex.number = reply[7]
    decision = decision_of(state.limiter, reply, plan, now) if counted else UNCOUNTED
    caller = Caller(credentials, key, plan, decision)
    if caller.admitted:
        if rules is not None:
            ex.outcome = shared_outcome(state.faults, reply[9])
        if local is not None:
            result = reply[8]
            if operation is not None and operation.kind not in ("create", "page") and result:
                result = pets_only(shared.url, result)  # a page checks its own (its members)
            ex.shared = RequestStore(local, operation, result)
    return receive, caller


async def _request(
    shared: SharedState,
    ex: Any,
    bucket: str,
    plan: Any,
    operation: Operation | None,
    rules: SharedRules | None,
    local: PetStore | None,
) -> tuple[Any, Operation | None]:
    """``run_request`` and the operation it ran; a page whose search window was too
    narrow is asked again, wider (nothing was counted the first time: ``scripts.REQUEST``)."""
    for _ in range(MAX_RELOADS):
        try:
            reply = await run_request(
                shared, bucket, plan, ex.now, ex.state.clock.waited(), operation, rules
            )
            return reply, operation
        except Resize as resize:
            assert operation is not None and local is not None
            # Room for the pets created since the script counted them, too.
            operation = _operation(ex, operation.group, local, resize.size + FIRST_GUESS)
    raise StateUnavailable("a page's listing kept growing while it was read")


def _operation(
    ex: Any, group: str | None, local: PetStore, guess: int = FIRST_GUESS
) -> Operation | None:
    """What the request does to the store if admitted (None: nothing, or it is refused)."""
    name = ex.operation
    try:
        if name == "listPets":
            service = ex.compiled.service
            query = service.list_query(ex)
            limit, status = query["limit"], query["status"]
            if service.pager is not None:
                position = service.pager.position(ex.query, status, limit)
                return page_operation(group, local, position, limit, status, guess)
            return list_operation(group, local, limit, status)
        if name == "getPet":
            pet_id = path_parameters(_GET, ex.params)["petId"]
            return get_operation(group, local, pet_id)
        if name == "createPet":
            new_pet = ex.compiled.service.pet_to_create(ex)
            max_bytes = ex.state.scenario.behaviour.max_store_bytes
            return create_operation(group, new_pet, local, max_bytes)
    except ApiError:
        pass  # refused by the operation itself, after counting
    return None


async def _read_body(
    api: Any, ex: Any, receive: Receive, content_length: bytes | None
) -> tuple[Receive, bool]:
    """Read the body before the caller is counted: its source again, and whether it came
    whole."""
    recorded: list[Message] = []

    async def recording() -> Message:
        message = await receive()
        recorded.append(message)
        return message

    try:
        await api._read_body(ex, recording, content_length)
    except Exception:
        # The pipeline reads the same messages again and meets the same end
        # (413, 408, the client gone), once the caller has been counted.
        return _replay(recorded, receive), False
    return _replay(recorded, receive), True


def _replay(recorded: list[Message], receive: Receive) -> Receive:
    """A receive that gives the messages already read, then reads on."""
    if not recorded:
        return receive
    waiting = list(reversed(recorded))

    async def replaying() -> Message:
        if waiting:
            return waiting.pop()
        return await receive()

    return replaying


def _state_unavailable(reason: str) -> ApiError:
    return ApiError(
        "state_unavailable",
        f"the mock's shared state cannot be reached ({reason}); nothing was counted or "
        "stored; retry shortly",
        headers=_RETRY_SOON,
    )


def _unavailable(
    ex: Any, credentials: Credentials, plan: Any, bucket: str, reason: str | Exception
) -> Unavailable:
    # Where the caller stands is not known: a decision that counts nothing, and
    # the answer states no rate-limit figures (api.py leaves them out).
    decision = RateLimiter(NO_BAN).peek(bucket, plan, ex.now)
    ex.caller = Bystander.uncounted(credentials, plan, decision)
    if isinstance(reason, TenantGone):  # deleted through another process
        return Unavailable(ApiError("not_found", str(reason), status=404))
    return Unavailable(_state_unavailable(str(reason)))


async def give_back(api: Any, ex: Any, bucket: str, plan: Any) -> None:
    """Give back in Redis what an admitted request took (an answer that does not count:
    ``ratelimit.not_counted``). Redis out of reach: the request stays counted."""
    try:
        await run_refund(api.runtime.shared, bucket, plan, ex.now)
    except StateUnavailable as exc:
        log.warning("could not give back a request that does not count: %s", exc)
