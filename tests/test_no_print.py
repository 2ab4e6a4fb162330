"""The library speaks through `logging` (one logger per module, configured by the command line: smmile.cli.common);
`print()` is for the command line (smmile/cli/) and for the console output the original scripts printed, which
the front doors reproduce line for line, on stdout. Each such function is allowed below by name, with the reason;
a print to stderr is a diagnostic, never console output, and is not allowed anywhere outside smmile/cli/."""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "inference_and_evaluation" / "smmile"

# file (relative to smmile/) -> {function (Class.method for methods): why it may print}: only the front doors'
# faithful console output; what smmile's own commands print (stats' table, where the report went) is printed in cli/
FAITHFUL = {
    "runner/run.py": {
        "Runner._report": "the inference scripts' closing lines (MCQA Accuracy, Results saved to, skipped problems)",
    },
    "data/load.py": {
        "_open_hub": "the inference scripts' \"Loading dataset '<id>'...\" line (and, before it, that the hub is down)",
    },
    "scoring/em_run.py": {
        "score_file": "evaluate_EM's per-file report and 'Results saved to:' line",
    },
    "scoring/comparison.py": {
        "report_comparison": "evaluate_EM's comparison summary and 'Comparison results saved to:' line",
    },
    "scoring/judge_run.py": {
        "_print_report": "evaluate_LLMJudge's per-file report and its request counts",
        "visualize_file": "evaluate_LLMJudge's 'Skipping: <path>' and per-file report",
    },
    "scoring/scores.py": {
        "find_result_files": "the scoring scripts' 'No result files found matching the criteria.' block",
        "refuse_if_none_known": "the scoring scripts' 'Skipping: <path>' lines",
        "screened": "the scoring scripts' 'Skipping: <path>' lines",
        "Outcome.finish": "the scoring scripts' closing line: how many files were skipped",
    },
    "scoring/stratify_run.py": {
        "load_dataset_problems": "stratify's 'Number of problems in the dataset' line",
        "write_outputs": "stratify's 'Stratification results saved to:' line",
        "run_stratify": "stratify's per-flag tables",
    },
    "scoring/variance.py": {
        "analyse_file": "variance_analysis's 'Processing <file>' and per-cell lines",
        "_write_table": "variance_analysis's '<table> saved to <path>' lines",
        "_report": "variance_analysis's 'Final Results Table'",
        "run_variance": "variance_analysis's 'Found N CSV files' and bootstrap-count lines (and --ci's table)",
    },
}


def prints(path: Path) -> list[tuple[str, int, bool]]:
    """(enclosing function, line, to stderr) of every print() call in `path`."""
    found = []

    def walk(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, ast.Call) and getattr(child.func, "id", None) == "print":
                to = next((ast.unparse(k.value) for k in child.keywords if k.arg == "file"), "")
                found.append((scope, child.lineno, to == "sys.stderr"))
            walk(child, inner)

    walk(ast.parse(path.read_text(), str(path)), "")
    return found


def test_no_print_outside_the_command_line():
    stray = []
    for path in sorted(LIBRARY.rglob("*.py")):
        rel = path.relative_to(LIBRARY).as_posix()
        if rel.startswith("cli/"):
            continue
        allowed = FAITHFUL.get(rel, {})
        stray += [f"smmile/{rel}:{line} print({'to stderr' if err else ''}) in {scope or 'module level'}"
                  for scope, line, err in prints(path) if err or scope not in allowed]
    assert not stray, "print() outside smmile/cli/ (log instead: logging.getLogger(__name__)):\n" + "\n".join(stray)


def test_allowed_functions_exist_and_print():
    """The allow-list names functions that print, so it cannot outlive them."""
    stale = [f"{rel}: {scope}" for rel, allowed in FAITHFUL.items() for scope in allowed
             if scope not in {s for s, _, err in prints(LIBRARY / rel) if not err}]
    assert not stale, "allowed but printing nothing (drop from FAITHFUL):\n" + "\n".join(stale)
