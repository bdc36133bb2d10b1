"""Progress of a long send: one line rewritten in place on a terminal, periodic lines otherwise.

:class:`Progress` is told every outcome (:meth:`Progress.sent`, :meth:`Progress.failed`) and
decides by itself when to draw, from the clock it is given, so tests drive it with a fake clock
and a ``StringIO``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["TERMINAL_INTERVAL", "TEXT_INTERVAL", "Progress"]

#: Seconds between redraws of the in-place line on a terminal.
TERMINAL_INTERVAL = 0.1
#: Seconds between lines when the output is a file or a pipe.
TEXT_INTERVAL = 5.0


class Progress:
    """Counts of a send run, drawn to ``stream`` now and then.

    Args:
        total: messages to send.
        stream: where to draw (the CLI uses stderr, so stdout stays the results).
        terminal: rewrite one line with ``\\r`` (default: ``stream.isatty()``).
        clock: seconds, monotonic (default :func:`time.monotonic`).
        interval: seconds between draws (default by ``terminal``).
        enabled: draw at all (when not, it only counts).
    """

    def __init__(
        self,
        total: int,
        stream: TextIO,
        *,
        terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float | None = None,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.total = total
        self.stream = stream
        self.terminal = stream.isatty() if terminal is None else terminal
        self.interval = (
            interval if interval is not None else (TERMINAL_INTERVAL if self.terminal else TEXT_INTERVAL)
        )
        self.clock = clock
        self.ok = 0
        self.errors = 0
        self.started = clock()
        self._last_draw = self.started
        self._width = 0

    @property
    def done(self) -> int:
        return self.ok + self.errors

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def rate(self) -> float:
        """Messages sent per second so far (successes only)."""
        elapsed = self.elapsed
        return self.ok / elapsed if elapsed > 0 else 0.0

    def sent(self) -> None:
        self.ok += 1
        self._maybe_draw()

    def failed(self) -> None:
        self.errors += 1
        self._maybe_draw()

    def line(self) -> str:
        """``sent 1200/10000 (12%)  failed 0  3012.5 msg/s  0.4 s``"""
        percent = 100 * self.done // self.total if self.total else 100
        return (
            f"sent {self.ok}/{self.total} ({percent}%)  failed {self.errors}  "
            f"{self.rate:.1f} msg/s  {self.elapsed:.1f} s"
        )

    def _maybe_draw(self) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self._last_draw >= self.interval:
            self._last_draw = now
            self._draw(final=False)

    def finish(self) -> None:
        """Draw the last state and end the line."""
        if self.enabled:
            self._draw(final=True)

    def _draw(self, *, final: bool) -> None:
        text = self.line()
        if self.terminal:
            pad = " " * max(0, self._width - len(text))  # cover a longer previous line
            self._width = len(text)
            self.stream.write(f"\r{text}{pad}" + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
