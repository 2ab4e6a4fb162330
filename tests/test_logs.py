"""``smmile.logs``: warnings kept as data are the ones logged; a silenced block says and keeps none."""

from __future__ import annotations

import logging

import pytest

from smmile import logs


class Seen(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def seen():
    root, handler = logging.getLogger("smmile"), Seen()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler.lines
    root.removeHandler(handler)
    root.setLevel(level)


def test_kept_warnings_are_logged_and_kept(seen):
    child = logging.getLogger("smmile.some.module")
    with logs.kept_warnings() as kept:
        child.info("progress")
        child.warning("warning: %s is odd", "x.csv")
        child.error("broken")
    assert kept == ["warning: x.csv is odd", "broken"]
    assert seen == ["progress", "warning: x.csv is odd", "broken"]
    child.warning("after the block")
    assert kept == ["warning: x.csv is odd", "broken"]


def test_a_silenced_block_keeps_and_shows_no_warning(seen):
    child = logging.getLogger("smmile.other")
    with logs.kept_warnings() as kept:
        with logs.silenced():
            child.warning("said already")
            child.error("still an error")
        child.warning("said once")
    assert kept == ["still an error", "said once"]
    assert seen == ["still an error", "said once"]
    assert logging.getLogger("smmile").level == logging.INFO


def test_warnings_kept_unshown_are_said_later_by_the_command(seen):
    """The report keeps its warnings for the page and says them together once it is written."""
    child = logging.getLogger("smmile.report.some")
    with logs.kept_warnings(shown=False) as kept:
        child.info("progress")
        child.warning("warning: x.csv skipped")
        child.error("broken")
    child.warning("shown again")
    assert kept == ["warning: x.csv skipped", "broken"]
    assert seen == ["progress", "broken", "shown again"]


def test_kept_warnings_are_still_shown_where_no_logging_is_configured():
    """A library call (a notebook, a script) has no handler: Python's last resort shows warnings, kept ones too."""
    import subprocess
    import sys

    code = ("import logging; from smmile import logs; log = logging.getLogger('smmile.x'); log.warning('outside')\n"
            "with logs.kept_warnings() as kept: log.warning('inside')\n"
            "with logs.kept_warnings(shown=False): log.warning('hidden')\n"
            "log.warning('after'); print(kept)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stderr.splitlines() == ["outside", "inside", "after"] and done.stdout == "['inside']\n"
