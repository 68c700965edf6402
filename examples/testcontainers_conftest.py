"""conftest.py: start mockstore with Testcontainers and hand it to the mockstore plugin.

Needs Docker and ``pip install testcontainers`` (4.x). Every fixture of the plugin
(``mockstore``, the ``mockstore_scenario`` marker, ...) then runs against the container.
"""

from collections.abc import Iterator

import pytest
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import HttpWaitStrategy

IMAGE = "mockstore:0.1.0"  # built from mockstore's Dockerfile


@pytest.fixture(scope="session")
def mockstore_url() -> Iterator[str]:
    container = (
        DockerContainer(IMAGE)
        .with_env("MOCKSTORE_SCENARIO", "default")
        .with_env("MOCKSTORE_LOG_FORMAT", "json")
        .with_exposed_ports(8080)
        .waiting_for(
            HttpWaitStrategy(8080, "/__mockstore/health")
            .for_status_code(200)
            .with_startup_timeout(30)
        )
    )
    with container:
        host = container.get_container_host_ip()
        port = container.get_exposed_port(8080)
        yield f"http://{host}:{port}"
