"""tf.config.optimizer: Grappler's experimental options and the JIT setting, mapped onto
eagerflow's graph passes (include/eagerflow/passes/passes.h, PassOptions).

TF's options and eagerflow's passes:
  function_optimization    -> inline_calls (calls of traced graphs become their nodes)
  disable_model_pruning    -> dead_code off (pruning drops what the outputs do not need)
  arithmetic_optimization  -> common_subexpr (Grappler's arithmetic optimizer dedups subexpressions)
  remapping                -> fuse_dense, fuse_conv, fuse_elementwise (op fusions)
  disable_meta_optimizer   -> every pass off
The other options (constant_folding, layout_optimizer, loop_optimization, ...) name rewrites
eagerflow does not have: they are accepted and read back, as TF reads back what was set.

pass_options() gives the PassOptions these settings ask for. The Python binding of the function
cache (python/src/function.cpp, FunctionCore) does not take PassOptions yet, so today every trace
runs all passes; a setting that asks to switch an existing pass off says so in a warning once.
"""
import logging as _logging

# TF's order in get_experimental_options (TensorFlow's context.get_optimizer_experimental_options).
_TOGGLES = ("layout_optimizer", "constant_folding", "shape_optimization", "remapping", "arithmetic_optimization",
            "dependency_optimization", "loop_optimization", "function_optimization", "debug_stripper")
_TOGGLES_2 = ("scoped_allocator_optimization", "pin_to_host_optimization", "implementation_selector",
              "auto_mixed_precision", "use_plugin_optimizers")
_TOGGLES_3 = ("auto_mixed_precision_onednn_bfloat16", "auto_mixed_precision_mkl")

_PASSES = {"function_optimization": ("inline_calls",), "arithmetic_optimization": ("common_subexpr",),
           "remapping": ("fuse_dense", "fuse_conv", "fuse_elementwise")}
_ALL_PASSES = ("inline_calls", "dead_code", "common_subexpr", "fuse_dense", "fuse_conv", "fuse_elementwise")

_options = {}  # what was set, as TF's context keeps it (updated, never cleared)
_jit = [False]
_warned = set()


def get_experimental_options():
    """The options set so far (toggles only once set), plus the two booleans TF always reports."""
    out = {}
    for group in (_TOGGLES, ("disable_model_pruning",), _TOGGLES_2, ("disable_meta_optimizer",), _TOGGLES_3):
        for name in group:
            if name in ("disable_model_pruning", "disable_meta_optimizer"):
                out[name] = bool(_options.get(name, False))
            elif _options.get(name) is not None:
                out[name] = bool(_options[name])
    if _options.get("min_graph_nodes"):
        out["min_graph_nodes"] = int(_options["min_graph_nodes"])
    return out


def set_experimental_options(options):
    """Merges `options` into the settings (names TF does not know are ignored, as TF does)."""
    _options.update(options)
    wanted = pass_options()
    off = [p for p in _ALL_PASSES if not wanted[p] and p not in _warned]
    if off:
        _warned.update(off)
        _logging.getLogger("tensorflow").warning(
            "tf.config.optimizer: eagerflow's passes %s are asked to be off, but this build runs every pass on "
            "each trace (the Python function cache does not take pass options yet)", ", ".join(off))


def pass_options():
    """eagerflow's PassOptions fields (pass name -> on) that the settings ask for."""
    if _options.get("disable_meta_optimizer"):
        return {p: False for p in _ALL_PASSES}
    out = {p: True for p in _ALL_PASSES}
    out["dead_code"] = not _options.get("disable_model_pruning", False)
    for option, passes in _PASSES.items():
        if _options.get(option) is False:
            for p in passes:
                out[p] = False
    return out


def set_jit(enabled):
    """XLA auto-clustering on ('autoclustering', or its deprecated alias True) or off (anything
    else). eagerflow has no XLA: its traced graphs are compiled by its own passes either way."""
    _jit[0] = enabled in (True, "autoclustering")


def get_jit():
    return "autoclustering" if _jit[0] else ""
