"""`smmile run --model hf:<path>` on tiny checkpoints of four architectures the paper did not use (Idefics3,
Qwen3-VL, InternVL, Aya Vision), a single-image one (BLIP-2) and templates that need the fallbacks (offline)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import tiny_generic as tg  # noqa: E402
import tiny_models  # noqa: E402
from smmile import cli  # noqa: E402
from test_hf_frontdoors import read_csv  # noqa: E402

pytestmark = pytest.mark.slow

OPEN5 = ["problem_id", "final_question", "true_answer", "generated_answer", "full_response"]
MCQA8 = ["problem_id", "final_question", "true_answer", "correct_option", "selected_option", "is_correct",
         "generated_answer", "full_response"]
CHECKS = ("system_role", "assistant_role", "images_in_earlier_turns", "several_images_in_one_turn", "one_image")


def local_tag(path) -> str:
    """The name of `hf:<folder>`: the folder's name as a token, then 6 hex digits of the sha256 of its resolved
    path (issue #36: two folders of one name never share a result file)."""
    path = Path(path).resolve()
    token = re.sub(r"[^A-Za-z0-9.-]+", "-", path.name).strip("-")
    return f"{token}-{hashlib.sha256(str(path).encode()).hexdigest()[:6]}"


def smmile_run(model: str, out, mode: str, fmt: str, *extra: str, n: int = 4) -> int:
    return cli.main(["run", "--model", model, "--inference_mode", mode, "--task_format", fmt,
                     "--dataset", str(tiny_models.demo_subset(n)), "--output-dir", str(out),
                     "--max-new-tokens", "4", "--dtype", "float32", *extra])


def manifest(out, stem: str) -> dict:
    return json.loads((out / f"{stem}.manifest.json").read_text())


def demo_ids(n: int = 4) -> list[str]:
    from smmile.data.load import load_problems

    return [p.problem_id for p in load_problems(str(tiny_models.demo_subset(n)))]


@pytest.mark.parametrize("arch", tg.MULTI_IMAGE)
def test_every_mode_and_format(arch, tmp_path, capsys):
    path = tg.cached(arch)
    tag = local_tag(path)
    for mode in ("0-shot", "ICL"):
        for fmt in ("open", "mcqa"):
            assert smmile_run(f"hf:{path}", tmp_path, mode, fmt) == 0, capsys.readouterr().err
            stem = f"result_{tag}_{mode}_{fmt}"
            columns, rows = read_csv(tmp_path / f"{stem}.csv")
            assert columns == (MCQA8 if fmt == "mcqa" else OPEN5)
            assert [r["problem_id"] for r in rows] == demo_ids()
            m = manifest(tmp_path, stem)
            assert m["model"]["identity"] == {"key": tag, "scoring_name": tag, "display": f"{arch} #{tag[-6:]}",
                                              "latex": tag}
            assert m["model"]["family"] == "hf.generic:GenericFamily" and m["counts"]["failed"] == 0
            backend = m["backend"]
            assert backend["model_class"] == tg.BUILDERS[arch][1] and backend["chat_template"] == "processor"
            assert backend["image_limits"]
            caps = backend["capabilities"]
            assert {k: caps["checks"][k]["ok"] for k in CHECKS} == dict.fromkeys(CHECKS, True)
            assert caps["layout"] == {"system": "system-turn", "examples": "turns"}
            assert caps["probe_images"] == caps["max_images_per_prompt"] == 11  # the demo's 10-example problem
            assert 0 < caps["probe_prompt_tokens"] <= caps["context_length"]


@pytest.mark.parametrize("arch", tg.MULTI_IMAGE)
def test_batch_8_equals_batch_1(arch, tmp_path):
    """10 problems: one sorted window, batches of 8 and 2, left padding; the answers differ between problems."""
    path = tg.cached(arch)
    rows = {}
    for batch in (1, 8):
        out = tmp_path / f"b{batch}"
        assert smmile_run(f"hf:{path}", out, "ICL", "open", "--batch-size", str(batch), n=10) == 0
        rows[batch] = read_csv(out / f"result_{local_tag(path)}_ICL_open.csv")[1]
    assert rows[1] == rows[8]
    assert len({r["generated_answer"] for r in rows[1]}) >= 5


@pytest.mark.parametrize("arch", [*tg.MULTI_IMAGE, "blip2"])
def test_images_reach_the_model(arch, tmp_path):
    """Inverting the first image of an ICL prompt changes the next-token logits; so does inverting the query image
    (the last), except on the single-image checkpoint."""
    import torch

    from smmile.data.load import load_for_run
    from smmile.models.hf.probe import Layout, inverted
    from smmile.generation import RunSettings
    from smmile.runner.run import RunSpec, Runner

    dataset = str(tiny_models.demo_subset(4))
    runner = Runner(RunSpec(model=f"hf:{tg.cached(arch)}", mode="ICL", dataset=dataset, output_dir=tmp_path,
                            settings=RunSettings(dtype="float32")))
    item = max(runner.plan(load_for_run(dataset)), key=lambda it: len(it.problem.rows))
    req = runner.family.request(item)
    backend = runner.build_backend()
    backend.load()
    backend.layout = Layout()

    def logits(changed: int | None):
        prep = req.prep
        req.prep = lambda i, img: inverted(prep(i, img)) if i == changed else prep(i, img)
        try:
            with torch.inference_mode():
                return backend.model(**backend.encode([req])).logits[0, -1]
        finally:
            req.prep = prep

    base = logits(None)
    first, last = ((base - logits(k)).abs().max().item() for k in (0, len(req.images) - 1))
    assert first > 1e-3
    assert last > 1e-3 if arch != "blip2" else last == 0  # BLIP-2 silently keeps the first image only


def test_single_image_checkpoint_icl_stops_at_once_0shot_runs(tmp_path, capsys):
    path = tg.cached("blip2")
    assert smmile_run(f"hf:{path}", tmp_path, "ICL", "open") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"error: hf:{path} takes one image per prompt (image 11 of 11 does not reach the model); "
                       "ICL needs up to 11 images per prompt: run it with --inference_mode 0-shot")
    assert not any("Traceback" in line for line in err)
    assert not list(tmp_path.glob("result_*.csv"))
    assert smmile_run(f"hf:{path}", tmp_path, "0-shot", "mcqa") == 0
    assert len(read_csv(tmp_path / f"result_{local_tag(path)}_0-shot_mcqa.csv")[1]) == 4
    caps = manifest(tmp_path, f"result_{local_tag(path)}_0-shot_mcqa")["backend"]
    assert caps["chat_template"] == "tokenizer"  # BLIP-2's processor keeps none
    checks = caps["capabilities"]["checks"]
    assert (checks["images_in_earlier_turns"]["ok"], checks["several_images_in_one_turn"]["ok"],
            checks["one_image"]["ok"]) == (False, False, True)
    assert caps["capabilities"]["max_images_per_prompt"] == 1


@pytest.mark.parametrize("arch, layout, refused", [
    ("idefics3_no_system", {"system": "first-user-turn", "examples": "turns"}, "system_role"),
    ("idefics3_last_turn_images", {"system": "system-turn", "examples": "one-turn"}, "images_in_earlier_turns"),
])
def test_template_fallbacks(arch, layout, refused, tmp_path, capsys):
    assert smmile_run(f"hf:{tg.cached(arch)}", tmp_path, "ICL", "mcqa") == 0, capsys.readouterr().err
    stem = f"result_{local_tag(tg.cached(arch))}_ICL_mcqa"
    caps = manifest(tmp_path, stem)["backend"]["capabilities"]
    assert caps["layout"] == layout
    journal = (tmp_path / ".smmile" / f"{stem}.journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["response"]["extra"]["layout"] for line in journal] == [layout] * 4
    assert caps["checks"][refused]["ok"] is False
    assert "TemplateError: " in caps["checks"][refused]["detail"]


def test_checkpoint_without_chat_template_is_one_line(tmp_path, capsys):
    path = tmp_path / "plain"
    shutil.copytree(tg.cached("idefics3"), path)
    (path / "chat_template.jinja").unlink()
    assert smmile_run(f"hf:{path}", tmp_path / "out", "ICL", "open") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"error: {path} has no chat template (neither its processor nor its tokenizer has one); "
                       "--model hf:/vllm: runs chat checkpoints only")
