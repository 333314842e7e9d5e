"""tf.config.optimizer: Grappler's experimental options read back as TF reads them, mapped onto
eagerflow's passes; the JIT setting (values from TF 2.21)."""
import logging

import pytest

import eagerflow as tf
from eagerflow import _graph_options


@pytest.fixture(autouse=True)
def fresh_options():
    saved = dict(_graph_options._options), _graph_options._jit[0], set(_graph_options._warned)
    _graph_options._options.clear()
    yield
    _graph_options._options.clear()
    _graph_options._options.update(saved[0])
    _graph_options._jit[0] = saved[1]
    _graph_options._warned.clear()
    _graph_options._warned.update(saved[2])


def test_defaults_and_merging():
    o = tf.config.optimizer
    assert o.get_experimental_options() == {"disable_model_pruning": False, "disable_meta_optimizer": False}
    o.set_experimental_options({"constant_folding": False})
    assert o.get_experimental_options() == {"constant_folding": False, "disable_model_pruning": False,
                                            "disable_meta_optimizer": False}
    o.set_experimental_options({"constant_folding": True, "min_graph_nodes": 5, "disable_meta_optimizer": True})
    got = o.get_experimental_options()
    assert got == {"constant_folding": True, "disable_model_pruning": False, "disable_meta_optimizer": True,
                   "min_graph_nodes": 5}
    assert list(got) == ["constant_folding", "disable_model_pruning", "disable_meta_optimizer", "min_graph_nodes"]
    o.set_experimental_options({"bogus": True})  # unknown names: ignored, as TF
    o.set_experimental_options({})  # merges: nothing is cleared
    assert o.get_experimental_options() == got


def test_toggles_come_in_tfs_order():
    tf.config.optimizer.set_experimental_options({"debug_stripper": True, "layout_optimizer": False,
                                                  "auto_mixed_precision": False})
    assert list(tf.config.optimizer.get_experimental_options()) == [
        "layout_optimizer", "debug_stripper", "disable_model_pruning", "auto_mixed_precision", "disable_meta_optimizer"]


def test_mapping_onto_eagerflows_passes(caplog):
    assert all(_graph_options.pass_options().values())
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        tf.config.optimizer.set_experimental_options({"remapping": False, "constant_folding": False})
    wanted = _graph_options.pass_options()
    assert not wanted["fuse_dense"] and not wanted["fuse_conv"] and not wanted["fuse_elementwise"]
    assert wanted["common_subexpr"] and wanted["dead_code"] and wanted["inline_calls"]
    assert "fuse_dense" in caplog.text  # said once that this build cannot switch the pass off
    tf.config.optimizer.set_experimental_options({"disable_model_pruning": True, "function_optimization": False,
                                                  "arithmetic_optimization": False})
    wanted = _graph_options.pass_options()
    assert not wanted["dead_code"] and not wanted["inline_calls"] and not wanted["common_subexpr"]
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    assert not any(_graph_options.pass_options().values())


def test_options_without_a_pass_change_nothing_and_say_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        tf.config.optimizer.set_experimental_options({"constant_folding": False, "loop_optimization": False})
    assert caplog.text == ""
    assert all(_graph_options.pass_options().values())

    @tf.function
    def f(x):
        return tf.reduce_sum(x * 2.0)
    assert float(f(tf.constant([1.0, 2.0]))) == 6.0


def test_jit():
    o = tf.config.optimizer
    assert o.get_jit() == ""
    o.set_jit(True)
    assert o.get_jit() == "autoclustering"
    o.set_jit(False)
    assert o.get_jit() == ""
    o.set_jit("autoclustering")
    assert o.get_jit() == "autoclustering"
    o.set_jit("foo")  # anything else is off, as TF
    assert o.get_jit() == ""
