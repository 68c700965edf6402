"""``deploy/kubernetes.yaml``: valid Kubernetes (``kubernetes-validate``, strict), and what it
promises: probes on the health endpoint, non-root, resource limits, a scenario that loads.
No cluster runs here, so the pod's container is started as its spec says, and probed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import kubernetes_validate
import pytest
import yaml

from mockstore.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "deploy" / "kubernetes.yaml"
DOCUMENTS = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
BY_KIND = {d["kind"]: d for d in DOCUMENTS}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d["kind"])
def test_each_resource_is_valid_kubernetes(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_the_validation_catches_a_mistake() -> None:
    """The check above can fail: a misspelt field is refused."""
    broken = yaml.safe_load(yaml.safe_dump(BY_KIND["Deployment"]))
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, kubernetes_validate.latest_version(), strict=True)


def test_it_holds_a_deployment_a_service_and_a_configmap() -> None:
    assert sorted(BY_KIND) == ["ConfigMap", "Deployment", "Service"]


def _container() -> dict[str, Any]:
    [container] = BY_KIND["Deployment"]["spec"]["template"]["spec"]["containers"]
    return container


def test_probes_ask_the_health_endpoint_on_the_served_port() -> None:
    container = _container()
    [port] = container["ports"]
    for probe in ("readinessProbe", "livenessProbe"):
        check = container[probe]["httpGet"]
        assert check["path"] == "/__mockstore/health"
        assert check["port"] == port["name"]
    assert port["containerPort"] == 8080
    service = BY_KIND["Service"]["spec"]
    assert service["ports"][0]["targetPort"] == port["name"]
    labels = BY_KIND["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()


def test_it_runs_as_the_image_user_never_root_with_limits() -> None:
    pod = BY_KIND["Deployment"]["spec"]["template"]["spec"]
    container = _container()
    dockerfile = (ROOT / "Dockerfile").read_text()
    image_user = re.search(r"^USER (\d+):(\d+)$", dockerfile, re.MULTILINE)
    assert image_user is not None
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert str(pod["securityContext"]["runAsUser"]) == image_user.group(1)
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"]["drop"] == ["ALL"]
    limits = container["resources"]["limits"]
    assert {"cpu", "memory"} <= set(limits)
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])


def test_the_configmap_scenario_is_valid_and_isolates_keys() -> None:
    [(name, text)] = BY_KIND["ConfigMap"]["data"].items()
    scenario = load_scenario(text, f"deploy/kubernetes.yaml ConfigMap {name}")
    assert scenario.isolation == "per_key"
    env = {e["name"]: e["value"] for e in _container()["env"]}
    [mount] = _container()["volumeMounts"]
    assert env["MOCKSTORE_SCENARIO"] == f"{mount['mountPath']}/{name}"


def test_the_container_starts_as_specified_and_passes_its_probes(tmp_path: Path) -> None:
    """The pod's container, as the spec says (env, args, the ConfigMap as a file), on a
    free port instead of 8080; its readiness probe's request answers 200."""
    container = _container()
    [(name, text)] = BY_KIND["ConfigMap"]["data"].items()
    (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    env.update({e["name"]: e["value"] for e in container["env"]})
    env["MOCKSTORE_SCENARIO"] = str(tmp_path / name)  # the mount, here
    env["MOCKSTORE_PORT"] = "0"
    command = [sys.executable, "-m", "mockstore", *container["args"]]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        match = re.search(r"serving (http://[^\s/]+)", first)
        assert match, first
        probe = container["readinessProbe"]["httpGet"]["path"]
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.get(match.group(1) + probe, timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the probe never answered"
                time.sleep(0.05)
        assert answer.status_code == 200
        assert answer.json()["scenario"] == "load-test"
    finally:
        process.terminate()
        assert process.wait(30) == 0


def test_the_memory_budget_and_its_allowance_fit_the_memory_limit() -> None:
    # The process may hold its budget plus the documented allowance: no more
    # than the container may have, or the kernel kills it before a 507 is said.
    from mockstore.memory import parse_size
    from tests.attacks import ALLOWANCE

    container = _container()
    env = {item["name"]: item["value"] for item in container["env"]}
    limit = parse_size(container["resources"]["limits"]["memory"].removesuffix("i"))
    assert parse_size(env["MOCKSTORE_MEMORY_BUDGET"]) + ALLOWANCE <= limit
