#!/usr/bin/env bash
# The demo job, end to end on the generated demo data (no network, no GPU):
# build the demo dataset, run both baselines in both formats, score them.
set -euo pipefail
cd "$(dirname "$0")/../inference_and_evaluation"
OUT=${1:-../results_demo}

smmile data demo  # where `--dataset demo` reads it ($SMMILE_DEMO_DIR, else ~/.cache/smmile/demo-v<version>)
for baseline in random majority; do
  for format in open mcqa; do
    python inference_baselines.py --baseline "$baseline" --task_format "$format" --dataset demo --output-dir "$OUT"
  done
done
python evaluate_EM.py "$OUT"
python stratify.py "$OUT" --eval_type em --dataset demo
python variance_analysis.py "$OUT" --generate_table
echo "Demo outputs are in $(cd "$OUT" && pwd)"
