"""The ``mockstore`` command as a newcomer meets it: version, help, and errors that explain."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.cli.main import main
from mockstore.scenario import bundled_names
from mockstore.scenario.source import ONE_LINE_YAML
from tests.support import PATIENT, assert_conforms, examples, live_server

MOCKSTORE = Path(sys.executable).parent / "mockstore"  # the console script pip installed


def run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """``mockstore ARGS`` to completion (the commands here never start serving)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    return subprocess.run(
        [str(MOCKSTORE), *args],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"mockstore {version('mockstore')}"
    module = subprocess.run(
        [sys.executable, "-m", "mockstore", "--version"], capture_output=True, text=True
    )
    assert module.stdout == result.stdout


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"]])
def test_help_shows_examples(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 0
    assert "examples:" in result.stdout
    examples = result.stdout.split("examples:", 1)[1]
    assert "mockstore serve --port 9000 --scenario flaky-create" in examples
    assert "MOCKSTORE_SCENARIO=" in examples


def test_the_overview_shows_a_few_commands_and_where_to_learn_more() -> None:
    examples = run("--help").stdout.split("examples:", 1)[1]
    assert "mockstore validate" in examples
    assert "mockstore COMMAND --help" in examples


@pytest.mark.parametrize(
    "command", ["serve", "validate", "report", "replay", "record", "drift", "calibrate"]
)
def test_each_command_shows_only_its_own_examples(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0
    examples = result.stdout.split("examples:", 1)[1].split("exit status:", 1)[0]
    shown = {
        line.split("mockstore ", 1)[1].split()[0]
        for line in examples.splitlines()
        if "mockstore " in line
    }
    assert shown == {command}, examples


def test_serve_help_names_the_environment_variables() -> None:
    text = run("serve", "--help").stdout
    for name in ("MOCKSTORE_SCENARIO", "MOCKSTORE_CONTROL_TOKEN"):
        assert name in text
    assert "0 picks a free one" in text


def test_no_command_prints_help_and_exits_2() -> None:
    result = run()
    assert result.returncode == 2
    assert "usage: mockstore" in result.stdout
    assert "serve" in result.stdout


def test_port_in_use_is_explained() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        result = run("serve", "--port", str(port))
    assert result.returncode == 1
    assert_no_traceback(result)
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "--port" in result.stderr and "0 picks a free one" in result.stderr
    assert "serving" not in result.stderr


def test_an_address_that_cannot_be_had_is_explained() -> None:
    result = run(
        "serve", "--host", "203.0.113.7", "--port", "0", "--control-token", "t0ken"
    )  # TEST-NET-3, never local
    assert result.returncode == 1
    assert_no_traceback(result)
    assert "cannot listen on 203.0.113.7:0" in result.stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_scenario_not_found_lists_the_bundled_ones(how: str) -> None:
    if how == "flag":
        result = run("serve", "--scenario", "flakey-create")
    else:
        result = run("serve", env={"MOCKSTORE_SCENARIO": "flakey-create"})
    assert result.returncode == 1
    assert_no_traceback(result)
    assert "scenario 'flakey-create' not found" in result.stderr
    assert "(did you mean 'flaky-create'?)" in result.stderr
    listed = result.stderr.rsplit("bundled: ", 1)[1].strip().removesuffix("; not starting")
    assert listed.split(", ") == bundled_names()


# A name is looked up as a file, then as a bundled scenario: anything else (that is
# not one line of YAML) is refused as not found with the whole list, never a
# traceback and never a half-started server.
scenario_names = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=30
).filter(
    lambda n: (
        n.strip()
        and n.strip().removesuffix(".yaml") not in bundled_names()
        and not Path(n.strip()).exists()
        and not ONE_LINE_YAML.match(n)
    )
)


@settings(max_examples=examples(40), deadline=None)
@given(name=scenario_names)
def test_any_unknown_scenario_name_is_refused_with_the_list(name: str) -> None:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["serve", f"--scenario={name}", "--log-level", "warning"])
    assert code == 1
    text = err.getvalue()
    assert "not found" in text and "not starting" in text
    assert (
        text.rstrip()
        .removesuffix("; not starting")
        .endswith("bundled: " + ", ".join(bundled_names()))
    )


def test_invalid_scenario_file_exits_with_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        "version: 1\n"
        "name: broken\n"
        "keys:\n"
        "  - {key: k, plan: gold}\n"
        "faults:\n"
        "  - match: {operation: createPet, probabilty: 0.5}\n"
        "    respond: {status: 503}\n"
    )
    result = run("serve", "--scenario", str(path))
    assert result.returncode == 1
    assert_no_traceback(result)
    assert "the scenario is not valid; not starting" in result.stderr
    problems = [line.strip() for line in result.stderr.splitlines() if line.startswith("  ")]
    assert len(problems) >= 2
    for problem in problems:
        assert re.match(rf"{re.escape(str(path))}:\d+:\d+: \$[.\w\[\]]*: .+", problem), problem
    text = "\n".join(problems)
    # Every problem at once, each at the position of the node it is about.
    assert f"{path}:4:20: $.keys[0].plan: unknown plan 'gold'" in text
    assert f"{path}:6:35: $.faults[0].match.probabilty: unknown key 'probabilty'" in text
    assert "did you mean 'probability'?" in text
    assert "serving" not in result.stderr


def test_a_yaml_syntax_error_has_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "syntax.yaml"
    path.write_text("version: 1\nkeys: [{key: k, plan: free}\nname: x\n")
    result = run("serve", "--scenario", str(path))
    assert result.returncode == 1
    assert_no_traceback(result)
    assert f"{path}:3:1: $: YAML syntax error: expected ',' or ']'" in result.stderr


INLINE = """\
version: 1
name: inline
keys:
  - {key: inline-key, plan: business}
pets:
  - {id: 42, name: Inline, categoryId: 9, status: sold}
"""


def test_inline_scenario_from_the_environment() -> None:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": INLINE}) as server:
        with server.client() as client:
            assert client.get("/__mockstore/health").json()["scenario"] == "inline"
            response = client.get("/v1/pets", headers={"Authorization": "Bearer inline-key"})
            assert assert_conforms(response) == [
                {"id": 42, "name": "Inline", "categoryId": 9, "status": "sold"}
            ]
            assert response.headers["x-ratelimit-limit"] == "1000"
        assert "scenario: inline (MOCKSTORE_SCENARIO_YAML)" in server.log()


def test_an_invalid_inline_scenario_is_refused() -> None:
    result = run("serve", env={"MOCKSTORE_SCENARIO_YAML": INLINE.replace("business", "gold")})
    assert result.returncode == 1
    assert_no_traceback(result)
    assert "MOCKSTORE_SCENARIO_YAML:4:" in result.stderr
    assert "unknown plan 'gold'" in result.stderr


def test_a_named_scenario_wins_over_the_inline_one() -> None:
    env = {"MOCKSTORE_SCENARIO_YAML": INLINE, "MOCKSTORE_SCENARIO": "empty-store"}
    if "empty-store" not in bundled_names():
        env["MOCKSTORE_SCENARIO"] = "default"
    with live_server(env=env) as server, server.client() as client:
        assert client.get("/__mockstore/health").json()["scenario"] == env["MOCKSTORE_SCENARIO"]


def test_the_environment_sets_host_port_and_log_level() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    env = {
        **clean,
        "MOCKSTORE_HOST": "127.0.0.1",
        "MOCKSTORE_PORT": str(port),
        "MOCKSTORE_LOG_LEVEL": "warning",
        "MOCKSTORE_CONTROL_TOKEN": "t0ken",
    }
    process = subprocess.Popen(
        [str(MOCKSTORE), "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert f"serving http://127.0.0.1:{port}/v1" in first
        banner = [process.stderr.readline() for _ in range(5)]
        assert any("token required" in line for line in banner)
        assert not any("t0ken" in line for line in banner), "the token is never printed"
        # Until a deadline, not for a count of tries (300 x 50 ms gave a loaded machine 15 s
        # to start the server); each try as patient (a slow answer is no failure).
        deadline = time.monotonic() + PATIENT
        while True:
            try:
                url = f"http://127.0.0.1:{port}/__mockstore/health"
                health = httpx.get(url, timeout=PATIENT)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server never answered its health check"
                time.sleep(0.05)
        assert health.status_code == 200
        keys = httpx.get(f"http://127.0.0.1:{port}/__mockstore/keys", timeout=5)
        assert keys.status_code == 401
    finally:
        process.terminate()
        process.wait(10)


def test_a_bad_port_in_the_environment_is_explained() -> None:
    result = run("serve", env={"MOCKSTORE_PORT": "eighty"})
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "not a port number: 'eighty' (from --port or MOCKSTORE_PORT)" in result.stderr


def test_a_port_out_of_range_is_explained() -> None:
    result = run("serve", "--port", "99999")
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "--port: 99999 is not a TCP port" in result.stderr


def test_a_bad_log_level_in_the_environment_is_explained() -> None:
    result = run("serve", env={"MOCKSTORE_LOG_LEVEL": "verbose"})
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "'verbose' is not one of debug, info, warning, error" in result.stderr
    assert "MOCKSTORE_LOG_LEVEL" in result.stderr


def test_the_version_works_whatever_the_environment() -> None:
    result = run("--version", env={"MOCKSTORE_PORT": "eighty", "MOCKSTORE_LOG_LEVEL": "loud"})
    assert result.returncode == 0
    assert_no_traceback(result)
