"""LLM-as-a-judge evaluation of open-format SMMILE results (front door; flags in smmile.cli.judge,
work in smmile.scoring.judge_run).

Usage: python evaluate_LLMJudge.py [results_dir] [--model TOKEN] [--inference-mode {0-shot,ICL}]
       [--visualize-only] [--judge-backend {ollama,openai,openai-compatible,azure,anthropic}] [--judge-base-url URL]
       [--judge-model NAME] [--protocol {paper,corrected}] [--overwrite] ...   (--help lists every flag)
"""

import sys

from smmile.cli.judge import main

if __name__ == "__main__":
    sys.exit(main())
