"""ef.linalg as tf.linalg (issue 31): decompositions and solvers against NumPy in float64 (and
float32), gradients by central differences, TF's argument names and results, errors of TF's
classes, eager == traced, and the compositions (band_part, diag, trace, tensordot, lstsq, pinv)."""
import numpy as np
import pytest

import eagerflow as tf

rng = np.random.default_rng(3)
A = rng.normal(size=(2, 4, 4))
SPD = A @ np.swapaxes(A, -1, -2) + 4 * np.eye(4)
B = rng.normal(size=(2, 4, 3))
M = rng.normal(size=(2, 5, 3))


def both_ways(fn, *args):
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    np.testing.assert_allclose(np.asarray(traced), np.asarray(eager), rtol=1e-12, atol=1e-12)
    return np.asarray(eager)


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def check_grad(f_tf, x, weights_seed=0, rtol=1e-5):
    w = np.random.default_rng(weights_seed).normal(size=np.asarray(f_tf(tf.constant(x))).shape)
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(f_tf(v) * w)
    got = tape.gradient(y, v).numpy()
    want = numeric_grad(lambda z: float(np.sum(np.asarray(f_tf(tf.constant(z))) * w)), x)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def test_cholesky_solve_inv_det_as_numpy():
    np.testing.assert_allclose(both_ways(tf.linalg.cholesky, SPD), np.linalg.cholesky(SPD), rtol=1e-12)
    np.testing.assert_allclose(both_ways(tf.linalg.solve, A, B), np.linalg.solve(A, B), rtol=1e-10)
    np.testing.assert_allclose(tf.linalg.solve(A, B, adjoint=True).numpy(), np.linalg.solve(np.swapaxes(A, -1, -2), B), rtol=1e-10)
    np.testing.assert_allclose(tf.linalg.inv(A).numpy(), np.linalg.inv(A), rtol=1e-10)
    np.testing.assert_allclose(tf.linalg.det(A).numpy(), np.linalg.det(A), rtol=1e-10)
    sign, logabs = tf.linalg.slogdet(A)
    np.testing.assert_allclose(sign.numpy(), np.linalg.slogdet(A)[0])
    np.testing.assert_allclose(logabs.numpy(), np.linalg.slogdet(A)[1], rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.logdet(SPD).numpy(), np.linalg.slogdet(SPD)[1], rtol=1e-12)
    f32 = tf.linalg.inv(A.astype(np.float32))
    assert f32.dtype == tf.float32
    np.testing.assert_allclose(f32.numpy(), np.linalg.inv(A), rtol=1e-3, atol=1e-4)


def test_triangular_solve_and_cholesky_solve():
    low = np.tril(A) + 3 * np.eye(4)
    np.testing.assert_allclose(tf.linalg.triangular_solve(low, B).numpy(), np.linalg.solve(low, B), rtol=1e-12)
    up = np.swapaxes(low, -1, -2)
    np.testing.assert_allclose(tf.linalg.triangular_solve(up, B, lower=False).numpy(), np.linalg.solve(up, B), rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.triangular_solve(low, B, adjoint=True).numpy(), np.linalg.solve(up, B), rtol=1e-12)
    chol = np.linalg.cholesky(SPD)
    np.testing.assert_allclose(tf.linalg.cholesky_solve(chol, B).numpy(), np.linalg.solve(SPD, B), rtol=1e-10)


def test_eigh_svd_qr_as_numpy():
    e, v = tf.linalg.eigh(SPD)
    np.testing.assert_allclose(e.numpy(), np.linalg.eigvalsh(SPD), rtol=1e-12)
    np.testing.assert_allclose((v.numpy() * e.numpy()[:, None, :]) @ np.swapaxes(v.numpy(), -1, -2), SPD, rtol=1e-10)
    np.testing.assert_allclose(tf.linalg.eigvalsh(SPD).numpy(), np.linalg.eigvalsh(SPD), rtol=1e-12)
    s, u, v = tf.linalg.svd(M)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(M, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u.numpy() * s.numpy()[:, None, :]) @ np.swapaxes(v.numpy(), -1, -2), M, atol=1e-12)
    np.testing.assert_allclose(tf.linalg.svd(M, compute_uv=False).numpy(), s.numpy())
    s, u, v = tf.linalg.svd(M, full_matrices=True)
    assert u.shape == (2, 5, 5) and v.shape == (2, 3, 3)
    q, r = tf.linalg.qr(M)
    assert q.shape == (2, 5, 3) and r.shape == (2, 3, 3)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), M, atol=1e-12)
    np.testing.assert_allclose(np.abs(r.numpy()), np.abs(np.linalg.qr(M)[1]), rtol=1e-10, atol=1e-12)
    q, r = tf.linalg.qr(M, full_matrices=True)
    assert q.shape == (2, 5, 5) and r.shape == (2, 5, 3)


@pytest.mark.parametrize("name", ["cholesky", "solve", "inv", "det", "slogdet", "triangular_solve", "eigh", "svd", "qr", "logdet"])
def test_gradients_match_central_differences(name):
    x = rng.normal(size=(3, 3))
    fns = {
        "cholesky": (lambda a: tf.linalg.cholesky(tf.matmul(a, a, transpose_b=True) + 2 * tf.eye(3, dtype=tf.float64))),
        "solve": (lambda a: tf.linalg.solve(a + 3 * tf.eye(3, dtype=tf.float64), tf.constant(B[0, :3]))),
        "inv": (lambda a: tf.linalg.inv(a + 3 * tf.eye(3, dtype=tf.float64))),
        "det": (lambda a: tf.linalg.det(a + 3 * tf.eye(3, dtype=tf.float64))),
        "slogdet": (lambda a: tf.linalg.slogdet(a + 3 * tf.eye(3, dtype=tf.float64))[1]),
        "logdet": (lambda a: tf.linalg.logdet(tf.matmul(a, a, transpose_b=True) + 2 * tf.eye(3, dtype=tf.float64))),
        "triangular_solve": (lambda a: tf.linalg.triangular_solve(a + 3 * tf.eye(3, dtype=tf.float64), tf.constant(B[0, :3]))),
        "eigh": (lambda a: tf.linalg.eigh(a + tf.linalg.adjoint(a))[1] ** 2 + tf.linalg.eigh(a + tf.linalg.adjoint(a))[0][None, :]),
        "svd": (lambda a: tf.linalg.svd(a, compute_uv=False)),
        "qr": (lambda a: tf.concat([tf.reshape(t, [-1]) for t in tf.linalg.qr(a)], 0)),
    }
    check_grad(fns[name], x)


def test_errors_have_tf_classes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="positive definite"):
        tf.linalg.cholesky(-SPD)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        tf.linalg.inv(np.zeros((3, 3)))
    with pytest.raises(ValueError):
        tf.linalg.det(np.ones((2, 3)))
    with pytest.raises(TypeError):
        tf.linalg.cholesky(tf.constant([[1, 0], [0, 1]]))
    sign, logabs = tf.linalg.slogdet(np.zeros((2, 2)))
    assert float(sign) == 0.0 and float(logabs) == -np.inf


def test_compositions_as_numpy():
    x = rng.normal(size=(2, 4, 5))
    np.testing.assert_array_equal(tf.linalg.band_part(x, 1, 2).numpy(), np.triu(np.tril(x, 2), -1))
    np.testing.assert_array_equal(tf.linalg.band_part(x, -1, 0).numpy(), np.tril(x))
    np.testing.assert_array_equal(tf.linalg.diag_part(x).numpy(), np.diagonal(x, axis1=-2, axis2=-1))
    np.testing.assert_allclose(tf.linalg.trace(x).numpy(), np.trace(x, axis1=-2, axis2=-1))
    d = rng.normal(size=(3, 4))
    np.testing.assert_array_equal(tf.linalg.diag(d).numpy(), np.stack([np.diag(r) for r in d]))
    s = tf.linalg.set_diag(x, np.zeros((2, 4))).numpy()
    assert (np.diagonal(s, axis1=-2, axis2=-1) == 0).all() and s[0, 0, 1] == x[0, 0, 1]
    np.testing.assert_allclose(tf.linalg.matvec(A, B[..., 0]).numpy(), np.einsum("bij,bj->bi", A, B[..., 0]), rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.matmul(A, B, adjoint_a=True).numpy(), np.swapaxes(A, -1, -2) @ B, rtol=1e-12)
    np.testing.assert_allclose(tf.matmul(A, A, transpose_b=True).numpy(), A @ np.swapaxes(A, -1, -2), rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.cross([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]).numpy(), np.cross([1, 2, 3], [4, 5, 6]))
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 3, 5))
    np.testing.assert_allclose(tf.tensordot(a, b, [[1, 2], [1, 0]]).numpy(), np.tensordot(a, b, [[1, 2], [1, 0]]), rtol=1e-12)
    np.testing.assert_allclose(tf.tensordot(a, rng.normal(size=(4, 2)), 1).numpy().shape, (2, 3, 2))
    over = rng.normal(size=(6, 3))
    rhs = rng.normal(size=(6, 2))
    np.testing.assert_allclose(tf.linalg.lstsq(over, rhs).numpy(), np.linalg.lstsq(over, rhs, rcond=None)[0], rtol=1e-8)
    under = rng.normal(size=(2, 5))
    np.testing.assert_allclose(tf.linalg.lstsq(under, rng.normal(size=(2, 1))).numpy().shape, (5, 1))
    np.testing.assert_allclose(tf.linalg.pinv(M).numpy(), np.linalg.pinv(M), rtol=1e-8, atol=1e-10)
    assert int(tf.linalg.matrix_rank(np.ones((3, 3)))) == 1
    np.testing.assert_allclose(float(tf.linalg.global_norm([np.array([3.0]), np.array([[4.0]])])), 5.0)
    n, norm = tf.linalg.normalize(np.array([3.0, 4.0]))
    np.testing.assert_allclose(n.numpy(), [0.6, 0.8])
    t = tf.linalg.tensor_diag([1.0, 2.0])
    np.testing.assert_array_equal(t.numpy(), np.diag([1.0, 2.0]))
    np.testing.assert_array_equal(tf.linalg.tensor_diag_part(t).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(tf.linalg.eye(2, 3).numpy(), np.eye(2, 3))
