"""Replacing a saved model's folder as a whole, from Python (tf.saved_model.save of a tf.Module).

The same protocol as the C++ writer (docs/saved_model.md, src/io/saved_model.cpp): the new model
is written to a sibling folder named as the C++ writer names its temporaries
(".<name>.ef-new-<pid namespace>-<pid>-<n>"), then swapped in with one renameat2(RENAME_EXCHANGE),
or, where the file system lacks it, by moving the old folder aside (".<name>.ef-old-...") and the
new one in. A reader or a killed writer sees the old model or the new one; the folders of killed
writers, and an old folder left aside, are cleaned up or restored by the next save or load (C++
or Python, since the names are the same).
"""
import ctypes
import errno
import os
import secrets
import shutil

JSON_FILE = "saved_model.json"
VARIABLES_FILE = "variables.safetensors"


def _pid_namespace():
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _stem(name):
    if len(name) <= 120:
        return name
    h = 14695981039346656037
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return name[:80] + "~" + f"{h:016x}"


def temp_name(target_name, kind):
    # A random counter: the C++ writer of this same process counts from 0 with the same pid.
    return f".{_stem(target_name)}.ef-{kind}-{_pid_namespace()}-{os.getpid()}-{secrets.randbits(48)}"


def parse_temp_name(entry, target_name):
    """(kind, pid namespace, pid) of one of target_name's temporaries, else None."""
    prefix = f".{_stem(target_name)}.ef-"
    if not entry.startswith(prefix):
        return None
    rest = entry[len(prefix):]
    kind, _, numbers = rest.partition("-")
    parts = numbers.split("-")
    if kind not in ("tmp", "new", "old") or len(parts) != 3 or not all(p.isdigit() and len(p) <= 19 for p in parts):
        return None
    pid = int(parts[1])
    if pid == 0 or pid > 0x7FFFFFFF:
        return None
    return kind, int(parts[0]), pid


def _writer_is_gone(ns, pid):
    if pid == os.getpid() or ns != _pid_namespace():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _sync_folder(folder):
    try:
        fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temporaries(target):
    parent, name = os.path.split(target)
    try:
        entries = os.listdir(parent or ".")
    except OSError:
        return []
    out = []
    for e in entries:
        t = parse_temp_name(e, name)
        if t is not None:
            out.append((os.path.join(parent, e), t))
    return out


def remove_orphans(target):
    """Removes the folders (and files) of writers of `target` that were killed."""
    for path, (kind, ns, pid) in _temporaries(target):
        if not _writer_is_gone(ns, pid):
            continue
        if kind == "tmp" and os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
        elif kind != "tmp" and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)


def recover(target):
    """A save killed between its two renames leaves no `target` but the old model aside: renamed
    back when its writer is gone. Returns the folder to read (the aside one if it must stay)."""
    if os.path.lexists(target):
        return target
    best, best_time, gone = None, None, False
    for path, (kind, ns, pid) in _temporaries(target):
        if kind != "old" or not os.path.isdir(path):
            continue
        t = os.stat(path).st_mtime_ns
        if best is None or t > best_time:
            best, best_time, gone = path, t, _writer_is_gone(ns, pid)
    if best is None:
        return target
    if gone:
        try:
            os.rename(best, target)
            _sync_folder(os.path.dirname(target))
            return target
        except OSError:
            pass
    return best


def folder_target(export_dir):
    """The folder a save replaces, checked as the C++ writer checks it."""
    path = os.fspath(export_dir)
    if not path:
        raise ValueError("save: the folder path is empty")
    path = path.rstrip("/") or "/"
    if os.path.lexists(path):
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            raise ValueError(f"save: '{export_dir}' exists and is not a folder: a saved model is a folder "
                             "(choose another path)")
        path = real
    if os.path.basename(path) in ("", ".", ".."):
        raise ValueError(f"save: cannot replace the folder '{export_dir}' (save into a folder below it)")
    return path


def _check_replaceable(target, export_dir):
    foreign = []
    for e in sorted(os.listdir(target)):
        if e in (JSON_FILE, VARIABLES_FILE):
            continue
        if parse_temp_name(e, JSON_FILE) or parse_temp_name(e, VARIABLES_FILE):
            continue
        foreign.append(e)
    if foreign:
        more = f" and {len(foreign) - 1} more entries" if len(foreign) > 1 else ""
        raise ValueError(f"save: '{export_dir}' holds '{foreign[0]}'{more}, which are not part of a saved model: a "
                         "save replaces the whole folder, so it refuses to (save to a new or empty folder, or remove "
                         "them)")


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _rename_exchange(a, b):
    """True when a and b were swapped atomically; False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, f"save: cannot replace '{b}': {os.strerror(err)} (the previous saved model is unchanged)")


def write_atomically(export_dir, write):
    """Calls write(staging folder), then puts that folder in place of export_dir as a whole."""
    target = folder_target(export_dir)
    parent = os.path.dirname(target) or "."
    os.makedirs(parent, exist_ok=True)
    recover(target)
    remove_orphans(target)
    exists = os.path.lexists(target)
    if exists:
        _check_replaceable(target, export_dir)
    staging = os.path.join(parent, temp_name(os.path.basename(target), "new"))
    os.mkdir(staging, 0o755)
    try:
        write(staging)
        _sync_folder(staging)
        if not exists:
            os.rename(staging, target)
            _sync_folder(parent)
            return
        if _rename_exchange(staging, target):
            _sync_folder(parent)
            shutil.rmtree(staging, ignore_errors=True)  # the old model, now there
            return
        aside = os.path.join(parent, temp_name(os.path.basename(target), "old"))
        os.rename(target, aside)
        try:
            os.rename(staging, target)
        except OSError:
            os.rename(aside, target)
            raise
        _sync_folder(parent)
        shutil.rmtree(aside, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_file(path, data):
    """A file written whole and synced (inside a staging folder, which is swapped in later)."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
