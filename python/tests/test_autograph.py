"""AutoGraph: Python control flow on tensors inside ef.function becomes ef.cond / ef.while_loop
(TF's documented semantics: autograph/g3doc/reference control_flow.md and limitations.md, each
construct in our own examples). Each converted function is checked against the same Python run
eagerly (plain Python on concrete tensors), with its trace count."""
import functools
import io
import contextlib

import numpy as np
import pytest

import eagerflow as tf


def _eager(fn, *args):
    """The unconverted Python function run eagerly: the reference for the traced one."""
    return fn(*args)


def _same(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def sign_of(x):
    if x > 0:
        r = 1.0
    elif x < 0:
        r = -1.0
    else:
        r = 0.0
    return r * tf.ones([])


def test_if_elif_else_on_a_tensor_is_one_trace_equal_to_eager():
    f = tf.function(sign_of)
    for v in (3.0, -2.0, 0.0):
        _same(f(tf.constant(v)), _eager(sign_of, tf.constant(v)))
    assert f.experimental_get_tracing_count() == 1


def test_both_branches_are_traced_and_python_print_runs_at_trace_time_only():
    out = io.StringIO()

    @tf.function
    def f(x):
        print("before")
        if x > 0:
            print("then")
            y = x + 1
        else:
            print("else")
            y = x - 1
        print("after")
        return y

    with contextlib.redirect_stdout(out):
        a = f(tf.constant(1))
        b = f(tf.constant(-1))
    assert out.getvalue().split() == ["before", "then", "else", "after"]
    assert (int(a), int(b)) == (2, -2)


def test_a_python_condition_stays_python_and_keys_the_trace():
    out = io.StringIO()

    @tf.function
    def f(x, training):
        if training:
            print("training branch")
            x = x * 2.0
        return x

    with contextlib.redirect_stdout(out):
        assert float(f(tf.constant(3.0), True)) == 6.0
        assert float(f(tf.constant(3.0), False)) == 3.0
        assert float(f(tf.constant(5.0), True)) == 10.0
    assert out.getvalue().count("training branch") == 1  # only traced where the Python value is True
    assert f.experimental_get_tracing_count() == 2


def test_a_python_number_assigned_in_a_tensor_if_becomes_a_tensor():
    @tf.function
    def f(x):
        i = 0
        if x > 0:
            i = 1
        return i

    assert int(f(tf.constant(5))) == 1 and int(f(tf.constant(-5))) == 0


def collatz_steps(x):
    n = 0
    while x > 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        n += 1
    return n


def test_while_with_a_tensor_condition():
    f = tf.function(collatz_steps)
    for v in (1, 6, 27):
        assert int(f(tf.constant(v))) == _eager(collatz_steps, tf.constant(v)) == collatz_steps(v)
    assert f.experimental_get_tracing_count() == 1


def triangle(n):
    s = tf.constant(0)
    for i in tf.range(n):
        s += i
    return s


def test_for_over_tf_range_with_a_symbolic_limit():
    f = tf.function(triangle)
    for n in (0, 1, 7):
        assert int(f(tf.constant(n))) == n * (n - 1) // 2
    assert f.experimental_get_tracing_count() == 1


def test_for_over_tf_range_with_start_and_negative_delta():
    @tf.function
    def f(a, b):
        out = tf.constant(0.0)
        for v in tf.range(a, b, -0.5):
            out = out + v
        return out

    _same(f(tf.constant(3.0), tf.constant(0.0)), np.arange(3.0, 0.0, -0.5).sum())


def test_for_over_a_tensor_iterates_its_first_axis():
    def col_sums(m):
        acc = tf.zeros([3])
        for row in m:
            acc += row
        return acc

    f = tf.function(col_sums)
    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    _same(f(tf.constant(m)), m.sum(0))
    _same(f(tf.constant(m)), _eager(col_sums, tf.constant(m)))
    spec = tf.function(col_sums, input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    _same(spec(tf.constant(m[:2])), m[:2].sum(0))  # a dynamic first axis


def odd_sum_until(n, stop):
    s = tf.constant(0)
    for i in tf.range(n):
        if i % 2 == 0:
            continue
        if i > stop:
            break
        s += i
    return s


def test_break_and_continue_in_a_tensor_for():
    f = tf.function(odd_sum_until)
    for n, stop in ((20, 7), (5, 100), (0, 3)):
        expect = sum(i for i in range(n) if i % 2 and i <= stop)
        assert int(f(tf.constant(n), tf.constant(stop))) == expect == int(_eager(odd_sum_until, tf.constant(n), tf.constant(stop)))


def test_break_in_a_tensor_while():
    @tf.function
    def f(x):
        i = tf.constant(0)
        while i < 100:
            if i * i >= x:
                break
            i += 1
        return i

    assert int(f(tf.constant(50))) == 8


def abs_early(x):
    if x < 0:
        return -x
    return x


def first_square_above(x):
    for i in tf.range(100):
        if i * i > x:
            return i
    return -1


def test_early_return_in_an_if_and_in_a_loop():
    f = tf.function(abs_early)
    _same(f(tf.constant(-2.5)), 2.5)
    _same(f(tf.constant(4.0)), 4.0)
    g = tf.function(first_square_above)
    assert int(g(tf.constant(10))) == 4 and int(g(tf.constant(50000))) == -1
    assert g.experimental_get_tracing_count() == 1


def test_and_or_not_and_conditional_expressions_on_tensors():
    @tf.function
    def f(x, y):
        if x > 0 and y > 0:
            return 1
        elif x > 0 or not y > 0:
            return 2
        return 3

    cases = {(1, 1): 1, (1, -1): 2, (-1, -1): 2, (-1, 1): 3}
    for (a, b), want in cases.items():
        assert int(f(tf.constant(a), tf.constant(b))) == want

    @tf.function
    def g(x):
        return x if x > 0 else -x * 10.0

    _same(g(tf.constant(-2.0)), 20.0)
    _same(g(tf.constant(2.0)), 2.0)


def halve_if_big(v, limit=1.0):
    if v > limit:
        v = v / 2
    return v


class Stepper:
    def __init__(self, k):
        self.k = k

    def step(self, x):
        if x < 0:
            x = x * self.k
        return x

    @tf.function
    def run(self, x):
        n = 0.0
        while x > 1.0:
            x = halve_if_big(x)
            n += 1.0
        return self.step(x - 2.0), n


def test_called_functions_and_methods_are_converted_recursively():
    s = Stepper(3.0)
    y, n = s.run(tf.constant(10.0))
    _same(y, (0.625 - 2.0) * 3.0)
    _same(n, 4.0)


def test_nested_functions_closures_defaults_and_decorators():
    scale = tf.constant(3.0)

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper

    @tf.function
    @deco
    def f(x, offset=1.0):
        def inner(v):
            if v > 0:
                v = v * scale
            return v
        return inner(x) + offset

    _same(f(tf.constant(2.0)), 7.0)
    _same(f(tf.constant(-2.0), offset=0.0), -2.0)


def test_a_keras_layers_call_is_converted():
    class Abs(tf.keras.layers.Layer):
        def call(self, x):
            if tf.reduce_sum(x) > 0:
                return x
            return -x

    layer = Abs()
    f = tf.function(lambda x: layer(x))
    _same(f(tf.constant([-1.0, -2.0])), [1.0, 2.0])
    _same(f(tf.constant([1.0, 2.0])), [1.0, 2.0])


def test_loop_carried_structures_and_variables():
    v = tf.Variable(0.0)

    @tf.function
    def f(x):
        d = {"a": x, "b": x * 2.0}
        a, b = x, x
        for i in tf.range(3):
            d = {"a": d["a"] + 1.0, "b": d["b"] * 2.0}
            a, b = b, a + b
            v.assign_add(1.0)
        return d, a, b

    d, a, b = f(tf.constant(1.0))
    _same(d["a"], 4.0)
    _same(d["b"], 16.0)
    _same(a, 3.0)
    _same(b, 5.0)
    _same(v.numpy(), 3.0)


def test_a_value_defined_in_the_loop_and_used_after_it():
    @tf.function
    def f(n):
        for i in tf.range(n):
            last = i * 10
        return last

    assert int(f(tf.constant(4))) == 30


def test_a_dataset_loop_in_a_function():
    @tf.function
    def f(ds):
        s = tf.constant(0, dtype=tf.int64)
        for x in ds:
            if x > 2:
                break
            s += x
        return s

    assert int(f(tf.data.Dataset.range(6))) == 3


def test_a_name_defined_in_one_branch_only_is_an_error_where_it_is_used():
    @tf.function
    def used(x):
        if x > 0:
            y = x
        return y

    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        used(tf.constant(1.0))

    @tf.function
    def unused(x):
        if x > 0:
            y = x * 2  # noqa: F841 - local to the branch: allowed (TF's rule)
        return x

    _same(unused(tf.constant(1.0)), 1.0)


def test_a_return_in_one_branch_only_is_an_error():
    @tf.function
    def f(x):
        if x > 0:
            return x

    with pytest.raises(ValueError, match="else branch must also have a return statement"):
        f(tf.constant(1.0))


def test_branches_must_agree_in_dtype_and_structure():
    @tf.function
    def dtypes(x):
        if x > 0:
            y = tf.constant(1)
        else:
            y = tf.constant(1.0)
        return y

    with pytest.raises(TypeError, match=r"'y' has dtype int32\[\] in the if-branch and float32\[\]"):
        dtypes(tf.constant(1.0))

    @tf.function
    def none_else(x):
        if x > 0:
            y = x
        else:
            y = None
        return y

    with pytest.raises(ValueError, match="'y' is None at the end of the else branch"):
        none_else(tf.constant(1.0))


def test_loop_variables_must_keep_dtype_and_shape():
    @tf.function
    def dtype_changes(x):
        s = tf.constant(0)
        while s < x:
            s = tf.cast(s, tf.float32) + 1.0
        return s

    with pytest.raises(TypeError, match=r"'s' has dtype int32 before the loop, but dtype float32 after one iteration"):
        dtype_changes(tf.constant(3))

    @tf.function
    def shape_changes(x):
        s = tf.constant(0)
        while s < x:
            s = tf.stack([s, s])
        return s

    with pytest.raises(ValueError, match=r"'s' has shape \(\) before the loop, but shape \(2,\) after one iteration"):
        shape_changes(tf.constant(3))


def test_a_list_growing_in_a_tensor_loop_names_what_to_use():
    @tf.function
    def f(n):
        out = []
        for i in tf.range(n):
            out.append(i)
        return out

    with pytest.raises(ValueError, match="Python list cannot grow.*TensorArray"):
        f(tf.constant(3))

    @tf.function
    def python_loop(x):
        out = []
        for i in range(3):  # a Python range: unrolled, the list grows as in Python
            out.append(x * i)
        return tf.stack(out)

    _same(python_loop(tf.constant(2.0)), [0.0, 2.0, 4.0])


def test_a_python_while_whose_condition_turns_into_a_tensor_is_refused():
    @tf.function
    def f(x):
        while True:
            if x == 0:
                break
            x -= 1
        return x

    with pytest.raises(NotImplementedError, match="cannot switch from Python to ef.while_loop"):
        f(tf.constant(3))


def test_autograph_false_keeps_the_strict_error():
    f = tf.function(abs_early, autograph=False)
    with pytest.raises(tf.errors.FailedPreconditionError, match=r"ef\.cond"):
        f(tf.constant(-1.0))


def test_conversion_is_cached_and_adds_no_trace():
    from eagerflow.autograph import _api

    assert tf.autograph.to_graph(triangle) is tf.autograph.to_graph(triangle)
    f = tf.function(triangle)
    f(tf.constant(3))
    f(tf.constant(4))
    assert f.experimental_get_tracing_count() == 1
    assert [t.reason for t in f.traces] == ["first call"]
    assert _api.convert(triangle) is tf.autograph.to_graph(triangle)


def test_to_graph_runs_eagerly_as_python_and_to_code_shows_the_conversion():
    g = tf.autograph.to_graph(collatz_steps)
    assert int(g(tf.constant(6))) == collatz_steps(6)
    code = tf.autograph.to_code(collatz_steps)
    assert "ag__.while_stmt" in code and "ag__.if_stmt" in code and "def collatz_steps" in code


def test_do_not_convert_runs_the_function_as_written():
    @tf.autograph.experimental.do_not_convert
    def raw(x):
        if x > 0:
            return x
        return -x

    f = tf.function(lambda x: raw(x))
    with pytest.raises(tf.errors.FailedPreconditionError):
        f(tf.constant(1.0))
    _same(raw(tf.constant(-2.0)), 2.0)  # eagerly it is plain Python


def test_verbose_log_says_what_was_converted_and_why(capsys):
    def f(x, flag):
        if flag:
            x = x + 1
        if x > 0:
            x = x * 2
        return x

    tf.autograph.set_verbosity(2)
    try:
        tf.function(f)(tf.constant(1), True)
    finally:
        tf.autograph.set_verbosity(0)
    err = capsys.readouterr().err
    assert "`if x > 0`: converted to ef.cond (x > 0 is a tensor bool[])" in err
    assert "`if flag`: ran as Python (flag is a Python bool)" in err
    assert "Converted " in err and ".f" in err


class _Running:
    """A value made of tensors that joins loop variables through AutoGraph's composite protocol
    (what tf.TensorArray-like classes implement)."""

    def __init__(self, total, count):
        self.total, self.count = total, count

    def add(self, v):
        return _Running(self.total + v, self.count + 1)

    def _ag_flatten(self):
        return "running", [self.total, self.count]

    @classmethod
    def _ag_unflatten(cls, key, tensors):
        return cls(*tensors)


def test_a_composite_value_is_a_loop_variable():
    @tf.function
    def mean_of(xs):
        acc = _Running(tf.constant(0.0), tf.constant(0))
        for x in xs:
            acc = acc.add(x)
        return acc.total / tf.cast(acc.count, tf.float32)

    _same(mean_of(tf.constant([1.0, 2.0, 6.0])), 3.0)


def test_recursion_through_the_functions_own_name():
    @tf.function
    def countdown(n):
        if n > 0:
            return countdown(n - 1)
        return n * 0 + 7

    assert int(countdown(3)) == 7  # a Python int: the recursion unrolls at trace time


def test_methods_keep_super_private_names_and_their_class():
    class Base:
        def f(self, x):
            return x + 1.0

    class Child(Base):
        def __init__(self):
            self.__k = 2.0

        def f(self, x):
            if x > 0:
                x = super().f(x) * self.__k
            return x, isinstance(self, Child)

    c = Child()
    g = tf.function(c.f)
    y, is_child = g(tf.constant(3.0))
    _same(y, 8.0)
    assert is_child is True
    _same(g(tf.constant(-3.0))[0], -3.0)


def test_python_range_of_a_tensor_loops_as_tf_range():
    @tf.function
    def f(n):
        s = tf.constant(0)
        for i in range(n):
            s += i * i
        return s

    assert int(f(tf.constant(4))) == 14
    assert int(f(tf.constant(0))) == 0
    assert f.experimental_get_tracing_count() == 1


class _Box:
    pass


def test_attributes_assigned_in_a_tensor_if_flow_through_the_cond():
    @tf.function
    def f(x):
        box = _Box()
        box.v = x
        if x > 0:
            box.v = x * 10.0
            made = _Box()  # made inside the branch: local to it
            made.w = x
        return box.v

    _same(f(tf.constant(2.0)), 20.0)
    _same(f(tf.constant(-2.0)), -2.0)


def test_tf_range_keyword_arguments():
    @tf.function
    def f(n):
        s = tf.constant(0.0)
        for v in tf.range(2, limit=n, delta=3, dtype=tf.float32):
            s += v
        for v in tf.range(n, delta=4):
            s += tf.cast(v, tf.float32)
        return s

    assert float(f(tf.constant(12))) == float(sum(range(2, 12, 3)) + sum(range(0, 12, 4)))


_calls = 0


def test_nonlocal_and_global_state_are_the_users():
    traced = 0

    @tf.function
    def f(x):
        nonlocal traced
        global _calls
        traced += 1
        if x > 0:
            _calls += 1  # Python state assigned in a tensor if: runs once per branch trace
            x = x + 1.0
        return x

    _same(f(tf.constant(1.0)), 2.0)
    _same(f(tf.constant(-1.0)), -1.0)
    assert traced == 1  # the converted function writes the original closure cell
    global _calls
    # a Python value assigned in a tensor if becomes the cond's (symbolic) output, as in TF
    assert isinstance(_calls, tf.Tensor) and _calls.is_symbolic
    _calls = 0
