"""The MCQA task held fixed in every ICL variant (issue #34, deliverable 1): the options and letters are those of the
unmodified problem, seeded per problem id and recorded in the variant; the paper's own variants keep the original's
shared stream. Acceptance: the random baseline shows no significant difference between any variant and the full
problem, and its option count per problem is the same in every variant."""

from __future__ import annotations

import json

import pytest

from smmile.cli import main as smmile
from smmile.cli.baselines import main as baselines
from smmile.data.load import load_for_run, load_problems
from smmile.runner.run import Runner, RunSpec

VARIANTS = {"k-shot-1": ["k-shot", "--k", "1"], "k-shot-3-draw1": ["k-shot", "--k", "3", "--draw", "1"],
            "flip-answers": ["flip-answers"], "flip-answers-0.5": ["flip-answers", "--fraction", "0.5"],
            "random-labels": ["random-labels"], "unrelated-labels": ["unrelated-labels"],
            "no-answers": ["no-answers"], "no-example-images-blank": ["no-example-images", "--fill", "blank"],
            "no-example-images": ["no-example-images"], "no-query-image-noise": ["no-query-image", "--fill", "noise"],
            "swap-example-images": ["swap-example-images"], "other-query-image": ["other-query-image"],
            "demos-random": ["demos", "--policy", "random"], "demos-experts": ["demos", "--policy", "experts"],
            "demos-leave-one-out-0": ["demos", "--policy", "leave-one-out", "--index", "0"]}
ANALYSES = {"shots": ("k-shot-1", "k-shot-3-draw1"),
            "flip": ("flip-answers", "flip-answers-0.5", "random-labels", "unrelated-labels", "no-answers"),
            "images": ("no-example-images-blank", "no-example-images", "no-query-image-noise",
                       "swap-example-images", "other-query-image"),
            "policies": ("demos-random", "demos-leave-one-out-0")}


def options(dataset) -> dict[str, dict]:
    """problem id -> the options (display order) the random baseline would be shown in MCQA."""
    runner = Runner(RunSpec(model="random", fmt="mcqa", dataset=str(dataset)))
    return {it.problem_id: it.options for it in runner.plan(load_for_run(str(dataset)))}


@pytest.fixture(scope="module")
def root(tmp_path_factory, demo_dir):
    root = tmp_path_factory.mktemp("fixed")
    datasets = {"original": demo_dir / "smmile"}
    for label, args in VARIANTS.items():
        assert smmile(["data", "variant", *args, "--dataset", str(datasets["original"]),
                       "--out", str(root / "ds" / label)]) == 0
        datasets[label] = root / "ds" / label
    return root, datasets


def test_every_variant_shows_the_unmodified_problems_options(root):
    _, datasets = root
    source = {p.problem_id: p for p in load_problems(str(datasets["original"]))}
    full = options(datasets["original"])
    seen = {label: options(path) for label, path in datasets.items() if label != "original"}
    first = seen["k-shot-1"]
    for label, got in seen.items():
        assert got == first, label  # same letters, same answers, same display order in every variant
        for pid, opts in got.items():  # the unmodified problem's answers, as many as the full problem offers
            assert sorted(opts.values()) == sorted(set(source[pid].answers())) and len(opts) == len(full[pid])


def test_options_are_seeded_per_problem_not_by_a_shared_stream(root, tmp_path):
    _, datasets = root
    problems = load_problems(str(datasets["original"]))
    from smmile.data.parquet import problems_to_records, write_dataset

    subset = write_dataset(problems_to_records(problems[5:9][::-1]), tmp_path / "subset")  # other problems, order
    assert smmile(["data", "variant", "k-shot", "--k", "1", "--dataset", str(subset), "--out",
                   str(tmp_path / "k1")]) == 0
    full = options(datasets["k-shot-1"])
    assert options(tmp_path / "k1") == {pid: full[pid] for pid in options(tmp_path / "k1")}


def test_the_papers_own_variants_keep_the_original_shuffle(root, tmp_path):
    from smmile.protocol.options import RECORDED

    _, datasets = root
    for kind in ("noise-random", "order-last", "permute"):
        assert smmile(["data", "variant", kind, "--dataset", str(datasets["original"]),
                       "--out", str(tmp_path / kind)]) == 0
        assert all(RECORDED not in p.query.fields for p in load_problems(str(tmp_path / kind)))
        assert json.loads((tmp_path / kind / "variant_manifest.json").read_text())["mcqa_options"] is None


def test_the_random_baseline_shows_no_difference(root):
    path, datasets = root
    for label, dataset in datasets.items():
        assert baselines(["--baseline", "random", "--task_format", "mcqa", "--dataset", str(dataset),
                          "--output-dir", str(path / "res" / label)]) == 0
    for kind, labels in ANALYSES.items():
        sets = [str(path / "res" / label) for label in ("original", "demos-experts", *labels)]
        assert smmile(["analyze", kind, *sets, "--out", str(path / "an" / kind), "--n-boot", "100"]) == 0
        summary = json.loads((path / "an" / kind / f"{kind}.json").read_text())["summary"]
        compared = {r["variant"].split(" ")[0] for r in summary if r["reference"].split(" ")[0] != "original"
                    or r["reference"].endswith("ICL")}
        assert compared >= set(labels) and not any(r["significant"] for r in summary), kind
        for r in summary:  # the variants show one task: the random baseline answers them all alike
            if r["reference"].split(" ")[0] == "demos-experts":
                assert r["difference"] == 0


def test_the_policy_analysis_renders_in_the_report(root):
    path, _ = root
    if not (path / "an" / "policies" / "policies.json").exists():
        pytest.skip("needs test_the_random_baseline_shows_no_difference's runs")
    policies = json.loads((path / "an" / "policies" / "policies.json").read_text())
    assert policies["correction"].startswith("Westfall-Young step-down minP (max-T on the sign-flip mid-p-values) "
                                             "within each family: research question")
    assert {r["subset"] for r in policies["by_format"]} >= {"format: multiple choice", "format: free response"}
    assert smmile(["report", str(path / "res" / "original"), "--analyses", str(path / "an" / "policies"),
                   "--out", str(path / "report")]) == 0
    page = (path / "report" / "index.html").read_text()
    assert "demonstration policies against the experts" in page and "demos-random ICL − demos-experts ICL" in page


def test_a_malformed_recorded_options_cell_is_one_line():
    import random

    from smmile.errors import UserError
    from smmile.protocol.options import RECORDED, shuffled_options
    from smmile.protocol.problem import Problem, Row

    bad = Problem("p", (Row("p", 0, "q", "a", None), Row("p", 1, "q", "b", None, fields={RECORDED: "{oops"})))
    with pytest.raises(UserError, match="mcqa_options cell"):
        shuffled_options(bad, random.Random(0))
