"""Runner and baselines front door: outputs, resume, SIGKILL, shards, bad input (issue 2 acceptance)."""

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import FRONT
from smmile.data.load import load_problems
from smmile.data.parquet import problems_to_records, write_dataset
from smmile.runner.csv_writer import csv_text

MCQA8 = ["problem_id", "final_question", "true_answer", "correct_option", "selected_option", "is_correct",
         "generated_answer", "full_response"]
OPEN5 = ["problem_id", "final_question", "true_answer", "generated_answer", "full_response"]


def front(script, *args, cwd=FRONT, env=None):
    return subprocess.run([sys.executable, script, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def baseline(tmp_path, *args):
    return front("inference_baselines.py", "--dataset", "demo", "--output-dir", str(tmp_path), *args)


def test_random_mcqa_columns_and_original_stream(tmp_path, demo_dir):
    r = baseline(tmp_path, "--baseline", "random", "--task_format", "mcqa")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(tmp_path / "result_random_ICL_mcqa.csv", keep_default_na=False)
    assert list(df.columns) == MCQA8
    # spec §11.3: per problem one random.shuffle, then one np.random.choice over the displayed letters
    py, npr = random.Random(42), np.random.RandomState(42)
    problems = load_problems(str(demo_dir / "smmile"))
    assert list(df.problem_id) == [p.problem_id for p in problems]
    for p, sel in zip(problems, df.selected_option):
        letters = [chr(65 + i) for i in range(len(dict.fromkeys(p.answers())))]
        py.shuffle(letters)
        assert sel == str(npr.choice(letters))


def test_open_baselines_file_names_and_majority(tmp_path, demo_dir):
    for kind in ("random", "majority"):
        assert baseline(tmp_path, "--baseline", kind).returncode == 0
        df = pd.read_csv(tmp_path / f"result_{kind}_ICL.csv", keep_default_na=False)
        assert list(df.columns) == OPEN5
    problems = load_problems(str(demo_dir / "smmile"))
    maj = pd.read_csv(tmp_path / "result_majority_ICL.csv", keep_default_na=False)
    for p, ans in zip(problems, maj.generated_answer):
        icl = [r.answer for r in p.examples]
        best = max(icl.count(a) for a in icl)
        assert ans == next(a for a in icl if icl.count(a) == best)


def test_rerun_recomputes_nothing_and_is_fast(tmp_path):
    assert baseline(tmp_path, "--baseline", "random", "--task_format", "mcqa").returncode == 0
    first = (tmp_path / "result_random_ICL_mcqa.csv").read_bytes()
    manifest_path = tmp_path / "result_random_ICL_mcqa.manifest.json"
    first_manifest = manifest_path.read_bytes()
    journal = tmp_path / ".smmile" / "result_random_ICL_mcqa.journal.jsonl"
    lines = journal.read_text().count("\n")
    t = time.perf_counter()
    r = baseline(tmp_path, "--baseline", "random", "--task_format", "mcqa")
    elapsed = time.perf_counter() - t
    assert r.returncode == 0 and "0 computed this run" in r.stdout
    assert journal.read_text().count("\n") == lines
    assert (tmp_path / "result_random_ICL_mcqa.csv").read_bytes() == first
    t = time.perf_counter()
    front("-c", "pass")
    startup = time.perf_counter() - t
    assert elapsed - startup < 2.0, (elapsed, startup)
    # the manifest still describes the run that computed the answers (created, command, counts unchanged)
    assert manifest_path.read_bytes() == first_manifest
    manifest = json.loads(first_manifest)
    assert manifest["counts"] == {"rows": 24, "computed_this_run": 24, "failed": 0}
    assert manifest["seeds"] == {"python_random": 42, "numpy_legacy": 42}


SLOW = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from smmile.models import registry
    from smmile.models.base import Backend, Response
    from smmile.runner.run import RunSpec, run

    class Slow(Backend):
        name = "slow"
        def generate(self, work, on_done):
            for item, choice in work:
                print("COMPUTE", item.problem_id, flush=True)
                time.sleep(float(sys.argv[2]))
                if item.problem_id in sys.argv[3:]:
                    on_done(item, Response(error="ERROR: Generation failed - boom"))
                else:
                    on_done(item, Response(text=choice))

    sys.modules["slowmod"] = sys.modules[__name__]
    registry.register(registry.Preset("slow", "slow", "baselines:BaselineFamily", "slowmod:Slow", "slow",
                                      family_args={"kind": "random"}))
    spec = RunSpec(model="slow", fmt="mcqa", dataset="demo", output_dir=Path(sys.argv[1]))
    sys.exit(run(spec).exit_code)
''')


def run_slow(tmp_path, out, delay, *fail, wait=True):
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    cmd = [sys.executable, str(script), str(out), str(delay), *fail]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_sigkill_midway_resumes_to_identical_output(tmp_path):
    ref = run_slow(tmp_path, tmp_path / "ref", 0)
    assert ref.returncode == 0, ref.stderr
    proc = run_slow(tmp_path, tmp_path / "killed", 0.15, wait=False)
    computed_before = []
    while len(computed_before) < 8:
        computed_before.append(proc.stdout.readline().split()[1])
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "killed" / "result_slow_ICL_mcqa.csv").exists()
    resumed = run_slow(tmp_path, tmp_path / "killed", 0)
    assert resumed.returncode == 0, resumed.stderr
    recomputed = [l.split()[1] for l in resumed.stdout.splitlines() if l.startswith("COMPUTE")]
    done_before = set(computed_before[:-2])  # the last ones may not have reached the journal
    assert not done_before & set(recomputed)
    assert len(recomputed) + len(set(computed_before) - set(recomputed)) == 24
    a = (tmp_path / "ref" / "result_slow_ICL_mcqa.csv").read_bytes()
    assert (tmp_path / "killed" / "result_slow_ICL_mcqa.csv").read_bytes() == a


def test_failures_exit_nonzero_and_are_retried(tmp_path, demo_dir):
    victim = load_problems(str(demo_dir / "smmile"))[3].problem_id
    r = run_slow(tmp_path, tmp_path / "o", 0, victim)
    assert r.returncode == 1 and victim in r.stderr and "failed" in r.stderr
    df = pd.read_csv(tmp_path / "o" / "result_slow_ICL_mcqa.csv", keep_default_na=False)
    assert df.loc[df.problem_id == victim, "selected_option"].item() == "ERROR"
    again = run_slow(tmp_path, tmp_path / "o", 0)
    assert again.returncode == 0
    assert [l.split()[1] for l in again.stdout.splitlines() if l.startswith("COMPUTE")] == [victim]


def test_shards_merge_to_the_unsharded_file(tmp_path):
    assert baseline(tmp_path / "full", "--baseline", "random", "--task_format", "mcqa").returncode == 0
    shards = []
    for i in (1, 2, 3):
        assert baseline(tmp_path / "sh", "--baseline", "random", "--task_format", "mcqa", "--shard", f"{i}/3").returncode == 0
        shards.append(str(tmp_path / "sh" / f"result_random_ICL_mcqa.shard-{i}-of-3.csv"))
    smmile = [sys.executable, "-m", "smmile.cli", "merge"]
    bad = subprocess.run(smmile + shards[:2], capture_output=True, text=True, cwd=FRONT)
    assert bad.returncode == 2 and "shards 1..3" in bad.stderr
    dup = subprocess.run(smmile + shards + shards[:1], capture_output=True, text=True, cwd=FRONT)
    assert dup.returncode == 2
    ok = subprocess.run(smmile + shards, capture_output=True, text=True, cwd=FRONT)
    assert ok.returncode == 0, ok.stderr
    merged = (tmp_path / "sh" / "result_random_ICL_mcqa.csv").read_bytes()
    assert merged == (tmp_path / "full" / "result_random_ICL_mcqa.csv").read_bytes()


def corrupt_dataset(tmp_path, demo_dir, how):
    recs = problems_to_records(load_problems(str(demo_dir / "smmile"))[:4])
    out = tmp_path / f"bad_{how}"
    if how == "column":
        for r in recs:
            del r["answer"]
    elif how == "image":
        recs[5]["image"] = {"bytes": b"\x89PNG\r\n\x1a\nnot really", "path": "x.png"}
    elif how == "traversal":
        recs[2]["image"], recs[2]["image_url"] = None, "https://evil/../../etc/passwd"
    if how == "parquet":
        (out / "data").mkdir(parents=True)
        (out / "data" / "train-00000-of-00001.parquet").write_bytes(b"PAR1 garbage PAR1")
    else:
        write_dataset(recs, out)
    return out


@pytest.mark.parametrize("how,needle", [("column", "answer"), ("image", "cannot be decoded"),
                                        ("traversal", "leave"), ("parquet", "parquet")])
def test_bad_dataset_one_line_exit_2_no_csv(tmp_path, demo_dir, how, needle):
    data = corrupt_dataset(tmp_path, demo_dir, how)
    r = front("inference_baselines.py", "--baseline", "random", "--dataset", str(data), "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not list((tmp_path / "o").glob("*.csv")) if (tmp_path / "o").exists() else True


def test_unknown_preset_and_bad_flags(tmp_path):
    r = subprocess.run([sys.executable, "-m", "smmile.cli", "run", "--model", "nope", "--dataset", "demo",
                        "--output-dir", str(tmp_path)], capture_output=True, text=True, cwd=FRONT)
    assert r.returncode == 2 and "unknown model preset 'nope'" in r.stderr and "Traceback" not in r.stderr
    r = baseline(tmp_path, "--baseline", "random", "--shard", "4/3")
    assert r.returncode == 2 and "shard" in r.stderr


def test_secrets_never_written(tmp_path):
    sentinel = "hf_SENTINEL-not-a-real-token-0042"
    r = front("inference_baselines.py", "--baseline", "majority", "--dataset", "demo", "--output-dir", str(tmp_path),
              env={"HF_TOKEN": sentinel})
    assert r.returncode == 0 and sentinel not in r.stdout + r.stderr
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert sentinel not in f.read_text(errors="ignore")


def test_csv_matches_pandas_writer():
    rows = [{"a": "x,y", "b": True, "c": None}, {"a": 'q"uote\nline', "b": False, "c": ""}, {"a": " lead", "b": True, "c": "1"}]
    assert csv_text(["a", "b", "c"], rows) == pd.DataFrame(rows).to_csv(index=False)


def test_smmile_run_equals_front_door(tmp_path):
    assert baseline(tmp_path / "fd", "--baseline", "majority", "--task_format", "mcqa").returncode == 0
    r = subprocess.run([sys.executable, "-m", "smmile.cli", "run", "--model", "majority", "--task_format", "mcqa",
                        "--dataset", "demo", "--output-dir", str(tmp_path / "cli")], capture_output=True, text=True, cwd=FRONT)
    assert r.returncode == 0, r.stderr
    name = "result_majority_ICL_mcqa.csv"
    assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "fd" / name).read_bytes()
