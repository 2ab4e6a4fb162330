"""Issue #10 item 8: help without doubled defaults, `usage: smmile <command>`, both flag spellings on every
front door, positive batch sizes, no model flags on the baselines, `smmile --version`."""

from __future__ import annotations

import re
import runpy
import sys
import tomllib
from pathlib import Path

import pytest

from smmile import cli
from smmile.cli import common as fd

REPO = Path(__file__).resolve().parents[1]
FRONT = REPO / "inference_and_evaluation"
SCRIPTS = sorted(p.name for p in FRONT.glob("inference_*.py"))


def _script(name: str, *args: str, monkeypatch, capsys) -> tuple[int, str]:
    """Run a front-door script in this process (imports are shared: fast); (exit status, stdout + stderr)."""
    monkeypatch.setattr(sys, "argv", [name, *args])
    monkeypatch.chdir(FRONT)
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(FRONT / name), run_name="__main__")
    out = capsys.readouterr()
    return int(exit_.value.code or 0), out.out + out.err


@pytest.mark.parametrize("name", SCRIPTS)
def test_front_door_help_states_each_default_once(name, monkeypatch, capsys):
    status, text = _script(name, "--help", monkeypatch=monkeypatch, capsys=capsys)
    assert status == 0
    flat = " ".join(text.split())
    assert "(default: None)" not in flat and "(default: False)" not in flat
    assert not re.search(r"default[^()]*\)\s*\(default: ", flat), flat


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("flag", ["inference_mode", "task_format"])
def test_front_door_accepts_both_spellings(name, flag, monkeypatch, capsys):
    _, help_text = _script(name, "--help", monkeypatch=monkeypatch, capsys=capsys)
    hyphen = "--" + flag.replace("_", "-")
    if f"--{flag}" not in help_text and hyphen not in help_text:
        assert flag == "task_format"  # every front door has an inference mode; open-only ones have no format
        return
    for spelling in (f"--{flag}", hyphen):
        status, text = _script(name, spelling, "bogus", monkeypatch=monkeypatch, capsys=capsys)
        assert status == 2 and "invalid choice: 'bogus'" in text and "unrecognized" not in text, text


def test_parser_class_keeps_help_to_the_declared_spelling_and_inherits_to_sub_commands():
    p = fd.parser("x")
    p.add_argument("--inference_mode", default="ICL")
    p.add_argument("--output-dir", default="out")
    sub = p.add_subparsers(dest="cmd")
    s = sub.add_parser("go")
    s.add_argument("--max_new_tokens", type=int, default=1)
    args = p.parse_args(["--inference-mode=0-shot", "--output_dir", "o", "go", "--max-new-tokens", "7"])
    assert (args.inference_mode, args.output_dir, args.max_new_tokens) == ("0-shot", "o", 7)
    assert "--inference-mode" not in p.format_help() and "--output_dir" not in p.format_help()
    with pytest.raises(SystemExit):
        p.parse_args(["go", "--", "--max-new-tokens"])  # after `--` nothing is a flag


def test_batch_size_must_be_positive(monkeypatch, capsys):
    for value in ("-3", "0", "two"):
        status, text = _script("inference_qwen.py", "--batch-size", value, monkeypatch=monkeypatch, capsys=capsys)
        assert status == 2 and "argument --batch-size" in text


def test_baselines_take_no_model_flags(monkeypatch, capsys):
    for flag, value in (("--model-path", "/models/x"), ("--batch-size", "-3")):
        status, text = _script("inference_baselines.py", "--baseline", "random", flag, value,
                               monkeypatch=monkeypatch, capsys=capsys)
        assert status == 2 and f"unrecognized arguments: {flag}" in text


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_usage_line_names_the_sub_command(name, capsys):
    try:
        status = cli.main([name, "--help"])
    except SystemExit as exc:
        status = exc.code
    assert status in (0, None)
    assert capsys.readouterr().out.startswith(f"usage: smmile {name} ")


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"smmile {version}\n"


def test_sub_command_sees_its_own_argv_and_argv_is_restored(monkeypatch):
    seen = {}

    def fake_main(argv):
        seen["argv"] = list(sys.argv)
        return 0

    import smmile.cli.merge as merge

    monkeypatch.setattr(merge, "main", fake_main)
    before = list(sys.argv)
    assert cli.main(["merge", "a.csv"]) == 0
    assert seen["argv"] == ["smmile merge", "a.csv"] and sys.argv == before


def test_help_wraps_a_long_description_and_keeps_one_with_its_own_line_breaks(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    long = " ".join(["word"] * 40)
    text = fd.parser(long, epilog="first line\n  second line").format_help()
    assert max(len(line) for line in text.splitlines()) <= 60
    assert " ".join(text.split()).count(long) == 1
    assert "first line\n  second line" in text
