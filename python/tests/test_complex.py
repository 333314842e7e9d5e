"""Complex tensors: tf.complex64/complex128 from Python and NumPy values, their arithmetic,
parts, casts, matmul flags, reductions and tf.signal's FFTs against NumPy, TF's gradient
convention, and the errors of what does not take them."""
import numpy as np
import pytest

import eagerflow as tf


def test_python_and_numpy_values_make_complex_tensors():
    v = tf.Variable([5 + 4j, 6 + 1j])  # (raised std::bad_cast once)
    assert v.dtype == tf.complex128
    np.testing.assert_array_equal(v.numpy(), [5 + 4j, 6 + 1j])
    assert repr(v) == "<tf.Variable 'Variable:0' shape=(2,) dtype=complex128, numpy=array([5.+4.j, 6.+1.j])>"
    s = tf.constant(1 + 2j)
    assert s.dtype == tf.complex128 and s.numpy() == 1 + 2j and isinstance(s.numpy(), np.complex128)
    assert str(s) == "tf.Tensor((1+2j), shape=(), dtype=complex128)"
    assert tf.constant(np.array([1 + 1j], np.complex64)).dtype == tf.complex64
    assert tf.constant([1.5 + 0j, 2]).dtype == tf.complex128
    assert tf.constant([1, 2], dtype=tf.complex64).numpy().tolist() == [1 + 0j, 2 + 0j]
    assert tf.complex64.is_complex and tf.complex64.real_dtype == tf.float32 and tf.complex64.size == 8
    assert tf.as_dtype("complex128") == tf.complex128 and tf.dtypes.complex64 == tf.complex64
    with pytest.raises(TypeError):
        tf.constant([1 + 2j], dtype=tf.float32)  # the imaginary part would be lost


def test_arithmetic_matches_numpy_and_numbers_take_the_tensors_dtype():
    a = np.array([1 + 2j, -0.5 + 3j, 2.5 - 1j], np.complex64)
    b = np.array([0.5 - 1j, 2 + 2j, -3 + 0.25j], np.complex64)
    ta, tb = tf.constant(a), tf.constant(b)
    for got, want in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b), (ta ** tb, a ** b),
                      (-ta, -a), (tf.exp(ta), np.exp(a)), (tf.math.log(ta), np.log(a)), (tf.sqrt(ta), np.sqrt(a)),
                      (tf.math.sin(ta), np.sin(a)), (tf.tanh(ta), np.tanh(a)), (tf.square(ta), a * a),
                      (tf.math.reciprocal(ta), 1 / a)]:
        assert got.dtype == tf.complex64
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6)
    # Python numbers become complex64 beside a complex64 tensor (TF's weak typing).
    assert (ta * 2).dtype == tf.complex64 and (ta * 1j).dtype == tf.complex64 and (ta + [1, 2, 3]).dtype == tf.complex64
    np.testing.assert_allclose((ta * 1j).numpy(), a * 1j)
    np.testing.assert_array_equal((ta == ta).numpy(), [True] * 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="complex"):
        ta < tb  # complex numbers are not ordered
    with pytest.raises(tf.errors.InvalidArgumentError):
        ta + tf.constant([1.0, 2.0, 3.0])


def test_parts_casts_and_reductions():
    z = np.array([[1.5 - 2j, 3 + 0.25j], [-1 + 1j, 4j]])
    t = tf.constant(z)
    np.testing.assert_array_equal(tf.math.real(t).numpy(), z.real)
    np.testing.assert_array_equal(tf.math.imag(t).numpy(), z.imag)
    np.testing.assert_array_equal(tf.math.conj(t).numpy(), z.conj())
    np.testing.assert_allclose(tf.math.angle(t).numpy(), np.angle(z))
    np.testing.assert_allclose(tf.abs(t).numpy(), np.abs(z))
    assert tf.abs(t).dtype == tf.float64 and tf.math.real(tf.cast(t, tf.complex64)).dtype == tf.float32
    np.testing.assert_array_equal(tf.math.real([1.0, 2.0]).numpy(), [1, 2])  # a real tensor is its own real part
    np.testing.assert_array_equal(tf.math.imag([1.0, 2.0]).numpy(), [0, 0])
    np.testing.assert_array_equal(tf.cast(t, tf.float32).numpy(), z.real.astype(np.float32))  # TF keeps the real part
    np.testing.assert_array_equal(tf.complex(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])).numpy(), [1 + 3j, 2 + 4j])
    assert tf.complex(tf.constant(1.0), tf.constant(2.0)).dtype == tf.complex64
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.complex(tf.constant([1.0]), tf.constant([1.0], tf.float64))
    np.testing.assert_allclose(tf.reduce_sum(t, axis=0).numpy(), z.sum(0))
    np.testing.assert_allclose(tf.reduce_mean(t).numpy(), z.mean())
    # Ops that move elements take complex tensors as they are.
    np.testing.assert_array_equal(tf.transpose(t).numpy(), z.T)
    np.testing.assert_array_equal(t[1, ::-1].numpy(), z[1, ::-1])
    np.testing.assert_array_equal(tf.concat([t, t], 1).numpy(), np.concatenate([z, z], 1))
    np.testing.assert_array_equal(tf.gather(t, [1, 0]).numpy(), z[[1, 0]])
    np.testing.assert_array_equal(tf.where([True, False], t[0], t[1]).numpy(), [z[0, 0], z[1, 1]])


def test_matmul_adjoint_conjugates():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    b = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    np.testing.assert_allclose(tf.matmul(a, b, adjoint_b=True).numpy(), a @ b.conj().T)
    np.testing.assert_allclose(tf.linalg.matmul(a, b, adjoint_a=True).numpy(), a.conj().T @ b)
    np.testing.assert_allclose(tf.matmul(a, b, transpose_b=True).numpy(), a @ b.T)
    np.testing.assert_allclose(tf.linalg.adjoint(a).numpy(), a.conj().T)
    np.testing.assert_allclose(tf.linalg.matrix_transpose(a, conjugate=True).numpy(), a.conj().T)
    batch = np.stack([a, 2j * a])
    np.testing.assert_allclose(tf.matmul(batch, b.T).numpy(), batch @ b.T)


@pytest.mark.parametrize("n", [1, 4, 5, 12, 17, 64, 100])
def test_fft_matches_numpy(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=(3, n)) + 1j * rng.normal(size=(3, n))
    np.testing.assert_allclose(tf.signal.fft(x).numpy(), np.fft.fft(x), atol=1e-10)
    np.testing.assert_allclose(tf.signal.ifft(x).numpy(), np.fft.ifft(x), atol=1e-12)
    r = rng.normal(size=(2, n))
    np.testing.assert_allclose(tf.signal.rfft(r).numpy(), np.fft.rfft(r), atol=1e-10)
    for m in (n, 2 * n + 1, max(n // 2, 1)):
        np.testing.assert_allclose(tf.signal.rfft(r, fft_length=[m]).numpy(), np.fft.rfft(r, m), atol=1e-10)
        spectrum = np.fft.rfft(r, m)
        np.testing.assert_allclose(tf.signal.irfft(spectrum, fft_length=[m]).numpy(), np.fft.irfft(spectrum, m), atol=1e-12)


def test_multidimensional_ffts_and_shifts_match_numpy():
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(2, 3, 4, 5)) + 1j * rng.normal(size=(2, 3, 4, 5))).astype(np.complex64)
    np.testing.assert_allclose(tf.signal.fft2d(x).numpy(), np.fft.fft2(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tf.signal.ifft3d(x).numpy(), np.fft.ifftn(x, axes=(1, 2, 3)), atol=1e-6)
    r = rng.normal(size=(3, 6, 7))
    np.testing.assert_allclose(tf.signal.rfft2d(r).numpy(), np.fft.rfft2(r), atol=1e-10)
    np.testing.assert_allclose(tf.signal.irfft2d(np.fft.rfft2(r), fft_length=[6, 7]).numpy(), r, atol=1e-12)
    np.testing.assert_allclose(tf.signal.rfft3d(r).numpy(), np.fft.rfftn(r), atol=1e-10)
    assert tf.signal.rfft(tf.constant([1.0, 2.0])).dtype == tf.complex64  # float32 in, complex64 out
    np.testing.assert_array_equal(tf.signal.fftshift(np.arange(7)).numpy(), np.fft.fftshift(np.arange(7)))
    np.testing.assert_array_equal(tf.signal.ifftshift(np.arange(6)).numpy(), np.fft.ifftshift(np.arange(6)))
    np.testing.assert_allclose(tf.signal.hann_window(8).numpy(), 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8), atol=1e-7)
    np.testing.assert_allclose(tf.signal.hamming_window(5, periodic=False).numpy(), np.hamming(5), atol=1e-7)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.signal.fft(tf.constant([1.0, 2.0]))  # fft takes complex input


def test_gradients_follow_tfs_convention():
    z = tf.constant([1 + 2j, 3 - 1j], tf.complex64)
    with tf.GradientTape() as tape:
        tape.watch(z)
        y = tf.reduce_sum(tf.abs(z * z))
    np.testing.assert_allclose(tape.gradient(y, z).numpy(), [2 + 4j, 6 - 2j])  # TF 2.21's values
    with tf.GradientTape() as tape:
        tape.watch(z)
        y = z * z  # a complex target is seeded with ones
    np.testing.assert_allclose(tape.gradient(y, z).numpy(), [2 - 4j, 6 + 2j])
    # A real loss of real variables through complex values: the real chain rule.
    x = tf.Variable([0.3, -0.7], dtype=tf.float64)
    with tf.GradientTape() as tape:
        w = tf.signal.fft(tf.complex(x, x * 0.5))
        loss = tf.reduce_sum(tf.math.real(w * tf.math.conj(w)))
    xs = x.numpy()
    # |fft(x (1 + 0.5i))|^2 summed is n |x|^2 1.25 (Parseval), so the gradient is 2 n 1.25 x.
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), 2 * 2 * 1.25 * xs)


def test_integer_targets_and_sources_get_none():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(x * 2, tf.int32)
    assert tape.gradient(y, x) is None
    xi = tf.constant(3)
    with tf.GradientTape() as tape:
        tape.watch(xi)
        y = tf.cast(xi, tf.float32) * 2.0
    assert tape.gradient(y, xi) is None


def test_traced_equals_eager_with_one_trace():
    def f(re, im):
        z = tf.complex(re, im)
        w = tf.signal.ifft(tf.signal.fft(z) * tf.exp(z))
        return tf.abs(w), tf.math.angle(w)

    traced = tf.function(f)
    for scale in (1.0, 2.0):
        re, im = tf.constant([0.1, 0.2, -0.3]) * scale, tf.constant([1.0, 0.0, -1.0])
        for got, want in zip(traced(re, im), f(re, im)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert traced.experimental_get_tracing_count() == 1


def test_eig_and_eigvals_of_general_matrices():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 4, 4))
    w, v = tf.linalg.eig(a)
    assert w.dtype == tf.complex128 and v.dtype == tf.complex128
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[:, None, :], atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=1), 1.0)
    got, want = tf.linalg.eigvals(a).numpy(), np.linalg.eigvals(a)
    for g, w_ in zip(got, want):  # the same multiset per matrix (conjugate pairs may come in either order)
        assert np.abs(g[:, None] - w_[None, :]).min(axis=1).max() < 1e-10
    rot = tf.constant([[0.0, -1.0], [1.0, 0.0]])
    assert tf.linalg.eigvals(rot).dtype == tf.complex64
    np.testing.assert_allclose(sorted(tf.linalg.eigvals(rot).numpy(), key=lambda z: z.imag), [-1j, 1j], atol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.linalg.eig(tf.ones([2, 3]))


def test_keras_ops_eig_is_tf_linalg_eig():
    a = np.array([[4.0, 1.0], [-2.0, 1.0]])
    w, v = tf.keras.ops.eig(a)
    np.testing.assert_allclose(sorted(w.numpy().real), [2.0, 3.0])
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[None, :], atol=1e-12)


def test_scatters_move_complex_values():
    x = tf.constant([[1 + 1j, 2], [3, 4j]])
    np.testing.assert_array_equal(tf.tensor_scatter_nd_update(x, [[0, 0]], [5 + 0j]).numpy(), [[5, 2], [3, 4j]])
    np.testing.assert_array_equal(tf.tensor_scatter_nd_add(x, [[1, 1]], [1j]).numpy(), [[1 + 1j, 2], [3, 5j]])
    np.testing.assert_array_equal(tf.scatter_nd([[1]], [2 + 3j], [3]).numpy(), [0, 2 + 3j, 0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.tensor_scatter_nd_max(x, [[0, 0]], [1j])  # complex numbers are not ordered
