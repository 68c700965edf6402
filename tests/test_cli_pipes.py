"""Every command: --help documents every option and the exit statuses; a closed output pipe
ends it quietly (``mockstore schema | head``), with exit status 141 as for SIGPIPE."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from mockstore.cli import main
from mockstore.cli.args import PIPE_CLOSED
from mockstore.scenario import bundled_names
from tests.support import mock_server

# The public registry: every command's name, its module imported through main.command().
EXIT_CODES = {name: main.command(name).EXIT_CODES for name in main.COMMAND_NAMES}
COMMANDS = sorted(EXIT_CODES)


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = main.build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    return subprocess.run(
        [sys.executable, "-m", "mockstore", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        **kwargs,  # type: ignore[arg-type]
    )


def test_every_command_is_covered() -> None:
    assert sorted(_subparsers()) == COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_help_documents_every_option_and_the_exit_statuses(command: str) -> None:
    parser = _subparsers()[command]
    result = _cli(command, "--help")
    assert result.returncode == 0
    text = result.stdout
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help and action.help != argparse.SUPPRESS, f"{command}: {action.dest}"
        for option in action.option_strings or [action.metavar or action.dest]:
            assert str(option) in text, f"{command} --help does not show {option}"
    assert "exit status:" in text
    for line in EXIT_CODES[command]:
        assert line.strip() in text
    assert f"{PIPE_CLOSED}  its output pipe closed early" in text


def test_the_top_level_help_has_exit_statuses() -> None:
    result = _cli("--help")
    assert result.returncode == 0
    assert "exit status:" in result.stdout


@contextmanager
def _closed_pipe() -> Iterator[int]:
    """The write end of a pipe whose reader is already gone: every write fails (EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        yield write
    finally:
        os.close(write)


def _run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    with _closed_pipe() as broken:
        return subprocess.run(
            [sys.executable, "-m", "mockstore", *args],
            stdout=broken,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env=env,
        )


@pytest.mark.parametrize(
    "args",
    [
        ["schema"],
        ["openapi"],
        ["scenarios"],
        ["validate", *bundled_names()],
    ],
    ids=lambda a: a[0],
)
def test_a_closed_pipe_ends_a_command_quietly(args: list[str]) -> None:
    result = _run_into_closed_pipe(*args)
    assert result.returncode == PIPE_CLOSED, result.stderr
    assert result.stderr == "", "no traceback, no 'Exception ignored' line"


def test_a_closed_pipe_ends_report_and_replay_quietly(tmp_path: Path) -> None:
    with mock_server() as server:
        httpx.get(server.api + "/pets", headers={"Authorization": "Bearer pro-key"})
        har = tmp_path / "session.har"
        har.write_text(httpx.get(server.control_url + "/requests.har").text)
        report = _run_into_closed_pipe("report", "--url", server.url, "--format", "json")
    assert (report.returncode, report.stderr) == (PIPE_CLOSED, "")
    replay = _run_into_closed_pipe("replay", str(har))
    assert replay.returncode == PIPE_CLOSED and "Traceback" not in replay.stderr


def test_serve_stops_quietly_when_nobody_reads_its_log() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "mockstore", "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    assert "serving http://" in first, first
    url = first.split("serving ", 1)[1].split("/v1")[0]
    process.stderr.close()  # `| head -1`: the reader is gone
    # Each request writes an access line, into the closed pipe: the server stops.
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        with suppress(httpx.TransportError):
            httpx.get(url + "/v1/pets", headers={"Authorization": "Bearer pro-key"}, timeout=5)
        time.sleep(0.05)
    if process.poll() is None:
        process.kill()
    assert process.wait(30) == PIPE_CLOSED
