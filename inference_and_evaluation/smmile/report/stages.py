"""Stage lines (logged: stderr) while a command works (`[  3.2 s] figures: 42 to draw on 2 workers`), so a log
file or a terminal shows where a long run is."""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


class Stages:
    def __init__(self, command: str):
        self.command, self.started = command, time.monotonic()

    def __call__(self, text: str) -> None:
        log.info(f"{self.command} [{time.monotonic() - self.started:6.1f} s] {text}")
