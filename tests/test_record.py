"""The run record (``smmile.record``): one typed record per result, found by ``record.scan``; the original's files
(the published outputs) read into the same type; what ``smmile report`` and ``smmile stats`` make of a folder whose
files are not all there."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest

from smmile.cli import main as smmile
from smmile.cli import stats as stats_cli

TEXT_ONLY_CSV = "result_llama33textonly_0-shot.csv"  # the paper's SMMILE++ folder has its judge JSON, not its CSV


def without(published, tmp_path, *names):
    """A copy of the published outputs (writable) less ``names``."""
    folder = tmp_path / "published"
    shutil.copytree(published, folder)
    for name in names:
        (folder / name).unlink()
    return folder


@pytest.mark.slow
def test_report_on_a_judge_json_without_its_csv(published, tmp_path, capsys):
    folder = without(published, tmp_path, TEXT_ONLY_CSV)
    assert smmile(["report", str(folder), "--out", str(tmp_path / "o"), "--n-boot", "20", "--formats", "svg",
                   "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no result CSV (result_llama33textonly_0-shot.csv)" in err
    page = (tmp_path / "o" / "index.html").read_text()
    assert "Text only" in page


# -- one reader -------------------------------------------------------------------------------------------
LIBRARY = Path(__file__).resolve().parents[1] / "inference_and_evaluation" / "smmile"
ABOVE_THE_RECORD = ("scoring", "analysis", "report", "export", "cli")  # the runner below writes the record
READERS = {"open", "read_csv", "read_json", "read_text", "read_bytes", "read_table", "Journal", "AppendLog",
           "json.load"}
# What the layers above the record may open, none of it a result, journal or judge file: module:function -> what
READS_OTHER_FILES = {
    "analysis/agreement.py:read_labels": "human labels (--labels)",
    "analysis/reviews.py:_load": "reviewers' verdicts (reviews.json), read bounded",
    "report/analyses.py:load_json": "the outputs of smmile analyze / agreement (--analyses)",
    "report/analyses.py:read_csv": "the same, their CSV tables",
    "report/analyses.py:load_directory": "the same (calls read_csv above)",
    "report/explorer.py:_jpeg": "an image's bytes (PIL's Image.open of a buffer)",
    "report/html.py:natural_width_px": "a figure the report drew",
    "report/html.py:figure": "a figure the report drew",
    "report/html.py:asset": "the page's template and script",
    "report/page.py:write_page": "the page it writes",
    "scoring/judge_run.py:judge_files": "the judge's own journal, which it writes (the executor appends to it)",
    "scoring/scores.py:replace_output": "an output it is about to replace (never scored)",
    "cli/common.py:guarded": "/dev/null for stdout",
}


def file_readers(path: Path):
    """(function, call) of every call in ``path`` that opens or reads a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for node in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name == "load" and isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "json":
                name = "json.load"
            if name in READERS:
                yield fn.name, f"{name} (line {node.lineno})"


def test_no_module_above_the_record_opens_a_result_journal_or_judge_file():
    """Result CSVs, manifests, journals, judge records, verdicts and the original's exports are read in
    ``smmile/record/`` alone: every other read in the layers above it is listed with what it reads."""
    found, used = [], set()
    for path in sorted(LIBRARY.rglob("*.py")):
        rel = path.relative_to(LIBRARY).as_posix()
        if rel.split("/")[0] not in ABOVE_THE_RECORD:
            continue
        for function, call in file_readers(path):
            where = f"{rel}:{function}"
            if where in READS_OTHER_FILES:
                used.add(where)
            else:
                found.append(f"{where}: {call}")
    assert not found, "read through smmile.record (or list what it reads here):\n  " + "\n  ".join(found)
    assert used == set(READS_OTHER_FILES), f"no longer reads a file (remove it here): {set(READS_OTHER_FILES) - used}"


def test_the_scan_sees_a_reader_put_back(tmp_path):
    """The check above can fail: a function reading a judge file itself is found."""
    module = tmp_path / "sneaky.py"
    module.write_text("import json\n\ndef judged(path):\n    with open(path) as h:\n        return json.load(h)\n")
    assert [f for f, _ in file_readers(module)] == ["judged", "judged"]


# -- the exports are not read back -------------------------------------------------------------------------
def careful_judge(rec) -> str:
    """A loopback judge: "1" when the model's answer is the gold answer (case aside), else "0"."""
    prompt = rec["body"]["messages"][0]["content"]
    gold = prompt.split('The correct answer to this question is: "', 1)[1].split('"', 1)[0]
    said = prompt.split('The AI model outputs "', 1)[1].split('" as its response', 1)[0]
    return "1" if said.strip().lower() == gold.strip().lower() else "0"


def numbers(res: Path, out: Path) -> tuple:
    """What ``smmile stats`` and ``smmile report`` (with the dataset) say of ``res``: the estimates table, the
    page's estimates and ICL gains, and its stratified section."""
    assert stats_cli.main([str(res), "--out", str(out / "stats"), "--n-boot", "50"]) == 0
    assert smmile(["report", str(res), "--out", str(out / "report"), "--n-boot", "50", "--dataset", "demo",
                   "--formats", "svg", "--jobs", "1"]) == 0
    data = json.loads((out / "report" / "report_data.json").read_text())
    page = (out / "report" / "index.html").read_text()
    strata = re.search(r'<h2 id="strat-.*?(?=<h2)', page, re.S).group(0)
    return ((out / "stats" / "stats_estimates.csv").read_text(), data["sets"][0]["estimates"],
            data["sets"][0]["icl_gains"], strata)


@pytest.mark.server
def test_stats_and_report_read_the_records_not_the_exports(tmp_path, monkeypatch):
    """Baselines and a loopback judge, scored, stratified; then every export is deleted: the same numbers."""
    from api_server import FakeApi
    from smmile.cli.baselines import main as baselines

    for var in ("OPENAI_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    res = tmp_path / "res"
    for baseline, fmt in (("random", "open"), ("majority", "open"), ("majority", "mcqa")):
        assert baselines(["--baseline", baseline, "--task_format", fmt, "--dataset", "demo",
                          "--output-dir", str(res)]) == 0
    with FakeApi(reply=careful_judge) as api:
        assert smmile(["judge", str(res), "--judge-backend", "openai-compatible", "--judge-model", "careful",
                       "--judge-base-url", f"{api.url}/v1"]) == 0
    assert smmile(["em", str(res)]) == 0
    for kind in ("em", "llm"):
        assert smmile(["stratify", str(res), "--eval_type", kind, "--dataset", "demo"]) == 0
    before = numbers(res, tmp_path / "before")
    assert ",LLM," in before[0] and "<table" in before[3] and "No <code>model_stratification" not in before[3]
    exports = [p for p in res.iterdir() if re.search(r"_evaluation.*\.json$|^model_stratification_", p.name)]
    assert len(exports) == 2 * 3 + 4  # _evaluation.json x2, _evaluationllm.json (+ .manifest.json) x2, strata
    for path in exports:
        path.unlink()
    assert numbers(res, tmp_path / "after") == before
