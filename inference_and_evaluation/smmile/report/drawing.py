"""Run picklable jobs (figure drawing, image thumbnails) in worker processes while the caller goes on.

Workers are forked (Linux, macOS with fork) and ignore Ctrl-C and SIGTERM: the parent alone handles an interrupt,
cancels what has not started and leaves no traceback from the workers. Where fork is unavailable, or
with one worker, jobs run in the calling process when their results are asked for.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Callable


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


class Pool:
    """``submit(fn, arg)`` returns a handle whose ``result()`` gives ``fn(arg)``; ``close()`` waits for
    the workers, ``cancel()`` drops pending work. Used as a context manager: an exception cancels."""

    def __init__(self, workers: int):
        self._executor = None
        if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            self._executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                                 initializer=_ignore_interrupts)

    def submit(self, fn: Callable, arg):
        if self._executor is None:
            return _Later(fn, arg)
        return self._executor.submit(fn, arg)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def cancel(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        self.cancel() if kind is not None else self.close()


class _Later:
    """A job run in this process when its result is first asked for."""

    def __init__(self, fn: Callable, arg):
        self._fn, self._arg, self._done, self._value = fn, arg, False, None

    def result(self):
        if not self._done:
            self._value, self._done = self._fn(self._arg), True
        return self._value
