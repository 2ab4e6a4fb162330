"""Issue #9 item 6: every command line is parsed in smmile.cli; the library takes typed arguments and records
the command line through one function."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from smmile import fsguard
from smmile.environment import command_line

FRONT = Path(__file__).resolve().parents[1] / "inference_and_evaluation"
PACKAGE = FRONT / "smmile"


def test_manifests_markers_and_locks_record_the_same_command_line(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/opt/bin/inference_qwen.py", "--models", "7B"])
    assert command_line() == ["inference_qwen.py", "--models", "7B"]
    marker = fsguard.write_marker(tmp_path, "test")
    assert json.loads(marker.read_text())["command"] == "inference_qwen.py --models 7B"
    monkeypatch.setattr(sys, "argv", [""])  # an interactive interpreter: no command to record
    assert command_line() == []
    assert json.loads(fsguard.write_marker(tmp_path, "test").read_text())["command"] == ""


def _modules(root: Path = PACKAGE):
    for path in sorted(root.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imports(tree: ast.AST, path: Path) -> set[str]:
    """Absolute names of every module `tree` imports (relative imports resolved against `path`)."""
    package = path.relative_to(FRONT).with_suffix("").parts
    package = package[:-1] if package[-1] != "__init__" else package[:-1]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _inside(path: Path, folder: str) -> bool:
    return path.relative_to(PACKAGE).parts[0] == folder


def test_argparse_and_argv_only_in_the_cli_package():
    offenders = []
    for path, tree in _modules():
        if _inside(path, "cli"):
            continue
        if "argparse" in _imports(tree, path):
            offenders.append(f"{path.relative_to(FRONT)} imports argparse")
        argv = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "argv"]
        if argv and path != PACKAGE / "environment.py":  # command_line(): recording is not parsing
            offenders.append(f"{path.relative_to(FRONT)} reads sys.argv")
        params = [f"{f.name}({a.arg})" for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs if a.arg == "args"]
        offenders += [f"{path.relative_to(FRONT)}: {p} takes a parsed command line" for p in params]
    assert offenders == []


def test_every_parser_is_the_common_one():
    for path, tree in _modules(PACKAGE / "cli"):
        if path.name == "common.py":
            continue
        direct = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and getattr(n.func, "attr", getattr(n.func, "id", None)) == "ArgumentParser"]
        assert direct == [], f"{path.name} builds argparse.ArgumentParser itself (line {direct})"


def test_models_never_import_the_runner():
    offenders = [str(path.relative_to(FRONT)) for path, tree in _modules(PACKAGE / "models")
                 if any(name == "smmile.runner" or name.startswith("smmile.runner.") for name in _imports(tree, path))]
    assert offenders == []


def test_front_doors_import_only_the_cli_package():
    for path in sorted(FRONT.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        smmile = {n for n in _imports(tree, path) if n.split(".")[0] == "smmile"}
        assert smmile and all(n.startswith("smmile.cli.") for n in smmile), (path.name, smmile)


def test_the_scan_resolves_relative_imports():
    tree = ast.parse("from ..runner.run import RunSpec\nfrom . import common\nimport argparse\n")
    names = _imports(tree, PACKAGE / "models" / "hf" / "x.py")
    assert {"smmile.models.runner.run", "smmile.models.hf.common", "argparse"} <= names
