"""What tf.function shows of its traces, as TF 2.21 shows it: pretty_printed_concrete_signatures,
ConcreteFunction's structured signature and outputs, its call (keywords, Python arguments, the
traced structure), graph.as_graph_def(), inference_fn, input_signature's TypeError, the
TraceType protocol, and py_function as a decorator."""
import numpy as np
import pytest

import eagerflow as tf
from eagerflow import _graph_def

SCALAR_I32 = "TensorSpec(shape=(), dtype=tf.int32, name=None)"


def test_pretty_printed_concrete_signatures_lists_each_trace():
    @tf.function
    def double(a):
        return a + a
    double(tf.constant(1))
    double(tf.constant(1.5))
    text = double.pretty_printed_concrete_signatures()
    one = ("Input Parameters:\n  a (POSITIONAL_OR_KEYWORD): {t}\nOutput Type:\n  {t}\nCaptures:\n  None")
    assert text == one.format(t=SCALAR_I32) + "\n\n" + one.format(t=SCALAR_I32.replace("int32", "float32"))


def test_python_arguments_are_literals_and_keyword_only_is_marked():
    @tf.function
    def f(a, b, c=None, *, k=3):
        return {"r": a * b, "k": [a, 3], "t": (a,)}
    cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32), 2.0)
    spec = "TensorSpec(shape=(None,), dtype=tf.float32, name=None)"
    assert cf.pretty_printed_signature() == (
        "Input Parameters:\n"
        f"  a (POSITIONAL_OR_KEYWORD): {spec}\n"
        "  b (POSITIONAL_OR_KEYWORD): Literal[2.0]\n"
        "  c (POSITIONAL_OR_KEYWORD): Literal[None]\n"
        "  k (KEYWORD_ONLY): Literal[3]\n"
        "Output Type:\n"
        f"  Dict[['r', {spec}], ['k', List[{spec}, Literal[3]]], ['t', Tuple[{spec}]]]\n"
        "Captures:\n  None")
    assert cf.pretty_printed_signature(verbose=False).startswith(f"(a: {spec}, b: Literal[2.0], c: Literal[None], *, k:")
    args, kwargs = cf.structured_input_signature
    assert args[0].shape == (None,) and args[0].dtype == tf.float32 and args[0].name == "a"
    assert args[1:] == (2.0, None) and kwargs == {"k": 3}
    assert set(cf.structured_outputs) == {"r", "k", "t"}
    assert str(cf.function_type) == cf.pretty_printed_signature()
    assert str(cf).startswith("ConcreteFunction Input Parameters:")


def test_captured_variables_are_listed():
    v = tf.Variable([1.0, 2.0], name="captured_v")

    @tf.function
    def f(x):
        return x + v
    text = f.get_concrete_function(tf.constant([0.0, 0.0])).pretty_printed_signature()
    assert "Captures:\n  None" not in text and "captured_v" in text


def test_a_concrete_function_is_called_as_the_function():
    @tf.function
    def f(a, b):
        return {"sum": a + b, "pair": (a, b * 2)}
    cf = f.get_concrete_function(tf.TensorSpec([2], tf.float32), tf.TensorSpec([2], tf.float32))
    x, y = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    for out in (cf(x, y), cf(a=x, b=y), cf(x, b=y)):
        assert list(out) == ["sum", "pair"]
        np.testing.assert_allclose(out["sum"].numpy(), [4.0, 6.0])
        np.testing.assert_allclose(out["pair"][1].numpy(), [6.0, 8.0])
        assert isinstance(out["pair"], tuple)
    with pytest.raises(TypeError):
        cf(x, y, c=x)
    with pytest.raises(TypeError):
        cf(x)


def test_python_arguments_are_fixed_and_may_be_left_out():
    @tf.function
    def pow_(a, b):
        return a ** b
    square = pow_.get_concrete_function(a=tf.TensorSpec([], tf.float32), b=2)
    assert float(square(tf.constant(10.0))) == 100.0  # one result: a tensor
    assert float(square(tf.constant(3.0), b=2)) == 9.0
    with pytest.raises(TypeError):
        square(tf.constant(10.0), b=3)  # b was traced as 2


def test_a_concrete_function_outlives_its_function():
    class Model:
        w = tf.constant(2.0)

    cf = tf.function(lambda m, x: m.w * x).get_concrete_function(Model(), tf.constant(1.0))
    assert float(cf(tf.constant(4.0))) == 8.0  # TF's flat call: the tensors alone


def test_inference_fn_takes_the_flat_tensors():
    @tf.function
    def d(a):
        return {"x": a + a, "y": a}
    cf = d.get_concrete_function(tf.constant("a"))
    out = cf.inference_fn(tf.constant("b"))
    assert out["x"].numpy() == b"bb" and out["y"].numpy() == b"b"
    assert [t.numpy() for t in cf.inference_fn.call_flat(tf.constant("c"))] == [b"cc", b"c"]


def test_as_graph_def_nodes():
    @tf.function
    def f(a):
        return a * 2 + 1
    gd = f.get_concrete_function(tf.constant(1)).graph.as_graph_def()
    assert isinstance(gd, _graph_def.GraphDef)
    nodes = {n.name: n for n in gd.node}
    assert nodes["a"].op == "Placeholder" and nodes["a"].input == []
    assert nodes["a"].attr["dtype"].type == 3  # DT_INT32
    ops = [n.op for n in gd.node]
    assert "mul" in ops and "add" in ops and ops[-1] == "Identity"  # the graph as traced, before fusion
    mul = next(n for n in gd.node if n.op == "mul")
    assert mul.input[0] == "a" and nodes[mul.input[1]].op == "Const"
    assert "_output_shapes" not in mul.attr
    assert "_output_shapes" in f.get_concrete_function(tf.constant(1)).graph.as_graph_def(add_shapes=True).node[1].attr


def test_graph_def_text_format_and_bytes_round_trip():
    @tf.function
    def f(a):
        return a + a
    gd = f.get_concrete_function(tf.constant("s")).graph.as_graph_def()
    text = str(gd)
    assert text.startswith('node {\n  name: "a"\n  op: "Placeholder"\n')
    assert "    value {\n      type: DT_STRING\n    }" in text
    assert text.endswith("versions {\n  producer: 1\n}\n")
    again = _graph_def.GraphDef.FromString(gd.SerializeToString())
    assert str(again) == text
    assert tf.summary.graph(f.get_concrete_function(tf.constant("s"))) is not None


def test_graph_keeps_its_text_and_name():
    f = tf.function(lambda x: tf.nn.relu(x), name="relu_fn")
    g = f.get_concrete_function(tf.TensorSpec([3], tf.float32)).graph
    assert "f32[3]" in g and g.name == "relu_fn"
    assert g.as_graph_def().node[0].name == "x"  # the parameter's name


def test_input_signature_mismatch_is_a_type_error():
    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
    def g(x):
        return x
    assert g(tf.constant([1, 2, 3])).numpy().tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match=r"Can not cast TensorSpec\(shape=\(2, 2\), dtype=tf.int32"):
        g(tf.constant([[1, 2], [3, 4]]))
    with pytest.raises(TypeError, match="dtype=tf.float32"):
        g(tf.constant([1.0]))


class _FruitType(tf.types.experimental.TraceType):
    def __init__(self, fruit):
        self.kind, self.fruit = type(fruit), fruit

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def placeholder_value(self, placeholder_context=None):
        return self.fruit

    def __eq__(self, other):
        return type(other) is _FruitType and self.kind is other.kind

    def __hash__(self):
        return hash(self.kind)


class _Fruit:
    def __tf_tracing_type__(self, context):
        return _FruitType(self)


class _Apple(_Fruit):
    flavor = tf.constant([1, 2])


class _Mango(_Fruit):
    flavor = tf.constant([3, 4])


def test_trace_type_protocol_keys_traces_by_the_trace_type():
    @tf.function
    def mix(a, b):
        return a.flavor + b.flavor
    assert mix(_Apple(), _Mango()).numpy().tolist() == [4, 6]
    assert mix(_Apple(), _Mango()).numpy().tolist() == [4, 6]
    assert mix.experimental_get_tracing_count() == 1  # new objects, equal TraceTypes: one trace
    mix(_Mango(), _Mango())
    assert mix.experimental_get_tracing_count() == 2
    assert isinstance(_Apple(), tf.types.experimental.SupportsTracingProtocol)


def test_objects_without_the_protocol_retrace_per_object():
    class Plain:
        flavor = tf.constant([1, 2])

    @tf.function
    def get(a):
        return a.flavor
    get(Plain())
    get(Plain())
    assert get.experimental_get_tracing_count() == 2


def test_py_function_and_numpy_function_as_decorators():
    @tf.py_function(Tout=tf.float32)
    def mul(x, y):
        return x * y

    @tf.numpy_function(Tout=tf.float32)
    def twice(x):
        return x * 2

    assert float(mul(tf.constant(2.0), 3.0)) == 6.0
    assert float(twice(tf.constant(2.0))) == 4.0

    @tf.function
    def traced(x):
        return mul(x, 2.0) + twice(x)
    assert float(traced(tf.constant(3.0))) == 12.0


def test_a_dropped_concrete_function_is_let_go():
    from eagerflow import _function_signatures as signatures
    kept = tf.function(lambda x: x + 1, name="kept_fn").get_concrete_function(tf.constant(1.0))
    dropped = tf.function(lambda x: x + 2, name="dropped_fn").get_concrete_function(tf.constant(1.0))
    assert any(entry[0].name == "dropped_fn" for entry in signatures._pinned.values())
    del dropped
    tf.function(lambda x: x + 3).get_concrete_function(tf.constant(1.0))  # a later pin sweeps
    assert not any(entry[0].name == "dropped_fn" for entry in signatures._pinned.values())
    assert float(kept(tf.constant(1.0))) == 2.0 and "Literal" not in kept.pretty_printed_signature()


def test_a_graph_without_nodes():
    @tf.function
    def relu(x):
        return tf.maximum(0.0, x)
    relu([1, -1])  # a Python list: computed while tracing, the graph returns a constant
    cf = relu.concrete_functions[0]
    assert "List[Literal[1], Literal[-1]]" in cf.pretty_printed_signature()
    assert "Captures:\n  None" in cf.pretty_printed_signature()
    assert [n.op for n in cf.graph.as_graph_def().node] == ["Const", "Identity"]
