"""Stratified accuracy by problem flags (front door; logic in smmile.scoring.stratify_cli).

Usage: python stratify.py [results_dir] --eval_type {em,llm} [--model TOKEN] [--inference-mode MODE]
       [--dataset_id ID] [--dataset ID|PATH|demo] [--revision REV]
"""

import sys

from smmile.scoring.stratify_cli import main

if __name__ == "__main__":
    sys.exit(main())
