"""Run picklable jobs (figure drawing, image thumbnails) in forked worker processes while the caller goes on.

Workers ignore Ctrl-C and SIGTERM (the parent alone handles an interrupt and cancels what has not started) and die
with their parent however it ends (SIGKILL, the OOM killer): the kernel kills them on Linux, and each one watches
for its parent. Without fork, or with one worker, jobs run in the calling process when their results are asked for."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_INTERRUPTS = {signal.SIGINT, signal.SIGTERM}
_WATCH_SECONDS = 0.2


def _start_worker(parent: int, kernel_watch: bool) -> None:
    """Initializer of each worker: leave interrupts to `parent`, and end when `parent` ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _INTERRUPTS)  # held by the parent while it forked
    if kernel_watch and sys.platform.startswith("linux"):  # the kernel kills it when the forking thread ends
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no libc to call: the watching thread alone does it
            pass
    if os.getppid() != parent:  # the parent died before (or while) this worker started
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="smmile-parent-watch", daemon=True).start()


def _watch_parent(parent: int) -> None:
    """A worker's daemon thread: once the parent is gone (this process was handed to another), exit at once."""
    while os.getppid() == parent:
        time.sleep(_WATCH_SECONDS)
    os._exit(1)


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


class Pool:
    """``submit(fn, arg)`` returns a handle whose ``result()`` gives ``fn(arg)``; as a context manager it waits
    for the workers, or drops pending work on an exception. The first ``submit`` forks the workers; only when
    that is the main thread does the kernel tie them to the parent (it ties a child to the forking thread)."""

    def __init__(self, workers: int):
        self._workers = workers if "fork" in multiprocessing.get_all_start_methods() else 1
        self._executor = None

    def submit(self, fn: Callable, arg):
        if self._workers <= 1:
            return _Later(fn, arg)
        if self._executor is None:
            main = threading.current_thread() is threading.main_thread()
            self._executor = ProcessPoolExecutor(self._workers, mp_context=multiprocessing.get_context("fork"),
                                                 initializer=_start_worker, initargs=(os.getpid(), main))
            # The first submit forks every worker. A Ctrl-C or SIGTERM landing in one of Python's at-fork hooks
            # is swallowed ("Exception ignored in _releaseLock") and the command would carry on: hold them until
            # the forks are done (then they are raised here), and the workers ignore them from their initializer.
            held = signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPTS)
            try:
                return self._executor.submit(fn, arg)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return self._executor.submit(fn, arg)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=kind is not None)


class _Later:
    """A job run in this process when its result is first asked for."""

    def __init__(self, fn: Callable, arg):
        self._fn, self._arg, self._done, self._value = fn, arg, False, None

    def result(self):
        if not self._done:
            self._value, self._done = self._fn(self._arg), True
        return self._value
