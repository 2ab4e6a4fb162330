"""Issue #20 item 7: inference never silently replaces a result CSV it did not write.

A CSV at the run's name without a manifest naming it (a published result copied in) is in no journal:
replacing it would lose it for good. The run renames it to ``<stem>.replaced-<time>.csv``, says so on
stderr, and writes its own; no scoring command reads the renamed file. A CSV an smmile run wrote (its
manifest beside it) is replaced as before (its answers are in the journal).
"""

import os
import subprocess
import sys

import pandas as pd

from conftest import FRONT
from smmile.record.run_record import scan as find_results


def baseline(out, *args):
    return subprocess.run([sys.executable, "inference_baselines.py", "--baseline", "random", "--dataset", "demo",
                           "--output-dir", str(out), *args], cwd=FRONT, capture_output=True, text=True,
                          timeout=120, env=os.environ)


def test_a_csv_no_run_wrote_is_moved_aside_not_replaced(tmp_path, published, demo_dir):
    out = tmp_path / "R"
    out.mkdir()
    original = (published / "result_random_ICL.csv").read_bytes()
    (out / "result_random_ICL.csv").write_bytes(original)
    published_rows = len(pd.read_csv(published / "result_random_ICL.csv"))

    r = baseline(out)
    assert r.returncode == 0, r.stderr
    aside = sorted(out.glob("result_random_ICL.replaced-*.csv"))
    assert len(aside) == 1 and aside[0].read_bytes() == original
    notes = [line for line in r.stderr.splitlines() if line.startswith("note:") and aside[0].name in line]
    assert len(notes) == 1 and "result_random_ICL.csv" in notes[0]
    written = pd.read_csv(out / "result_random_ICL.csv")
    assert len(written) < published_rows  # this run's rows (the demo data), not the published 111

    # the renamed file is no result: no scoring command finds it
    for rules in ("scoring", "variance"):
        assert [r.path.name for r in find_results(out, rules=rules)] == ["result_random_ICL.csv"]

    # the run's own CSV (manifest beside it) is not moved aside again by a rerun
    again = baseline(out)
    assert again.returncode == 0, again.stderr
    assert len(list(out.glob("*.replaced-*.csv"))) == 1 and "not written by an smmile run" not in again.stderr
