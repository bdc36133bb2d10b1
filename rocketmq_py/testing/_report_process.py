"""A child process that reports what it does as JSON lines on stdout (tests' consumer processes).

``integration/_consumer_proc.py`` prints one JSON object per event (``started``, ``owned``,
``consumed``, ``stopped``, ...). :class:`ReportingProcess` reads them in a task, keeps the client id
and whether the child stopped cleanly, and hands every report to :meth:`ReportingProcess.on_report`,
which a test's subclass overrides to keep what it checks.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import trio

__all__ = ["ReportingProcess"]


@dataclass
class ReportingProcess:
    """One reporting child process; stop it with :meth:`stop` (clean) or :meth:`close` (kill)."""

    process: trio.Process
    client_id: str | None = None
    stopped: bool = False
    done: trio.Event = field(default_factory=trio.Event)

    @classmethod
    async def start(cls, argv: Sequence[str], nursery: trio.Nursery, **fields: Any) -> Self:
        """Start ``argv`` with piped stdin/stdout and read its reports in ``nursery``."""
        process = await trio.lowlevel.open_process(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        child = cls(process, **fields)
        nursery.start_soon(child.read_reports)
        return child

    async def read_reports(self) -> None:
        assert self.process.stdout is not None
        buffer = b""
        try:
            while chunk := await self.process.stdout.receive_some():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    report = json.loads(line)
                    event = report["event"]
                    if event == "started":
                        self.client_id = report["client_id"]
                    elif event == "stopped":
                        self.stopped = True
                    self.on_report(report)
        finally:
            self.done.set()

    def on_report(self, report: dict[str, Any]) -> None:
        """One report of the child (``started`` and ``stopped`` included); nothing by default."""

    async def stop(self, *, sigterm: bool = False) -> None:
        """Close its stdin (or send SIGTERM): the child shuts down cleanly, reports ``stopped`` and exits 0."""
        assert self.process.stdin is not None
        if sigterm:
            self.process.send_signal(signal.SIGTERM)
        else:
            await self.process.stdin.aclose()
        with trio.fail_after(30):
            await self.process.wait()
            await self.done.wait()
        assert self.process.returncode == 0
        assert self.stopped

    async def close(self) -> None:
        """Kill it if it still runs, and release its pipes."""
        if self.process.returncode is None:
            self.process.kill()
        with trio.move_on_after(10):
            await self.done.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                await stream.aclose()
        await self.process.wait()
