"""Where a bgl writer puts its output, and what it may replace there.

Every writer (``bgl ingest``, ``write_store``/``StoreWriter``, ``bgl partition``,
the DistDGL importer) follows the same rules, so no command deletes what it
did not write:

* ``--overwrite`` / ``overwrite=True`` replaces only an output of the *same
  kind*: a bgl graph store (``meta.json`` whose ``format`` is
  ``bgl-graph-store``) when a store is written, a bgl partition directory
  (``partition.json`` whose ``format`` is ``bgl-partition``) when a partition
  is written, or an empty directory.  Anything else at OUT is refused with a
  one-line error naming it: a plain file, a symbolic link, a directory bgl did
  not write, a bgl output holding files bgl does not write (they would be
  lost), a part store inside a partition directory (replacing it would break
  the partition), the run's own input, and the *other* kind of output (a
  partition where a store goes, or a store where a partition goes: one is built
  from the other, so the swap is almost always a mistyped argument that would
  delete the input or a served partition).
* The new output is built in a hidden work directory next to OUT and renamed
  into place only when complete; the old output is moved aside, the new one
  renamed in (SIGTERM/SIGINT blocked in between) and the old one removed last.
* Work directories (``.OUT.tmp-PID-HEX``, ``.OUT.scratch-PID-HEX``,
  ``.OUT.replaced-PID-HEX``) each have a sibling ``.lock`` file that the
  owning process holds an exclusive ``flock`` on while it lives.  The kernel
  drops the lock when the process dies (SIGKILL included), so a later writer
  in the same directory finds the leftovers of dead runs by taking their locks
  (:func:`remove_stale`), and never touches a live run's (its lock is held).
  A ``replaced`` directory whose OUT is missing (a kill between the two
  renames) is renamed back, so the old output survives.
* :func:`sigterm_raises` turns SIGTERM into :class:`Terminated` for the
  duration of a command, so ``finally`` blocks remove the work directories on
  ``kill PID`` as they do on Ctrl-C.

Cost: one lock file and file descriptor per live work directory; the stale
scan lists OUT's parent directory once per writer.

A single file (a saved graph, tensors, a cache of clusters or splits) is written by
:func:`write_file_atomically`: a temporary sibling renamed over the target when complete, so a
reader sees the old file or the new one, never half of one.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator, Mapping

from .errors import BglError

ROLES = ("tmp", "scratch", "replaced")
_WORK_NAME = re.compile(r"^\.(?P<out>.+)\.(?P<role>tmp|scratch|replaced)-(?P<pid>\d+)-(?P<token>[0-9a-f]{8})$")
LOCK_SUFFIX = ".lock"
#: Files bgl writes inside a store or partition dir; anything else is a user's and blocks --overwrite.
OUTPUT_FILE_SUFFIXES = (".npy", ".json", ".json.tmp")


class OutputError(BglError, OSError):
    """OUT cannot be written (unwritable parent, not a directory, ...); names the path and the reason."""

    def __str__(self) -> str:
        return str(self.strerror)


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM inside :func:`sigterm_raises` (not an ``Exception``, so
    no ``except Exception`` swallows it; ``finally`` blocks run as for ``KeyboardInterrupt``)."""

    exit_code = 128 + signal.SIGTERM


@dataclass(frozen=True)
class OutputKind:
    """A kind of bgl output directory, recognised by its metadata file's ``format`` field."""

    name: str
    meta_file: str
    format: str


STORE = OutputKind("bgl graph store", "meta.json", "bgl-graph-store")
PARTITION = OutputKind("bgl partition directory", "partition.json", "bgl-partition")
KINDS = (STORE, PARTITION)


def kind_of(path: Path) -> OutputKind | None:
    """The bgl output kind ``path`` is (by its metadata file), or None."""
    for kind in KINDS:
        try:
            meta = json.loads((path / kind.meta_file).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("format") == kind.format:
            return kind
    return None


def _foreign_entry(path: Path, kind: OutputKind) -> Path | None:
    """First entry under ``path`` that a bgl writer of ``kind`` does not write, or None."""
    for entry in sorted(path.iterdir()):
        if entry.is_symlink():
            return entry
        if entry.is_dir():
            # A partition's part-K stores; a store's array sub-directories.
            sub_kind = STORE if kind is PARTITION and (entry / STORE.meta_file).exists() else kind
            bad = _foreign_entry(entry, sub_kind)
            if bad is not None:
                return bad
        elif not (entry.is_file() and entry.name.endswith(OUTPUT_FILE_SUFFIXES)):
            return entry
    return None


def _inside(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def check_output(out: str | os.PathLike, kind: OutputKind, overwrite: bool,
                 inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Check that a ``kind`` output may be written at ``out``; return it as a Path.

    Raises
    ------
    FileExistsError
        naming ``out`` and why: it exists and ``overwrite`` is False, or it is
        something ``overwrite`` does not replace (see the module docstring).
    OutputError
        ``out``'s parent cannot hold it (a file, or not writable).
    """
    out = Path(out)
    resolved = out.resolve()
    for src in inputs:
        src_path = Path(src).resolve()
        if _inside(src_path, resolved):
            raise FileExistsError(f"{out} is the input of this run ({src}); write the output elsewhere")
    _check_parent(out)
    if not (out.exists() or out.is_symlink()):
        return out
    if not overwrite:
        raise FileExistsError(f"{out} already exists (pass overwrite=True / --overwrite to replace it)")
    if out.is_symlink():
        raise FileExistsError(f"{out} is a symbolic link; --overwrite does not replace links (give the target)")
    if not out.is_dir():
        raise FileExistsError(f"{out} is a file, not a {kind.name}; --overwrite replaces only a {kind.name}")
    if not any(out.iterdir()):
        return out
    have = kind_of(out)
    if have is None:
        raise FileExistsError(f"{out} is a directory that is not a {kind.name} (no {kind.meta_file} with "
                              f"format {kind.format!r}); --overwrite replaces only a {kind.name}")
    if have is not kind:
        raise FileExistsError(f"{out} is a {have.name}, not a {kind.name}; --overwrite does not replace one "
                              f"kind with the other (remove it yourself if that is meant)")
    if kind is STORE and kind_of(resolved.parent) is PARTITION:
        raise FileExistsError(f"{out} is a part store of the partition {out.parent}; replacing it would "
                              f"break the partition")
    foreign = _foreign_entry(out, kind)
    if foreign is not None:
        raise FileExistsError(f"{out} holds {foreign.relative_to(out)}, which bgl did not write; "
                              f"--overwrite would delete it (move it out first)")
    return out


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def require_parent(out: str | os.PathLike) -> None:
    """OutputError unless ``out``'s parent directory exists: the ``bgl`` commands write OUT, never
    the directories above it, so a mistyped path is refused instead of growing a new tree there.

    (Library writers keep creating missing parents, as ``os.makedirs`` callers expect.)
    """
    parent = Path(out).absolute().parent
    if not parent.is_dir() and _nearest_existing(parent).is_dir():  # a file on the way: _check_parent says so
        raise OutputError(errno.ENOENT, f"cannot write {out}: directory {parent} does not exist "
                                        "(create it first; bgl does not create parent directories)")


def _check_parent(out: Path) -> None:
    """OutputError unless the nearest existing ancestor of ``out`` is a writable directory."""
    parent = _nearest_existing(out.absolute().parent)
    if not parent.is_dir():
        raise OutputError(errno.ENOTDIR, f"cannot write {out}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(errno.EACCES, f"cannot write {out}: no write permission in {parent}")


class WorkDir:
    """A hidden, locked directory next to ``out``: ``.NAME.ROLE-PID-HEX`` (see the module docstring).

    Use as a context manager or call :meth:`remove`; :meth:`release` gives up the lock after the
    directory was renamed away (into OUT).
    """

    def __init__(self, out: str | os.PathLike, role: str, parent: str | os.PathLike | None = None):
        if role not in ROLES:
            raise ValueError(f"work dir role must be one of {ROLES}, got {role!r}")
        out = Path(out)
        base = Path(parent) if parent is not None else out.absolute().parent
        name = f".{out.name}.{role}-{os.getpid()}-{secrets.token_hex(4)}"
        self.path = base / name
        self.lock_path = base / (name + LOCK_SUFFIX)
        self._fd: int | None = None
        try:
            base.mkdir(parents=True, exist_ok=True)
            self._fd = _locked_lock_file(base / (name + LOCK_SUFFIX + ".new"), self.lock_path)
            self.path.mkdir()
        except OSError as e:
            self.remove()
            raise OutputError(e.errno or errno.EIO, f"cannot write {out}: {_nearest_existing(base)}: "
                                                    f"{e.strerror or e}") from None

    def __enter__(self) -> "WorkDir":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def remove(self) -> None:
        """Delete the directory (if still there), then the lock; safe to call twice."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.release()

    def release(self) -> None:
        """Unlink and unlock the lock file (the directory itself is left alone)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.lock_path)
        os.close(self._fd)
        self._fd = None


def _locked_lock_file(pending: Path, lock_path: Path, tries: int = 8) -> int:
    """An fd holding the flock of ``lock_path``, which appears already locked: it is made under the
    private name ``pending`` and renamed once locked, so a cleaner never sees a run's lock unheld.

    A concurrent :func:`remove_stale` can take ``pending`` between its creation and the flock (it
    looks like a dead run's) and unlink it: the rename then fails, and the file is made anew."""
    for _ in range(tries):
        fd = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(pending, lock_path)
            return fd
        except FileNotFoundError:
            os.close(fd)  # a cleaner removed it before this run's flock: make it again
        except BaseException:
            os.close(fd)
            raise
    raise OSError(errno.EAGAIN, f"{pending} was removed {tries} times before it could be locked")


def _try_lock(lock_path: Path) -> int | None:
    """An fd holding ``lock_path``'s flock when no live process holds it; None when one does."""
    try:
        fd = os.open(lock_path, os.O_RDWR)
    except FileNotFoundError:
        return -1  # no lock file: its owner is gone (or a cleaner is already removing it)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def remove_stale(parent: str | os.PathLike) -> list[Path]:
    """Remove the work directories dead bgl runs left in ``parent``; return what was cleaned.

    A ``replaced`` directory whose output is missing is renamed back to it instead (it is the old
    output, moved aside by a run killed before it could finish the swap).
    """
    parent = Path(parent)
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    cleaned = []
    for entry in entries:
        name = entry.name
        if name.endswith(LOCK_SUFFIX + ".new"):
            fd = _try_lock(Path(entry.path))
            if fd is not None and fd >= 0:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                os.close(fd)
            continue
        m = _WORK_NAME.match(name)
        if not m:
            continue
        lock_path = parent / (name + LOCK_SUFFIX)
        fd = _try_lock(lock_path)
        if fd is None:
            continue  # a live run's
        try:
            work = Path(entry.path)
            out = parent / m["out"]
            if m["role"] == "replaced" and not (out.exists() or out.is_symlink()):
                os.rename(work, out)
            else:
                shutil.rmtree(work, ignore_errors=True)
            cleaned.append(work)
        finally:
            if fd >= 0:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock_path)
                os.close(fd)
    for entry in entries:  # lock files whose directory is gone and whose owner died
        if entry.name.endswith(LOCK_SUFFIX) and _WORK_NAME.match(entry.name[: -len(LOCK_SUFFIX)]):
            if (parent / entry.name[: -len(LOCK_SUFFIX)]).exists():
                continue
            fd = _try_lock(Path(entry.path))
            if fd is not None and fd >= 0:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                os.close(fd)
    return cleaned


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Defer SIGTERM/SIGINT (and so :class:`Terminated`/KeyboardInterrupt) across a few syscalls."""
    sigs = {signal.SIGTERM, signal.SIGINT}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def replace_output(work: WorkDir, out: str | os.PathLike, kind: OutputKind, overwrite: bool) -> None:
    """Rename the finished ``work`` directory to ``out``, replacing the old ``kind`` output there.

    ``out`` is checked again first, with the run's ``overwrite`` (something may have appeared
    there during a long run).  The old output is
    moved aside to a locked ``replaced`` work dir, the new one renamed in, and only then is the
    old one deleted; signals are blocked between the renames.
    """
    out = Path(out)
    check_output(out, kind, overwrite)
    aside = None
    if out.exists():
        aside = WorkDir(out, "replaced")
        aside.path.rmdir()  # reserved name; rename needs it absent
    try:
        with _signals_blocked():
            if aside is not None:
                os.rename(out, aside.path)
            try:
                os.rename(work.path, out)
            except BaseException:
                if aside is not None:
                    os.rename(aside.path, out)
                raise
            work.release()
    finally:
        if aside is not None:
            aside.remove()


# Python functions that C code calls through ctypes callbacks (llvmlite's object cache, which numba
# uses to load and store cached kernels).  An exception raised inside one cannot propagate: ctypes
# prints "Exception ignored on calling ctypes callback", the C caller goes on with a result never
# filled in, and the process died of SIGSEGV instead of exiting 128 + 15 (seen in the suite).
FOREIGN_CALLBACKS = frozenset({"_raw_object_cache_notify", "_raw_object_cache_getbuffer"})
REDELIVER_S = 0.02  # a SIGTERM that lands inside such a callback is sent again this much later


def _inside_foreign_callback(frame) -> bool:
    """Whether ``frame`` or one of its callers is a :data:`FOREIGN_CALLBACKS` function."""
    while frame is not None:
        if frame.f_code.co_name in FOREIGN_CALLBACKS:
            return True
        frame = frame.f_back
    return False


def _redeliver(signum: int) -> None:
    """Send ``signum`` to this process again after :data:`REDELIVER_S` (from a daemon timer thread)."""
    timer = threading.Timer(REDELIVER_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread; the previous
    handler is restored after.  Outside the main thread this does nothing (Python only
    delivers signals there).  A SIGTERM that arrives inside a C library's callback into Python
    (:data:`FOREIGN_CALLBACKS`) is deferred: sent again :data:`REDELIVER_S` later, until it lands
    in code an exception can leave."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if _inside_foreign_callback(frame):
            _redeliver(signum)
            return
        raise Terminated(f"terminated by signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_file_atomically(path: str | os.PathLike, write: Callable[[BinaryIO], None], *,
                          durable: bool = False) -> None:
    """Call ``write(f)`` on a temporary file beside ``path`` and rename it over ``path`` once it returns:
    an interrupted write (an exception, Ctrl-C, SIGKILL) leaves the old file or none, never half a file
    (a SIGKILL may leave the hidden ``.NAME.*.tmp`` sibling).  ``durable=True`` also syncs the data to
    disk before the rename, for a cache another process trusts after a crash."""
    import tempfile

    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_npz_atomically(path: str | os.PathLike, arrays: Mapping[str, object], *, durable: bool = False) -> None:
    """``numpy.savez`` of ``arrays`` to ``path`` through :func:`write_file_atomically` (plain arrays: a
    reader loads it with ``allow_pickle=False``)."""
    import numpy as np

    write_file_atomically(path, lambda f: np.savez(f, **arrays), durable=durable)
