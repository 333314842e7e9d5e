#!/usr/bin/env python3
"""Runs TensorFlow's guide and tutorial notebooks against eagerflow and reports which run to the end.

Give it a local copy of tensorflow/docs (never part of this repository):

    PYTHONPATH=build/release/python_package python scripts/run_tf_guides.py DOCS/site/en/guide \
        DOCS/site/en/tutorials --markdown /tmp/guides.md

Each notebook's code cells become one script (shell `!` and `%` magics dropped), with
`import tensorflow as tf` changed to `import eagerflow as tf`; it runs in a fresh directory with a
timeout and no network, and the report gives the first error of each (a missing API, a download,
a different result). The notebooks' code stays in the docs copy; only the report is kept.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap
import time

IMPORTS = [
    (re.compile(r"^(\s*)import tensorflow as tf\b"), r"\1import eagerflow as tf"),
    (re.compile(r"^(\s*)import tensorflow\s*$"), r"\1import eagerflow as tensorflow"),
    (re.compile(r"^(\s*)from tensorflow import keras\b"), r"\1from eagerflow import keras"),
    (re.compile(r"^(\s*)from tensorflow\.keras import"), r"\1from eagerflow.keras import"),
    (re.compile(r"^(\s*)import keras\s*$"), r"\1from eagerflow import keras"),
]


def script_of(notebook):
    cells = json.loads(pathlib.Path(notebook).read_text())["cells"]
    lines = ["import matplotlib\nmatplotlib.use('Agg')\n"]
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = textwrap.dedent("".join(cell.get("source", [])))  # IPython dedents a cell
        if source.lstrip().startswith("%%"):
            continue
        shell_continues = False
        for line in source.splitlines():
            stripped = line.lstrip()
            # Shell lines (and their backslash-continued lines), magics (`%name`, not a Python
            # line continued with `%(...)` formatting) and IPython's `name?` help are not Python.
            continued = shell_continues
            is_shell = continued or stripped.startswith("!") or re.match(r"%%?\w", stripped)
            shell_continues = bool(is_shell) and stripped.endswith("\\")
            if continued:
                line = ""  # the rest of a shell command: its first line became the `pass`
            elif is_shell or re.fullmatch(r"[\w.]+\?{1,2}", stripped):
                line = line[:len(line) - len(stripped)] + "pass"
            for pattern, repl in IMPORTS:
                line = pattern.sub(repl, line)
            lines.append(line + "\n")
        lines.append("\n")
    return "".join(lines)


def classify(stderr):
    tail = [l for l in stderr.strip().splitlines() if l.strip()]
    last = tail[-1] if tail else "(no output)"
    if re.search(r"urlopen|URLError|Temporary failure in name resolution|getaddrinfo|ConnectionError|HTTPError|Failed to establish|"
                 r"does not download files", stderr):
        kind = "download"
    elif re.search(r"No module named '(tensorflow|tensorflow_\w+|tf_keras|keras_\w+)", stderr):
        kind = "TF package"
    elif "ModuleNotFoundError" in last:
        kind = "other package"
    elif "AttributeError" in last and ("eagerflow" in last or "module" in last):
        kind = "missing API"
    else:
        kind = "error"
    return kind, last[:200]


def make_stand_ins(keras_home, mnist_dir):
    """Keras' cached MNIST and Fashion-MNIST files, made from the shared MNIST test set (its first
    8,000 digits repeated to 60,000 as the training split, the last 2,000 repeated to 10,000 as
    the test split): stand-ins with the files' formats and sizes, so that notebooks loading them
    run here without a download."""
    import gzip
    import numpy as np
    def idx(name):
        with gzip.open(pathlib.Path(mnist_dir) / name, "rb") as f:
            data = f.read()
        dims = int.from_bytes(data[3:4], "big")
        shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
        return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)
    images, labels = idx("t10k-images-idx3-ubyte.gz"), idx("t10k-labels-idx1-ubyte.gz")
    # Keras' sizes (60,000 + 10,000 rows): notebooks hard-code them (a reshape to 60000 rows).
    tile = lambda a, n: np.resize(a, (n,) + a.shape[1:])  # repeats a's rows up to n
    images = np.concatenate([tile(images[:8000], 60000), tile(images[8000:], 10000)])
    labels = np.concatenate([tile(labels[:8000], 60000), tile(labels[8000:], 10000)])
    datasets = pathlib.Path(keras_home) / "datasets"
    (datasets / "fashion-mnist").mkdir(parents=True, exist_ok=True)
    np.savez(datasets / "mnist.npz", x_train=images[:60000], y_train=labels[:60000], x_test=images[60000:],
             y_test=labels[60000:])
    def write_idx(path, array):
        header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
        with gzip.open(path, "wb") as f:
            f.write(header + array.astype(np.uint8).tobytes())
    for prefix, lo, hi in (("train", 0, 60000), ("t10k", 60000, 70000)):
        write_idx(datasets / "fashion-mnist" / f"{prefix}-images-idx3-ubyte.gz", images[lo:hi])
        write_idx(datasets / "fashion-mnist" / f"{prefix}-labels-idx1-ubyte.gz", labels[lo:hi])


def run(notebook, python, timeout, env):
    with tempfile.TemporaryDirectory(prefix="tf_guide_") as work:
        path = pathlib.Path(work) / "notebook.py"
        path.write_text(script_of(notebook))
        start = time.time()
        try:
            p = subprocess.run([python, str(path)], cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", f"ran past {timeout} s", time.time() - start
        if p.returncode == 0:
            return "ran", "", time.time() - start
        kind, last = classify(p.stderr)
        return kind, last, time.time() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="folders of notebooks (searched recursively)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--markdown", help="write the report here")
    ap.add_argument("--only", help="a regular expression the notebook path must match")
    ap.add_argument("--mnist", default=str(pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"),
                    help="the shared MNIST test set, made into Keras' cached MNIST/Fashion-MNIST stand-ins")
    args = ap.parse_args()
    notebooks = sorted(p for d in args.dirs for p in pathlib.Path(d).rglob("*.ipynb"))
    if args.only:
        notebooks = [n for n in notebooks if re.search(args.only, str(n))]
    # The notebooks run in temporary folders: make the import path absolute.
    path = os.pathsep.join(str(pathlib.Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    env = dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="3", no_proxy="*", http_proxy="http://0.0.0.0:9",
               https_proxy="http://0.0.0.0:9", HTTP_PROXY="http://0.0.0.0:9", HTTPS_PROXY="http://0.0.0.0:9")
    stand_ins = tempfile.TemporaryDirectory(prefix="keras_home_")
    if pathlib.Path(args.mnist, "t10k-images-idx3-ubyte.gz").exists():
        make_stand_ins(stand_ins.name, args.mnist)
        env["KERAS_HOME"] = stand_ins.name
    rows = []
    for nb in notebooks:
        kind, last, seconds = run(nb, sys.executable, args.timeout, env)
        name = str(nb).split("site/en/")[-1]
        rows.append((name, kind, last, seconds))
        print(f"{kind:14} {seconds:6.1f}s {name}  {last}", flush=True)
    counts = {}
    for _, kind, _, _ in rows:
        counts[kind] = counts.get(kind, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    print(f"\n{counts.get('ran', 0)} of {len(rows)} ran to the end ({summary})")
    if args.markdown:
        out = ["# TensorFlow's guides and tutorials under eagerflow", "",
               f"{counts.get('ran', 0)} of {len(rows)} notebooks ran to the end ({summary}).", "",
               "| notebook | result | first error |", "| --- | --- | --- |"]
        out += [f"| {n} | {k} | {l.replace('|', '/')} |" for n, k, l, _ in rows]
        pathlib.Path(args.markdown).write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
