"""Progress of long work (``check``, ``bench``, ``convert``, ``cts``) for a person watching.

Shown on stderr, rewriting one line, only when stdout is a terminal: piped or redirected
output stays exactly the report.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``step("converting")`` or ``count(3, 20)`` rewrites the progress line; ``done()``
    clears it. Does nothing unless stdout is a terminal (or ``enabled`` says otherwise)."""

    def __init__(self, label: str, *, enabled: bool | None = None,
                 stream: TextIO | None = None):
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = sys.stdout.isatty() if enabled is None else enabled
        self.start = time.perf_counter()
        self._width = 0

    def step(self, text: str) -> None:
        self._show(f"{self.label}: {text}")

    def count(self, done: int, total: int | None = None, text: str = "") -> None:
        of = f"/{total}" if total else ""
        self._show(f"{self.label}: {done}{of}{' ' + text if text else ''}")

    def done(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def _show(self, line: str) -> None:
        if not self.enabled:
            return
        line = f"{line} ({time.perf_counter() - self.start:.0f} s)"
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = max(self._width, len(line))

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.done()
