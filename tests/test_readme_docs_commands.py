"""Every command line the README and docs/ show is one the project's parsers accept (issue #36, deliverable 1): each
`smmile ...` and `python <script>.py ...` line of a code block is parsed by its real command's parser (the command is
stopped right after parsing: nothing runs), so a renamed or removed flag, a wrong choice or a missing argument in the
documentation fails here. The quick start itself runs in test_readme_tutorial.py."""

from __future__ import annotations

import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

from smmile import cli
from smmile.cli import common

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "inference_and_evaluation"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# shell variables of the documented loops, with a value each loop takes
VALUES = {"mode": "ICL", "fmt": "open", "format": "open", "model": "llava_7b", "baseline": "random", "kind": "permute",
          "head_ip": "10.0.0.1", "CKPT": "/models/my-vlm", "OUT": "results_demo"}


class Parsed(Exception):
    """Raised right after a command line parsed: the command itself never runs."""


def commands() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for lang, block in re.findall(r"^```(\w*)\n(.*?)^```", doc.read_text(encoding="utf-8"), flags=re.S | re.M):
            if lang not in ("bash", "sh", ""):
                continue
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #", 1)[0].strip()
                for part in line.split("&&"):
                    part = part.strip().removeprefix("do ").strip()
                    if re.match(r"(smmile |python \S+\.py)", part) and not re.search(r"\[|\||\.\.\. ", part):
                        found.append((doc.name, part))
    return found


def parse_only(monkeypatch, line: str) -> int:
    line = re.sub(r"\$(\w+)", lambda m: VALUES[m.group(1)], line)
    argv = shlex.split(line)
    original = common.ArgumentParser.parse_known_args

    def parse_then_stop(self, args=None, namespace=None):
        parsed, rest = original(self, args, namespace)
        if not self._subparsers:  # the innermost parser: the whole line is parsed
            raise Parsed(rest)
        return parsed, rest

    monkeypatch.setattr(common.ArgumentParser, "parse_known_args", parse_then_stop)
    try:
        if argv[0] == "smmile":
            return cli.main(argv[1:])
        monkeypatch.setattr(sys, "argv", [str(SCRIPTS / argv[1]), *argv[2:]])
        runpy.run_path(str(SCRIPTS / argv[1]), run_name="__main__")
        return 0
    except Parsed as done:
        unknown = done.args[0]  # what parse_args would refuse: flags no parser declares
        print(f"unrecognized arguments: {' '.join(unknown)}", file=sys.stderr) if unknown else None
        return 2 if unknown else 0
    except SystemExit as exc:
        return int(exc.code or 0)


ALL = commands()


def test_the_docs_show_commands():
    assert len(ALL) > 50 and {doc for doc, _ in ALL} >= {"README.md", "reference.md", "analyses.md"}


@pytest.mark.parametrize("doc, line", ALL, ids=[f"{d}:{i}" for i, (d, _) in enumerate(ALL)])
def test_every_documented_command_line_parses(doc, line, monkeypatch, capsys):
    assert parse_only(monkeypatch, line) == 0, f"{doc}: {line}\n{capsys.readouterr().err}"


@pytest.mark.parametrize("line", ["smmile run --model random --no-such-flag", "python stratify.py ../results",
                                  "python inference_llava.py --model_name llava_9b", "smmile stats"])
def test_a_broken_documented_line_would_fail(line, monkeypatch, capsys):
    assert parse_only(monkeypatch, line) == 2
