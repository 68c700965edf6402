"""The control API's route table: a wrong method on any path is a 405 naming all it allows.

The expected methods are gathered per path from the table the control API
really mounts, so a path registered as two Routes (one per method) is caught:
Starlette would answer its 405 with only the first Route's methods in ``Allow``.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from mockstore import schemas
from mockstore.app import create_app
from mockstore.errors import error_body
from mockstore.urls import CONTROL_PREFIX

# HEAD is left out: a HEAD answer has no body to check.
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_by_path() -> dict[str, set[str]]:
    app = create_app("default")
    assert app.control is not None
    allowed: dict[str, set[str]] = defaultdict(set)
    for route in app.control.app.routes:
        assert isinstance(route, Route), route
        assert route.methods, f"{route.path} accepts any method"
        allowed[route.path] |= route.methods
    return dict(allowed)


ALLOWED = _allowed_by_path()


def _allow_header(value: str) -> set[str]:
    return {method.strip() for method in value.split(",")}


@pytest.fixture
def control() -> TestClient:
    # As a tool, so that a wrong-method POST meets the route table, not the
    # cross-site check (tests/test_control_guard.py has that one).
    return TestClient(create_app("default"), headers={"X-Mockstore-Client": "mockstore-tests"})


def test_put_on_requests_is_a_405_naming_get_head_and_delete(control: TestClient) -> None:
    response = control.put("/__mockstore/requests")
    assert response.status_code == 405
    assert _allow_header(response.headers["allow"]) == {"DELETE", "GET", "HEAD"}


@pytest.mark.parametrize("path", sorted(ALLOWED))
def test_every_control_path_answers_a_wrong_method_with_all_it_allows(
    control: TestClient, path: str
) -> None:
    allowed = ALLOWED[path]
    # A value each path parameter's convertor accepts.
    filled = re.sub(r"\{[^}:]+:int\}", "1", path)
    url = CONTROL_PREFIX + re.sub(r"\{[^}]+\}", "some-key", filled)
    error = schemas.schema_validator("Error")
    wrong = [method for method in METHODS if method not in allowed]
    assert wrong
    for method in wrong:
        response = control.request(method, url)
        assert response.status_code == 405, (method, url)
        assert _allow_header(response.headers["allow"]) == allowed, (method, url)
        body = response.json()
        assert error.is_valid(body), (method, url, body)
        assert body["code"] == "method_not_allowed"
        assert body["status"] == 405
        assert response.headers["content-type"] == "application/json"


def test_a_control_error_body_is_the_one_error_body_builders(control: TestClient) -> None:
    response = control.put("/__mockstore/health")
    message = "PUT /__mockstore/health: Method Not Allowed"
    assert response.content == error_body("method_not_allowed", message, 405)
    response = control.get("/__mockstore/nowhere")
    assert response.status_code == 404
    assert response.content == error_body("not_found", "GET /__mockstore/nowhere: Not Found", 404)


def test_an_unexpected_exception_is_a_500_with_an_error_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = create_app("default")

    def broken(**conditions: object) -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(app.runtime.journal, "pick", broken)
    response = TestClient(app, raise_server_exceptions=False).get("/__mockstore/requests")
    assert response.status_code == 500
    message = (
        "GET /__mockstore/requests failed unexpectedly (RuntimeError); "
        "the server's log has the traceback"
    )
    assert response.content == error_body("internal_error", message, 500)
