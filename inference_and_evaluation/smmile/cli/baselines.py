"""Front door of `inference_baselines.py` (spec §3.11)."""

from __future__ import annotations

from ..runner.run import run
from . import common as fd


def main(argv: list[str] | None = None) -> int:
    p = fd.parser("Random and majority baselines for SMMILE (no model: answers drawn from the ICL examples).")
    p.add_argument("--baseline", choices=["random", "majority"], required=True,
                   help="random: a random ICL answer (open) or option letter (MCQA), numpy seeded 42; "
                        "majority: the most frequent ICL answer / its letter (ties: first seen)")
    p.add_argument("--inference_mode", choices=["ICL"], default="ICL", help="baselines need ICL examples")
    p.add_argument("--task_format", choices=["open", "mcqa"], default="open", help=fd.FORMAT_HELP)
    p.add_argument("--output-dir", default="../results", help="with --dataset augmented: <output-dir>_augmented")
    p.add_argument("--image-dir", default=fd.MISSING_IMAGES, help="folder of manually downloaded images "
                   "(unused by the original; used under --protocol corrected)")
    fd.add_dataset_flag(p)
    fd.add_run_flags(p, model=False)

    def go() -> int:
        a = p.parse_args(argv)
        return run(fd.run_spec(a, a.baseline, a.task_format, a.dataset, open_suffix=False)).exit_code

    return fd.guarded(go, interrupted=fd.INTERRUPTED_RUN)
