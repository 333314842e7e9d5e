#!/usr/bin/env python3
"""Runs Keras' guides and examples (keras-team/keras-io's .py files) against eagerflow and reports which run.

Give it a local copy of keras-io's programs (never part of this repository):

    PYTHONPATH=python python scripts/run_keras_guides.py KERASIO/guides KERASIO/examples/vision \
        KERASIO/examples/nlp KERASIO/examples/timeseries KERASIO/examples/structured_data \
        --markdown /tmp/keras_guides.md

Each program's imports are changed to eagerflow's (`import tensorflow as tf` -> `import eagerflow
as tf`, `import keras` / `from tensorflow import keras` -> `from eagerflow import keras`,
`from keras import layers, ops` -> `from eagerflow.keras import ...`; Keras 3's KERAS_BACKEND
setting is left alone: it names no module); it runs in a fresh folder with no network, a timeout,
and Keras' dataset cache ($KERAS_HOME) holding small stand-ins for mnist, fashion_mnist, cifar10,
cifar100 and imdb made from ../shared/data. A sitecustomize hook in the run folder caps every
`fit` to EF_GUIDE_EPOCHS epochs (1), its arrays to their first EF_GUIDE_SAMPLES rows (4096) and a
dataset to EF_GUIDE_STEPS batches (64), so that a program runs end to end in the timeout on two
cores; programs are not edited otherwise (a custom training loop runs as written). The report gives each program's first error,
classified: ran, ran partially (timeout), missing API, error, TF package (tensorflow_addons,
tensorflow_datasets, keras_nlp, ...), other package, download.
"""
import argparse
import collections
import concurrent.futures
import gzip
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

IMPORTS = [
    (re.compile(r"^(\s*)import tensorflow as tf\b"), r"\1import eagerflow as tf"),
    (re.compile(r"^(\s*)import tensorflow\s*$"), r"\1import eagerflow as tensorflow"),
    (re.compile(r"^(\s*)from tensorflow import keras\b"), r"\1from eagerflow import keras"),
    (re.compile(r"^(\s*)from tensorflow\.keras(\.[\w.]+)? import"), r"\1from eagerflow.keras\2 import"),
    (re.compile(r"^(\s*)import tensorflow\.keras as (\w+)"), r"\1from eagerflow import keras as \2"),
    (re.compile(r"^(\s*)from tensorflow(\.[\w.]+)? import"), r"\1from eagerflow\2 import"),
    (re.compile(r"^(\s*)import keras\s*(#.*)?$"), r"\1from eagerflow import keras"),
    (re.compile(r"^(\s*)import keras as (\w+)"), r"\1from eagerflow import keras as \2"),
    (re.compile(r"^(\s*)from keras(\.[\w.]+)? import"), r"\1from eagerflow.keras\2 import"),
]

# Runs before the program (the run folder is first on PYTHONPATH): caps fit's epochs so that a
# program's training finishes in the timeout. Only the count changes; the rest of fit is the
# program's own call.
SITECUSTOMIZE = '''
import os
try:
    import eagerflow as _tf
    import eagerflow._training as _k  # Model and Sequential share _Training's fit
    import numpy as _np
    _fit = _k._Training.fit
    _epochs = int(os.environ.get("EF_GUIDE_EPOCHS", "1"))
    _samples = int(os.environ.get("EF_GUIDE_SAMPLES", "4096"))
    _steps = int(os.environ.get("EF_GUIDE_STEPS", "64"))

    def _head(v):
        if isinstance(v, _np.ndarray) and v.ndim and len(v) > _samples:
            return v[:_samples]
        if isinstance(v, dict):
            return {k: _head(u) for k, u in v.items()}
        if isinstance(v, (list, tuple)) and v and all(isinstance(u, _np.ndarray) for u in v):
            return type(v)(_head(u) for u in v)
        return v

    def fit(self, *args, **kwargs):
        names = ["x", "y", "batch_size", "epochs"]
        kwargs.update(zip(names, args[:4]))
        args = args[4:]
        first = int(kwargs.get("initial_epoch", 0) or 0)
        if kwargs.get("epochs") is not None:
            kwargs["epochs"] = min(int(kwargs["epochs"]), first + _epochs)
        x = kwargs.get("x")
        if isinstance(x, _tf.data.Dataset):
            if kwargs.get("steps_per_epoch"):
                kwargs["steps_per_epoch"] = min(int(kwargs["steps_per_epoch"]), _steps)
            else:
                kwargs["x"] = x.take(_steps)
            v = kwargs.get("validation_data")
            if isinstance(v, _tf.data.Dataset) and not kwargs.get("validation_steps"):
                kwargs["validation_data"] = v.take(_steps)
        else:
            for name in ("x", "y", "sample_weight"):
                kwargs[name] = _head(kwargs.get(name))
        return _fit(self, *args, **kwargs)
    _k._Training.fit = fit
except Exception:  # an unimportable eagerflow shows as the program's own first error
    pass
'''


def script_of(path):
    lines = ["import matplotlib\nmatplotlib.use('Agg')\n"]
    for line in pathlib.Path(path).read_text().splitlines():
        for pattern, repl in IMPORTS:
            line = pattern.sub(repl, line)
        lines.append(line + "\n")
    return "".join(lines)


def classify(stderr):
    tail = [l for l in stderr.strip().splitlines() if l.strip()]
    last = tail[-1] if tail else "(no output)"
    if re.search(r"urlopen|URLError|Temporary failure in name resolution|getaddrinfo|ConnectionError|HTTPError|"
                 r"Failed to establish|does not download files|Connection refused", stderr):
        kind = "download"
    elif re.search(r"No module named '(tensorflow|tensorflow_\w+|tf_keras|keras_\w+)", last):
        kind = "TF package"
    elif re.search(r"No module named 'eagerflow", last) or re.search(r"cannot import name .* from 'eagerflow", last):
        kind = "missing API"
    elif "ModuleNotFoundError" in last:
        kind = "other package"
    elif ("AttributeError" in last and not re.search(r"NumPy|DataFrame|Series|'(NoneType|ndarray|str|list|dict)'", last)) \
            or "NotImplementedError" in last \
            or re.search(r"TypeError: \w+(\(\w+\))?: not supported", last) or "unexpected keyword argument" in last:
        kind = "missing API"
    else:
        kind = "error"
    return kind, last[:220]


def mnist_arrays(mnist_dir):
    import numpy as np
    def idx(name):
        with gzip.open(pathlib.Path(mnist_dir) / name, "rb") as f:
            data = f.read()
        dims = data[3]
        shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
        return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)
    return idx("t10k-images-idx3-ubyte.gz"), idx("t10k-labels-idx1-ubyte.gz")


def make_stand_ins(keras_home, mnist_dir, text_file):
    """Keras' cached dataset files in their formats and sizes, made from the shared data: MNIST's
    test set (its first 8,000 digits repeated as the training split, the last 2,000 as the test
    split) as mnist and fashion_mnist (60,000 + 10,000), padded to 32x32x3 as cifar10 and cifar100
    (50,000 + 10,000), and the fortunes text as imdb (25,000 + 25,000 word-index sequences, label:
    longer than the median). Programs hard-code the sizes (a reshape to 60000 rows), so the
    stand-ins keep them; they are stand-ins of the formats, not of the data."""
    import pickle
    import numpy as np
    images, labels = mnist_arrays(mnist_dir)
    tile = lambda a, n: np.resize(a, (n,) + a.shape[1:])  # repeats a's rows up to n
    x_train, y_train = tile(images[:8000], 60000), tile(labels[:8000], 60000)
    x_test, y_test = images[8000:].repeat(5, axis=0), labels[8000:].repeat(5)
    datasets = pathlib.Path(keras_home) / "datasets"
    (datasets / "fashion-mnist").mkdir(parents=True, exist_ok=True)
    np.savez(datasets / "mnist.npz", x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)

    def write_idx(path, array):
        header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
        with gzip.open(path, "wb", compresslevel=1) as f:
            f.write(header + array.astype(np.uint8).tobytes())
    for prefix, x, y in (("train", x_train, y_train), ("t10k", x_test, y_test)):
        write_idx(datasets / "fashion-mnist" / f"{prefix}-images-idx3-ubyte.gz", x)
        write_idx(datasets / "fashion-mnist" / f"{prefix}-labels-idx1-ubyte.gz", y)
    colour = lambda x: np.repeat(np.pad(x, ((0, 0), (2, 2), (2, 2)))[:, None], 3, axis=1).reshape(len(x), 3072)
    cx_train, cy_train, cx_test = colour(x_train[:50000]), y_train[:50000], colour(x_test)
    cifar10 = datasets / "cifar-10-batches-py"
    cifar10.mkdir(exist_ok=True)
    for i in range(5):
        lo, hi = 10000 * i, 10000 * (i + 1)
        with open(cifar10 / f"data_batch_{i + 1}", "wb") as f:
            pickle.dump({b"data": cx_train[lo:hi], b"labels": [int(v) for v in cy_train[lo:hi]]}, f)
    with open(cifar10 / "test_batch", "wb") as f:
        pickle.dump({b"data": cx_test, b"labels": [int(v) for v in y_test]}, f)
    cifar100 = datasets / "cifar-100-python"
    cifar100.mkdir(exist_ok=True)
    for part, x, y in (("train", cx_train, cy_train), ("test", cx_test, y_test)):
        with open(cifar100 / part, "wb") as f:
            pickle.dump({b"data": x, b"fine_labels": [int(v) for v in y], b"coarse_labels": [int(v) // 5 for v in y]}, f)
    if text_file and pathlib.Path(text_file).exists():
        with gzip.open(text_file, "rt", encoding="latin-1") as f:
            entries = [e.split() for e in f.read().split("\n%\n") if e.strip()]
        counts = collections.Counter(w.lower() for e in entries for w in e)
        index = {w: i + 1 for i, (w, _) in enumerate(counts.most_common())}
        seqs = [[index[w.lower()] for w in e] for e in entries]
        seqs = (seqs * (50000 // len(seqs) + 1))[:50000]
        median = np.median([len(s) for s in seqs])
        y = np.array([int(len(s) > median) for s in seqs], np.int64)
        obj = lambda xs: np.array(xs + [None], dtype=object)[:-1]  # ragged: an object array of lists
        np.savez(datasets / "imdb.npz", x_train=obj(seqs[:25000]), y_train=y[:25000], x_test=obj(seqs[25000:]),
                 y_test=y[25000:])
        (datasets / "imdb_word_index.json").write_text(json.dumps(index))


def run(program, python, timeout, env, show=0):
    with tempfile.TemporaryDirectory(prefix="keras_guide_") as work:
        path = pathlib.Path(work) / "program.py"
        path.write_text(script_of(program))
        (pathlib.Path(work) / "sitecustomize.py").write_text(SITECUSTOMIZE)
        env = dict(env, PYTHONPATH=os.pathsep.join([work] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])))
        start = time.time()
        try:
            p = subprocess.run([python, str(path)], cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "ran partially (timeout)", f"ran past {timeout:g} s", time.time() - start
        if p.returncode == 0:
            return "ran", "", time.time() - start
        if show:
            print("\n".join(p.stderr.strip().splitlines()[-show:]), flush=True)
        kind, last = classify(p.stderr)
        return kind, last, time.time() - start


def blocker(last):
    """The first error without the program's own names and numbers, to count programs per cause."""
    last = re.sub(r"'[^']*'", "'…'", last)
    return re.sub(r"\d+", "N", last)[:140]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="folders of keras-io programs (their *.py, not recursive)")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--markdown", help="write the report here")
    ap.add_argument("--json", help="write the rows here (to compare two runs)")
    ap.add_argument("--only", help="a regular expression the program path must match")
    ap.add_argument("--show", type=int, default=0, help="print this many last lines of each failure's stderr")
    shared = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
    ap.add_argument("--mnist", default=str(shared / "mnist"), help="the shared MNIST test set")
    ap.add_argument("--text", default=str(shared / "text" / "fortunes.txt.gz"), help="the shared text, for imdb")
    args = ap.parse_args()
    programs = sorted(p for d in args.dirs for p in pathlib.Path(d).glob("*.py"))
    if args.only:
        programs = [p for p in programs if re.search(args.only, str(p))]
    path = os.pathsep.join(str(pathlib.Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    env = dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="3", no_proxy="",
               http_proxy="http://0.0.0.0:9", https_proxy="http://0.0.0.0:9", HTTP_PROXY="http://0.0.0.0:9",
               HTTPS_PROXY="http://0.0.0.0:9", KERAS_BACKEND="tensorflow")
    stand_ins = tempfile.TemporaryDirectory(prefix="keras_home_")
    if pathlib.Path(args.mnist, "t10k-images-idx3-ubyte.gz").exists():
        make_stand_ins(stand_ins.name, args.mnist, args.text)
    env["KERAS_HOME"] = stand_ins.name
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(run, p, sys.executable, args.timeout, env, args.show): p for p in programs}
        for future in concurrent.futures.as_completed(futures):
            p = futures[future]
            kind, last, seconds = future.result()
            name = f"{p.parent.name}/{p.name}" if p.parent.name != "guides" else f"guides/{p.name}"
            if p.parent.parent.name == "examples":
                name = f"examples/{name}"
            rows.append((name, kind, last, seconds))
            print(f"{kind:24} {seconds:6.1f}s {name}  {last}", flush=True)
    rows.sort()
    counts = collections.Counter(kind for _, kind, _, _ in rows)
    summary = ", ".join(f"{v} {k}" for k, v in counts.most_common())
    print(f"\n{counts.get('ran', 0)} of {len(rows)} ran to the end ({summary})")
    causes = collections.Counter(blocker(l) for _, k, l, _ in rows if k in ("missing API", "error"))
    for cause, n in causes.most_common(25):
        print(f"{n:3}  {cause}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=0))
    if args.markdown:
        out = ["# Keras' guides and examples under eagerflow", "",
               f"{counts.get('ran', 0)} of {len(rows)} programs ran to the end ({summary}).", "",
               "| program | result | first error |", "| --- | --- | --- |"]
        out += [f"| {n} | {k} | {l.replace('|', '/')} |" for n, k, l, _ in rows]
        pathlib.Path(args.markdown).write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
