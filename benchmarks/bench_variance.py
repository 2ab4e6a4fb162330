"""Speed benchmark: variance_analysis on a SMMILE++-sized results directory.

Builds (deterministically, in a temporary directory) 60 result CSVs × 1038 rows — 28 open-format
files with their ``_evaluationllm.json`` and 32 ``_mcqa.csv`` files with the original's file names —
then times

* the ORIGINAL algorithm (re-implemented below as the reference: pandas read, ``normalize_answer``,
  and the per-resample Python loop ``for _ in range(1000): idx = np.random.choice(n, n, ...)`` on
  numpy's global RNG seeded 42), and
* ``smmile.scoring.variance`` (what ``variance_analysis.py`` runs),

on the same files in the same order, prints both times and the ratio, and asserts that the two
text tables are identical.

Run:  python benchmarks/bench_variance.py [--files 60] [--rows 1038] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))

from smmile.scoring import tables, variance  # noqa: E402
from smmile.scoring.exact_match import normalize_answer  # noqa: E402
from smmile.record.naming import extract_model_info  # noqa: E402

# (file tag, open-format suffix); baselines only have ICL files.
MODELS = [("MedVLM-R1", "_open"), ("gpt-4o", "_open"), ("llama32_vision_90b", "_open"),
          ("medgemma_4b", "_open"), ("qwen3B", "_open"), ("qwen7B", "_open"), ("qwen32B", "_open"),
          ("qwen72B", "_open"), ("llava_7b", ""), ("llava_13b", ""), ("llavanext_7b", ""),
          ("llavaonevision_0.5b", ""), ("llavaonevision_7b", ""), ("llama33textonly", "")]
BASELINES = ["majority", "random"]
ANSWERS = ["Melanoma.", "Yes", "No", "Pneumothorax", "Basal cell carcinoma", "Left", "3", "CT"]


def problem_ids(n_rows: int, rng: np.random.Generator, n_base: int = 111) -> list[str]:
    """SMMILE++-style ids: ``<uuid>_perm_<k>``, ~n_rows/n_base permutations per base problem."""
    bases = sorted(str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n_base))
    counts = np.full(n_base, n_rows // n_base)
    counts[: n_rows - counts.sum()] += 1
    return [f"{b}_perm_{k}" for b, c in zip(bases, counts) for k in range(c)]


def _correct(ids: list[str], p: float, rng: np.random.Generator) -> np.ndarray:
    """Correctness with a per-base-problem effect (permutations of one problem are correlated)."""
    base = np.array([i.rsplit("_perm_", 1)[0] for i in ids])
    _, codes = np.unique(base, return_inverse=True)
    shift = rng.normal(0, 1.0, codes.max() + 1)[codes]
    logit = np.log(p / (1 - p)) + shift
    return rng.random(len(ids)) < 1 / (1 + np.exp(-logit))


def _open_frame(ids, truth, correct, rng) -> pd.DataFrame:
    variants = [lambda a: a, lambda a: a.lower(), lambda a: f" {a.upper()}!"]
    generated = [variants[rng.integers(3)](t) if ok else rng.choice(["None", "", "unsure", "Other."])
                 for t, ok in zip(truth, correct)]
    return pd.DataFrame({"problem_id": ids, "final_question": "What is shown?", "true_answer": truth,
                         "generated_answer": generated, "full_response": generated})


def _judge_json(ids, correct) -> dict:
    accuracies = {pid: (100.0 if ok else 0.0) for pid, ok in sorted(zip(ids, correct))}
    return {"model": "x", "inference_mode": "x", "total_examples": len(ids),
            "correct_examples": int(sum(correct)), "accuracy": 100 * float(np.mean(correct)),
            "problem_accuracies": accuracies}


def _mcqa_frame(ids, truth, correct) -> pd.DataFrame:
    return pd.DataFrame({"problem_id": ids, "final_question": "What is shown?", "true_answer": truth,
                         "correct_option": "B", "selected_option": ["B" if ok else "C" for ok in correct],
                         "is_correct": correct, "generated_answer": truth})


def file_plan(n_files: int) -> list[tuple[str, str, str]]:
    """(tag, mode, kind) for the first ``n_files`` files: baselines first, then models."""
    plan = [(b, "ICL", kind) for b in BASELINES for kind in ("open", "mcqa")]
    plan += [(tag, mode, kind) for tag, _ in MODELS for mode in ("0-shot", "ICL") for kind in ("open", "mcqa")]
    if n_files > len(plan):
        raise ValueError(f"at most {len(plan)} files")
    return plan[:n_files]


def build_results_dir(root: str | os.PathLike, n_files: int = 60, n_rows: int = 1038, seed: int = 0) -> dict:
    """Write the synthetic results directory; return ``{(model, metric, mode): (correct, n)}``
    with the variance_analysis model keys (``text only`` for llama33textonly)."""
    rng = np.random.default_rng(seed)
    ids = problem_ids(n_rows, rng)
    truth = [ANSWERS[i] for i in rng.integers(0, len(ANSWERS), n_rows)]
    suffix = dict(MODELS)
    expected = {}
    for tag, mode, kind in file_plan(n_files):
        p = float(rng.uniform(0.05, 0.6))
        name = f"result_{tag}_{mode}" + ("_mcqa" if kind == "mcqa" else suffix.get(tag, "")) + ".csv"
        path = Path(root) / name
        model = extract_model_info(name).model
        if kind == "mcqa":
            correct = _correct(ids, p, rng)
            _mcqa_frame(ids, truth, correct).to_csv(path, index=False)
            expected[(model, "MCQA", mode)] = (int(correct.sum()), n_rows)
            continue
        em, llm = _correct(ids, p, rng), _correct(ids, min(0.9, p + 0.1), rng)
        _open_frame(ids, truth, em, rng).to_csv(path, index=False)
        with open(str(path)[:-4] + "_evaluationllm.json", "w") as handle:
            json.dump(_judge_json(ids, llm), handle)
        expected[(model, "EM", mode)] = (int(em.sum()), n_rows)
        expected[(model, "LLM", mode)] = (int(llm.sum()), n_rows)
    return expected


# -- the reference: the original algorithm, per-resample loop on the global RNG ----------------------
def _original_bootstrap(is_correct) -> tuple[float, float]:
    array = np.array(is_correct)
    n = len(array)
    accuracies = []
    for _ in range(1000):
        idx = np.random.choice(n, n, replace=True)
        accuracies.append(np.mean(array[idx]) * 100)
    return np.mean(accuracies), np.std(accuracies)


def _original_file(path: str, results: dict) -> None:
    info = extract_model_info(path)
    if path.endswith("_mcqa.csv"):  # the original's Closed (MCQA) files
        frame = pd.read_csv(path)
        correct = frame["is_correct"].map(lambda x: str(x).lower() == "true").tolist()
        results.setdefault(info.model, {}).setdefault("MCQA", {})[info.mode] = _original_bootstrap(correct)
        return
    frame = pd.read_csv(path)
    correct = (frame["true_answer"].apply(normalize_answer) == frame["generated_answer"].apply(normalize_answer)).tolist()
    results.setdefault(info.model, {}).setdefault("EM", {})[info.mode] = _original_bootstrap(correct)
    with open(path[:-4] + "_evaluationllm.json") as handle:
        accuracies = json.load(handle)["problem_accuracies"]
    llm = [accuracies[pid] // 100 for pid in accuracies]
    results[info.model].setdefault("LLM", {})[info.mode] = _original_bootstrap(llm)


def original_table(files: list[str]) -> str:
    np.random.seed(42)
    results: dict = {}
    for path in files:
        _original_file(path, results)
    return tables.text_table(results)


def ours_table(files: list[str]) -> str:
    return tables.text_table(variance.analyse(files).results)


def _timed(fn, files) -> tuple[float, str]:
    start = time.perf_counter()
    out = fn(files)
    return time.perf_counter() - start, out


def measure(files: list[str], repeat: int) -> tuple[float, float, str, str]:
    """Best-of-``repeat`` times, the two runs interleaved so that machine load hits both alike."""
    t_orig = t_ours = float("inf")
    table_orig = table_ours = ""
    for _ in range(repeat):
        elapsed, table_orig = _timed(original_table, files)
        t_orig = min(t_orig, elapsed)
        elapsed, table_ours = _timed(ours_table, files)
        t_ours = min(t_ours, elapsed)
    return t_orig, t_ours, table_orig, table_ours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--rows", type=int, default=1038)
    parser.add_argument("--repeat", type=int, default=5, help="best of N interleaved runs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as root:
        build_results_dir(root, args.files, args.rows)
        files = variance.list_csvs(root)
        devnull = open(os.devnull, "w")
        stdout, sys.stdout = sys.stdout, devnull  # silence the per-file console lines
        try:
            t_orig, t_ours, table_orig, table_ours = measure(files, args.repeat)
        finally:
            sys.stdout = stdout
            devnull.close()
    print(f"files: {len(files)} x {args.rows} rows (best of {args.repeat})")
    print(f"original per-resample loop: {t_orig:.3f} s")
    print(f"smmile vectorised:          {t_ours:.3f} s")
    print(f"speed-up: {t_orig / t_ours:.2f}x")
    assert table_ours == table_orig, "tables differ"
    print("tables identical: yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
