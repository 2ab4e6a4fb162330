"""Exact-match evaluation of open-format SMMILE results (front door; logic in smmile.scoring.em_cli).

Usage: python evaluate_EM.py [results_dir] [--model TOKEN] [--inference-mode {0-shot,ICL}] [--strict-match]
"""

import sys

from smmile.scoring.em_cli import main

if __name__ == "__main__":
    sys.exit(main())
