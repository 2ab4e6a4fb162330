"""Stage lines on stderr while a command works (`[  3.2 s] figures: 42 to draw on 2 workers`), flushed
at once so a log file or a terminal shows where a long run is."""

from __future__ import annotations

import sys
import time


class Stages:
    def __init__(self, command: str, stream=None):
        self.command, self.stream, self.started = command, stream, time.monotonic()

    def __call__(self, text: str) -> None:
        stream = self.stream or sys.stderr
        print(f"{self.command} [{time.monotonic() - self.started:6.1f} s] {text}", file=stream, flush=True)
