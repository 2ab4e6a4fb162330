"""`smmile batches ls|adopt|cancel DIR`: the provider batches a result folder's runs submitted (`--batch`)."""

from __future__ import annotations

import argparse

from . import common as fd

ACTIONS = {"ls": "list each batch: the ledger's state, and the provider's for those in flight",
           "adopt": "find in the provider's list the batches whose create the ledger never saw answered, and record "
                    "them (a run does this first too)",
           "cancel": "cancel every batch in flight (the provider still bills what it finished), so that a run "
                     "without --batch may send their problems"}


def build_parser() -> argparse.ArgumentParser:
    p = fd.parser("The provider batches of a result folder (its .smmile/*.batches.jsonl ledgers); keys come from the "
                  "environment, as for `smmile run`",
                  epilog="\n".join(f"  {k:<7}{v}" for k, v in ACTIONS.items()))
    p.add_argument("action", choices=sorted(ACTIONS), help="what to do (below)")
    p.add_argument("dir", help="the result folder (the --output-dir of the run)")
    p.add_argument("--allow-key-for-host", action="append", default=None, metavar="HOST",
                   help="as for `smmile run`: a host other than the provider's own that the key may go to")
    return p


def run(a: argparse.Namespace) -> int:
    from ..models.api import batch_admin

    allow = tuple(a.allow_key_for_host or ())
    if a.action == "ls":
        rows = batch_admin.rows(a.dir, allow)
        for r in rows:
            print(f"{r['ledger']}  {r['batch']}  {r['state']}  {r['problems']} problems  {r['provider_state']}".rstrip())
        if not rows:
            print(f"no batches recorded under {a.dir}/.smmile")
        return 0
    lines = batch_admin.act(a.dir, a.action, allow)
    print("\n".join(lines) if lines else f"nothing to {a.action} under {a.dir}/.smmile")
    return 0


def main(argv: list[str] | None = None) -> int:
    return fd.guarded(lambda: fd.parsed_main(build_parser(), argv, run))
