"""``mockstore serve --scenario FILE --watch``: edits take effect; a bad edit changes nothing.

Through the CLI (the option is the CLI's), waiting for conditions with generous
deadlines, never for a time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support import LiveServer, live_server, mock_server

FIRST = """\
version: 1
name: first
keys: [{key: watch-key, plan: pro}]
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
SECOND = FIRST.replace("name: first", "name: second").replace("Rex", "Bella")
BROKEN = SECOND.replace("name: second", "name: broken").replace("plan: pro", "plan: platinum")


def _until(condition: Callable[[], bool], what: str, server: LiveServer | None = None) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    log = server.log() if server is not None else ""
    raise AssertionError(f"never happened: {what}\n{log}")


def _scenario(server: LiveServer) -> str:
    return httpx.get(server.control_url + "/health", timeout=10).json()["scenario"]


def _names(server: LiveServer) -> list[str]:
    answer = httpx.get(
        server.api + "/pets", headers={"Authorization": "Bearer watch-key"}, timeout=10
    )
    return [p["name"] for p in answer.json()]


def _replace(path: Path, text: str) -> None:
    """Save as editors do: a new file renamed over the old one."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def test_an_edit_takes_effect_and_a_bad_one_is_reported_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    with live_server("--scenario", str(path), "--watch") as server:
        assert _scenario(server) == "first" and _names(server) == ["Rex"]

        path.write_text(SECOND)  # written in place
        _until(lambda: _scenario(server) == "second", "the edit is served", server)
        assert _names(server) == ["Bella"]

        _replace(path, BROKEN)  # renamed over it, and invalid
        column = BROKEN.splitlines()[2].index("platinum") + 1
        problem = f"{path}:3:{column}: $.keys[0].plan: unknown plan 'platinum'"
        _until(lambda: problem in server.log(), "the bad edit is reported", server)
        assert "still serving scenario 'second'" in server.log()
        assert _scenario(server) == "second" and _names(server) == ["Bella"]

        _replace(path, FIRST)
        _until(lambda: _scenario(server) == "first", "the fixed file is served", server)
        assert _names(server) == ["Rex"]


def test_a_reload_keeps_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    with mock_server(path, watch=True) as server:
        assert _names(server) == ["Rex"]
        path.write_text(SECOND)
        _until(lambda: _scenario(server) == "second", "the edit is served")
        requests = httpx.get(server.control_url + "/requests", timeout=10).json()["entries"]
        assert [e["operation"] for e in requests] == ["listPets"]


@pytest.mark.parametrize("scenario", ["default", "version: 1\nname: inline\n"])
def test_watch_needs_a_file(scenario: str) -> None:
    from mockstore.cli.main import main

    assert main(["serve", "--scenario", scenario, "--watch", "--port", "0"]) == 2
    with pytest.raises(ValueError, match="needs a scenario file"):
        mock_server(scenario, watch=True).__enter__()


# -- issue 19, finding 9: symbolic links and ConfigMaps; every reload and refusal logged


def test_a_file_replaced_by_a_link_to_another_is_reloaded_and_logged(tmp_path: Path) -> None:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    elsewhere = tmp_path / "versions"
    elsewhere.mkdir()
    (elsewhere / "second.yaml").write_text(SECOND)
    with live_server("--scenario", str(path), "--watch", "--log-level", "info") as server:
        _until(lambda: "watching" in server.log(), "the watch begins", server)
        link = tmp_path / "link.tmp"
        link.symlink_to(elsewhere / "second.yaml")
        os.replace(link, path)
        _until(lambda: _scenario(server) == "second", "the link's file is served", server)
        # The log line is written after the swap; wait for it rather than race it.
        _until(
            lambda: "changed: now serving scenario 'second'" in server.log(),
            "the reload is logged",
            server,
        )
        # The file the link leads to is watched too: editing it reloads.
        (elsewhere / "second.yaml").write_text(FIRST)
        _until(lambda: _scenario(server) == "first", "the linked file's edit is served", server)


def _configmap_update(folder: Path, text: str, serial: int) -> None:
    """What the kubelet does to a mounted ConfigMap: a new directory, then one link swapped."""
    version = folder / f"..2026_11_25_00_00_{serial:02d}.000000000"
    version.mkdir()
    (version / "scenario.yaml").write_text(text)
    swap = folder / "..data_tmp"
    swap.symlink_to(version.name)
    old = (folder / "..data").resolve() if (folder / "..data").exists() else None
    os.replace(swap, folder / "..data")
    if old is not None:
        for item in old.iterdir():
            item.unlink()
        old.rmdir()


def test_every_configmap_update_is_reloaded(tmp_path: Path) -> None:
    folder = tmp_path / "config"
    folder.mkdir()
    _configmap_update(folder, FIRST, 0)
    (folder / "scenario.yaml").symlink_to("..data/scenario.yaml")
    path = folder / "scenario.yaml"
    names = ["first", "second", "third", "fourth"]
    with live_server("--scenario", str(path), "--watch", "--log-level", "info") as server:
        _until(lambda: "watching" in server.log(), "the watch begins", server)
        for serial, name in enumerate(names[1:], start=1):
            _configmap_update(folder, FIRST.replace("name: first", f"name: {name}"), serial)
            _until(lambda n=name: _scenario(server) == n, f"update {serial} is served", server)
            # The log line is written after the swap; wait for it rather than race it.
            _until(
                lambda n=name: f"changed: now serving scenario '{n}'" in server.log(),
                f"update {serial} is logged",
                server,
            )


def test_every_refusal_is_logged(tmp_path: Path) -> None:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    with live_server("--scenario", str(path), "--watch", "--log-level", "info") as server:
        _until(lambda: "watching" in server.log(), "the watch begins", server)
        _replace(path, "version: 1\nname: [unclosed\n")
        _until(lambda: "is not valid; still serving scenario 'first'" in server.log(), "invalid")
        path.write_bytes(b"version: 1\nname: \xff\n")
        _until(lambda: "cannot be read" in server.log(), "not UTF-8 is reported", server)
        path.unlink()
        _until(lambda: "is gone; still serving scenario 'first'" in server.log(), "gone", server)
        path.write_text(SECOND)
        _until(lambda: _scenario(server) == "second", "it comes back", server)
