"""LLM-as-a-judge evaluation of open-format SMMILE results (front door; logic in smmile.scoring.judge_cli).

Usage: python evaluate_LLMJudge.py [results_dir] [--model TOKEN] [--inference-mode {0-shot,ICL}]
       [--visualize-only] [--judge-backend {ollama,openai,openai-compatible,azure}] [--judge-base-url URL]
       [--judge-model NAME] [--protocol {paper,corrected}] [--overwrite] ...   (--help lists every flag)
"""

import sys

from smmile.scoring.judge_cli import main

if __name__ == "__main__":
    sys.exit(main())
