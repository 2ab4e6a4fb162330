#!/usr/bin/env bash
# The demo job, end to end on the generated demo data (no network, no GPU):
# build the demo dataset, run both baselines in both formats, score them.
# Usage: bash scripts/demo.sh [RESULTS_DIR]   (relative to where you run it; default: results_demo/ at the
# top of the repository)
# The demo data go where `--dataset demo` reads them: $SMMILE_DEMO_DIR, else
# ${XDG_CACHE_HOME:-~/.cache}/smmile/demo-v<version> (printed below as "smmile: PATH").
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  "") OUT=$REPO/results_demo ;;
  /*) OUT=$1 ;;
  *) OUT=$(pwd)/$1 ;;
esac
cd "$REPO/inference_and_evaluation"

echo "== 1/4 the demo dataset (synthetic, in the SMMILE schema)"
smmile data demo
echo "== 2/4 the random and majority baselines, open and MCQA format -> $OUT"
for baseline in random majority; do
  for format in open mcqa; do
    python inference_baselines.py --baseline "$baseline" --task_format "$format" --dataset demo --output-dir "$OUT"
  done
done
echo "== 3/4 exact match (evaluate_EM.py) and accuracy by problem flag (stratify.py)"
python evaluate_EM.py "$OUT"
python stratify.py "$OUT" --eval_type em --dataset demo
echo "== 4/4 the paper's table with bootstrap mean ± std (variance_analysis.py)"
python variance_analysis.py "$OUT" --generate_table
cat <<EOF

Demo outputs are in $OUT
  result_<baseline>_ICL[_mcqa].csv  one row per problem (the model's answer, the gold answer)
  *_evaluation.json, model_comparison.txt  exact-match scores (step 3)
  model_stratification_em.json  accuracy by problem flag (step 3)
  evaluation_results.txt, latex_table.tex  the paper's table (step 4): bootstrap mean ± std over 1000 resamples
How to read the tables: '-' (and "inf ± inf" in the console, the original's way of printing it) is a cell
with no result: the demo runs no LLM judge (evaluate_LLMJudge.py needs a judge server, e.g. ollama) and
the baselines have no 0-shot mode. Next: smmile stats $OUT (95% intervals); smmile report $OUT --out $OUT/report (HTML)
EOF
