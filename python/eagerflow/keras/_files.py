"""Keras' file cache (keras.utils.get_file) without a network: files are looked up where Keras
would have saved them ($KERAS_HOME or ~/.keras, then the cache_subdir), archives found there
are extracted as Keras extracts them, and a file that is missing raises an error naming the
path to put it at and the URL Keras would fetch it from."""
import hashlib
import os
import tarfile
import urllib.parse
import zipfile


def keras_home():
    """$KERAS_HOME, else ~/.keras (/tmp/.keras when the home folder is not writable), as Keras."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    base = os.path.expanduser("~")
    return os.path.join(base if os.access(base, os.W_OK) else "/tmp", ".keras")


def _hasher(algorithm, file_hash):
    if algorithm == "sha256" or (algorithm == "auto" and file_hash is not None and len(file_hash) == 64):
        return hashlib.sha256()
    return hashlib.md5()


def _hash_matches(path, file_hash, algorithm):
    h = _hasher(algorithm, file_hash)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() == str(file_hash)


def _extract(archive, target, archive_format):
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format))
    for kind in formats:
        if kind == "tar" and tarfile.is_tarfile(archive):
            with tarfile.open(archive) as t:
                # The "data" filter refuses members that would land outside target (Python 3.12's default).
                t.extractall(target, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(target)
            return True
        if kind == "zip" and zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                z.extractall(target)
            return True
        if kind not in ("tar", "zip"):
            raise NotImplementedError(kind)
    return False


def _missing(path, origin):
    return FileNotFoundError(
        f"'{path}' is not in the Keras cache and eagerflow does not download files. Download {origin} "
        f"and save it as '{path}' (set KERAS_HOME to use another cache folder than ~/.keras)")


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
             hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None, force_download=False):
    """keras.utils.get_file, offline: the path of the cached file (or, with extract/untar, of the
    folder its archive is extracted into, Keras' names: `<fname>` for the folder and
    `<fname>_archive` for the archive, or `<stem>_extracted` when fname has an extension).
    A cached file whose hash does not match `file_hash` is an error, as is a missing file."""
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    base = os.path.expanduser(keras_home() if cache_dir is None else os.fspath(cache_dir))
    datadir = os.path.join(base, cache_subdir)
    given = fname
    fname = os.fspath(fname) if fname else ""
    if not fname:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise ValueError(f"Can't parse the file name from the origin provided: '{origin}'. "
                             "Please specify the `fname` argument.")
    elif os.sep in fname:
        raise ValueError("Paths are no longer accepted as the `fname` argument. To specify the file's parent "
                         f"directory, use the `cache_dir` argument. Received: fname={fname}")
    if extract or untar:
        if given and "." in fname:
            target = os.path.join(datadir, fname)
            folder = os.path.join(datadir, f"{fname[:fname.find('.')]}_extracted")
        else:
            folder = os.path.join(datadir, fname)
            target = os.path.join(datadir, f"{fname}_archive")
    else:
        target = os.path.join(datadir, fname)
    if force_download:
        raise _missing(target, origin)
    if not os.path.exists(target):
        if (extract or untar) and os.path.isdir(folder):
            return folder  # extracted before, the archive since removed
        raise _missing(target, origin)
    if file_hash is not None and os.path.isfile(target) and not _hash_matches(target, file_hash, hash_algorithm):
        raise ValueError(f"'{target}' does not match the {hash_algorithm} hash {file_hash} of {origin}: it is "
                         "incomplete or another file; replace it (eagerflow does not download files)")
    if extract or untar:
        if not _extract(target, folder, "tar" if untar else archive_format):
            import warnings
            warnings.warn("Could not extract archive.", stacklevel=2)
        return folder
    return target
