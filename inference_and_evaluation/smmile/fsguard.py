"""Safe writing: atomic files (temp file beside the target, fsync, rename: never half a file), checks before
any expensive work, output folders a command may own (marked by `.smmile-output.json`), and `OutputLock`: one
process per output. A full disk is one line naming the file and what is kept (`DiskFull`, exit 2)."""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import socket
import tempfile
import time
import weakref
from pathlib import Path
from typing import Iterator

from . import __version__
from .environment import command_line
from .errors import UserError

MARKER = ".smmile-output.json"
LOCK_IN_FOLDER = ".smmile.lock"
PLACEHOLDERS = (".gitkeep", ".keep")  # files that keep an empty folder in git: the folder still counts as empty
_PACKAGE = Path(__file__).resolve().parent
PROJECT_FOLDERS = (".git", ".ci", "benchmarks", "docs", "missing_images", "scripts", "tests")  # never an output
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(UserError):
    def __init__(self, path: str | os.PathLike, kept: str, then: str = "rerun"):
        super().__init__(f"no space left on the device to write {path}: {kept}; free some space and {then}")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temp path beside `path` (same suffix: writers pick the format); fsynced, renamed onto it on success."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        _keep_mode(path, tmp)
        os.replace(tmp, path)
        with contextlib.suppress(OSError):  # not every file system lets a folder be opened and synced
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except OSError as exc:
        if exc.errno in NO_SPACE:  # a writer's OSError rarely names the file: say which, and what is kept
            kept = "the file there is kept as it was" if path.exists() else "nothing was written there"
            raise DiskFull(path, kept) from None
        raise
    finally:
        # BaseException too: a Ctrl-C during the write leaves neither half a file nor the temp file.
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def remove_stale_temps(path: str | os.PathLike, older_than: float = 60.0) -> None:
    """Delete the temp files `atomic_path` left beside `path` when its writer was killed (SIGKILL: no cleanup);
    a temp file written in the last `older_than` seconds may be a live writer's and is kept."""
    path = Path(path)
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp{glob.escape(path.suffix)}"):
        with contextlib.suppress(OSError):
            if time.time() - tmp.stat().st_mtime > older_than:
                tmp.unlink()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: str | os.PathLike, obj, indent: int | None = 2, **dumps_kwargs) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=indent, **dumps_kwargs) + "\n")


def _keep_mode(path: Path, tmp: Path) -> None:
    """mkstemp makes 0600 files; keep an existing file's mode, else the umask's default."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp, mode)


def check_writable_dir(path: str | os.PathLike, what: str) -> Path:
    """UserError unless `path` is, or can be created as, a writable folder (creates nothing: probes the nearest)."""
    path = Path(path).expanduser()
    probe = path
    while not probe.exists():
        if probe.is_symlink():
            raise UserError(f"{what} {path}: {probe} is a broken link")
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        if probe == path:
            raise UserError(f"{what} {path} is a file, not a folder")
        raise UserError(f"{what} {path} cannot be created: {probe} is a file")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise UserError(f"cannot write the {what} {path}: {exc.strerror or exc}") from None
    return path


def check_writable_file(path: str | os.PathLike, what: str) -> Path:
    path = Path(path).expanduser()
    if path.is_dir():
        raise UserError(f"{what} {path} is a folder, not a file")
    check_writable_dir(path.parent, f"folder of the {what}")
    return path


def refuse_dangerous_dir(path: str | os.PathLike) -> None:
    resolved = Path(path).expanduser().resolve()
    home = Path.home().resolve()
    reasons = [
        (resolved == Path(resolved.anchor), "the root folder"),
        (resolved == home or home.is_relative_to(resolved), "the home folder or a folder containing it"),
        (Path.cwd().resolve().is_relative_to(resolved), "the working folder or a folder containing it"),
        (_PACKAGE.is_relative_to(resolved), "a folder containing the smmile project"),
        (resolved.is_relative_to(_PACKAGE), "inside the smmile code"),
        (_project_folder(resolved), "one of the project's own tracked folders"),
    ]
    for hit, reason in reasons:
        if hit:
            raise UserError(f"refusing to use {path} ({resolved}) as the output folder: it is {reason}; "
                            "choose a new or empty folder")


def _project_folder(resolved: Path) -> bool:
    """`resolved` is a source folder of the smmile checkout (tests/, docs/, ..., the scripts' folder itself); its
    output folders (results/, figures/, report/ ...) are not."""
    root = _PACKAGE.parent.parent
    if not (root / "pyproject.toml").is_file():  # an installed package: no checkout around it
        return False
    return resolved == _PACKAGE.parent or any(resolved.is_relative_to(root / name) for name in PROJECT_FOLDERS)


def read_json(path: str | os.PathLike) -> dict | None:
    """The JSON object in `path`; None when there is none or it cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_marker(path: str | os.PathLike) -> dict | None:
    return read_json(Path(path) / MARKER)


def check_output_dir(path: str | os.PathLike, owner: str, force: bool = False) -> Path:
    """Raise UserError unless `owner` may write into `path` (rules of `prepare_output_dir`); creates nothing."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise UserError(f"output folder {path} is a file; choose a folder")
    refuse_dangerous_dir(path)
    check_writable_dir(path, "output folder")
    if path.is_dir() and not force:
        foreign = [p.name for p in path.iterdir() if p.name not in (MARKER, LOCK_IN_FOLDER, *PLACEHOLDERS)]
        marker = read_marker(path)
        if foreign and (marker or {}).get("owner") != owner:
            made_by = f" (it was written by `{marker['owner']}`)" if marker and marker.get("owner") else ""
            raise UserError(f"output folder {path} is not empty and was not written by `{owner}`{made_by}; "
                            "choose a new or empty folder, or pass --force to write into it anyway "
                            "(files of the same names are replaced, nothing else is touched)")
    return path


def prepare_output_dir(path: str | os.PathLike, owner: str, force: bool = False) -> Path:
    """Create and mark `path` for `owner`, deleting nothing; a non-empty folder needs `owner`'s marker (or `force`)."""
    path = check_output_dir(path, owner, force)
    path.mkdir(parents=True, exist_ok=True)
    write_marker(path, owner)
    return path


def write_marker(path: str | os.PathLike, owner: str, *, stamp: bool = True, **extra) -> Path:
    """`stamp`: add the command line and time (left out where the bytes must depend on the content only)."""
    info = {"owner": owner, "smmile_version": __version__}
    if stamp:
        info.update(command=" ".join(command_line()), written=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    return atomic_write_json(Path(path) / MARKER, {**info, **extra})


class OutputLock:
    """One process at a time per output. The lock file (`<path>/.smmile.lock` for an existing folder, else or
    `beside=True` `<path>.lock`) names the holder and is removed on release. The kernel drops a killed holder's
    flock; forked children close their copy; a lock whose process died on this host is taken over."""

    def __init__(self, path: str | os.PathLike, what: str, *, beside: bool = False):
        path = Path(path)
        self.file = path / LOCK_IN_FOLDER if path.is_dir() and not beside else path.with_name(path.name + ".lock")
        self.what = what
        self._fd: int | None = None

    def __enter__(self) -> "OutputLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        import fcntl

        stale_seen = None
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise UserError(f"cannot lock {self.file} for {self.what}: {exc.strerror or exc}") from None
                stale = self._stale_holder()
                if stale is None:
                    raise UserError(self._held_message()) from None
                if stale != stale_seen:  # seen once: look again shortly (a new holder may be writing its pid)
                    stale_seen = stale
                    time.sleep(0.2)
                    continue
                with contextlib.suppress(FileNotFoundError):  # its holder is dead: lock a new file instead
                    if os.stat(self.file, follow_symlinks=False).st_ino == stale[1]:
                        self.file.unlink()
                continue
            if self._same_file(fd):
                break
            os.close(fd)  # the holder removed the file between our open and our flock: lock the new one
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(command_line()),
                  "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps(holder) + "\n").encode())
        self._fd = fd
        _HELD.add(self)

    def _open(self) -> int:
        try:
            return os.open(self.file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UserError(f"the lock file {self.file} is a symbolic link; smmile does not write through "
                                "one: remove the link and rerun") from None
            raise

    def _holder(self) -> dict:
        return read_json(self.file) or {}

    def _stale_holder(self) -> tuple | None:
        """(pid, inode) of the lock file when the process it names ran on this host and is gone, else None."""
        try:
            st = os.stat(self.file, follow_symlinks=False)
        except OSError:
            return None
        holder = self._holder()
        pid = holder.get("pid")
        if not isinstance(pid, int) or pid <= 0 or holder.get("host") != socket.gethostname() or _alive(pid):
            return None
        return pid, st.st_ino

    def release(self) -> None:
        if self._fd is None:
            return
        _HELD.discard(self)
        if self._same_file(self._fd):  # the file is still ours (not taken over by another process)
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()
        os.close(self._fd)
        self._fd = None

    def _same_file(self, fd: int) -> bool:
        try:
            st = os.stat(self.file, follow_symlinks=False)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)

    def _held_message(self) -> str:
        holder = self._holder()
        who = f"process {holder.get('pid', '?')}"
        if holder.get("host") and holder["host"] != socket.gethostname():
            who += f" on {holder['host']}"
        if holder.get("command"):
            who += f" (`{holder['command']}`)"
        return f"{self.what} is being written by {who}; wait for it to finish or stop it (lock: {self.file})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        pass
    return True


_HELD: "weakref.WeakSet[OutputLock]" = weakref.WeakSet()  # the locks this process holds


def _close_inherited_locks() -> None:
    """In a forked child: close the inherited descriptors, never removing the parent's lock files."""
    for lock in list(_HELD):
        if lock._fd is not None:
            with contextlib.suppress(OSError):
                os.close(lock._fd)
            lock._fd = None
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)
