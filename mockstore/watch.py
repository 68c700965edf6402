"""``serve --watch``: reload the scenario file when it changes, keep the running one if it is bad.

The file's directory is watched (``watchfiles``, which uvicorn's own ``--reload``
uses; it comes with ``uvicorn[standard]``), so editors that save by writing a
new file and renaming it over the old one are seen too. Each change is read,
validated and built in a worker thread, off the event loop; only the finished
state is put in service, on the loop, in one assignment (``Runtime.install``),
so no request ever sees half a scenario. An edit that does not validate is
logged with every ``file:line:column: path: message`` and changes nothing; a
file that disappears is reported and the running scenario stays.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from mockstore.scenario import ScenarioError, load_scenario
from mockstore.state import Prepared, Runtime, release

log = logging.getLogger("mockstore.watch")


class ScenarioWatcher:
    """Watches one scenario file for a ``Runtime``; ``run()`` is the background task."""

    def __init__(self, runtime: Runtime, path: Path, *, display: str | None = None) -> None:
        self.runtime = runtime
        self.path = path
        self.display = display or str(path)
        # What is in service, so a save that changes nothing reloads nothing.
        self._text: str | None = runtime.scenario.source
        self.reloads = 0

    async def run(self) -> None:
        from watchfiles import awatch

        target = self.path.resolve()
        directory = target.parent

        def ours(change: object, changed: str) -> bool:
            return Path(changed).resolve() == target

        log.info("watching %s for changes", self.display)
        # The directory, not the file: an editor's rename over the file is a change
        # to the directory. Not recursive: the file's siblings' subtrees are not ours.
        changes = awatch(directory, watch_filter=ours, debounce=200, step=50, recursive=False)
        try:
            async for _ in changes:
                try:
                    await self.reload()
                except Exception:  # a bug in a reload must not end the watching
                    log.exception("reloading %s failed; the running scenario stays", self.display)
        except (OSError, RuntimeError) as exc:  # the directory went away, the watcher broke
            log.error("no longer watching %s (%s); the running scenario stays", self.display, exc)

    async def reload(self) -> bool:
        """Read the file again and put it in service if it is valid; True if it was."""
        try:
            text = await asyncio.to_thread(self.path.read_text, encoding="utf-8")
        except FileNotFoundError:
            log.warning(
                "%s is gone; still serving scenario %r",
                self.display,
                self.runtime.scenario.name,
            )
            return False
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("%s cannot be read (%s); the running scenario stays", self.display, exc)
            return False
        if text == self._text:
            return False
        try:
            prepared = await asyncio.to_thread(self._build, text)
        except ScenarioError as exc:
            lines = "\n".join(f"  {problem}" for problem in exc.problems)
            log.warning(
                "%s changed but is not valid; still serving scenario %r:\n%s",
                self.display,
                self.runtime.scenario.name,
                lines,
            )
            return False
        # The replaced state is freed in a worker too (see ``state.release``).
        await asyncio.to_thread(release, [self.runtime.install(prepared)])
        self._text = text
        self.reloads += 1
        log.info("%s changed: now serving scenario %r", self.display, prepared.scenario.name)
        return True

    def _build(self, text: str) -> Prepared:
        return self.runtime.prepare(load_scenario(text, self.display))
