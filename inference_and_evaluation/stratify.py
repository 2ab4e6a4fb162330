"""Stratified accuracy by problem flags (front door; flags in smmile.cli.stratify, work in
smmile.scoring.stratify_run).

Usage: python stratify.py [results_dir] --eval_type {em,llm} [--model TOKEN] [--inference-mode MODE]
       [--dataset_id ID] [--dataset ID|PATH|demo] [--revision REV]
"""

import sys

from smmile.cli.stratify import main

if __name__ == "__main__":
    sys.exit(main())
