"""``serve --watch``: reload the scenario file when it changes, keep the running one if it is bad.

The file's directory is watched (``watchfiles``, which uvicorn's own ``--reload``
uses; it comes with ``uvicorn[standard]``), so editors that save by writing a
new file and renaming it over the old one are seen too. So are symbolic links:
the directory of the path as given and the directory of the file it resolves
to are both watched, and resolved again after every change, so a file
replaced by a link, a link moved to another file, and a Kubernetes ConfigMap
update (a new ``..<timestamp>`` directory, then the ``..data`` link swapped to
it and the old directory removed) are each seen, every time.

Each change is read (at most ``MAX_SCENARIO_BYTES``, never the whole of a
larger file), validated and built in a worker thread, off the event loop,
within the memory budget and one build at a time (as ``PUT /scenario``); only
the finished state is put in service, on the loop, in one assignment
(``Runtime.install``), so no request ever sees half a scenario. Every reload
is logged, and so is every refusal: an edit that does not validate (with
every ``file:line:column: path: message``), a file too large, unreadable or
gone, one the memory budget cannot hold; each changes nothing.

With a shared state (``--state``), a valid edit is put in service in every
process, as ``PUT /__mockstore/scenario`` does (``SharedState``): one new
generation, which each process takes before its next answer. Unless it is in
service already: replicas that each watch their copy of one file (a ConfigMap
mounted in every pod) see one edit each, and the first to get there puts it in
service, once; the others find it there and change nothing. While Redis is out
of reach the edit waits: once Redis answers again (asked every
``RETRY_SECONDS``), the file is read again and put in service. ``serve
--workers N`` runs one watcher, in its first worker (``mockstore.cli.serve``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from mockstore.memory import OverBudget, budget_of
from mockstore.scenario import ScenarioError, load_scenario
from mockstore.scenario.loader import priced
from mockstore.scenario.source import ScenarioTooLarge, read_limited
from mockstore.shared.backend import StateUnavailable
from mockstore.state import Prepared, Runtime, release

log = logging.getLogger("mockstore.watch")

# How often an edit that waits for the shared state asks whether Redis answers again.
RETRY_SECONDS = 1.0


class ScenarioWatcher:
    """Watches one scenario file for a ``Runtime``; ``run()`` is the background task."""

    def __init__(self, runtime: Runtime, path: Path, *, display: str | None = None) -> None:
        self.runtime = runtime
        self.path = path
        self.display = display or str(path)
        # What is in service, so a save that changes nothing reloads nothing.
        self._text: str | None = runtime.scenario.source
        self.reloads = 0
        # True while a valid edit waits for the shared state to be reachable again.
        self.waiting = False

    def watched(self) -> tuple[Path, ...]:
        """The directories to watch: the path's own, and its resolved target's (if elsewhere)."""
        given = Path(os.path.abspath(self.path)).parent
        folders = [given]
        with contextlib.suppress(OSError, RuntimeError):
            target = self.path.resolve().parent
            if target != given and target.is_dir():
                folders.append(target)
        return tuple(folders)

    def _ours(self, folders: tuple[Path, ...]) -> object:
        """Which changes concern the file: its name, a ConfigMap's ``..`` links, its target."""
        name = self.path.name
        given = folders[0]
        try:
            target: Path | None = self.path.resolve()
        except (OSError, RuntimeError):
            target = None

        def ours(change: object, changed: str) -> bool:
            where = Path(changed)
            if where.parent == given and (where.name == name or where.name.startswith("..")):
                return True
            return where == target

        return ours

    async def run(self) -> None:
        from watchfiles import awatch

        log.info("watching %s for changes", self.display)
        caught_up = False
        while True:
            folders = self.watched()
            # Not recursive: the file's siblings' subtrees are not ours.
            changes = awatch(
                *folders,
                watch_filter=self._ours(folders),  # type: ignore[arg-type]
                debounce=200,
                step=50,
                recursive=False,
                # An empty set every RETRY_SECONDS without a change: the time to try
                # again an edit that waits for the shared state.
                rust_timeout=int(RETRY_SECONDS * 1000),
                yield_on_timeout=True,
            )
            try:
                async for changed in changes:
                    if not changed and not caught_up:
                        # The first tick, once the watch is in place: the file as it is.
                        caught_up = True
                        await self._catch_up()
                        continue
                    if not changed and not await self._try_again():
                        continue
                    try:
                        await self.reload()
                    except Exception:  # a bug in a reload must not end the watching
                        log.exception(
                            "reloading %s failed; the running scenario stays", self.display
                        )
                    if self.watched() != folders:
                        break  # a link now leads elsewhere: watch where it leads
                else:
                    return
            except (OSError, RuntimeError) as exc:
                # A directory went away (a ConfigMap's old one): watch what is there now.
                if self.watched() == folders:
                    log.error(
                        "no longer watching %s (%s); the running scenario stays",
                        self.display,
                        exc,
                    )
                    return
                log.info("%s now leads elsewhere; watching there (%s)", self.display, exc)

    async def _catch_up(self) -> None:
        """The file as it is once the watch is in place: an edit made while nothing watched
        it (before, or while a worker started again in place of the watching one that
        died) is put in service."""
        try:
            text = await asyncio.to_thread(read_limited, self.path)
        except (OSError, UnicodeDecodeError, ScenarioTooLarge):
            return  # said by the reload that the next change makes
        if text != self._text:
            try:
                await self.reload()
            except Exception:
                log.exception("reloading %s failed; the running scenario stays", self.display)

    async def _try_again(self) -> bool:
        """True when an edit waits for the shared state, and it answers again."""
        shared = self.runtime.shared
        return self.waiting and shared is not None and await shared.ping()

    async def reload(self) -> bool:
        """Read the file again and put it in service if it is valid; True if it was."""
        retrying, self.waiting = self.waiting, False
        serving = self.runtime.scenario.name
        try:
            text = await asyncio.to_thread(read_limited, self.path)
        except FileNotFoundError:
            log.warning("%s is gone; still serving scenario %r", self.display, serving)
            return False
        except ScenarioTooLarge as exc:
            log.warning("%s changed, but %s; still serving scenario %r", self.display, exc, serving)
            return False
        except (OSError, UnicodeDecodeError) as exc:
            log.warning(
                "%s cannot be read (%s); still serving scenario %r", self.display, exc, serving
            )
            return False
        if text == self._text:
            log.debug("%s changed on disk but not in content; nothing to reload", self.display)
            return False
        try:
            prepared = await asyncio.to_thread(self._build, text)
        except ScenarioError as exc:
            lines = "\n".join(f"  {problem}" for problem in exc.problems)
            log.warning(
                "%s changed but is not valid; still serving scenario %r:\n%s",
                self.display,
                serving,
                lines,
            )
            return False
        except OverBudget as exc:
            log.warning(
                "%s changed, but the memory budget cannot hold it (%s); still serving scenario %r",
                self.display,
                exc,
                serving,
            )
            return False
        shared = self.runtime.shared
        if shared is None:
            replaced: Prepared | None = self.runtime.install(prepared)
        else:
            try:
                replaced = await shared.install_unless_serving(prepared)
            except StateUnavailable as exc:
                prepared.discard()
                self.waiting = True
                log.log(
                    logging.DEBUG if retrying else logging.WARNING,
                    "%s changed, but the shared state cannot take it (%s); still serving "
                    "scenario %r; it is tried again once the shared state answers",
                    self.display,
                    exc,
                    serving,
                )
                return False
        self._text = text
        self.reloads += 1
        if replaced is None:  # another process put this very text in service first
            prepared.discard()
            log.info(
                "%s changed: scenario %r is in service already (put there by another process)",
                self.display,
                prepared.scenario.name,
            )
            return True
        # The replaced state is freed in a worker too (see ``state.release``).
        await asyncio.to_thread(release, [replaced])
        where = " in every process" if shared is not None else ""
        log.info(
            "%s changed: now serving scenario %r%s", self.display, prepared.scenario.name, where
        )
        return True

    def _build(self, text: str) -> Prepared:
        budget = budget_of(self.runtime.account)
        if budget is None:
            return self.runtime.prepare(load_scenario(text, self.display))
        with budget.building(f"reloading {self.display}") as share, priced(share):
            return self.runtime.prepare(load_scenario(text, self.display))
