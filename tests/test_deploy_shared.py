"""``deploy/kubernetes-shared.yaml``: replicas that behave as one mock, their state in Redis.

Validated as ``deploy/kubernetes.yaml`` is (``kubernetes-validate``, strict), and
what it promises: the replicas name the Redis Service in ``MOCKSTORE_STATE``, a
replica is ready only while Redis answers but is never restarted for Redis's
outage, Redis keeps nothing on disk. No cluster runs here, so two of the pod's
containers are started as its spec says, on a real ``redis-server`` in place of
the Service, and checked to be one mock.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import kubernetes_validate
import pytest
import yaml

from mockstore.scenario import load_scenario
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "deploy" / "kubernetes-shared.yaml"
DOCUMENTS = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
BY_NAME = {(d["kind"], d["metadata"]["name"]): d for d in DOCUMENTS}


@pytest.mark.parametrize(
    "document", DOCUMENTS, ids=lambda d: f"{d['kind']}-{d['metadata']['name']}"
)
def test_each_resource_is_valid_kubernetes(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_it_holds_redis_and_the_replicas_with_their_services() -> None:
    assert sorted(BY_NAME) == [
        ("ConfigMap", "mockstore-scenario"),
        ("Deployment", "mockstore"),
        ("Deployment", "mockstore-redis"),
        ("Service", "mockstore"),
        ("Service", "mockstore-redis"),
    ]
    assert BY_NAME["Deployment", "mockstore"]["spec"]["replicas"] >= 2
    assert BY_NAME["Deployment", "mockstore-redis"]["spec"]["replicas"] == 1


def _container(name: str) -> dict[str, Any]:
    [container] = BY_NAME["Deployment", name]["spec"]["template"]["spec"]["containers"]
    return container


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container["env"]}


def test_the_replicas_name_the_redis_service() -> None:
    state = urlsplit(_env(_container("mockstore"))["MOCKSTORE_STATE"])
    service = BY_NAME["Service", "mockstore-redis"]["spec"]
    assert state.scheme == "redis"
    assert state.hostname == "mockstore-redis"
    assert state.port == service["ports"][0]["port"]
    labels = BY_NAME["Deployment", "mockstore-redis"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()
    [redis_port] = _container("mockstore-redis")["ports"]
    assert service["ports"][0]["targetPort"] == redis_port["name"]


def test_ready_while_redis_answers_alive_whatever_it_does() -> None:
    container = _container("mockstore")
    assert container["readinessProbe"]["httpGet"]["path"] == "/__mockstore/health"
    # /health is 503 while Redis is out of reach: a liveness probe on it would
    # restart every replica during Redis's outage, for nothing.
    assert "httpGet" not in container["livenessProbe"]
    assert container["livenessProbe"]["tcpSocket"]["port"] == container["ports"][0]["name"]


def test_redis_keeps_nothing_on_disk_and_runs_unprivileged() -> None:
    redis = _container("mockstore-redis")
    args = redis["args"]
    assert args[args.index("--save") + 1] == ""
    assert args[args.index("--appendonly") + 1] == "no"
    pod = BY_NAME["Deployment", "mockstore-redis"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert redis["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"cpu", "memory"} <= set(redis["resources"]["limits"])


def test_the_configmap_scenario_is_valid() -> None:
    [(name, text)] = BY_NAME["ConfigMap", "mockstore-scenario"]["data"].items()
    load_scenario(text, f"deploy/kubernetes-shared.yaml ConfigMap {name}")
    [mount] = _container("mockstore")["volumeMounts"]
    assert _env(_container("mockstore"))["MOCKSTORE_SCENARIO"] == f"{mount['mountPath']}/{name}"


def _start(env: dict[str, str], args: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mockstore", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    match = re.search(r"serving (http://[^\s/]+)", first)
    assert match, first
    return process, match.group(1)


def test_two_replicas_as_specified_are_one_mock(redis_server: RedisServer, tmp_path: Path) -> None:
    container = _container("mockstore")
    [(name, text)] = BY_NAME["ConfigMap", "mockstore-scenario"]["data"].items()
    (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    env.update(_env(container))
    env["MOCKSTORE_SCENARIO"] = str(tmp_path / name)  # the mount, here
    env["MOCKSTORE_STATE"] = redis_server.url  # the Service, here
    env["MOCKSTORE_PORT"] = "0"
    replicas = [_start(env, container["args"]) for _ in range(2)]
    try:
        probe = container["readinessProbe"]["httpGet"]["path"]
        for _, url in replicas:
            deadline = time.monotonic() + 60
            while True:
                try:
                    ready = httpx.get(url + probe, timeout=5)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the probe never answered"
                    time.sleep(0.05)
            assert ready.status_code == 200
            assert ready.json()["state"]["reachable"] is True
        (_, one), (_, other) = replicas
        free = {"Authorization": "Bearer free-key"}
        answers = [httpx.get((one, other)[i % 2] + "/v1/pets", headers=free) for i in range(61)]
        # The free plan, once, across both: in each minute window (the clock runs, so
        # the 61 may straddle a minute's turn) 60 admitted, counted down as one.
        windows: dict[str, list[httpx.Response]] = {}
        for answer in answers:
            windows.setdefault(answer.headers["X-RateLimit-Reset"], []).append(answer)
        for window in windows.values():
            admitted = [a for a in window if a.status_code == 200]
            assert window[: len(admitted)] == admitted, [a.status_code for a in window]
            remaining = [int(a.headers["X-RateLimit-Remaining"]) for a in admitted]
            assert remaining == list(range(59, 59 - len(admitted), -1)), remaining
            assert len(admitted) == 60 or len(admitted) == len(window)
        assert [a.status_code for a in answers].count(200) == 60 or len(windows) > 1
        load = {"Authorization": "Bearer load-key-1"}
        pet = httpx.post(one + "/v1/pets", json={"name": "Nova", "categoryId": 1}, headers=load)
        assert pet.status_code == 201
        assert httpx.get(f"{other}/v1/pets/{pet.json()['id']}", headers=load).json() == pet.json()
    finally:
        for process, _ in replicas:
            process.terminate()
        for process, _ in replicas:
            assert process.wait(30) == 0


COMPOSE = ROOT / "examples" / "docker-compose-shared.yml"


def test_the_compose_example_runs_as_compose_would(redis_server: RedisServer) -> None:
    """``examples/docker-compose-shared.yml``: its mockstore service's environment, on a
    real redis-server in place of the ``redis`` service: two workers, one mock."""
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    service = services["mockstore"]
    assert service["depends_on"] == {"redis": {"condition": "service_healthy"}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    env.update(service["environment"])
    state = urlsplit(env["MOCKSTORE_STATE"])
    assert state.hostname == "redis" and state.port == 6379
    host_dir = COMPOSE.parent / service["volumes"][0].split(":")[0]
    env["MOCKSTORE_SCENARIO"] = str(host_dir / env["MOCKSTORE_SCENARIO"].split("/")[-1])
    env["MOCKSTORE_STATE"] = redis_server.url  # the redis service, here
    env["MOCKSTORE_PORT"] = "0"
    env["MOCKSTORE_LOG_FORMAT"] = "text"  # the banner's address, read below
    process, url = _start(env, ["serve"])
    try:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        deadline = time.monotonic() + 60
        while len(children.read_text().split()) < int(env["MOCKSTORE_WORKERS"]):
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        while True:
            try:
                health = httpx.get(url + "/__mockstore/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the health check never answered"
                time.sleep(0.05)
        assert health.status_code == 200
    finally:
        process.terminate()
        assert process.wait(30) == 0
