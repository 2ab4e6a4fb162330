"""The one channel for diagnostics is ``logging`` (a logger per module, under ``smmile``). Where a command also keeps
its warnings as data (the JSON it writes, the report's page, an exit code), it collects what was logged during the
block (``kept_warnings``); where a second pass over the same files would say the same warnings again, it silences
the block (``silenced``)."""

from __future__ import annotations

import logging
from contextlib import contextmanager

ROOT = logging.getLogger("smmile")


class _Keep(logging.Handler):
    def __init__(self, kept: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.kept = kept

    def emit(self, record: logging.LogRecord) -> None:
        self.kept.append(record.getMessage())


class _Later(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno != logging.WARNING


@contextmanager
def kept_warnings(shown: bool = True):
    """The messages logged at WARNING or above under ``smmile`` while the block runs, logged as well unless not
    ``shown`` (the report says its warnings together, after its page is written)."""
    kept: list[str] = []
    handler, later = _Keep(kept), _Later()
    hidden = [] if shown else [h for h in ROOT.handlers if not isinstance(h, _Keep)]
    for other in hidden:
        other.addFilter(later)
    # with no logging configured (a library call), Python's last resort would print them, but not beside a handler
    shown_by = [logging.lastResort] if shown and not ROOT.hasHandlers() and logging.lastResort else []
    for added in (handler, *shown_by):
        ROOT.addHandler(added)
    try:
        yield kept
    finally:
        for added in (handler, *shown_by):
            ROOT.removeHandler(added)
        for other in hidden:
            other.removeFilter(later)


@contextmanager
def silenced():
    """What is logged under ``smmile`` below ERROR while the block runs is neither shown nor kept (info, warnings)."""
    level = ROOT.level
    ROOT.setLevel(logging.ERROR)
    try:
        yield
    finally:
        ROOT.setLevel(level)
