"""Exact-match evaluation of open-format SMMILE results (front door; flags in smmile.cli.em, work in
smmile.scoring.em_run).

Usage: python evaluate_EM.py [results_dir] [--model TOKEN] [--inference-mode {0-shot,ICL}] [--strict-match]
"""

import sys

from smmile.cli.em import main

if __name__ == "__main__":
    sys.exit(main())
