"""variance_analysis on a generated SMMILE++-shaped directory (1038 rows per file) and bad inputs."""

import importlib.util
import math
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "inference_and_evaluation"))

from smmile.cli import variance as variance_cli  # noqa: E402
from smmile.record import run_record as discovery  # noqa: E402
from smmile.scoring import variance  # noqa: E402

N_ROWS = 1038
COLUMNS = [(metric, mode) for metric in ("LLM", "EM", "MCQA") for mode in ("0-shot", "ICL")]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_variance", ROOT / "benchmarks" / "bench_variance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("smmilepp")
    expected = BENCH.build_results_dir(root, n_files=16, n_rows=N_ROWS, seed=3)
    return root, expected


def parse_table(text):
    rows = {}
    for line in text.split("\n")[2:]:
        model, *cells = line.split(" & ")
        rows[model] = dict(zip(COLUMNS, [None if c == "-" else tuple(map(float, c.split(" ± "))) for c in cells]))
    return rows


def test_generated_directory_shape(synthetic):
    root, expected = synthetic
    assert len(list(root.glob("*.csv"))) == 16
    assert {"majority", "random", "MedVLM-R1"} <= {model for model, _, _ in expected}
    assert all(n == N_ROWS for _, n in expected.values())


def test_mean_only_matches_known_accuracies(synthetic, tmp_path):
    root, expected = synthetic
    out = tmp_path / "mean.txt"
    assert variance_cli.main([str(root), "--mean_only", "--output", str(out)]) == 0
    table = parse_table(out.read_text(encoding="utf-8"))
    for (model, metric, mode), (correct, n) in expected.items():
        assert table[model][(metric, mode)] == (round(100 * correct / n, 2),)


def test_bootstrap_close_to_binomial(synthetic, tmp_path):
    root, expected = synthetic
    out = tmp_path / "boot.txt"
    assert variance_cli.main([str(root), "--sorted", "--output", str(out), "--generate_table",
                          "--latex_output", str(tmp_path / "t.tex")]) == 0
    table = parse_table(out.read_text(encoding="utf-8"))
    for (model, metric, mode), (correct, n) in expected.items():
        mean, std = table[model][(metric, mode)]
        p = correct / n
        assert abs(mean - 100 * p) < 0.5
        assert abs(std - 100 * math.sqrt(p * (1 - p) / n)) < 0.3
    latex = (tmp_path / "t.tex").read_text(encoding="utf-8").split("\n")
    assert latex[2] == r"\midrule" and latex[-1] == r"\bottomrule"  # majority, random first


def test_same_stream_as_original_loop(synthetic):
    """The whole run (file order, EM before LLM, one stream) equals the original's per-resample loop."""
    root, _ = synthetic
    files = variance.list_csvs(str(root), sort=True)
    assert BENCH.ours_table(files) == BENCH.original_table(files)
    reordered = files[::-1]
    assert BENCH.ours_table(reordered) == BENCH.original_table(reordered)
    assert BENCH.ours_table(reordered) != BENCH.ours_table(files)  # ± depends on the order (faithful)


def test_sorted_flag_is_order_independent(synthetic, tmp_path, monkeypatch):
    root, _ = synthetic
    outputs = []
    for order in (sorted, lambda files: sorted(files, reverse=True)):
        monkeypatch.setattr(discovery.glob, "glob", lambda pattern, order=order: order(
            str(p) for p in Path(pattern).parent.glob("*.csv")))
        out = tmp_path / "sorted.txt"
        assert variance_cli.main([str(root), "--sorted", "--output", str(out)]) == 0
        outputs.append(out.read_text(encoding="utf-8"))
    assert outputs[0] == outputs[1]


def test_bad_inputs(tmp_path, capsys, synthetic):
    root, _ = synthetic
    work = tmp_path / "bad"
    work.mkdir()
    for name in ("result_gpt-4o_ICL_mcqa.csv", "result_gpt-4o_ICL_open.csv"):
        shutil.copy(root / name, work / name)
    (work / "result_qwen7B_ICL_mcqa.csv").write_text("problem_id,selected_option\na,B\n")
    (work / "result_qwen7B_ICL_open.csv").write_text("problem_id,generated_answer\na,B\n")
    (work / "result_qwen3B_ICL_mcqa.csv").write_text("")
    capsys.readouterr()
    assert variance_cli.main([str(work)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert any("is_correct" in line for line in err) and any("true_answer" in line for line in err)
    assert any("result_qwen3B_ICL_mcqa.csv" in line for line in err)
    # the open file without judge JSON: a note, not a failure
    assert any(line.startswith("note:") and "qwen7B_ICL_open_evaluationllm.json" in line for line in err)
    table = parse_table((work / "evaluation_results.txt").read_text(encoding="utf-8"))
    assert table["qwen7B"][("MCQA", "ICL")] is None and table["qwen7B"][("EM", "ICL")] is None
    assert table["qwen3B"][("MCQA", "ICL")] is None
    assert table["gpt-4o"][("MCQA", "ICL")] is not None


def test_missing_directory_and_empty_directory(tmp_path, capsys):
    assert variance_cli.main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not found" in err[0]
    assert variance_cli.main([str(tmp_path)]) == 1


def test_help_documents_additions(capsys):
    with pytest.raises(SystemExit):
        variance_cli.main(["--help"])
    text = capsys.readouterr().out
    for flag in ("--output", "--mean_only", "--generate_table", "--latex_output", "--sorted", "--ci"):
        assert flag in text


def test_ci_flag_writes_estimates_and_reruns_cleanly(synthetic, tmp_path, capsys):
    root, expected = synthetic
    work = tmp_path / "ci"
    shutil.copytree(root, work)
    assert variance_cli.main([str(work), "--sorted", "--ci"]) == 0
    assert (work / "stats_estimates.csv").exists() and (work / "stats_estimates.json").exists()
    assert "95% CI" in capsys.readouterr().out
    first = (work / "evaluation_results.txt").read_text(encoding="utf-8")
    assert variance_cli.main([str(work), "--sorted"]) == 0  # our stats_*.csv are not taken for results
    assert (work / "evaluation_results.txt").read_text(encoding="utf-8") == first
