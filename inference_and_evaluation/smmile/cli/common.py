"""What every command line shares: the parser class (both flag spellings) and help formatter, the flags smmile
adds to the front doors, the library's log lines on stderr (-q/-v), and `guarded` (user mistakes, Ctrl-C, SIGTERM
and unwritable paths as one line and an exit status)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import math
import os
import signal
import sys
from pathlib import Path
from typing import Callable

from ..errors import UserError
from ..fsguard import NO_SPACE

MODE_HELP = "0-shot: the query alone; ICL: the solved examples first, then the query"
FORMAT_HELP = "open: free-text answer; mcqa: options from the problem's answers, a letter is extracted"
OUTPUT_HELP = "where result files go (with --dataset augmented: <output-dir>_augmented)"
MISSING_IMAGES = "../missing_images"  # the original's folder of manually downloaded images


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default unless its help states one or it is None/off; keeps a text's own line breaks."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or any(action.default is v for v in (None, False, argparse.SUPPRESS)) \
                or action.default == []:
            return text
        return super()._get_help_string(action)


class ArgumentParser(argparse.ArgumentParser):
    """Accepts every long flag in both spellings (`--inference_mode`, `--inference-mode`: the original mixes them)."""

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        cut = args.index("--") if "--" in args else len(args)
        parsed, rest = super().parse_known_args([self._declared_spelling(a) for a in args[:cut]] + args[cut:],
                                                namespace)
        if hasattr(parsed, "quiet") and hasattr(parsed, "verbose"):
            configure_logging(parsed.verbose - parsed.quiet)
        return parsed, rest

    def error(self, message: str):
        """A bad command line: one line saying what is wrong and where the flags are, exit 2 (not the whole usage)."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _declared_spelling(self, arg: str) -> str:
        if not arg.startswith("--") or len(arg) < 3:
            return arg
        flag, eq, value = arg.partition("=")
        if flag in self._option_string_actions:
            return arg
        for other in ("--" + flag[2:].replace("_", "-"), "--" + flag[2:].replace("-", "_")):
            if other in self._option_string_actions:
                return other + eq + value
        return arg


def parser(description: str, epilog: str = "", prog: str | None = None) -> ArgumentParser:
    """The parser every command uses (`prog`: the program name when it is not `sys.argv[0]`'s), with -q/-v."""
    p = ArgumentParser(prog=prog, description=description, epilog=epilog, formatter_class=HelpFormatter)
    p.add_argument("-q", "--quiet", action="count", default=0,
                   help="fewer lines on stderr: warnings and errors only (by default notes and progress too)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more lines on stderr: debugging detail (none by default)")
    return p


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a line is logged (pytest's capsys and redirections swap it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure_logging(verbosity: int = 0) -> None:
    """The ``smmile`` log on stderr, plain lines: INFO, WARNING below 0 (-q), DEBUG above 0 (-v); idempotent."""
    logger = logging.getLogger("smmile")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.propagate = False  # a root handler someone else configured would print each line twice
    logger.setLevel(logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG)


def _at_least(kind: type, minimum: int, strict: bool = False) -> Callable[[str], int | float]:
    """An argparse type: a whole (`kind` int) or finite (float) number of at least `minimum` (`strict`: above)."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole ' if kind is int else ''}number") from None
        if (kind is float and not math.isfinite(value)) or (value <= minimum if strict else value < minimum):
            shown = value if kind is int else text
            raise argparse.ArgumentTypeError(f"must be {'above' if strict else 'at least'} {minimum}, not {shown}")
        return value

    return parse


def http_url(text: str) -> str:
    """An argparse type: a server's base URL, http(s)://HOST[:PORT]/PATH (checked before anything loads)."""
    from ..scoring.judge import url_problem

    why = url_problem(text.strip())  # names the URL with its user info and query masked
    if why:
        raise argparse.ArgumentTypeError(f"{why}; write it as http(s)://HOST[:PORT]/PATH, e.g. "
                                         "http://127.0.0.1:8000/v1")
    return text.strip()


positive_int = _at_least(int, 1)  # batch sizes, concurrency, counts
non_negative_int = _at_least(int, 0)  # retries
positive_number = _at_least(float, 0, strict=True)  # seconds
non_negative_number = _at_least(float, 0)  # costs, prices


def parsed_main(parser: argparse.ArgumentParser, argv: list[str] | None,
                body: Callable[[argparse.Namespace], int]) -> int:
    """``body(parser.parse_args(argv))``, argparse's own exit (``--help``: 0, a bad command line: 2) returned."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return body(args)


def add_resampling_flags(p: argparse.ArgumentParser, level_help: str = "interval level",
                          cluster: bool = True) -> None:
    """--n-boot, --seed, --level (and --cluster) of the commands that bootstrap (stats, figures, report, analyze)."""
    from ..scoring.statistics import DEFAULT_LEVEL, DEFAULT_N_BOOT

    p.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--level", type=float, default=DEFAULT_LEVEL, help=level_help)
    if cluster:
        from ..scoring.estimates import CLUSTER_CHOICES

        p.add_argument("--cluster", choices=CLUSTER_CHOICES, default="auto",
                       help="auto: resample base problems when ids end in _perm_<k> (SMMILE++); base: always by "
                            "base problem; none: rows iid")


def add_dataset_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, metavar="augmented|demo|ID|PATH",
                   help="'augmented' for SMMILE++ (as the original), 'demo' / 'demo-plusplus' for the generated demo "
                        "data, a Hugging Face dataset id (default smmile/SMMILE; HF_TOKEN is read from the "
                        "environment), or a local parquet file/folder in the SMMILE schema")


def add_run_flags(p: argparse.ArgumentParser, *, image_dir: str | None = "--image-dir", model: bool = True) -> None:
    """Flags smmile adds to every inference front door (`model=False`: no model to load, as for the baselines)."""
    g = p.add_argument_group("smmile additions")
    g.add_argument("--revision", default=None,
                   help="dataset revision (commit, tag or branch) to pin on the hub; the manifest records it and the "
                        "commit read (resolved_revision)")
    g.add_argument("--protocol", choices=["paper", "corrected"], default="paper",
                   help="paper (default): reproduce the original scripts, quirks included; corrected: apply every "
                        "documented fix at once (see docs/deviations.md)")
    g.add_argument("--shard", default=None, metavar="i/N",
                   help="run only the i-th of N deterministic slices (1-based); join them with `smmile merge`")
    if model:
        g.add_argument("--model-path", default=None,
                       help="load the preset's model from this local folder instead of its hub id")
        g.add_argument("--batch-size", type=positive_int, default=1, help="problems per generate call (local models)")
    if image_dir and image_dir not in p._option_string_actions:
        g.add_argument(image_dir, default=MISSING_IMAGES,
                       help="folder of manually downloaded images (used under --protocol corrected)")


def dataset_and_output(dataset: str | None, output_dir: str,
                       augmented_flag: bool = False) -> tuple[str | None, bool, Path]:
    """The original's `--dataset augmented` also switches the output folder to `<output-dir>_augmented`."""
    suffixed = augmented_flag or dataset == "augmented"
    out = Path(output_dir + "_augmented" if suffixed else output_dir)
    return (None if dataset == "augmented" else dataset), suffixed or dataset in ("demo-plusplus", "demo++"), out


def run_spec(a: argparse.Namespace, model: str, fmt: str, dataset: str | None, augmented_flag: bool = False,
             **fields):
    """The `RunSpec` of an inference command line (`smmile run`, every front door): the flags all of them have, the
    generation flags it has (read by their names), and `fields` (settings, backend, ...)."""
    from ..generation import GenerationSettings
    from ..runner.run import RunSpec, parse_shard

    dataset, augmented, out = dataset_and_output(dataset, a.output_dir, augmented_flag)
    return RunSpec(model=model, mode=a.inference_mode, fmt=fmt, dataset=dataset, revision=a.revision,
                   augmented=augmented, output_dir=out, protocol=a.protocol, model_path=getattr(a, "model_path", None),
                   image_dir=Path(a.image_dir), shard=parse_shard(a.shard),
                   batch_size=getattr(a, "batch_size", 1),
                   generation=GenerationSettings.from_flags(a, max_new_tokens="max_tokens"), **fields)


# Ctrl-C messages: a command passes the one that tells the truth about what it leaves behind.
INTERRUPTED = "interrupted; files already written are complete (each is written whole or not at all)"
INTERRUPTED_RUN = "interrupted: finished problems are kept in the journal; rerun the same command to resume"

# OS errors about a path the user named (a read-only or full disk, a file where a folder is expected):
# one line and exit 2 instead of a traceback (1 means a problem failed). Other OS errors stay tracebacks:
# they are more likely bugs. A full disk is one line even when the error names no file.
_PATH_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG, *NO_SPACE}


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, Slurm's time limit or `scancel`), raised as Ctrl-C is: writes end exactly as on Ctrl-C."""


def _terminate(signum, frame) -> None:
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt():
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread, which alone receives signals
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def guarded(main: Callable[[], int], interrupted: str = INTERRUPTED) -> int:
    """Run a CLI entry point: user mistakes (and an unwritable or full disk) are one line on stderr, exit 2;
    Ctrl-C prints `interrupted` (fitting the command), exit 130; SIGTERM the same, exit 143; no traceback."""
    try:
        with _sigterm_as_interrupt():
            return main()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(f"\n{interrupted}", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except BrokenPipeError:  # whoever read our output stopped (`smmile env | head`): stop quietly, as SIGPIPE would
        with contextlib.suppress(OSError, ValueError):  # no second error when Python flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        if exc.errno in NO_SPACE:  # never a bug; a writer's error rarely names its file (fsguard's writes do)
            where = f": {exc.filename}" if exc.filename else ""
            print(f"error: {exc.strerror or os.strerror(exc.errno)}{where}; free some space and rerun", file=sys.stderr)
            return 2
        if exc.errno not in _PATH_ERRNOS or not exc.filename:
            raise
        print(f"error: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
