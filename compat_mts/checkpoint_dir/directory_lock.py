"""One writer per checkpoint directory: a lock file with the writer's pid, host and a lease it keeps renewing.

Two processes saving into one `checkpoint_dir` rotate each other's files away and interleave the state file;
neither v1 nor `tf.train.CheckpointManager` notices. A writer holds `compat_mts.lock` in the directory:

- **Created whole.** The lock file is written under a name of its own and then hard-linked to
  `compat_mts.lock`, which fails if the lock exists: no process ever sees a lock without its content, so
  two processes racing for a free directory cannot both win. (Where the file system has no hard links, the
  lock is created with `O_EXCL` and written at once; an empty or unreadable lock younger than
  `_YOUNG_SECS` is then taken to be in the middle of that write, never as stale.)
- **Leased.** The lock says when it was last renewed and for how long it holds (`lease_secs`). A daemon
  thread renews the locks of the process every third of the lease, off the training loop's path. A lock
  whose lease has run out is taken over with a warning, from whichever host it came: a job rescheduled on
  another machine after a crash resumes without a hand delete. A lock of another host that is still
  inside its lease is watched until it runs out (taken over) or is renewed (refused: its writer lives).
- **Same host, known at once.** A lock of a process of this host that no longer exists (kill -9) is
  taken over at once; one whose pid now belongs to another process (a restarted container) once its lease
  has run out.
- **Taken over by one.** Taking a lock over (removing the stale file, linking a new one) happens under a
  second, short-lived file created with `O_EXCL`, so two processes that both found the same stale lock do
  not both take it.

The lease is `COMPAT_MTS_LOCK_LEASE_SECS` seconds (60 unless set in the environment). Remote file systems
(`gs://...`) are not locked. The module imports no TensorFlow; it logs through the `tensorflow` logger.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import socket
import threading
import time
import uuid

from compat_mts.core import program as program_lib

_logger = logging.getLogger('tensorflow')  # tf.compat.v1.logging's, without importing TensorFlow for it.
LOCK_FILE = 'compat_mts.lock'
LEASE_SECS = float(os.environ.get('COMPAT_MTS_LOCK_LEASE_SECS', '60'))
_YOUNG_SECS = 10.0  # An unreadable lock younger than this may be in the middle of its first write.
_TAKEOVER_STALE_SECS = 30.0  # A takeover file older than this was left by a process that died taking over.
_POLL_SECS = 0.05
# The real clock, bound at import: a lease is read by other processes and set against files' times, and the
# renewing thread must not spin, so the lock keeps real time where a program's tests patch `time.time` and
# `time.sleep` with a fake clock (as v1's own hook tests do).
_wall_clock = time.time
_sleep = time.sleep

# Process-wide, as the lock files are: they name this process, not a session.
_held_locks: set[str] = program_lib.PROGRAM.table(
    'checkpoints.held_locks', set(), 'the lock files this process holds', kind='process'
)
_held_lock = threading.Lock()
_renewer: threading.Thread | None = None
_unlock_at_exit = False  # `_unlock_all` is registered with atexit once, at the first lock.


class CheckpointDirectoryInUseError(RuntimeError):
    """Another live process is saving checkpoints into the same directory (its lock file says which)."""


def lock_directory(directory: str) -> bool:
    """Marks `directory` as written by this process, or raises if another live process writes there.

    A lock of this process is taken again; a lock whose lease ran out, or whose process is gone (same
    host, as after kill -9), is taken over with a warning. A lock of another host inside its lease is
    watched for up to its lease: renewed, it is refused; not renewed, it is taken over. The lock goes when
    the process exits or `unlock_directory` is called.

    Args:
      directory: the checkpoint directory, which exists.

    Returns:
      True when no writer of this process held the lock already: no one else saves into `directory` now. False
      when this process held it (another session of it may be saving there), and for a remote file system.

    Raises:
      CheckpointDirectoryInUseError: another live process holds the lock, or `directory`'s lock path is
        not a file.
    """
    if '://' in directory:
        return False
    path = os.path.join(directory, LOCK_FILE)
    if os.path.isdir(path):
        raise CheckpointDirectoryInUseError(
            f'The lock file {path} of checkpoint_dir {directory!r} is a directory: compat_mts cannot mark the '
            'directory as written by this process. Remove that directory or give the session another checkpoint_dir.'
        )
    while True:
        if _create(path):
            break
        holder = _read(path)
        if holder is not None and holder['pid'] == os.getpid() and holder['host'] == socket.gethostname():
            break
        reason = _stale_reason(path, holder, directory)
        if _take_over(path, holder, reason):
            break
    _renew(path)  # Also a lock of this process taken again: its lease starts now.
    _remove_old_temporaries(path)
    global _unlock_at_exit
    with _held_lock:
        if not _unlock_at_exit:
            atexit.register(_unlock_all)
            _unlock_at_exit = True
        taken = path not in _held_locks
        _held_locks.add(path)
    _start_renewer()
    return taken


def unlock_directory(directory: str) -> None:
    """Removes this process's lock of `directory` (see `lock_directory`).

    Args:
      directory: the directory given to `lock_directory`.
    """
    path = os.path.join(directory, LOCK_FILE)
    with _held_lock:
        if path not in _held_locks:
            return
        _held_locks.discard(path)
    if _is_mine(_read(path)):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _unlock_all() -> None:
    for path in list(_held_locks):
        unlock_directory(os.path.dirname(path))


def _content() -> bytes:
    return json.dumps(
        {'pid': os.getpid(), 'host': socket.gethostname(), 'renewed': _wall_clock(), 'lease_secs': LEASE_SECS}
    ).encode('utf-8')


def _is_mine(holder: dict | None) -> bool:
    return holder is not None and holder['pid'] == os.getpid() and holder['host'] == socket.gethostname()


def _create(path: str) -> bool:
    """Creates the lock at `path` with its content in one step; False if a lock is there."""
    temporary = f'{path}.{uuid.uuid4().hex}.tmp'
    with open(temporary, 'wb') as file:
        file.write(_content())
    try:
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        return _create_without_links(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)


def _create_without_links(path: str) -> bool:
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, 'wb') as lock:
        lock.write(_content())
    return True


def _read(path: str) -> dict | None:
    """The lock's holder (`pid`, `host`, `renewed`, `lease_secs`), or None: no lock, or an unreadable one."""
    try:
        with open(path, 'rb') as lock:
            holder = json.loads(lock.read().decode('utf-8'))
        return {
            'pid': int(holder['pid']),
            'host': str(holder['host']),
            # A lock of an earlier compat_mts has no lease: its file's time stands for the renewal.
            'renewed': float(holder.get('renewed', os.path.getmtime(path))),
            'lease_secs': float(holder.get('lease_secs', LEASE_SECS)),
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _stale_reason(path: str, holder: dict | None, directory: str) -> str:
    """Why the lock at `path` may be taken over; raises if its holder lives (or may)."""
    if holder is None:
        try:
            age = _wall_clock() - os.path.getmtime(path)
        except FileNotFoundError:
            return 'removed meanwhile'
        if age < _YOUNG_SECS:  # Maybe being written (a file system without hard links): never stale yet.
            raise CheckpointDirectoryInUseError(
                f'Another process is taking the lock of {directory} ({path} is being written): two writers would '
                "delete each other's checkpoints. Give this session its own checkpoint_dir."
            )
        return f'an unreadable lock file, {age:.0f} s old'
    expires = holder['renewed'] + holder['lease_secs']
    if holder['host'] == socket.gethostname():
        if _process_gone(holder['pid']):
            return f'pid {holder["pid"]} on {holder["host"]}, whose process is gone'
        if _wall_clock() < expires:
            _refuse(path, holder, directory)
        # Alive but not renewing: the pid is another process's now (a restarted machine or container).
        return (
            f'pid {holder["pid"]} on {holder["host"]}, whose lease of {holder["lease_secs"]:g} s ran out '
            f'{_wall_clock() - expires:.0f} s ago (that pid is another process now, or a frozen one)'
        )
    if _wall_clock() < expires:
        _logger.info(
            'The lock of %s is held by process %d on %s, another host: waiting up to %.0f s for it to renew its '
            'lease (a live writer) or not.',
            directory,
            holder['pid'],
            holder['host'],
            expires - _wall_clock(),
        )
    while _wall_clock() < expires:  # Another host, inside its lease: renewed means alive.
        _sleep(min(_POLL_SECS * 10, max(0.0, expires - _wall_clock())))
        watched = _read(path)
        if watched is None or watched != holder:
            if watched is not None and (watched['pid'], watched['host']) == (holder['pid'], holder['host']):
                _refuse(path, watched, directory)  # Renewed: its writer lives.
            return 'removed meanwhile' if watched is None else 'changed meanwhile'
    return (
        f'process {holder["pid"]} on {holder["host"]}, whose lease of {holder["lease_secs"]:g} s ran out '
        f'{_wall_clock() - expires:.0f} s ago'
    )


def _refuse(path: str, holder: dict, directory: str) -> None:
    raise CheckpointDirectoryInUseError(
        f'Another process (pid {holder["pid"]} on {holder["host"]}) is saving checkpoints into {directory}: two '
        "writers would delete each other's checkpoints. Give this session its own checkpoint_dir; if that "
        f'process is gone, delete {path}. To share the directory anyway, pass '
        'CheckpointSaverHook(..., allow_other_writers=True).'
    )


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # Alive, another user's.
        return False
    return False


def _take_over(path: str, holder: dict | None, reason: str) -> bool:
    """Replaces the stale lock at `path` by this process's; False if the lock changed meanwhile (look again)."""
    if reason in ('removed meanwhile', 'changed meanwhile'):
        return False
    with _takeover_guard(path) as guarded:
        if not guarded:
            return False
        current = _read(path)
        if current != holder:  # Another process took it over first, or its holder renewed it.
            return False
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        if not _create(path):
            return False
    _logger.warning('Taking over the lock of %s from %s.', os.path.dirname(path), reason)
    return True


@contextlib.contextmanager
def _takeover_guard(path: str):
    """Holds `<lock>.takeover` (created with `O_EXCL`) while the lock is replaced; yields False if another has it."""
    guard = path + '.takeover'
    try:
        os.close(os.open(guard, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        with contextlib.suppress(FileNotFoundError):
            if _wall_clock() - os.path.getmtime(guard) > _TAKEOVER_STALE_SECS:
                os.remove(guard)
        _sleep(_POLL_SECS)
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(guard)


def _remove_old_temporaries(path: str) -> None:
    """Removes the lock's temporary copies that a process killed while writing one left behind."""
    prefix = os.path.basename(path) + '.'
    directory = os.path.dirname(path) or '.'
    for name in os.listdir(directory):
        if name.startswith(prefix) and name.endswith('.tmp'):
            temporary = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):
                if _wall_clock() - os.path.getmtime(temporary) > _TAKEOVER_STALE_SECS:
                    os.remove(temporary)


def _renew(path: str) -> None:
    """Writes a new lease into this process's lock at `path` (a whole file, renamed over it)."""
    temporary = f'{path}.{uuid.uuid4().hex}.tmp'
    try:
        with open(temporary, 'wb') as file:
            file.write(_content())
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)


def _start_renewer() -> None:
    global _renewer
    with _held_lock:
        if _renewer is not None and _renewer.is_alive():
            return
        _renewer = threading.Thread(target=_renew_held_locks, name='compat_mts-lock-lease', daemon=True)
        _renewer.start()


def _renew_held_locks() -> None:
    """Renews the process's locks every third of the lease, for as long as the process lives."""
    while True:
        _sleep(LEASE_SECS / 3)
        with _held_lock:
            held = list(_held_locks)
        for path in held:
            holder = _read(path)
            if not _is_mine(holder):
                if holder is not None:  # Taken over: this process's lease had run out (a frozen process).
                    _logger.error("The lock %s is no longer this process's: %s holds it.", path, holder)
                with _held_lock:
                    _held_locks.discard(path)
                continue
            with contextlib.suppress(OSError):  # A full or vanished directory: the next round tries again.
                _renew(path)
