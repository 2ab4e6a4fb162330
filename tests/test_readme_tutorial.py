"""The README is a tutorial that runs (issue #36, deliverable 1): its set-up commands are the two it promises, and the
quick start's code blocks run, in order, in one shell on a fresh copy of the repository (its tracked and new files),
after the demo job, on the demo data, with a tiny random-weight checkpoint for `CKPT=` and a local judge server for
the judge's URL. A broken command, or one moved before what it needs, fails the run (`set -euo pipefail`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP = ["pip install -r requirements.lock && pip install --no-deps -e . && bash scripts/demo.sh",
         "pip install -r requirements-test.lock && pip install --no-deps -e . && python -m pytest -q"]
JUDGE_URL = "http://127.0.0.1:11434/v1"


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def blocks(markdown: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", markdown, flags=re.S)]


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def test_the_setup_is_the_two_commands():
    assert blocks(section(readme(), "Set-up: the two commands")) == SETUP


def test_the_readme_is_a_short_quick_start_and_the_reference_is_in_docs():
    text = readme()
    assert len(text.splitlines()) < 150
    assert "[`docs/reference.md`](docs/reference.md)" in text
    reference = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    for heading in ("## Install", "## Running models", "## Scoring", "## The report and the problem explorer",
                    "## Where outputs go"):
        assert heading in reference
    for target in re.findall(r"\]\(([^)#]+)", reference):  # relative links resolve from docs/
        if "://" not in target:
            assert (REPO / "docs" / target).exists(), target


def fresh_copy(dest: Path) -> Path:
    """The repository's tracked and new (not ignored) files, as a clone would have them plus uncommitted work."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def tutorial_script(ckpt: Path, judge_url: str) -> str:
    """The set-up's demo job (the pip installs are this environment's already), then every quick-start block."""
    quick = blocks(section(readme(), "Quick start"))
    assert quick and sum(b.count("\nCKPT=") + b.startswith("CKPT=") for b in quick) == 1
    assert sum(b.count(JUDGE_URL) for b in quick) == 1
    body = "\n".join(quick)
    body = re.sub(r"^CKPT=\S+", f"CKPT={ckpt}", body, flags=re.M).replace(JUDGE_URL, judge_url)
    demo = SETUP[0].rsplit("&& ", 1)[1]
    return f"set -euo pipefail\n{demo}\n{body}\n"


@pytest.mark.slow
def test_the_quick_start_runs_top_to_bottom_on_a_fresh_copy(tmp_path):
    pytest.importorskip("transformers")
    import tiny_generic as tg
    from api_server import FakeApi

    repo = fresh_copy(tmp_path / "repo")
    ckpt = tmp_path / "models" / "my-vlm"
    shutil.copytree(tg.cached("idefics3"), ckpt)
    env = {**os.environ, "PYTHONPATH": str(repo / "inference_and_evaluation"), "PATH": os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    with FakeApi(reply=lambda record: "1") as judge:
        done = subprocess.run(["bash", "-c", tutorial_script(ckpt, f"{judge.url}/v1")], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=1500)
        judged = len(judge.requests())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = repo / "results_demo"
    mine = sorted(p.name for p in results.glob("result_my-vlm-*.csv"))
    assert len(mine) == 2 and {n.rsplit("_", 1)[1] for n in mine} == {"open.csv", "mcqa.csv"}
    assert judged > 0 and list(results.glob("result_my-vlm-*_ICL_open_evaluationllm.json"))
    assert re.search(r"^my-vlm-[0-9a-f]{6} ", done.stdout, flags=re.M)  # a stats table row names the checkpoint
    page = (repo / "report_demo" / "index.html").read_text(encoding="utf-8")
    assert "my-vlm #" in page and "Random" in page
    assert (results / "model_stratification_em.json").exists()


def test_a_quick_start_out_of_order_fails(tmp_path):
    """What the test above relies on: stratify before evaluate_EM (nothing to stratify yet) makes the shell fail."""
    quick = "\n".join(blocks(section(readme(), "Quick start")))
    assert quick.index("python evaluate_EM.py") < quick.index("python stratify.py")
    assert quick.index("smmile run") < quick.index("python evaluate_EM.py") < quick.index("smmile report")
    results = tmp_path / "results"
    results.mkdir()
    script = "set -euo pipefail\ncd inference_and_evaluation\n" + \
        f"python stratify.py {results} --eval_type em\npython evaluate_EM.py {results}\n"
    done = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
