"""The `smmile` command: one subcommand per job. Every command line of the project (these subcommands and the
front-door scripts) is parsed in this package, one module per command; the library takes typed arguments."""

from __future__ import annotations

import importlib
import sys

from .. import __version__
from . import common as fd

# subcommand -> one-line description; `smmile <name>` runs smmile.cli.<name>.main, imported only then
COMMANDS = {
    "run": "run a model preset on a dataset (writes the original result CSV)",
    "merge": "join the shard CSVs of one run, refusing incomplete or overlapping sets",
    "data": "generate the demo dataset and dataset variants",
    "convert": "convert checkpoints (LLaVA-Med original -> transformers Llava)",
    "em": "exact-match scoring of open-format results (evaluate_EM.py)",
    "judge": "LLM-as-a-judge scoring (evaluate_LLMJudge.py)",
    "stratify": "accuracy by problem flag (stratify.py)",
    "variance": "bootstrap table and LaTeX table of the paper (variance_analysis.py)",
    "stats": "estimates with 95% CIs, paired comparisons (cluster-aware for SMMILE++), step-down minP",
    "figures": "figures alone: accuracy bars with CIs, ICL gain, stratification heatmaps (PNG + SVG)",
    "report": "self-contained HTML report: tables with CIs, figures, analyses, SMMILE vs SMMILE++, problem explorer",
    "analyze": "compare accuracy on the original vs noise/order/permutation variants",
    "agreement": "judge reliability: inter-rater, judge vs humans, EM vs judge",
    "review": "assign answers to reviewers for the report's blind review queue (review assign)",
    "env": "installed versions that can change results, beside the paper's pins",
    "batches": "the provider batches of a result folder (--batch runs): ls, adopt, cancel",
    "export": "to other tools: inspect_ai logs, Every Eval Ever records, a models x items matrix",
}


def usage() -> str:
    lines = ["usage: smmile <command> [options]", "       smmile --version", "", "commands:"]
    lines += [f"  {name:<10} {desc}" for name, desc in COMMANDS.items()]
    lines += ["", "Run `smmile <command> --help` for the options of a command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    fd.configure_logging()  # each command's parser sets -q/-v again
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(f"smmile {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    # argparse's program name and the manifests' command come from sys.argv: `smmile run ...`, as typed
    saved, sys.argv = sys.argv, [f"smmile {name}", *rest]
    try:  # guarded: a Ctrl-C while the command's modules import is no traceback either
        return fd.guarded(lambda: int(importlib.import_module(f"smmile.cli.{name}").main(rest) or 0))
    finally:
        sys.argv = saved
