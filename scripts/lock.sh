#!/usr/bin/env bash
# Regenerate the lock files from the requirement files: the ONLY way to add or upgrade a dependency.
#   bash scripts/lock.sh            # all locks
#   bash scripts/lock.sh main test  # some of them
# Each lock pins every distribution (transitive ones too) for CPython 3.11 on Linux x86_64:
#   requirements.lock        requirements.txt + requirements-cpu.txt      the README's first command (CPU torch)
#   requirements-test.lock   requirements-test.txt (constrained by main)  the README's test command and CI
#   requirements-paper.lock  requirements-paper.txt                       GPU machines, the paper's versions
#   requirements-paper-llava.lock  requirements-paper-llava.txt           the LLaVA scripts' versions (4.46.3)
#   requirements-vllm.lock   requirements-vllm.txt                        the vLLM backend, its own environment
# pip-tools runs in a throw-away virtual environment and resolves with this machine's pip configuration
# (index, find-links). tests/test_locks.py checks that the requirement files and the locks agree.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP_TOOLS=pip-tools==7.6.2
venv=$(mktemp -d)/lock-venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q "$PIP_TOOLS"
compile() {  # compile OUT INPUT...
  local out=$1; shift
  echo "locking $out from $*" >&2
  CUSTOM_COMPILE_COMMAND="bash scripts/lock.sh" "$venv/bin/pip-compile" -q --strip-extras --allow-unsafe \
    --no-emit-index-url --no-emit-find-links --resolver=backtracking -o "$out" "$@"
}
targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=(main test paper-gpu paper-llava vllm)
for t in "${targets[@]}"; do
  case $t in
    main) compile requirements.lock requirements.txt requirements-cpu.txt ;;
    test) compile requirements-test.lock requirements-test.txt ;;
    paper-gpu) compile requirements-paper.lock requirements-paper.txt ;;
    paper-llava) compile requirements-paper-llava.lock requirements-paper-llava.txt ;;
    vllm) compile requirements-vllm.lock requirements-vllm.txt ;;
    *) echo "scripts/lock.sh: unknown lock '$t' (main, test, paper-gpu, paper-llava, vllm)" >&2; exit 2 ;;
  esac
done
