"""tf.Module, tf.name_scope and tf.Variable's scoped names, as TF's (issue 32)."""
import collections

import numpy as np
import pytest

import eagerflow as tf


class Affine(tf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(np.ones((n_in, n_out), np.float32), name="w")
        self.b = tf.Variable(np.zeros(n_out, np.float32), name="b", trainable=False)

    @tf.Module.with_name_scope
    def __call__(self, x):
        self.last_scope = tf.get_current_name_scope()
        return tf.matmul(x, self.w) + self.b


class Stack(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.z = Affine(2, 3, name="z1")
        self.a = [Affine(3, 3), {"k": Affine(3, 1), "c": tf.Variable(5.0, name="c")}]
        self.t = (tf.Variable(2.0, name="t"), self.z)


def test_variable_names_follow_scopes():
    assert tf.Variable(1.0).name == "Variable:0"
    assert tf.Variable(1.0, name="x").name == "x:0"
    with tf.name_scope("outer") as outer:
        assert outer == "outer/"
        with tf.name_scope("inner") as inner:
            assert inner == "outer/inner/"
            assert tf.Variable(1.0, name="v").name == "outer/inner/v:0"
            assert tf.get_current_name_scope() == "outer/inner"
        with tf.name_scope("/abs/") as s:  # a trailing '/' makes the scope absolute
            assert s == "/abs/"
            assert tf.Variable(1.0, name="q").name == "/abs/q:0"
        with tf.name_scope(""):  # '' goes back to the root
            assert tf.Variable(1.0, name="q").name == "q:0"
    assert tf.get_current_name_scope() == ""
    assert repr(tf.Variable(1.5, name="r")) == "<tf.Variable 'r:0' shape=() dtype=float32, numpy=1.5>"


def test_name_scope_refuses_non_strings():
    for bad in (3, None):
        with pytest.raises(ValueError, match="name for name_scope must be a string"):
            tf.name_scope(bad)


def test_variable_takes_tf_arguments():
    v = tf.Variable(lambda: tf.ones([2]), name="lazy")  # a callable initial value
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0])
    assert v.trainable and v.constraint is None
    assert v.synchronization == tf.VariableSynchronization.AUTO and v.aggregation == tf.VariableAggregation.NONE
    assert not tf.Variable(1.0, synchronization=tf.VariableSynchronization.ON_READ).trainable
    assert tf.Variable([1, 2], dtype=tf.float32).dtype == tf.float32
    assert tf.Variable([1.0, 2.0], shape=[2]).shape == (2,)
    with pytest.raises(ValueError, match="must be specified"):
        tf.Variable()
    with pytest.raises(ValueError, match="constraint"):
        tf.Variable(1.0, constraint=3)
    with pytest.raises(ValueError, match="not compatible"):
        tf.Variable([1.0, 2.0], shape=[3])
    with pytest.raises(NotImplementedError, match="unknown dimensions"):
        tf.Variable([1.0, 2.0], shape=[None])


def test_variables_work_as_before():
    v = tf.Variable(np.float32(3.0), name="s")
    with tf.GradientTape() as tape:
        y = v * v
    assert float(tape.gradient(y, v)) == 6.0
    v.assign_add(1.0)
    assert float(tf.function(lambda: v * 2.0)()) == 8.0
    assert isinstance(v, tf.Variable) and tf.is_tensor(v)


def test_module_name_and_scope():
    m = Stack(name="my_model")
    assert m.name == "my_model" and m.name_scope.name == "my_model/"
    with m.name_scope:
        assert tf.Variable(1.0, name="x").name == "my_model/x:0"
    assert tf.Module().name == "module"
    assert Affine(1, 1).name == "affine"
    with tf.name_scope("outer"):
        assert tf.Module(name="inner").name_scope.name == "outer/inner/"
    for bad in ("a b", "1abc", "", "a/b"):
        with pytest.raises(ValueError, match="is not a valid module name"):
            tf.Module(name=bad)


def test_with_name_scope_names_variables_made_in_the_method():
    a = Affine(2, 2, name="layer")
    a(tf.ones([1, 2]))
    assert a.last_scope == "layer"

    class Lazy(tf.Module):
        @tf.Module.with_name_scope
        def make(self):
            return tf.Variable(1.0, name="v")
    assert Lazy().make().name == "lazy/v:0"


def test_variables_and_submodules_in_tf_order():
    m = Stack(name="my_model")
    # Attributes in sorted order; each attribute's own leaves first (nest order), then the
    # submodules found, depth first; every object once.
    assert [v.name for v in m.variables] == ["c:0", "t:0", "b:0", "w:0", "b:0", "w:0", "b:0", "w:0"]
    assert [v.name for v in m.trainable_variables] == ["c:0", "t:0", "w:0", "w:0", "w:0"]
    assert [v.name for v in m.non_trainable_variables] == ["b:0", "b:0", "b:0"]
    assert [s.name for s in m.submodules] == ["affine", "affine", "z1"]
    assert isinstance(m.variables, tuple) and isinstance(m.submodules, tuple)


def test_flatten_with_paths_and_predicate():
    m = tf.Module()
    m.l = [tf.Variable(1.0)]
    m.d = {"b": tf.Variable(2.0), "a": tf.Variable(3.0, name="aa")}
    found = list(m._flatten(predicate=lambda x: isinstance(x, tf.Variable), with_path=True))
    assert [p for p, _ in found] == [("d", "a"), ("d", "b"), ("l", 0)]
    assert [float(v) for _, v in found] == [3.0, 2.0, 1.0]
    assert list(m._flatten(predicate=lambda x: isinstance(x, tf.Variable), recursive=False))[0] is m.d["a"]


def test_shared_and_cyclic_modules_are_walked_once():
    a, b = tf.Module(name="a"), tf.Module(name="b")
    a.v = tf.Variable(1.0)
    a.child, b.child = b, a  # a cycle
    b.w = tf.Variable(2.0)
    assert [float(v) for v in a.variables] == [1.0, 2.0]
    assert [s.name for s in a.submodules] == ["b"]


def test_namedtuple_attributes_are_walked():
    Pair = collections.namedtuple("Pair", ["second", "first"])
    m = tf.Module()
    m.p = Pair(tf.Variable(2.0), tf.Variable(1.0))
    assert [float(v) for v in m.variables] == [2.0, 1.0]  # field order, as nest


def test_module_method_under_function_traces_once():
    m = Affine(2, 2)
    f = tf.function(m.__call__)
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_allclose(f(x).numpy(), m(x).numpy())
    f(x)
    assert f.experimental_get_tracing_count() == 1


def test_keras_layers_are_modules():
    d = tf.keras.layers.Dense(2)
    d(tf.zeros([1, 3]))
    assert isinstance(d, tf.Module)
    assert d.submodules == ()
    assert d.name_scope.name == d.name + "/"
    assert [tuple(v.shape) for v in d.variables] == [(3, 2), (2,)]

    class Block(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.one = tf.keras.layers.Dense(3)
            self.two = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.two(self.one(x))
    b = Block()
    b(tf.zeros([1, 2]))
    assert isinstance(b, tf.Module)
    assert [s.name for s in b.submodules] == [b.one.name, b.two.name]
    # A tf.Module holding a Keras model finds the model's weights through it.
    holder = tf.Module()
    holder.model = b
    assert len(holder.variables) == 4 and b in holder.submodules


def test_variable_creator_scope():
    order = []

    def outer(next_creator, **kwargs):
        order.append(("outer", sorted(kwargs)))
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        order.append("inner")
        kwargs["name"] = "renamed"
        return next_creator(**kwargs)
    with tf.variable_creator_scope(outer):
        with tf.variable_creator_scope(inner):
            v = tf.Variable(1.0, name="x")
    assert order[0] == "inner" and order[1][0] == "outer"  # innermost first
    assert order[1][1] == sorted(["initial_value", "trainable", "validate_shape", "caching_device", "name",
                                  "variable_def", "dtype", "import_scope", "constraint", "synchronization",
                                  "aggregation", "shape", "experimental_enable_variable_lifting"])
    assert v.name == "renamed:0" and float(v) == 1.0 and isinstance(v, tf.Variable)
    cached = tf.Variable(7.0, name="cached")
    with tf.variable_creator_scope(lambda next_creator, **kwargs: cached):
        assert tf.Variable(2.0) is cached
    assert float(cached) == 7.0 and cached.name == "cached:0"  # not made again
    assert tf.Variable(3.0, name="after").name == "after:0"  # the scope is gone
