#!/usr/bin/env bash
# Build each paper lock into a NEW virtual environment and run the tests marked `paper_env` in it (tiny checkpoints
# built there, under that lock's transformers; families the lock does not serve are skipped, see tests/tiny_models.py).
#   bash scripts/check_paper_envs.sh                 # every paper lock
#   bash scripts/check_paper_envs.sh paper           # requirements-paper.lock only (paper | paper-llava)
# Wheels are downloaded once into a wheelhouse and installed from there on later runs (pip's HTTP cache does not
# keep multi-GB wheels here): SMMILE_WHEELHOUSE (default ~/.cache/smmile/wheelhouse, ~6 GB for both locks).
# Times, and which part CI runs: benchmarks/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
wheels=${SMMILE_WHEELHOUSE:-$HOME/.cache/smmile/wheelhouse}
mkdir -p "$wheels"
declare -A LOCK=([paper]=requirements-paper.lock [paper-llava]=requirements-paper-llava.lock)
targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=(paper paper-llava)
for t in "${targets[@]}"; do
  [ -n "${LOCK[$t]:-}" ] || { echo "check_paper_envs.sh: unknown lock '$t' (paper, paper-llava)" >&2; exit 2; }
done
# the test runner, at the test lock's versions
test_tools=$(grep -E '^(pytest|pytest-timeout|pluggy|iniconfig|pygments|packaging)==' requirements-test.lock)
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
# the pins of a lock (and the extra ones given) that have no wheel or sdist in the wheelhouse yet
missing() {
  python3 - "$wheels" "$@" <<'PY'
import os, re, sys
norm = lambda text: re.sub(r"[-_.]+", "_", text).lower()
have = set()
for name in os.listdir(sys.argv[1]):
    base = re.sub(r"\.(whl|tar\.gz|zip)$", "", name)
    parts = base.split("-") if name.endswith(".whl") else base.rsplit("-", 1)
    if len(parts) >= 2:
        have.add((norm(parts[0]), norm(parts[1])))
pins = [line.split("#")[0].strip() for line in open(sys.argv[2])] + sys.argv[3:]
for pin in filter(None, pins):
    name, _, version = pin.partition("==")
    if (norm(name), norm(version)) not in have:
        print(pin)
PY
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 124' TERM  # cut off by CI's time limit (`timeout`): the venvs are still removed
failed=0
for t in "${targets[@]}"; do
  lock=${LOCK[$t]}
  start=$(date +%s)
  venv="$work/$t"
  python3 -m venv "$venv"
  # one pip call per missing pin, so a download cut off (CI's time limit) keeps the wheels it finished
  # shellcheck disable=SC2086
  for req in $(missing "$lock" $test_tools); do quiet "$venv/bin/pip" download -q --no-deps -d "$wheels" "$req"; done
  # shellcheck disable=SC2086
  quiet "$venv/bin/pip" install -q --no-index --find-links "$wheels" -r "$lock" $test_tools
  quiet "$venv/bin/pip" install -q --no-deps -e .
  built=$(( $(date +%s) - start ))
  echo "check_paper_envs: $lock built in ${built} s" >&2
  if ! SMMILE_TINY_DIR="$work/tiny-$t" "$venv/bin/python" -m pytest -q -p no:cacheprovider -m paper_env \
      tests/test_hf_reference.py tests/test_hf_frontdoors.py tests/test_hf_compat.py tests/test_hf_convert.py \
      tests/test_env_command.py; then
    failed=1
  fi
  echo "check_paper_envs: $lock built and tested in $(( $(date +%s) - start )) s" >&2
  rm -rf "$venv"
done
exit $failed
