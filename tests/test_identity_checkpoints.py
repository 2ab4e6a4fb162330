"""Names that never lie about which model ran (issue #36, deliverable 2): a preset run on another checkpoint
(`--model-path`) is labelled as that checkpoint with the preset named beside it, unless the folder is the preset's
own hub snapshot; two `hf:` folders named `checkpoint-500` give two result files, two table rows, two labels."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import tiny_generic as tg  # noqa: E402
import tiny_models  # noqa: E402
from smmile import cli  # noqa: E402
from smmile.generation import RunSettings  # noqa: E402
from smmile.runner.run import Runner, RunSpec  # noqa: E402

pytestmark = pytest.mark.slow


def short(path: Path) -> str:
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:6]


def test_a_preset_on_another_checkpoint_is_named_after_the_checkpoint(tmp_path):
    folder = tmp_path / "my-finetune"
    folder.mkdir()
    runner = Runner(RunSpec(model="qwen3B", model_path=str(folder), output_dir=tmp_path / "out"))
    identity = runner.preset.identity
    assert identity.key == identity.scoring_name == f"my-finetune-{short(folder)}"
    assert identity.display == f"my-finetune #{short(folder)} (Qwen2.5-VL-3B preset)"
    assert "Qwen2.5-VL-3B" not in identity.key and "qwen3B" not in identity.latex


def test_the_presets_own_hub_snapshot_keeps_the_papers_name(tmp_path):
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen2.5-VL-3B-Instruct" / "snapshots" / "66285546d2b821cf"
    snapshot.mkdir(parents=True)
    identity = Runner(RunSpec(model="qwen3B", model_path=str(snapshot))).preset.identity
    assert (identity.key, identity.display) == ("qwen3B", "Qwen2.5-VL-3B")
    other = tmp_path / "hub" / "models--Qwen--Qwen2.5-VL-7B-Instruct" / "snapshots" / "abc"
    other.mkdir(parents=True)  # the 7B's snapshot given to the 3B preset is another checkpoint
    assert Runner(RunSpec(model="qwen3B", model_path=str(other))).preset.identity.key != "qwen3B"


def hub_cache(root: Path, hub_id: str, revision: str, files: dict[str, bytes]) -> Path:
    """A Hugging Face cache holding `files` of `hub_id` at `revision`: blobs named by sha256, the snapshot links."""
    repo = root / ("models--" + hub_id.replace("/", "--"))
    snapshot = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(Path("..", "..", "blobs", blob.name))
    return snapshot


WEIGHTS = {"model-00001-of-00002.safetensors": b"\x01" * 64, "model-00002-of-00002.safetensors": b"\x02" * 32}


@pytest.mark.parametrize("variable, cache", [("XDG_CACHE_HOME", "xdg/huggingface/hub"), ("HF_HOME", "home/hub"),
                                             ("HF_HUB_CACHE", "hub-cache")])
def test_the_weights_are_recognised_in_the_cache_huggingface_hub_uses(tmp_path, monkeypatch, variable, cache):
    """No --hf-cache-dir: the cache is where huggingface_hub puts it (HF_HUB_CACHE, else HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub)."""
    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(tmp_path / cache.split("/")[0]))
    hub_cache(tmp_path / cache, "Qwen/Qwen2.5-VL-3B-Instruct", "66285546d2b8", WEIGHTS)
    copy = tmp_path / "qwen3b"
    copy.mkdir()
    for name, data in WEIGHTS.items():
        (copy / name).write_bytes(data)
    assert Runner(RunSpec(model="qwen3B", model_path=str(copy))).checkpoint["revision"] == "66285546d2b8"


def test_a_copy_of_the_presets_weights_keeps_the_papers_name_and_records_the_revision(tmp_path):
    cache = tmp_path / "cache"
    hub_cache(cache, "Qwen/Qwen2.5-VL-3B-Instruct", "66285546d2b8", {**WEIGHTS, "config.json": b"{}"})
    copy = tmp_path / "downloads" / "qwen3b"  # e.g. `huggingface-cli download --local-dir`, or cp -rL
    copy.mkdir(parents=True)
    for name, data in WEIGHTS.items():
        (copy / name).write_bytes(data)
    runner = Runner(RunSpec(model="qwen3B", model_path=str(copy), settings=RunSettings(cache_dir=str(cache))))
    assert (runner.preset.identity.key, runner.preset.identity.display) == ("qwen3B", "Qwen2.5-VL-3B")
    assert runner.checkpoint == {"hub_id": "Qwen/Qwen2.5-VL-3B-Instruct", "revision": "66285546d2b8",
                                 "recognised_by": "weights sha256"}

    (copy / "model-00002-of-00002.safetensors").write_bytes(b"\x03" * 32)  # fine-tuned: same size, other bytes
    runner = Runner(RunSpec(model="qwen3B", model_path=str(copy), settings=RunSettings(cache_dir=str(cache))))
    assert runner.checkpoint is None and runner.preset.identity.key == f"qwen3b-{short(copy)}"
    other = Runner(RunSpec(model="qwen7B", model_path=str(cache / "models--Qwen--Qwen2.5-VL-3B-Instruct" /
                                                              "snapshots" / "66285546d2b8"),
                           settings=RunSettings(cache_dir=str(cache))))
    assert other.checkpoint is None and other.preset.identity.key != "qwen7B"  # the 3B's weights are not the 7B


def test_a_converted_checkpoint_keeps_the_papers_name_while_its_weights_are_unchanged(tmp_path):
    from smmile.identity import weight_hashes

    folder = tmp_path / "llava-med-hf"
    folder.mkdir()
    for name, data in WEIGHTS.items():
        (folder / name).write_bytes(data)
    source = {"hub_id": "microsoft/llava-med-v1.5-mistral-7b", "revision": "abc123", "recognised_by": "x"}
    (folder / "smmile_llavamed.json").write_text(json.dumps({"source": source,
                                                             "weights_sha256": weight_hashes(folder)}))
    runner = Runner(RunSpec(model="llavamed", model_path=str(folder)))
    assert runner.preset.identity.key == "llavamed" and runner.checkpoint["revision"] == "abc123"
    assert runner.checkpoint["recognised_by"].startswith("converted from it (smmile_llavamed.json")
    (folder / "model-00001-of-00002.safetensors").write_bytes(b"\x09" * 64)  # trained further after conversion
    assert Runner(RunSpec(model="llavamed", model_path=str(folder))).preset.identity.key == \
        f"llava-med-hf-{short(folder)}"
    (folder / "smmile_llavamed.json").write_text(json.dumps({"source": None, "weights_sha256": weight_hashes(folder)}))
    assert Runner(RunSpec(model="llavamed", model_path=str(folder))).checkpoint is None  # source not recognised


def test_smmile_convert_records_the_source_so_the_converted_paper_checkpoint_keeps_its_name(tmp_path, caplog):
    from smmile.models.hf.convert_llavamed import build

    original = tiny_models.cached("llavamed_original")
    files = {f.name: f.read_bytes() for f in original.iterdir() if f.is_file()}  # the tower stays where config says
    snapshot = hub_cache(tmp_path / "cache", "microsoft/llava-med-v1.5-mistral-7b", "f00dfeed", files)
    build(snapshot, tmp_path / "hf")
    record = json.loads((tmp_path / "hf" / "smmile_llavamed.json").read_text())
    assert record["source"] == {"hub_id": "microsoft/llava-med-v1.5-mistral-7b", "revision": "f00dfeed",
                                "recognised_by": "hub cache snapshot"}
    runner = Runner(RunSpec(model="llavamed", model_path=str(tmp_path / "hf")))
    assert runner.preset.identity.display == "LLaVA-Med**" and runner.checkpoint["revision"] == "f00dfeed"

    build(original, tmp_path / "other")  # not the hub's checkpoint: said at conversion, named after the folder
    assert "not recognised as microsoft/llava-med-v1.5-mistral-7b" in caplog.text
    assert Runner(RunSpec(model="llavamed", model_path=str(tmp_path / "other"))).preset.identity.key != "llavamed"


def test_the_manifest_tables_and_report_agree_on_a_recognised_checkpoint(tmp_path, capsys):
    tiny_models.skip_unless_served("qwen2_5_vl")
    source = tiny_models.cached("qwen2_5_vl")
    files = {f.name: f.read_bytes() for f in source.iterdir() if f.is_file()}
    snapshot = hub_cache(tmp_path / "cache", "Qwen/Qwen2.5-VL-3B-Instruct", "0123456789abcdef", files)
    copy = tmp_path / "my-qwen"
    shutil.copytree(snapshot, copy)  # the files, not the links: recognised by the weights' sha256
    results = tmp_path / "results"
    assert cli.main(["run", "--model", "qwen3B", "--model-path", str(copy), "--hf-cache-dir", str(tmp_path / "cache"),
                     "--dataset", str(tiny_models.demo_subset(4)), "--output-dir", str(results), "--inference_mode",
                     "0-shot", "--task_format", "open", "--max-new-tokens", "2", "--dtype", "float32",
                     "--allow-cpu"]) == 0, capsys.readouterr().err
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("--model-path")]
    assert said == [f"--model-path {copy}: Qwen/Qwen2.5-VL-3B-Instruct at revision 0123456789abcdef (weights "
                    "sha256), named Qwen2.5-VL-3B"]
    model = json.loads((results / "result_qwen3B_0-shot_open.manifest.json").read_text())["model"]
    assert model["identity"]["display"] == "Qwen2.5-VL-3B" and model["revision"] == "0123456789abcdef"
    assert model["checkpoint"] == {"hub_id": "Qwen/Qwen2.5-VL-3B-Instruct", "revision": "0123456789abcdef",
                                   "recognised_by": "weights sha256"}
    capsys.readouterr()
    assert cli.main(["stats", str(results), "--out", str(tmp_path / "stats")]) == 0
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("qwen3B")], "no qwen3B row"
    assert cli.main(["report", str(results), "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 0
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Qwen2.5-VL-3B" in page and "0123456789ab" in page and "my-qwen" not in page.replace(str(copy), "")


def test_every_table_and_the_report_name_a_preset_run_on_another_checkpoint_after_it(tmp_path, capsys):
    from smmile.cli.em import main as em_main
    from smmile.cli.variance import main as variance_main

    tiny_models.skip_unless_served("qwen2_5_vl")
    folder = tmp_path / "my-finetune"
    shutil.copytree(tiny_models.cached("qwen2_5_vl"), folder)
    results, name = tmp_path / "results", f"my-finetune-{short(folder)}"
    assert cli.main(["run", "--model", "qwen3B", "--model-path", str(folder), "--dataset",
                     str(tiny_models.demo_subset(4)), "--output-dir", str(results), "--inference_mode", "0-shot",
                     "--task_format", "open", "--max-new-tokens", "2", "--dtype", "float32",
                     "--allow-cpu"]) == 0, capsys.readouterr().err
    (said,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("--model-path")]
    assert said.endswith(f"not Qwen/Qwen2.5-VL-3B-Instruct (neither its hub cache snapshot, its weights nor "
                         f"converted from it), named my-finetune #{short(folder)} (Qwen2.5-VL-3B preset)")
    model = json.loads((results / "result_qwen3B_0-shot_open.manifest.json").read_text())["model"]
    assert model["identity"]["key"] == name and model["checkpoint"] is None and "revision" not in model
    assert em_main([str(results)]) == 0
    assert json.loads((results / "result_qwen3B_0-shot_open_evaluation.json").read_text())["model"] == name
    assert variance_main([str(results), "--mean_only"]) == 0
    table = (results / "evaluation_results.txt").read_text()
    assert name in table and "qwen3B" not in table
    capsys.readouterr()
    assert cli.main(["stats", str(results), "--out", str(tmp_path / "stats")]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith(name) for line in out.splitlines()) and "qwen3B" not in out
    assert cli.main(["report", str(results), "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 0
    page = (tmp_path / "report" / "index.html").read_text()
    assert f"my-finetune #{short(folder)} (Qwen2.5-VL-3B preset)" in page


def test_two_checkpoint_500_folders_give_two_files_rows_and_labels(tmp_path, capsys):
    source = tg.cached("idefics3")
    folders = [tmp_path / run / "checkpoint-500" for run in ("run-a", "run-b")]
    for folder in folders:
        shutil.copytree(source, folder)
    results = tmp_path / "results"
    for folder in folders:
        assert cli.main(["run", "--model", f"hf:{folder}", "--inference_mode", "ICL", "--task_format", "open",
                         "--dataset", str(tiny_models.demo_subset(4)), "--output-dir", str(results),
                         "--max-new-tokens", "2", "--dtype", "float32", "-q"]) == 0, capsys.readouterr().err
    stems = sorted(f"result_checkpoint-500-{short(f)}_ICL_open" for f in folders)
    assert sorted(p.stem for p in results.glob("result_*.csv")) == stems
    for stem, folder in zip(stems, sorted(folders, key=lambda f: f"checkpoint-500-{short(f)}")):
        identity = json.loads((results / f"{stem}.manifest.json").read_text())["model"]["identity"]
        assert identity["display"] == f"checkpoint-500 #{short(folder)}"
    capsys.readouterr()

    assert cli.main(["stats", str(results), "--out", str(tmp_path / "stats")]) == 0
    table = capsys.readouterr().out
    rows = [line for line in table.splitlines() if "checkpoint-500" in line and line.split()[1] == "EM"]
    assert len(rows) == 2 and all(any(short(f) in r for r in rows) for f in folders), table  # one row per metric

    assert cli.main(["report", str(results), "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 0
    page = (tmp_path / "report" / "index.html").read_text()
    for folder in folders:
        assert f"checkpoint-500 #{short(folder)}" in page
