"""A variant's identity travels with the run (issue #34, deliverables 6 and 7): the run manifest records the
variant when the model runs and the analyses read it from there; --out in or around the source is refused; a
malformed variant manifest is one line, exit 2, before anything is loaded; a folder an analysis does not use is
named; a family that cannot show a prompt without an image refuses it whatever the data's origin."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from smmile.cli import main as smmile
from smmile.cli.baselines import main as baselines
from smmile.data.schema import MANIFEST


def variant(src, out: Path, *args: str) -> Path:
    assert smmile(["data", "variant", *args, "--dataset", str(src), "--out", str(out)]) == 0
    return out


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err, err
    return err


def manifests(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.manifest.json"))]


@pytest.fixture
def source(tmp_path, demo_dir) -> Path:
    src = tmp_path / "ds4"
    shutil.copytree(demo_dir / "smmile", src)
    return src


@pytest.mark.parametrize("where", ["same", "inside", "around"])
def test_out_in_or_around_the_source_is_refused(source, capsys, where):
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    out = {"same": source, "inside": source / "sub", "around": source.parent}[where]
    assert smmile(["data", "variant", "k-shot", "--k", "1", "--dataset", str(source), "--out", str(out),
                   "--force"]) == 2
    assert "source dataset" in one_line_error(capsys)
    assert {p: p.read_bytes() for p in source.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("content", [b"{not json", b"", b"[1, 2]", b"\x00\xff\xfe binary",
                                     b'{"kind": "../../etc/passwd", "transform": "k-shot"}',
                                     b'{"kind": 5, "transform": "k-shot"}', "link"])
def test_a_malformed_variant_manifest_is_one_line_before_anything_runs(tmp_path, source, capsys, content):
    path = variant(source, tmp_path / "v", "k-shot", "--k", "1")
    target = path / MANIFEST
    if content == "link":
        (tmp_path / "elsewhere.json").write_text(target.read_text())
        target.unlink()
        target.symlink_to(tmp_path / "elsewhere.json")
    else:
        target.write_bytes(content)
    out = tmp_path / "res"
    assert baselines(["--baseline", "random", "--task_format", "mcqa", "--dataset", str(path),
                      "--output-dir", str(out)]) == 2
    assert MANIFEST in one_line_error(capsys)
    assert not out.exists()


def test_the_run_records_its_variant_and_the_analysis_reads_it_from_there(tmp_path, source, capsys):
    one = variant(source, tmp_path / "v", "k-shot", "--k", "1")
    sha = hashlib.sha256((one / MANIFEST).read_bytes()).hexdigest()
    written = json.loads((one / MANIFEST).read_text())
    res = {"original": tmp_path / "r0", "k1": tmp_path / "r1"}
    for ds, out in ((source, res["original"]), (one, res["k1"])):
        assert baselines(["--baseline", "majority", "--task_format", "mcqa", "--dataset", str(ds),
                          "--output-dir", str(out)]) == 0
    recorded = manifests(res["k1"])[0]["dataset"]["variant"]
    assert recorded["kind"] == "k-shot-1" and recorded["params"] == {"k": 1} and recorded["seed"] == 42
    assert recorded["manifest_sha256"] == sha and recorded["source_fingerprint"] == written["source"]["fingerprint"]
    assert manifests(res["original"])[0]["dataset"]["variant"] is None
    # the dataset folder is rewritten as another variant after the run: the run still says k-shot-1
    assert smmile(["data", "variant", "flip-answers", "--dataset", str(source), "--out", str(one)]) == 0
    assert smmile(["analyze", "shots", str(res["original"]), str(res["k1"]), "--out", str(tmp_path / "an"),
                   "--n-boot", "50"]) == 0
    shots = json.loads((tmp_path / "an" / "shots.json").read_text())
    assert {s["label"] for s in shots["sets"]} == {"original", "k-shot-1"}


def test_an_analysis_names_the_folders_it_does_not_use(tmp_path, source, capsys):
    res = {}
    for label, args in (("original", None), ("flip-answers", ["flip-answers"]), ("k-shot-1", ["k-shot", "--k", "1"])):
        ds = variant(source, tmp_path / label, *args) if args else source
        res[label] = tmp_path / f"r-{label}"
        assert baselines(["--baseline", "majority", "--task_format", "mcqa", "--dataset", str(ds),
                          "--output-dir", str(res[label])]) == 0
    for kind in ("flip", "diagnostics"):
        assert smmile(["analyze", kind, *map(str, res.values()), "--out", str(tmp_path / f"an-{kind}"),
                       "--n-boot", "50"]) in (0, 2)
        out = tmp_path / f"an-{kind}" / f"{kind}.json"
        if kind == "flip":
            warnings = json.loads(out.read_text())["warnings"]
            assert any("'k-shot-1'" in w and "not used" in w and str(res["k-shot-1"]) in w for w in warnings)
    err = capsys.readouterr().err
    assert "'k-shot-1'" in err and "not used by the diagnostics analysis" in err


def test_refusal_by_capability_whatever_the_origin(tmp_path, source, capsys):
    """The variant's rows copied to a folder without its manifest: a family that cannot show a prompt without an
    image still refuses (from its own capability), before any model loads; the baselines run it."""
    from smmile.data.load import load_problems
    from smmile.data.parquet import problems_to_records, write_dataset

    path = variant(source, tmp_path / "v", "no-example-images")
    copy = write_dataset(problems_to_records(load_problems(str(path))), tmp_path / "copy")
    assert not (copy / MANIFEST).exists()
    from smmile.errors import UserError
    from smmile.runner.run import Runner, RunSpec

    out = tmp_path / "res"
    with pytest.raises(UserError, match="inference_qwen.py cannot represent a prompt without an image"):
        Runner(RunSpec(model="qwen3B", dataset=str(copy), output_dir=out)).run()  # the model would load after
    assert not list(out.glob("result_*"))
    assert baselines(["--baseline", "random", "--task_format", "mcqa", "--dataset", str(copy),
                      "--output-dir", str(out)]) == 0
    from smmile.data.variant_datasets import refuse_imageless

    refuse_imageless(load_problems(str(copy)), "0-shot", "qwen", copy)  # 0-shot shows the query: its image is there
    with pytest.raises(UserError, match="inference_qwen.py"):
        refuse_imageless(load_problems(str(copy)), "ICL", "qwen", copy)


def test_the_demo_plusplus_run_records_permute(tmp_path):
    """SMMILE++ asked for as the original scripts do (the demo with --augmented) is recorded as `permute`."""
    from smmile.runner.run import Runner, RunSpec

    out = tmp_path / "res"
    Runner(RunSpec(model="majority", fmt="mcqa", dataset="demo", augmented=True, output_dir=out, quiet=True)).run()
    assert manifests(out)[0]["dataset"]["variant"]["kind"] == "permute"
