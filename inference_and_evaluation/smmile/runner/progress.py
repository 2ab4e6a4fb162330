"""Progress on stderr: a bar on a terminal; in a log, a line at the start, when both 30 s and 10 % of the problems
have passed since the last (about ten lines however long the run), and at the end."""

from __future__ import annotations

import logging
import sys
import time
from typing import Callable, TextIO

log = logging.getLogger(__name__)

MIN_SECONDS = 30.0
MIN_FRACTION = 0.10


class Progress:
    def __init__(self, total: int, done: int, desc: str, *, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, detail: Callable[[], str] | None = None):
        self.total, self.done, self.desc = total, done, desc
        self.detail = detail  # e.g. an API backend's current concurrency, shown on each status line
        self.stream, self.clock, self.failed = stream or sys.stderr, clock, 0
        self.start = self.last_time = clock()
        self.first = self.last_done = done
        self.bar = None
        if getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm

            from tqdm.contrib.logging import logging_redirect_tqdm

            self.bar = tqdm(total=total, initial=done, desc=desc, unit="problem", file=self.stream,
                            dynamic_ncols=True, smoothing=0.1)
            self.redirect = logging_redirect_tqdm([logging.getLogger("smmile")])  # lines above the bar, not through it
            self.redirect.__enter__()
        elif done < total:
            self._line(f"{done}/{total} problems done, {total - done} to run")

    def update(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += bool(failed)
        if self.bar is not None:
            self.bar.update(1)
            post = ", ".join(x for x in (f"{self.failed} failed" if self.failed else "",
                                          self.detail() if self.detail else "") if x)
            if post:
                self.bar.set_postfix_str(post, refresh=False)
            return
        now = self.clock()
        if (now - self.last_time >= MIN_SECONDS and self.done - self.last_done >= MIN_FRACTION * self.total
                and self.done < self.total):
            self._status(now)

    def close(self) -> None:
        if self.bar is not None:
            self.redirect.__exit__(None, None, None)
            self.bar.close()
        elif self.done > self.last_done:
            self._status(self.clock())

    def _status(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        ran = self.done - self.first
        rate = ran / elapsed
        text = f"{self.done}/{self.total} problems ({100 * self.done / max(self.total, 1):.0f}%), {rate:.2f}/s"
        if self.done < self.total:
            text += f", ETA {_duration((self.total - self.done) / rate) if rate else '?'}"
        else:
            text += f", {ran} in {_duration(elapsed)}"
        self._line(f"{text}, {self.failed} failed" + (f", {self.detail()}" if self.detail else ""))
        self.last_time, self.last_done = now, self.done

    def _line(self, text: str) -> None:
        log.info(f"{self.desc}: {text}")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
