"""Every number docs/analyses.md and docs/deviations.md quote about the statistics, regenerated (issue #20 item 10).

A quoted number is written in the docs as ``VALUE<!-- n:KEY -->``; this script computes KEY from the
published SMMILE outputs (read only; nothing is written there) and the formulas, and

    python scripts/doc_numbers.py            # prints KEY = VALUE for every number
    python scripts/doc_numbers.py --check    # exit 1 naming every doc number that differs
    python scripts/doc_numbers.py --write    # rewrite the VALUEs in the docs

``tests/test_doc_numbers.py`` runs the check. Numbers measured on the SMMILE++ outputs, which are not
shipped, are not quoted as numbers in the docs.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from contextlib import redirect_stderr
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "inference_and_evaluation"))

from smmile.scoring import estimates as stats, statistics  # noqa: E402
from smmile.scoring.scores import load_records  # noqa: E402

PUBLISHED = REPO.parent / "shared" / "published" / "smmile"
DOCS = [REPO / "docs" / "analyses.md", REPO / "docs" / "deviations.md"]
MARK = re.compile(r"([-+−]?[0-9][0-9.,]*|[0-9]+)<!-- n:([a-z0-9_]+) -->")


def _f(value: float, spec: str) -> str:
    return format(value, spec)


def compute(published: Path = PUBLISHED) -> dict[str, str]:
    z = statistics.z_value(0.95)
    numbers = {"wilson0_111": _f(100 * z * z / (111 + z * z), ".2f"),
               "wilson0_86": _f(100 * z * z / (86 + z * z), ".2f"),
               "neff_rho1": _f(1038 ** 2 / (27 * 4 + 24 * 36 + 35 * 576), ".1f"),
               "share_24": _f(100 * 35 * 24 / 1038, ".0f")}
    with redirect_stderr(io.StringIO()):
        records = load_records(str(published))
        rows = stats.comparisons(records, "icl", 200, 0, "auto", 0.95)
        models = stats.comparisons(records, "models", 200, 0, "auto", 0.95)
        kept = stats.comparisons(records, "models", 200, 0, "auto", 0.95, include_gold_mismatch=True)
        est = [e for e in stats.estimates(records, 200, 0, "auto", 0.95) if e["metric"] in stats.COMPARED]
    numbers["smmile_icl_comparisons"] = str(len(rows))
    numbers["smmile_icl_significant"] = str(sum(r["significant"] for r in rows))
    numbers["smmile_icl_disagree"] = str(sum(r["significant"] != (r["ci_low"] > 0 or r["ci_high"] < 0)
                                             for r in rows))
    llava = next(r for r in rows if r["model_a"] == "llava_13b" and r["metric"] == "LLM")
    numbers.update({"llava13b_llm_diff": _f(llava["difference"], "+.2f"), "llava13b_llm_low": _f(llava["ci_low"], "+.2f"),
                    "llava13b_llm_high": _f(llava["ci_high"], "+.2f"), "llava13b_llm_p": _f(llava["p_value"], ".3g")})
    def qwen_pair(family):
        return next(r for r in family if {r["model_a"], r["model_b"]} == {"qwen72B", "qwen7B"}
                    and r["metric"] == "LLM" and r["mode_a"] == "ICL")

    qwen, qwen_kept = qwen_pair(models), qwen_pair(kept)
    numbers["qwen7b_gold_mismatches"] = str(qwen["gold_mismatches"])
    numbers["qwen7b_llm_diff_excluded"] = _f(qwen["difference"], "+.2f")
    numbers["qwen7b_llm_diff_kept"] = _f(qwen_kept["difference"], "+.2f")
    cells = {(e["model"], e["metric"], e["mode"]): e for e in est}
    gpt = cells[("gpt-4o", "MCQA", "ICL")]
    numbers["gpt4o_mcqa_icl_refused"] = str(gpt["n_refused"])
    numbers["gpt4o_mcqa_icl_failed"] = str(gpt["n_failed"])
    med = cells[("llavamed", "EM", "ICL")]
    numbers["llavamed_em_icl_empty"] = str(med["n_empty"])
    numbers["cells_with_failures"] = str(sum(1 for e in est if (e["n_refused"] or 0) + (e["n_failed"] or 0)
                                             + (e["n_empty"] or 0) > 0))
    numbers["cells"] = str(len(est))
    return numbers


def quoted(paths=DOCS) -> list[tuple[Path, str, str]]:
    """(doc, key, value as written) for every marked number."""
    return [(path, m.group(2), m.group(1)) for path in paths for m in MARK.finditer(path.read_text())]


def differences(numbers: dict[str, str], paths=DOCS) -> list[str]:
    out = []
    for path, key, value in quoted(paths):
        if key not in numbers:
            out.append(f"{path.name}: unknown number key {key!r}")
        elif value != numbers[key]:
            out.append(f"{path.name}: {key} is {value} in the docs, {numbers[key]} from the outputs")
    return out


def write(numbers: dict[str, str], paths=DOCS) -> None:
    for path in paths:
        text = MARK.sub(lambda m: f"{numbers.get(m.group(2), m.group(1))}<!-- n:{m.group(2)} -->", path.read_text())
        path.write_text(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--write", action="store_true")
    a = parser.parse_args(argv)
    numbers = compute()
    if a.write:
        write(numbers)
    if a.check:
        problems = differences(numbers)
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    for key, value in numbers.items():
        print(f"{key} = {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
