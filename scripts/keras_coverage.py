#!/usr/bin/env python3
"""Keras API coverage: which of Keras 3.15's public names ef.keras has, per namespace.

The names come from docs/coverage/keras_3.15_names.json, listed once from an installed keras
(`--list-keras OUT.json` in a venv that has it; Keras is never a dependency of the build or the
tests). Run with eagerflow importable (e.g. PYTHONPATH=build/release/python_package):

    python scripts/keras_coverage.py --markdown docs/keras_coverage.md

A name counts as present when `eagerflow.keras.<namespace>.<name>` exists and is not in LEFT_OUT;
each present name has tests of Keras' behaviour (python/tests/test_keras_*.py). Submodules
(keras.ops.nn, ...) are namespaces of their own, not names.
"""
import argparse
import importlib
import inspect
import json
import pathlib
import sys

NAMESPACES = ["layers", "losses", "metrics", "optimizers", "callbacks", "activations", "initializers", "regularizers",
              "constraints", "utils", "datasets", "ops", "ops.nn", "ops.image", "ops.linalg", "ops.numpy", "random",
              "backend", "config"]
NAMES = pathlib.Path(__file__).resolve().parent.parent / "docs" / "coverage" / "keras_3.15_names.json"

# Deliberately not built, and why (they count as missing even where a name exists).
LEFT_OUT = {
    "ops": {
    },
    "ops.image": {
        "scale_and_translate": "jax.image's kernel-based scale-and-translate resampling: not built yet",
    },
    "ops.linalg": {
    },
    "backend": {
        "set_epsilon": "eagerflow's C++ losses and metrics clip with Keras' default 1e-7, a constant; "
                       "a setter that they ignore would change results silently",
    },
    "layers": {
        "FlaxLayer": "wraps a Flax module: eagerflow runs no JAX",
        "JaxLayer": "wraps a JAX function: eagerflow runs no JAX",
        "TorchModuleWrapper": "wraps a torch.nn.Module: eagerflow runs no PyTorch",
    },
    "optimizers": {
        "MultiOptimizer": "Keras 3.15's newest wrapper (an optimizer per group of variables, through an "
                          "OptimizerMap): not built yet; compile takes one optimizer",
        "OptimizerMap": "as MultiOptimizer",
    },
    "callbacks": {
        "OrbaxCheckpoint": "writes checkpoints with Orbax, a JAX library eagerflow does not have",
    },
    "config": {
        "set_epsilon": "eagerflow's C++ losses and metrics clip with Keras' default 1e-7, a constant; "
                       "a setter that they ignore would change results silently",
        "set_image_data_format": "eagerflow's Keras layers take channels_last data only; channels_first could not "
                                 "take effect",
        "enable_unsafe_deserialization": "there is nothing unsafe to enable: eagerflow's model files never hold "
                                         "Python code (save_model refuses a Lambda layer), so load_model has no "
                                         "safe_mode restriction to lift",
        "enable_interactive_logging": "fit's progress bar is written by C++ (ef::write_progress) straight to "
                                      "stdout; routing it to Python's logging needs ef::set_progress_sink bound "
                                      "to Python",
        "disable_interactive_logging": "as enable_interactive_logging",
        "is_interactive_logging_enabled": "as enable_interactive_logging (a getter without its setter)",
        "enable_traceback_filtering": "eagerflow does not filter its frames from tracebacks, so the switch would "
                                      "do nothing",
        "disable_traceback_filtering": "as enable_traceback_filtering",
        "is_traceback_filtering_enabled": "as enable_traceback_filtering",
        "enable_flash_attention": "MultiHeadAttention always runs eagerflow's fused attention op; there is no "
                                  "unfused path to switch to",
        "disable_flash_attention": "as enable_flash_attention",
        "is_flash_attention_enabled": "as enable_flash_attention",
        "max_steps_per_epoch": "fit on arrays runs its steps in C++ without a step limit, so the cap could only "
                               "be honoured for Datasets",
        "set_max_steps_per_epoch": "as max_steps_per_epoch",
        "is_nnx_enabled": "Flax NNX, a JAX feature",
        "set_backend": "eagerflow is the one backend; Keras' others (JAX, PyTorch) are not here",
    },
}


def list_keras(out):
    import keras  # only here: the listing is made once, in a venv that has Keras
    names = {}
    for ns in NAMESPACES:
        obj = keras
        for part in ns.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            continue
        kinds = {}
        for n in sorted(n for n in dir(obj) if not n.startswith("_")):
            v = getattr(obj, n)
            kinds[n] = "module" if inspect.ismodule(v) else "class" if inspect.isclass(v) else \
                "function" if callable(v) else "value"
        names[ns] = kinds
    pathlib.Path(out).write_text(json.dumps(names, indent=0, sort_keys=True) + "\n")


def _target(ef, ns):
    obj = ef.keras
    for part in ns.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def coverage():
    ef = importlib.import_module("eagerflow")
    listing = json.loads(NAMES.read_text())
    rows = []
    for ns in NAMESPACES:
        if ns not in listing:
            continue
        target = _target(ef, ns)
        # keras.datasets holds only modules (mnist, cifar10, ...): they are its names
        wanted = sorted(n for n, kind in listing[ns].items() if kind != "module" or ns == "datasets")
        have = [n for n in wanted if target is not None and hasattr(target, n) and n not in LEFT_OUT.get(ns, {})]
        missing = [n for n in wanted if n not in have]
        rows.append((ns, len(have), len(wanted), missing))
    return rows


def markdown(rows):
    lines = ["# Keras API coverage", "",
             "Generated by `scripts/keras_coverage.py` from Keras 3.15's public names (classes, functions and",
             "values; submodules are namespaces of their own). A name counts when `ef.keras` (= `tf.keras`) has it",
             "with Keras' arguments and results; each has tests of Keras' behaviour. Regenerate after adding names.",
             "", "| namespace | present | of | share |", "| --- | ---: | ---: | ---: |"]
    for ns, have, total, _ in rows:
        lines.append(f"| `keras.{ns}` | {have} | {total} | {100 * have / max(total, 1):.0f}% |")
    lines += ["", "## Left out on purpose", ""]
    for ns, reasons in LEFT_OUT.items():
        for n, why in sorted(reasons.items()):
            lines.append(f"- `keras.{ns}.{n}`: {why}")
    lines += ["", "## Missing", ""]
    for ns, _, _, missing in rows:
        if missing:
            lines.append(f"- `keras.{ns}` ({len(missing)}): " + ", ".join(f"`{n}`" for n in missing))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list-keras", metavar="OUT", help="write Keras' public names (needs keras)")
    ap.add_argument("--markdown", metavar="OUT", help="write the report as Markdown")
    args = ap.parse_args()
    if args.list_keras:
        list_keras(args.list_keras)
        return 0
    rows = coverage()
    for ns, have, total, _ in rows:
        print(f"{ns:12} {have:4} / {total:4}")
    if args.markdown:
        pathlib.Path(args.markdown).write_text(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
