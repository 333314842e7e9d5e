"""tf.saved_model.save / load of a tf.Module (issue 32): the attribute tree, every tf.function's
traces, signatures, gradients through loaded functions, TF's errors, and a save killed midway."""
import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import eagerflow as tf

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))


class Dense(tf.Module):
    def __init__(self, n_in, n_out, seed, name=None):
        super().__init__(name=name)
        rng = np.random.default_rng(seed)
        self.w = tf.Variable(rng.normal(size=(n_in, n_out)).astype(np.float32), name="w")
        self.b = tf.Variable(rng.normal(size=n_out).astype(np.float32), name="b", trainable=False)

    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


Pair = collections.namedtuple("Pair", ["low", "high"])


class Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.first = Dense(3, 4, seed=1)
        self.blocks = [Dense(4, 4, seed=2), Dense(4, 2, seed=3)]
        self.extra = {"scale": tf.Variable(1.5, name="scale")}
        self.counter = tf.Variable(0, name="counter", trainable=False)

    @tf.function
    def __call__(self, x):
        h = self.first(x)
        for block in self.blocks:
            h = block(h)
        return h * self.extra["scale"]

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def features(self, x):
        return {"hidden": self.first(x), "total": tf.reduce_sum(x, axis=1)}

    @tf.function
    def mix(self, x, y, power=2, offset=0.5):
        return Pair(low=x * y + offset, high=x ** power), power

    @tf.function
    def step(self, x):
        self.counter.assign_add(1)
        return x + tf.cast(self.counter, tf.float32)


def _net_with_traces():
    net = Net()
    net(np.ones((2, 3), np.float32))
    net(tf.ones([5, 3]))
    net.mix(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]))
    net.mix(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]), power=3)
    net.step(tf.constant(1.0))
    return net


def _numpy_net(net, x):
    h = np.maximum(x @ net.first.w.numpy() + net.first.b.numpy(), 0)
    for block in net.blocks:
        h = np.maximum(h @ block.w.numpy() + block.b.numpy(), 0)
    return h * net.extra["scale"].numpy()


def test_round_trip_keeps_attributes_values_and_traces(tmp_path):
    net = _net_with_traces()
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    want = _numpy_net(net, x)
    tf.saved_model.save(net, str(tmp_path / "net"))
    assert tf.saved_model.contains_saved_model(tmp_path / "net")
    loaded = tf.saved_model.load(str(tmp_path / "net"))

    np.testing.assert_allclose(loaded(tf.constant(x)).numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(loaded(x[:2]).numpy(), _numpy_net(net, x[:2]), rtol=1e-6, atol=1e-6)  # numpy converted
    # The attribute tree, with the loaded variables at the saved paths.
    np.testing.assert_array_equal(loaded.first.w.numpy(), net.first.w.numpy())
    np.testing.assert_array_equal(loaded.blocks[1].b.numpy(), net.blocks[1].b.numpy())
    assert isinstance(loaded.blocks, list) and len(loaded.blocks) == 2
    assert loaded.extra["scale"].numpy() == 1.5
    assert [v.name for v in loaded.variables] == [v.name for v in net.variables]
    assert [v.name for v in loaded.trainable_variables] == [v.name for v in net.trainable_variables]
    assert [v.trainable for v in loaded.first.variables] == [v.trainable for v in net.first.variables]
    for a, b in zip(loaded.variables, net.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    # Python arguments (static) select their own trace; defaults and keywords are canonicalized.
    out, power = loaded.mix(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]))
    assert power == 2 and type(out).__name__ == "Pair" and out._fields == ("low", "high")
    np.testing.assert_allclose(out.low.numpy(), [3.5, 8.5])
    np.testing.assert_allclose(out.high.numpy(), [1.0, 4.0])
    out3, power3 = loaded.mix(tf.constant([1.0, 2.0]), y=tf.constant([3.0, 4.0]), power=3)
    assert power3 == 3
    np.testing.assert_allclose(out3.high.numpy(), [1.0, 8.0])


def test_input_signature_is_traced_at_save_and_takes_any_batch(tmp_path):
    net = Net()  # features never called: its input_signature is traced by the save
    tf.saved_model.save(net, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    for n in (1, 7):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3) / 10
        got = loaded.features(tf.constant(x))
        want = net.features(tf.constant(x))
        assert sorted(got) == ["hidden", "total"]
        np.testing.assert_allclose(got["hidden"].numpy(), want["hidden"].numpy(), rtol=1e-6)
        np.testing.assert_allclose(got["total"].numpy(), x.sum(axis=1), rtol=1e-6)


def test_no_matching_trace_is_tf_value_error_listing_the_saved_ones(tmp_path):
    net = _net_with_traces()
    tf.saved_model.save(net, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="Could not find matching concrete function") as info:
        loaded(tf.ones([2, 4]))
    text = str(info.value)
    assert "2 option(s)" in text
    assert "TensorSpec(shape=(2, 3), dtype=tf.float32, name='x')" in text
    assert "TensorSpec(shape=(5, 3), dtype=tf.float32, name='x')" in text
    with pytest.raises(ValueError, match="Could not find matching"):
        loaded.mix(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]), power=4)  # a static value never traced
    with pytest.raises(ValueError, match="Could not find matching"):
        loaded.features(tf.ones([2, 3], tf.int32))  # wrong dtype


def test_gradients_through_loaded_functions_match_the_original(tmp_path):
    net = _net_with_traces()
    tf.saved_model.save(net, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    x = tf.constant(np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32))
    grads = []
    for model in (net, loaded):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(model(x) ** 2)
        grads.append(tape.gradient(y, [x] + list(model.trainable_variables)))
    assert len(grads[0]) == len(grads[1]) == 1 + 4
    for a, b in zip(*grads):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    # d/dscale of sum(h * scale) is sum(h): a number NumPy computes.
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(loaded(x))
    (g,) = tape.gradient(y, [loaded.extra["scale"]])
    np.testing.assert_allclose(g.numpy(), _numpy_net(net, x.numpy()).sum() / 1.5, rtol=1e-5)


def test_loaded_function_inside_tf_function_equals_eager(tmp_path):
    net = _net_with_traces()
    tf.saved_model.save(net, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    x = tf.constant(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3))

    @tf.function
    def twice(v):
        return loaded(v) * 2.0

    np.testing.assert_allclose(twice(x).numpy(), 2 * loaded(x).numpy(), rtol=1e-6)


def test_variables_stay_live_state_after_loading(tmp_path):
    net = _net_with_traces()  # step ran once: counter is 1
    tf.saved_model.save(net, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert int(loaded.counter.numpy()) == 1
    assert float(loaded.step(tf.constant(1.0)).numpy()) == 3.0  # assign_add then read: 1 + 2
    assert float(loaded.step(tf.constant(1.0)).numpy()) == 4.0
    assert int(loaded.counter.numpy()) == 3
    loaded.extra["scale"].assign(3.0)  # assigning a loaded variable changes what functions compute
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(loaded(x).numpy(), _numpy_net(net, x) * 2, rtol=1e-6)


class Flow(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(2.0)

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.float32)])
    def branch(self, a, b):  # two inputs of one spec: each keeps its own place
        if a > b:
            r = a - b
        else:
            r = (b - a) * self.v
        return r

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def loop(self, n):
        total = tf.constant(0)
        i = tf.constant(0)
        while i < n:
            total += i
            i += 1
        return total

    @tf.function
    def constant(self):
        return tf.constant([1.0, 2.0])

    @tf.function
    def echo(self, x):
        return x


def test_control_flow_several_inputs_and_functions_without_inputs(tmp_path):
    m = Flow()
    m.constant()
    m.echo(tf.constant([4, 5]))
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert float(loaded.branch(tf.constant(5.0), tf.constant(2.0))) == 3.0
    assert float(loaded.branch(tf.constant(2.0), tf.constant(5.0))) == 6.0
    assert float(loaded.branch(2.0, 5.0)) == 6.0  # Python numbers converted to the saved specs
    assert int(loaded.loop(tf.constant(5))) == 10
    assert int(loaded.loop(tf.constant(0))) == 0
    np.testing.assert_array_equal(loaded.constant().numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(loaded.echo(tf.constant([4, 5])).numpy(), [4, 5])


class Signed(tf.Module):
    def __init__(self):
        super().__init__()
        self.k = tf.Variable(3.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def scale(self, x):
        return x * self.k

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.float32)])
    def both(self, a, b):
        return {"sum": a + b, "prod": a * b}

    @tf.function
    def free(self, x):
        return x


def test_signatures_default_explicit_and_dict(tmp_path):
    m = Signed()
    m.free(tf.constant(1.0))
    # Two functions with input signatures: no default signature (TF's rule needs exactly one).
    tf.saved_model.save(m, str(tmp_path / "none"))
    assert len(tf.saved_model.load(str(tmp_path / "none")).signatures) == 0

    tf.saved_model.save(m, str(tmp_path / "one"), signatures=m.scale)
    sig = tf.saved_model.load(str(tmp_path / "one")).signatures["serving_default"]
    x = tf.constant([1.0, 2.0])
    out = sig(x=x)
    assert list(out) == ["output_0"]
    np.testing.assert_allclose(out["output_0"].numpy(), [3.0, 6.0])
    np.testing.assert_allclose(sig(x)["output_0"].numpy(), [3.0, 6.0])  # one input: positional allowed
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        sig(y=x)
    with pytest.raises(TypeError, match="Tensor"):
        sig([1.0, 2.0])

    cf = m.scale.get_concrete_function()
    tf.saved_model.save(m, str(tmp_path / "many"), signatures={"a": cf, "b": m.both})
    loaded = tf.saved_model.load(str(tmp_path / "many"))
    assert sorted(loaded.signatures) == ["a", "b"]
    out = loaded.signatures["b"](a=x, b=tf.constant([3.0, 4.0]))
    assert sorted(out) == ["prod", "sum"]
    np.testing.assert_allclose(out["prod"].numpy(), [3.0, 8.0])
    with pytest.raises(TypeError, match="keyword"):
        loaded.signatures["b"](x, x)
    np.testing.assert_allclose(loaded.signatures["a"](x=x)["output_0"].numpy(), [3.0, 6.0])
    # Signatures differentiate too (through the loaded variable).
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(loaded.signatures["a"](x=x)["output_0"])
    np.testing.assert_allclose(tape.gradient(y, loaded.k).numpy(), 3.0)


def test_signature_errors_are_tf_value_errors(tmp_path):
    m = Signed()
    m.free(tf.constant(1.0))
    with pytest.raises(ValueError, match="Only `tf.functions` with an input signature or concrete functions"):
        tf.saved_model.save(m, str(tmp_path / "x"), signatures=m.free)
    with pytest.raises(ValueError, match="Expected an object to save"):
        tf.saved_model.save([1, 2], str(tmp_path / "y"))
    with pytest.raises(TypeError, match="SaveOptions"):
        tf.saved_model.save(m, str(tmp_path / "z"), options={"x": 1})
    assert not os.path.exists(tmp_path / "x")


class WithObjectArg(tf.Module):
    @tf.function
    def f(self, x, config):
        return x * 2


def test_a_trace_with_an_unsaveable_python_argument_fails_the_save(tmp_path):
    m = WithObjectArg()
    m.f(tf.constant(1.0), object())
    with pytest.raises(ValueError, match="cannot hold"):
        tf.saved_model.save(m, str(tmp_path / "m"))
    assert not os.path.exists(tmp_path / "m")


def test_tags_and_options(tmp_path):
    m = Signed()
    tf.saved_model.save(m, str(tmp_path / "m"), options=tf.saved_model.SaveOptions(extra_tags=["gpu"]))
    assert tf.saved_model.load(str(tmp_path / "m"), tags=["serve", "gpu"]).k.numpy() == 3.0
    with pytest.raises(ValueError, match="incompatible argument to `tags`"):
        tf.saved_model.load(str(tmp_path / "m"), tags=["serve"])
    loaded = tf.saved_model.load(str(tmp_path / "m"), options=tf.saved_model.LoadOptions(allow_partial_checkpoint=True))
    assert loaded.k.numpy() == 3.0
    with pytest.raises(ValueError, match="VariablePolicy"):
        tf.saved_model.SaveOptions(experimental_variable_policy="sideways")
    assert tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert tf.saved_model.SERVING == "serve"
    assert not tf.saved_model.contains_saved_model(tmp_path / "absent")


@tf.custom_gradient
def _clip(y):
    def backward(dy):
        return tf.clip_by_norm(dy, 0.5)
    return y, backward


class Clipped(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def f(self, x):
        return _clip(x * 3.0)


def test_custom_gradients_option(tmp_path):
    m = Clipped()
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = m.f(v)
    assert float(tape.gradient(y, v)) == pytest.approx(1.5)  # the rule: 0.5 clipped, times 3
    with pytest.warns(UserWarning, match="custom gradient"):
        tf.saved_model.save(m, str(tmp_path / "kept"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # False: saved knowingly without the rule, no warning
        tf.saved_model.save(m, str(tmp_path / "dropped"),
                            options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))
    text = (tmp_path / "dropped" / "saved_model.json").read_text()
    assert "custom_gradient" not in text
    loaded = tf.saved_model.load(str(tmp_path / "dropped"))
    with tf.GradientTape() as tape:
        y = loaded.f(v)
    assert float(y) == 6.0
    assert float(tape.gradient(y, v)) == pytest.approx(3.0)  # the forward ops' gradient


def test_a_module_with_variables_only(tmp_path):
    m = tf.Module()
    m.v = tf.Variable([1.0, 2.0])
    m.sub = tf.Module()
    m.sub.w = tf.Variable(7, trainable=False)
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.v.numpy(), [1.0, 2.0])
    assert int(loaded.sub.w.numpy()) == 7
    assert len(loaded.variables) == 2 and len(loaded.trainable_variables) == 1
    with pytest.raises(TypeError, match="not callable"):
        loaded(1.0)


def test_saving_again_replaces_and_refuses_foreign_folders(tmp_path):
    m = Signed()
    path = tmp_path / "m"
    tf.saved_model.save(m, str(path))
    m.k.assign(5.0)
    tf.saved_model.save(m, str(path))
    assert tf.saved_model.load(str(path)).k.numpy() == 5.0
    assert sorted(os.listdir(path)) == ["saved_model.json", "variables.safetensors"]
    assert [e for e in os.listdir(tmp_path) if e != "m"] == []  # no temporaries left beside it
    (path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="notes.txt"):
        tf.saved_model.save(m, str(path))
    assert (path / "notes.txt").read_text() == "mine"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        tf.saved_model.save(m, str(tmp_path / "file"))


LOAD_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import eagerflow as tf
    loaded = tf.saved_model.load(sys.argv[1])
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(loaded(x))
    g = tape.gradient(y, loaded.extra["scale"])
    out, power = loaded.mix(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]), power=3)
    print(json.dumps({"y": loaded(x).numpy().tolist(), "g": float(g), "high": out.high.numpy().tolist(),
                      "power": power, "type": type(loaded).__name__,
                      "features": loaded.features(x)["total"].numpy().tolist()}))
""")


def test_loads_in_a_process_without_the_classes(tmp_path):
    net = _net_with_traces()
    tf.saved_model.save(net, str(tmp_path / "m"))
    script = tmp_path / "load.py"
    script.write_text(LOAD_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "m")], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    np.testing.assert_allclose(got["y"], _numpy_net(net, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["g"], _numpy_net(net, x).sum() / 1.5, rtol=1e-5)
    assert got["high"] == [1.0, 8.0] and got["power"] == 3 and got["type"] == "_UserObject"
    np.testing.assert_allclose(got["features"], x.sum(axis=1), rtol=1e-6)


SAVE_LOOP = textwrap.dedent("""
    import sys
    import numpy as np
    import eagerflow as tf
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.a = tf.Variable(np.zeros(20000, np.float32))
            self.b = tf.Variable(0.0)
        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def f(self, x):
            return self.b + x
    m = M()
    print("ready", flush=True)
    for gen in range(1, 100000):
        m.a.assign(np.full(20000, gen, np.float32))
        m.b.assign(float(gen))
        tf.saved_model.save(m, sys.argv[1])
        print("saved", gen, flush=True)
""")


def test_a_killed_save_leaves_the_old_model_or_the_new_one(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(SAVE_LOOP)
    path = tmp_path / "m"
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    rng = np.random.default_rng()
    for attempt in range(4):
        p = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        last = 0
        for line in p.stdout:
            if line.startswith("saved"):
                last = int(line.split()[1])
                if last >= 2:
                    break
        time.sleep(float(rng.uniform(0, 0.05)))
        os.kill(p.pid, signal.SIGKILL)
        p.communicate()
        loaded = tf.saved_model.load(str(path))
        gen = float(loaded.b.numpy())
        assert gen >= last, (gen, last)  # never older than what was reported saved
        np.testing.assert_array_equal(loaded.a.numpy(), np.full(20000, gen, np.float32))  # one save's values
        assert float(loaded.f(tf.constant(0.5))) == gen + 0.5
    tf.saved_model.save(Signed(), str(path))  # the next save cleans what killed writers left
    leftovers = [e for e in os.listdir(tmp_path) if e not in ("m", "loop.py")]
    assert leftovers == [], leftovers


def test_keras_models_still_save_their_call(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    x = np.ones((3, 4), np.float32)
    want = model(x).numpy()
    tf.saved_model.save(model, str(tmp_path / "k"))
    loaded = tf.saved_model.load(str(tmp_path / "k"))
    np.testing.assert_allclose(loaded(x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(loaded.signatures["serving_default"](x).numpy(), want, rtol=1e-6)


class WithKeras(tf.Module):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(2, kernel_initializer="ones", bias_initializer="zeros")
        self.v = tf.Variable(2.0)
        self.shift = tf.function(lambda x, k=3: x * k + self.v)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def __call__(self, x):
        return self.dense(x) * self.v


def test_keras_layers_inside_a_module_function_attributes_and_saving_a_loaded_model_again(tmp_path):
    m = WithKeras()
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    want = x.numpy().sum(axis=1, keepdims=True) * np.ones((1, 2)) * 2.0
    np.testing.assert_allclose(m(x).numpy(), want)
    m.shift(tf.constant(1.0))
    tf.saved_model.save(m, str(tmp_path / "a"))
    loaded = tf.saved_model.load(str(tmp_path / "a"))
    np.testing.assert_allclose(loaded(x).numpy(), want)
    assert float(loaded.shift(tf.constant(1.0))) == 5.0
    assert sorted(v.name for v in loaded.dense.variables) == sorted(v.name for v in m.dense.variables)
    assert list(loaded.signatures) == ["serving_default"]  # the one function with an input signature

    loaded.v.assign(10.0)
    tf.saved_model.save(loaded, str(tmp_path / "b"))  # TF saves loaded objects again, signatures too
    again = tf.saved_model.load(str(tmp_path / "b"))
    np.testing.assert_allclose(again(x).numpy(), want * 5)
    assert float(again.shift(tf.constant(1.0))) == 13.0
    np.testing.assert_allclose(again.signatures["serving_default"](x=x)["output_0"].numpy(), want * 5)
    np.testing.assert_array_equal(again.dense.variables[0].numpy(), np.ones((3, 2)))


class Lazy(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = None

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def __call__(self, x):
        if self.w is None:
            self.w = tf.Variable(tf.ones([3, 2]) * 0.5, name="w")
        return tf.matmul(x, self.w)


def test_saving_traces_what_it_must_and_nothing_else(tmp_path):
    lazy = Lazy()  # never called: the save traces it, and its first trace makes the variable
    tf.saved_model.save(lazy, str(tmp_path / "lazy"))
    loaded = tf.saved_model.load(str(tmp_path / "lazy"))
    assert [v.name for v in loaded.variables] == ["w:0"]
    np.testing.assert_array_equal(loaded.w.numpy(), np.full((3, 2), 0.5))
    np.testing.assert_allclose(loaded(tf.ones([4, 3])).numpy(), np.full((4, 2), 1.5))

    net = _net_with_traces()
    counts = [net.__call__.experimental_get_tracing_count(), net.mix.experimental_get_tracing_count()]
    x = tf.ones([5, 3])
    before = net(x).numpy()
    tf.saved_model.save(net, str(tmp_path / "net"))
    # The traces are called again as they are: no new trace, and the module works as before.
    assert [net.__call__.experimental_get_tracing_count(), net.mix.experimental_get_tracing_count()] == counts
    np.testing.assert_array_equal(net(x).numpy(), before)


def test_a_module_signature_is_a_tfsm_layer(tmp_path):
    m = Signed()
    tf.saved_model.save(m, str(tmp_path / "m"), signatures=m.scale)
    layer = tf.keras.layers.TFSMLayer(str(tmp_path / "m"), call_endpoint="serving_default")
    np.testing.assert_allclose(layer(tf.constant([1.0, 2.0])).numpy(), [3.0, 6.0])
    with pytest.raises(ValueError, match="non-empty strings"):
        tf.saved_model.save(m, str(tmp_path / "n"), signatures={"": m.scale})


class Mutable(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(1.0)

    @tf.function
    def __call__(self, x):
        return x * self.v

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def mutate(self, new_v):  # no results: not a signature, and no default signature either
        self.v.assign(new_v)


def test_functions_without_results_and_training_a_loaded_variable(tmp_path):
    m = Mutable()
    m(tf.constant(0.0))
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert len(loaded.signatures) == 0
    assert float(loaded(tf.constant(3.0))) == 3.0
    assert loaded.mutate(tf.constant(2.0)) is None
    assert float(loaded(tf.constant(3.0))) == 6.0
    opt = tf.keras.optimizers.SGD(0.05)
    for _ in range(3):  # v moves toward 5, where (10 - 2v)^2 is least
        with tf.GradientTape() as tape:
            loss = (10.0 - loaded(tf.constant(2.0))) ** 2
        variables = tape.watched_variables()
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    v = 2.0
    for _ in range(3):
        v -= 0.05 * (-4 * (10 - 2 * v))
    assert float(loaded.v.numpy()) == pytest.approx(v, rel=1e-5)
