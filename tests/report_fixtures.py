"""A small but complete results folder for the report tests, built with smmile's own commands.

Real runs (baselines on the demo data, with manifests), EM scoring, stratification and one
`smmile analyze noise`, plus a hand-made open-format model ``toy`` with 0-shot and ICL files and judge
outputs (no manifest: it stands for a result produced outside smmile).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from smmile.baseline_cli import main as baselines
from smmile.cli import main as smmile
from smmile.scoring.em_cli import main as evaluate_em
from smmile.scoring.stratify_cli import main as stratify

RUNS = [("random", "open"), ("random", "mcqa"), ("majority", "open"), ("majority", "mcqa")]


def _baselines(dataset: str, out: Path, runs=RUNS) -> None:
    for baseline, fmt in runs:
        assert baselines(["--baseline", baseline, "--task_format", fmt, "--dataset", dataset,
                          "--output-dir", str(out)]) == 0


def _toy(res: Path) -> None:
    """``toy`` 0-shot and ICL open results derived from the random baseline, judged by hand."""
    frame = pd.read_csv(res / "result_random_ICL.csv")
    for mode, keep_every in (("0-shot", 3), ("ICL", 2)):
        toy = frame.copy()
        right = [i % keep_every == 0 for i in range(len(toy))]
        toy["generated_answer"] = [t if ok else "something else" for t, ok in zip(toy["true_answer"], right)]
        toy["full_response"] = toy["generated_answer"]
        stem = res / f"result_toy_{mode}_open"
        toy.to_csv(f"{stem}.csv", index=False)
        accuracies = {str(p): 100.0 if ok else 0.0 for p, ok in zip(toy["problem_id"], right)}
        (Path(f"{stem}_evaluationllm.json")).write_text(json.dumps({"problem_accuracies": accuracies}))
        lines = [json.dumps({"row": i, "status": "ok", "backend": "ollama", "model": "llama3.3",
                             "protocol": "corrected"}) for i in range(len(toy))]
        Path(f"{stem}_judgements.jsonl").write_text("\n".join(lines) + "\n")


def build_results(root: Path) -> tuple[Path, Path]:
    """(results folder, analyses folder) under ``root``."""
    res, noisy, an = root / "res", root / "res-noise", root / "an"
    _baselines("demo", res)
    _toy(res)
    assert evaluate_em([str(res)]) == 0
    assert stratify([str(res), "--eval_type", "em", "--dataset", "demo"]) == 0
    assert smmile(["variance", str(res)]) == 0
    assert smmile(["data", "variant", "noise-random", "--dataset", "demo", "--out", str(root / "ds-noise")]) == 0
    _baselines(str(root / "ds-noise"), noisy, [("random", "open"), ("majority", "mcqa")])
    original = root / "res-orig"
    _baselines("demo", original, [("random", "open"), ("majority", "mcqa")])
    assert smmile(["analyze", "noise", str(original), str(noisy), "--out", str(an), "--n-boot", "200"]) == 0
    return res, an
