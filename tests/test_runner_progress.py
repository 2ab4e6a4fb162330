"""Issue #10, progress where people look: plain lines in a log (not a terminal), a bar on a terminal."""

from __future__ import annotations

import io
import logging

from smmile.runner.progress import Progress


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _log_run(total, done, seconds_per_problem, fail_every=0):
    """The progress lines a log gets (they are log records of smmile.runner.progress)."""
    out, clock = io.StringIO(), Clock()
    handler = logging.StreamHandler(out)
    logging.getLogger("smmile.runner.progress").addHandler(handler)
    try:
        bar = Progress(total, done, "result_qwen7B_ICL", stream=io.StringIO(), clock=clock)
        for i in range(total - done):
            clock.now += seconds_per_problem
            bar.update(failed=bool(fail_every) and i % fail_every == 0)
        bar.close()
    finally:
        logging.getLogger("smmile.runner.progress").removeHandler(handler)
    return out.getvalue().splitlines()


def test_a_log_gets_a_start_line_about_ten_lines_and_an_end_line():
    lines = _log_run(398, 0, 53 / 398 * 60, fail_every=100)  # 53 min: far more than 30 s per 10 %
    assert lines[0] == "result_qwen7B_ICL: 0/398 problems done, 398 to run"
    assert 10 <= len(lines) <= 12
    assert lines[1].startswith("result_qwen7B_ICL: 40/398 problems (10%), 0.13/s, ETA 47m")
    assert lines[-1] == "result_qwen7B_ICL: 398/398 problems (100%), 0.13/s, 398 in 53m00s, 4 failed"
    assert all("failed" in line for line in lines[1:])


def test_a_fast_run_is_limited_to_one_line_per_30_seconds():
    lines = _log_run(398, 0, 53 / 398)  # 53 s: 10 % every 5 s
    assert len(lines) == 3  # start, the one line after 30 s, end
    assert lines[1].startswith("result_qwen7B_ICL: 226/398 problems (57%), 7.51/s, ETA 23s")


def test_a_resumed_run_counts_its_rate_from_what_it_ran():
    lines = _log_run(100, 60, 60.0)
    assert lines[0] == "result_qwen7B_ICL: 60/100 problems done, 40 to run"
    assert lines[-1].endswith("100/100 problems (100%), 0.02/s, 40 in 40m00s, 0 failed")


def test_nothing_to_run_prints_nothing():
    assert _log_run(5, 5, 1.0) == []


def test_a_terminal_gets_a_bar(monkeypatch):
    out = io.StringIO()
    out.isatty = lambda: True
    bar = Progress(3, 0, "run", stream=out)
    for failed in (False, True, False):
        bar.update(failed)
    bar.close()
    text = out.getvalue()
    assert "\r" in text and "3/3" in text and "1 failed" in text


def test_log_lines_go_above_the_bar_and_the_handlers_come_back(monkeypatch, capsys):
    """A warning logged while the bar runs (a rate limit, the budget) is written on a line of its own, the bar cleared
    first and drawn again below it; after the bar the ``smmile`` log is as it was."""
    import re
    import sys

    from smmile.cli.common import configure_logging

    configure_logging()
    root = logging.getLogger("smmile")
    before = list(root.handlers)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = Progress(2, 0, "run", stream=sys.stderr)
    bar.update()
    logging.getLogger("smmile.models.api.limiter").warning("rate limited: waiting 6s before the next request")
    bar.update()
    bar.close()
    assert root.handlers == before
    err = capsys.readouterr().err
    assert re.search(r"\r\s*\rrate limited: waiting 6s before the next request\n", err), repr(err)
    assert err.count("rate limited") == 1 and "2/2" in err.rsplit("rate limited", 1)[1]
