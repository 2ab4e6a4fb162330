"""Synthetic result folders for the statistics tests, shaped like the published SMMILE++.

SMMILE++ has 1038 rows from 86 base problems: 27 with 2 orders, 24 with 6 and 35 with 24
(spec §1.1); the row ids are ``<base>_perm_<k>``. Correctness here has a strong per-base-problem
effect, so the permutations of one problem are correlated, as they are in the real outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

CLUSTER_SIZES = [2] * 27 + [6] * 24 + [24] * 35
ANSWERS = ["Melanoma.", "Yes", "No", "Pneumothorax", "Left", "CT"]


def plusplus_ids(sizes=CLUSTER_SIZES) -> list[str]:
    return [f"b{base:03d}_perm_{k}" for base, size in enumerate(sizes) for k in range(1, size + 1)]


def base_of(ids) -> np.ndarray:
    return np.array([i.rsplit("_perm_", 1)[0] for i in ids])


def correlated(ids, p: float, rng: np.random.Generator, spread: float = 2.5) -> np.ndarray:
    """0/1 scores with a per-base-problem random effect (sd ``spread`` on the logit scale)."""
    _, codes = np.unique(base_of(ids), return_inverse=True)
    logit = np.log(p / (1 - p)) + rng.normal(0, spread, codes.max() + 1)[codes]
    return (rng.random(len(ids)) < 1 / (1 + np.exp(-logit))).astype(int)


def write_open(root: Path, tag: str, mode: str, ids, truth, em, judge=None) -> Path:
    """``result_<tag>_<mode>_open.csv`` whose flexible match is ``em``; with ``judge`` (0..1 per row)
    the ``_evaluationllm.json`` beside it."""
    Path(root).mkdir(parents=True, exist_ok=True)
    path = Path(root) / f"result_{tag}_{mode}_open.csv"
    generated = [t if ok else "something else" for t, ok in zip(truth, em)]
    pd.DataFrame({"problem_id": ids, "final_question": "What is shown?", "true_answer": truth,
                  "generated_answer": generated, "full_response": generated}).to_csv(path, index=False)
    if judge is not None:
        accuracies = {pid: 100.0 * float(v) for pid, v in sorted(zip(ids, judge))}
        Path(str(path)[:-4] + "_evaluationllm.json").write_text(json.dumps({"problem_accuracies": accuracies}))
    return path


def write_mcqa(root: Path, tag: str, mode: str, ids, truth, correct) -> Path:
    Path(root).mkdir(parents=True, exist_ok=True)
    path = Path(root) / f"result_{tag}_{mode}_mcqa.csv"
    pd.DataFrame({"problem_id": ids, "final_question": "What is shown?", "true_answer": truth,
                  "correct_option": "A", "selected_option": ["A" if ok else "B" for ok in correct],
                  "is_correct": [bool(ok) for ok in correct], "generated_answer": "A"}).to_csv(path, index=False)
    return path


def cluster_gain(ids, zero_shot: np.ndarray, bases: list[str]) -> np.ndarray:
    """ICL = 0-shot, except every row of ``bases`` becomes right: a gain carried by a few clusters."""
    icl = zero_shot.copy()
    icl[np.isin(base_of(ids), bases)] = 1
    return icl


def build_plusplus(root: Path, seed: int = 0) -> dict:
    """A SMMILE++-shaped folder: three models with correlated 0-shot/ICL scores (EM, judge, MCQA), a
    model whose ICL gain sits in three 24-order problems, an all-wrong and an all-right cell, and a
    model whose ICL and 0-shot answers are identical. Returns ``{"ids", "truth", "scores"}`` with
    scores[(tag, metric, mode)] = the 0/1 vector written."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    ids = plusplus_ids()
    truth = [ANSWERS[i] for i in rng.integers(0, len(ANSWERS), len(ids))]
    scores: dict = {}
    for tag, p0, gain in (("qwen7B", 0.3, 0.15), ("llava_7b", 0.2, 0.05), ("gpt-4o", 0.45, 0.1)):
        for mode, p in (("0-shot", p0), ("ICL", p0 + gain)):
            em, judge, mcqa = (correlated(ids, min(0.9, p + shift), rng) for shift in (0.0, 0.1, 0.2))
            write_open(root, tag, mode, ids, truth, em, judge)
            write_mcqa(root, tag, mode, ids, truth, mcqa)
            scores.update({(tag, "EM", mode): em, (tag, "LLM", mode): judge, (tag, "MCQA", mode): mcqa})
    zero = correlated(ids, 0.3, rng)
    big = [f"b{base:03d}" for base, size in enumerate(CLUSTER_SIZES) if size == 24][:3]
    icl = cluster_gain(ids, zero, big)
    write_mcqa(root, "qwen72B", "0-shot", ids, truth, zero)
    write_mcqa(root, "qwen72B", "ICL", ids, truth, icl)
    scores.update({("qwen72B", "MCQA", "0-shot"): zero, ("qwen72B", "MCQA", "ICL"): icl})
    nothing, everything = np.zeros(len(ids), int), np.ones(len(ids), int)
    write_open(root, "medgemma_4b", "0-shot", ids, truth, nothing, nothing)
    write_open(root, "medgemma_4b", "ICL", ids, truth, everything, nothing)
    same = correlated(ids, 0.5, rng)
    write_mcqa(root, "MedVLM-R1", "0-shot", ids, truth, same)
    write_mcqa(root, "MedVLM-R1", "ICL", ids, truth, same)
    scores.update({("medgemma_4b", "EM", "0-shot"): nothing, ("medgemma_4b", "LLM", "0-shot"): nothing,
                   ("medgemma_4b", "EM", "ICL"): everything, ("medgemma_4b", "LLM", "ICL"): nothing,
                   ("MedVLM-R1", "MCQA", "0-shot"): same, ("MedVLM-R1", "MCQA", "ICL"): same})
    return {"ids": ids, "truth": truth, "scores": scores}
