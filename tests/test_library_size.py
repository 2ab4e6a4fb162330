"""Issue #19 asked that the library end no larger than it was when the consolidation was asked for: 14,300 lines
of Python, counted as `wc -l` counts them. It is not there yet (the features of issues #20-#25 came in the same
round); this budget is a ratchet towards it: lower it whenever the library shrinks, never raise it without
saying why in the commit. The report's web assets (report/assets/: the explorer's script and style, the page
template) are not Python and are counted apart, with a cap of their own, so moving code there is no way around it.

Raised on 2026-12-03 from 16,000 / 640 to the size then (20,434 / 812): issues #29-#36 added the paper-environment
compatibility layer, the Ray cluster connection, the run record, the sign-flip statistics and variance components,
the batch API's egress guard, ledger intents, budget and admin commands, the ICL label/input conditions,
demonstration policies, retrieval and option probabilities, the inspect / Every Eval Ever / matrix exports, and the
blind multi-reviewer queue. Issue #30's shrink is still owed against this figure.

Lowered on 2026-12-03 to 20,350 / 812, the size after issue #30's registry, typed settings, logging and naming
work and the simplifications that came with them (20,440 / 812 before). The 1,000 lines issue #30 asks for are
not reached: its own commits, all rounds together, have removed fewer lines than they added. Raised by 6 the same
day for the last read of the change: the one-line error for an unknown --backend and the old jury record read
where judge records are read.
"""

from __future__ import annotations

from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "inference_and_evaluation" / "smmile"
GOAL = 14_300  # issue #19
PYTHON_BUDGET = 20_356
ASSETS_BUDGET = 812


def lines(paths) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in paths)


def test_library_within_budget():
    count = lines(LIBRARY.rglob("*.py"))
    assert count <= PYTHON_BUDGET, (f"the library has {count} lines of Python, over the budget of {PYTHON_BUDGET} "
                                    f"(issue #19's goal: {GOAL}); simplify what is there before adding")


def test_web_assets_within_budget():
    assets = [p for p in (LIBRARY / "report" / "assets").rglob("*") if p.is_file()]
    assert assets, "the report's assets are missing"
    count = lines(assets)
    assert count <= ASSETS_BUDGET, f"the report's web assets have {count} lines, over {ASSETS_BUDGET}"
