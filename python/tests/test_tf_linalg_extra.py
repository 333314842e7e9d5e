"""ef.linalg's lu family, expm, tridiagonal and banded solves, eigh_tridiagonal and the LinearOperator family
as tf.linalg's: each against NumPy references computed here in float64, gradients by central differences where
TF differentiates, TF's argument names, errors of TF's classes, eager == traced."""
import inspect

import numpy as np
import pytest

import eagerflow as tf

L = tf.linalg
rng = np.random.default_rng(11)


def both_ways(fn, *args, tol=1e-12):
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    np.testing.assert_allclose(np.asarray(traced), np.asarray(eager), rtol=tol, atol=tol)
    return np.asarray(eager)


def check_grad(f_tf, x, rtol=1e-5):
    w = np.random.default_rng(0).normal(size=np.asarray(f_tf(tf.constant(x))).shape)
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(f_tf(v) * w)
    got = tape.gradient(y, v).numpy()
    want = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = 1e-6
        up, down = (np.sum(np.asarray(f_tf(tf.constant(x + s * d))) * w) for s in (1, -1))
        want[i] = (up - down) / 2e-6
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def params(fn):
    return list(inspect.signature(fn).parameters)


# ---------------------------------------------------------------- argument names
@pytest.mark.parametrize("name,want", [
    ("lu", ["input", "output_idx_type", "name"]),
    ("lu_solve", ["lower_upper", "perm", "rhs", "validate_args", "name"]),
    ("lu_reconstruct", ["lower_upper", "perm", "validate_args", "name"]),
    ("lu_matrix_inverse", ["lower_upper", "perm", "validate_args", "name"]),
    ("expm", ["input", "name"]),
    ("sqrtm", ["input", "name"]),
    ("tridiagonal_solve", ["diagonals", "rhs", "diagonals_format", "transpose_rhs", "conjugate_rhs", "name",
                           "partial_pivoting", "perturb_singular"]),
    ("tridiagonal_matmul", ["diagonals", "rhs", "diagonals_format", "name"]),
    ("banded_triangular_solve", ["bands", "rhs", "lower", "adjoint", "name"]),
    ("eigh_tridiagonal", ["alpha", "beta", "eigvals_only", "select", "select_range", "tol", "name"]),
])
def test_argument_names_are_tfs(name, want):
    assert params(getattr(L, name)) == want


# ---------------------------------------------------------------- lu
def test_lu_matches_partial_pivoting_and_tfs_perm():
    a = np.array([[1., 2, 3], [4, 5, 6], [7, 8, 10]])
    lu, p = L.lu(a)
    assert p.dtype == tf.int32
    np.testing.assert_array_equal(p.numpy(), [2, 0, 1])  # TF's result for this matrix
    lo = np.tril(lu.numpy(), -1) + np.eye(3)
    np.testing.assert_allclose(lo @ np.triu(lu.numpy()), a[p.numpy()], atol=1e-12)
    np.testing.assert_allclose(L.lu_reconstruct(lu, p).numpy(), a, atol=1e-12)
    np.testing.assert_allclose(L.lu_matrix_inverse(lu, p).numpy(), np.linalg.inv(a), atol=1e-12)
    rhs = rng.normal(size=(3, 2))
    np.testing.assert_allclose(L.lu_solve(lu, p, rhs).numpy(), np.linalg.solve(a, rhs), atol=1e-12)
    assert L.lu(a, output_idx_type=tf.int64)[1].dtype == tf.int64


def test_lu_batched_traced_and_differentiable_solves():
    a = rng.normal(size=(2, 4, 4)) + 3 * np.eye(4)
    rhs = rng.normal(size=(2, 4, 3))
    x = both_ways(lambda m, b: L.lu_solve(*L.lu(m), b), tf.constant(a), tf.constant(rhs), tol=1e-10)
    np.testing.assert_allclose(x, np.linalg.solve(a, rhs), atol=1e-10)
    lu, p = L.lu(a)
    check_grad(lambda v: L.lu_solve(v, p, rhs), lu.numpy())
    check_grad(lambda v: L.lu_matrix_inverse(v, p), lu.numpy())
    check_grad(lambda v: L.lu_reconstruct(v, p), lu.numpy())


def test_lu_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        L.lu(np.zeros((2, 2)))
    with pytest.raises(ValueError):
        L.lu(np.ones((2, 3)))
    with pytest.raises(TypeError):
        L.lu(np.ones((2, 2)), output_idx_type=tf.float32)


def test_lu_is_not_differentiable_as_tfs():
    v = tf.Variable(np.eye(2) * 2.0)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(L.lu(v)[0])
    assert tape.gradient(y, v) is None


# ---------------------------------------------------------------- expm
def taylor(a, terms=60):
    out, term = np.eye(a.shape[-1]), np.eye(a.shape[-1])
    for k in range(1, terms):
        term = term @ a / k
        out = out + term
    return out


@pytest.mark.parametrize("scale", [0.01, 0.2, 1.0, 2.0, 4.0])
def test_expm_matches_taylor_series(scale):
    a = rng.normal(size=(4, 4)) * scale / 4
    np.testing.assert_allclose(L.expm(a).numpy(), taylor(a), rtol=1e-11, atol=1e-12)


def test_expm_closed_forms_batches_and_float32():
    t = np.array([0.5, 12.0, 80.0])
    gen = np.zeros((3, 2, 2))
    gen[:, 0, 1], gen[:, 1, 0] = -t, t
    rot = np.stack([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]).transpose(2, 0, 1)
    # TF's squaring count (floor, where Higham rounds up) can leave twice the order-13 bound: TF's own error
    # for t = 80 is ~3e-8, and ours the same.
    np.testing.assert_allclose(both_ways(L.expm, tf.constant(gen)), rot, atol=1e-7)
    np.testing.assert_allclose(L.expm(np.diag([2.0, -30.0])).numpy(), np.diag(np.exp([2.0, -30.0])), rtol=1e-10)
    r32 = L.expm(gen[1].astype(np.float32))
    assert r32.dtype == tf.float32
    np.testing.assert_allclose(r32.numpy(), rot[1], atol=2e-4)
    assert np.isnan(L.expm(np.array([[np.inf, 0], [0, 1.0]])).numpy()).all()


def test_expm_gradient_and_errors():
    check_grad(L.expm, rng.normal(size=(3, 3)) * 0.5)
    check_grad(L.expm, rng.normal(size=(3, 3)) * 3.0, rtol=1e-4)
    with pytest.raises(ValueError):
        L.expm(np.ones((2, 3)))
    with pytest.raises(TypeError):
        L.expm(tf.ones([2, 2], tf.int32))


# ---------------------------------------------------------------- sqrtm
def test_sqrtm_real_schur_results_as_tfs():
    np.testing.assert_allclose(L.sqrtm(np.array([[1.0, -2], [2, 1]])).numpy(),
                               [[1.27201965, -0.78615138], [0.78615138, 1.27201965]], atol=1e-8)  # TF's values
    np.testing.assert_allclose(L.sqrtm(np.array([[0.0, 0], [0, 4]])).numpy(), [[0, 0], [0, 2]], atol=1e-15)
    assert np.isnan(L.sqrtm(np.array([[-1.0, 0], [0, 4]])).numpy()).all()
    g = rng.normal(size=(3, 5, 5)) + 4 * np.eye(5)
    s = both_ways(L.sqrtm, tf.constant(g))
    np.testing.assert_allclose(s @ s, g, atol=1e-10)
    # The principal root: its eigenvalues are the roots of g's with positive real part.
    ev = np.linalg.eigvals(s)
    assert (ev.real > 0).all()
    assert L.sqrtm(np.zeros((0, 0))).shape == (0, 0)
    with pytest.raises(ValueError):
        L.sqrtm(np.ones((2, 3)))


def test_sqrtm_gradient_as_tfs():
    a = np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]])
    w = np.arange(1.0, 10).reshape(3, 3)
    v = tf.Variable(a)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(L.sqrtm(v) * w)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [[0.18368683, 0.40098538, 0.75762876],
                                                             [0.8440549, 1.04219313, 1.48080535],
                                                             [1.8607563, 2.03236912, 2.87714764]], atol=1e-7)  # TF's
    check_grad(L.sqrtm, rng.normal(size=(4, 4)) + 3 * np.eye(4))


# ---------------------------------------------------------------- tridiagonal and banded
def tri_dense(d):
    m = d.shape[-1]
    return np.diag(d[1]) + np.diag(d[0][:-1], 1) + np.diag(d[2][1:], -1) if m else np.zeros((0, 0))


D = rng.normal(size=(3, 5)) + np.array([[0.0], [4.0], [0.0]])
RHS = rng.normal(size=(5, 2))


def test_tridiagonal_solve_formats_and_vectors():
    want = np.linalg.solve(tri_dense(D), RHS)
    np.testing.assert_allclose(both_ways(L.tridiagonal_solve, tf.constant(D), tf.constant(RHS)), want, atol=1e-12)
    np.testing.assert_allclose(L.tridiagonal_solve(D, RHS, partial_pivoting=False).numpy(), want, atol=1e-12)
    seq = (D[0, :-1], D[1], D[2, 1:])  # the short superdiagonal and subdiagonal are padded, as TF
    np.testing.assert_allclose(L.tridiagonal_solve(seq, RHS, diagonals_format="sequence").numpy(), want, atol=1e-12)
    np.testing.assert_allclose(L.tridiagonal_solve((D[0], D[1], D[2]), RHS, diagonals_format="sequence").numpy(),
                               want, atol=1e-12)
    np.testing.assert_allclose(L.tridiagonal_solve(tri_dense(D), RHS, diagonals_format="matrix").numpy(), want,
                               atol=1e-12)
    np.testing.assert_allclose(L.tridiagonal_solve(D, RHS[:, 0]).numpy(), want[:, 0], atol=1e-12)
    # transpose_rhs: rhs [K, M] is solved as [M, K] (the result stays [M, K], as TF's).
    np.testing.assert_allclose(L.tridiagonal_solve(D, RHS.T, transpose_rhs=True).numpy(), want, atol=1e-12)


def test_tridiagonal_solve_pivoting_singular_and_gradient():
    d = np.array([[1.0, 1, 0], [0, 0, 1], [0, 1, 1]])  # a zero first pivot
    rhs = np.array([[1.0], [2], [3]])
    np.testing.assert_allclose(L.tridiagonal_solve(d, rhs).numpy(), np.linalg.solve(tri_dense(d), rhs), atol=1e-12)
    assert np.isnan(L.tridiagonal_solve(d, rhs, partial_pivoting=False).numpy()).all()
    assert np.isnan(L.tridiagonal_solve(np.zeros((3, 3)), rhs).numpy()).all()
    check_grad(lambda v: L.tridiagonal_solve(v, RHS), D)
    check_grad(lambda v: L.tridiagonal_solve(D, v, partial_pivoting=False), RHS)


def test_tridiagonal_errors():
    with pytest.raises(ValueError, match="Expected 3 diagonals"):
        L.tridiagonal_solve(np.ones((2, 4)), np.ones((4, 1)))
    with pytest.raises(ValueError, match="left-hand"):
        L.tridiagonal_solve(D, np.ones((6, 1)))
    with pytest.raises(ValueError, match="diagonals_format"):
        L.tridiagonal_solve(D, RHS, diagonals_format="banded")
    with pytest.raises(ValueError, match="sequence of length 3"):
        L.tridiagonal_solve((D[0], D[1]), RHS, diagonals_format="sequence")


def test_tridiagonal_matmul_formats_and_gradient():
    want = tri_dense(D) @ RHS
    np.testing.assert_allclose(both_ways(L.tridiagonal_matmul, tf.constant(D), tf.constant(RHS)), want, atol=1e-12)
    np.testing.assert_allclose(L.tridiagonal_matmul(tuple(D), RHS, diagonals_format="sequence").numpy(), want,
                               atol=1e-12)
    np.testing.assert_allclose(L.tridiagonal_matmul(tri_dense(D), RHS, diagonals_format="matrix").numpy(), want,
                               atol=1e-12)
    check_grad(lambda v: L.tridiagonal_matmul(v, RHS), D)


def band_dense(bands, lower):
    k, m = bands.shape
    a = np.zeros((m, m))
    for j in range(k):
        row = bands[j] if lower else bands[k - 1 - j]
        for i in range(m):
            c = i - j if lower else i + j
            if 0 <= c < m:
                a[i, c] = row[i]
    return a


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_banded_triangular_solve(lower, adjoint):
    bands = rng.normal(size=(3, 5)) + (np.array([[3.0], [0], [0]]) if lower else np.array([[0.0], [0], [3]]))
    rhs = rng.normal(size=(5, 2))
    a = band_dense(bands, lower)
    want = np.linalg.solve(a.T if adjoint else a, rhs)
    got = both_ways(lambda b, r: L.banded_triangular_solve(b, r, lower=lower, adjoint=adjoint), tf.constant(bands),
                    tf.constant(rhs), tol=1e-11)
    np.testing.assert_allclose(got, want, atol=1e-11)
    check_grad(lambda v: L.banded_triangular_solve(v, rhs, lower=lower, adjoint=adjoint), bands)


def test_banded_triangular_solve_tf_example_and_errors():
    bands = np.array([[1.0, 2, 3, 4], [0, 1, 2, 3]], np.float32)
    np.testing.assert_allclose(L.banded_triangular_solve(bands, np.ones((4, 1), np.float32)).numpy()[:, 0],
                               [1, 0, 1 / 3, 0], atol=1e-6)  # TF's result
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        L.banded_triangular_solve(np.array([[0.0, 1, 1]]), np.ones((3, 1)))
    with pytest.raises(ValueError):
        L.banded_triangular_solve(bands, np.ones((3, 1), np.float32))


# ---------------------------------------------------------------- eigh_tridiagonal
def test_eigh_tridiagonal_values_vectors_and_selection():
    alpha, beta = np.array([1.0, 2, 3, 0.5]), np.array([0.5, 0.25, -1.0])
    dense = np.diag(alpha) + np.diag(beta, 1) + np.diag(beta, -1)
    want = np.linalg.eigvalsh(dense)
    np.testing.assert_allclose(L.eigh_tridiagonal(alpha, beta).numpy(), want, atol=1e-12)
    w, v = L.eigh_tridiagonal(alpha, beta, eigvals_only=False)
    np.testing.assert_allclose(dense @ v.numpy(), v.numpy() * w.numpy(), atol=1e-12)
    np.testing.assert_allclose(v.numpy().T @ v.numpy(), np.eye(4), atol=1e-12)
    np.testing.assert_allclose(L.eigh_tridiagonal(alpha, beta, select="i", select_range=[1, 2]).numpy(), want[1:3],
                               atol=1e-12)
    lo, hi = want[0] + 1e-3, want[2]
    np.testing.assert_allclose(L.eigh_tridiagonal(alpha, beta, select="v", select_range=[lo, hi]).numpy(),
                               want[(want > lo) & (want <= hi)], atol=1e-12)
    w, v = L.eigh_tridiagonal(alpha, beta, eigvals_only=False, select="i", select_range=[0, 1])
    assert v.shape == (4, 2)
    np.testing.assert_allclose(dense @ v.numpy(), v.numpy() * w.numpy(), atol=1e-12)


def test_eigh_tridiagonal_errors():
    with pytest.raises(ValueError):
        L.eigh_tridiagonal(np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        L.eigh_tridiagonal(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError):
        L.eigh_tridiagonal(np.ones(3), np.ones(2), select="x")


# ---------------------------------------------------------------- LinearOperator
def spd(n, seed):
    x = np.random.default_rng(seed).normal(size=(n, n))
    return x @ x.T + n * np.eye(n)


def operators():
    """(operator, its dense matrix in float64, square and non-singular?)"""
    g = np.random.default_rng(5)
    full = g.normal(size=(4, 4)) + 4 * np.eye(4)
    d = g.uniform(1, 2, size=4)
    tril = np.tril(g.normal(size=(4, 4))) + 3 * np.eye(4)
    a2, b2 = spd(2, 1), g.normal(size=(2, 2)) + 3 * np.eye(2)
    u = g.normal(size=(4, 2))
    dd = g.uniform(1, 2, size=2)
    v = g.normal(size=(4,))
    perm = np.array([2, 0, 3, 1])
    col, row = np.array([4.0, 1, 0.5, 0.2]), np.array([4.0, -1, 0.3, 0.1])
    tri = g.normal(size=(3, 4)) + np.array([[0.0], [4], [0]])
    return [
        (L.LinearOperatorFullMatrix(full), full),
        (L.LinearOperatorDiag(d), np.diag(d)),
        (L.LinearOperatorIdentity(4, dtype=tf.float64), np.eye(4)),
        (L.LinearOperatorScaledIdentity(4, np.array(2.5)), 2.5 * np.eye(4)),
        (L.LinearOperatorLowerTriangular(tril + np.triu(np.ones((4, 4)), 1)), tril),  # the upper part is not read
        (L.LinearOperatorComposition([L.LinearOperatorFullMatrix(full), L.LinearOperatorDiag(d)]), full @ np.diag(d)),
        (L.LinearOperatorAdjoint(L.LinearOperatorFullMatrix(full)), full.T),
        (L.LinearOperatorInversion(L.LinearOperatorFullMatrix(full)), np.linalg.inv(full)),
        (L.LinearOperatorBlockDiag([L.LinearOperatorFullMatrix(a2), L.LinearOperatorFullMatrix(b2)]),
         np.block([[a2, np.zeros((2, 2))], [np.zeros((2, 2)), b2]])),
        (L.LinearOperatorKronecker([L.LinearOperatorFullMatrix(a2), L.LinearOperatorFullMatrix(b2)]), np.kron(a2, b2)),
        (L.LinearOperatorLowRankUpdate(L.LinearOperatorDiag(d), u, diag_update=dd), np.diag(d) + u @ np.diag(dd) @ u.T),
        (L.LinearOperatorLowRankUpdate(L.LinearOperatorFullMatrix(full), u, v=u[::-1].copy()),
         full + u @ u[::-1].T),
        (L.LinearOperatorHouseholder(v), np.eye(4) - 2 * np.outer(v, v) / v.dot(v)),
        (L.LinearOperatorPermutation(perm, dtype=tf.float64), np.eye(4)[perm]),
        (L.LinearOperatorToeplitz(col, row),
         np.array([[col[i - j] if i >= j else row[j - i] for j in range(4)] for i in range(4)])),
        (L.LinearOperatorTridiag(tri), tri_dense(tri)),
        (L.LinearOperatorBlockLowerTriangular([[L.LinearOperatorFullMatrix(a2)],
                                               [L.LinearOperatorFullMatrix(b2), L.LinearOperatorDiag(dd)]]),
         np.block([[a2, np.zeros((2, 2))], [b2, np.diag(dd)]])),
    ]


OPS = operators()


@pytest.mark.parametrize("op,dense", OPS, ids=[type(o).__name__ + str(i) for i, (o, _) in enumerate(OPS)])
def test_operator_methods_match_the_dense_matrix(op, dense):
    x = rng.normal(size=(4, 3))
    assert tuple(op.shape) == dense.shape and op.domain_dimension == 4 and op.range_dimension == 4
    assert op.dtype == tf.float64 and op.batch_shape == () and op.tensor_rank == 2
    tol = dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.to_dense().numpy(), dense, **tol)
    np.testing.assert_allclose(op.matmul(x).numpy(), dense @ x, **tol)
    np.testing.assert_allclose(op.matmul(x, adjoint=True).numpy(), dense.T @ x, **tol)
    np.testing.assert_allclose(op.matmul(x.T, adjoint_arg=True).numpy(), dense @ x, **tol)
    np.testing.assert_allclose((op @ x).numpy(), dense @ x, **tol)
    np.testing.assert_allclose(op.matvec(x[:, 0]).numpy(), dense @ x[:, 0], **tol)
    np.testing.assert_allclose(op.solve(x).numpy(), np.linalg.solve(dense, x), **tol)
    np.testing.assert_allclose(op.solve(x, adjoint=True).numpy(), np.linalg.solve(dense.T, x), **tol)
    np.testing.assert_allclose(op.solvevec(x[:, 0]).numpy(), np.linalg.solve(dense, x[:, 0]), **tol)
    np.testing.assert_allclose(op.determinant().numpy(), np.linalg.det(dense), **tol)
    np.testing.assert_allclose(op.log_abs_determinant().numpy(), np.linalg.slogdet(dense)[1], **tol)
    np.testing.assert_allclose(op.diag_part().numpy(), np.diag(dense), **tol)
    np.testing.assert_allclose(op.trace().numpy(), np.trace(dense), **tol)
    np.testing.assert_allclose(op.add_to_tensor(x[:, :1] * np.ones((4, 4))).numpy(), dense + x[:, :1], **tol)
    np.testing.assert_allclose(op.inverse().to_dense().numpy(), np.linalg.inv(dense), **tol)
    np.testing.assert_allclose(op.adjoint().to_dense().numpy(), dense.T, **tol)
    np.testing.assert_allclose(op.H.matmul(x).numpy(), dense.T @ x, **tol)


def test_operators_use_their_structure():
    d = L.LinearOperatorDiag([2.0, 4.0])
    assert isinstance(d.inverse(), L.LinearOperatorDiag)
    np.testing.assert_allclose(d.inverse().diag.numpy(), [0.5, 0.25])
    assert d.adjoint() is d and d.is_self_adjoint and d.is_square
    assert isinstance(d @ L.LinearOperatorDiag([1.0, 3.0]), L.LinearOperatorDiag)
    assert isinstance(L.LinearOperatorFullMatrix([[1.0, 2], [3, 4]]).adjoint(), L.LinearOperatorAdjoint)
    assert isinstance(L.LinearOperatorFullMatrix([[1.0, 2], [3, 4]]).inverse(), L.LinearOperatorInversion)
    h = L.LinearOperatorHouseholder([1.0, 2.0, 2.0])
    assert h.inverse() is h and float(h.determinant()) == -1.0
    assert float(L.LinearOperatorPermutation([1, 0, 2]).determinant()) == -1.0
    assert float(L.LinearOperatorPermutation([1, 2, 0]).determinant()) == 1.0
    c = L.LinearOperatorDiag([4.0, 9.0], is_positive_definite=True).cholesky()
    np.testing.assert_allclose(c.to_dense().numpy(), np.diag([2.0, 3.0]))


def test_batched_operators_and_gradients():
    d = rng.uniform(1, 2, size=(2, 3))
    op = L.LinearOperatorDiag(d)
    assert op.batch_shape == (2,) and tuple(op.shape) == (2, 3, 3)
    x = rng.normal(size=(2, 3, 1))
    np.testing.assert_allclose(op.solve(x).numpy(), x / d[..., None], atol=1e-12)
    full = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    f = L.LinearOperatorFullMatrix(full)
    np.testing.assert_allclose(f.log_abs_determinant().numpy(), np.linalg.slogdet(full)[1], atol=1e-12)
    np.testing.assert_allclose(L.LinearOperatorIdentity(3, batch_shape=[2], dtype=tf.float64).matmul(x).numpy(), x)
    check_grad(lambda v: L.LinearOperatorLowRankUpdate(L.LinearOperatorDiag(tf.ones([3], tf.float64) * 2.0), v)
               .solve(tf.constant(x[0])), rng.normal(size=(3, 1)))
    check_grad(lambda v: L.LinearOperatorTridiag(v).solve(tf.constant(x[0])),
               rng.normal(size=(3, 3)) + np.array([[0.0], [4], [0]]))


def test_operator_argument_names_and_hints():
    assert params(L.LinearOperatorDiag.__init__) == ["self", "diag", "is_non_singular", "is_self_adjoint",
                                                     "is_positive_definite", "is_square", "name"]
    assert params(L.LinearOperatorIdentity.__init__)[:4] == ["self", "num_rows", "batch_shape", "dtype"]
    assert params(L.LinearOperatorLowRankUpdate.__init__)[:6] == ["self", "base_operator", "u", "diag_update", "v",
                                                                  "is_diag_update_positive"]
    assert params(L.LinearOperator.matmul)[:4] == ["self", "x", "adjoint", "adjoint_arg"]
    assert L.LinearOperatorDiag([1.0]).name == "LinearOperatorDiag"
    with pytest.raises(ValueError, match="positive definite matrix is always non-singular"):
        L.LinearOperatorDiag([1.0, 2.0], is_non_singular=False, is_positive_definite=True)


def test_operator_errors():
    with pytest.raises(NotImplementedError, match="expected to be singular"):
        L.LinearOperatorDiag([1.0, 2.0], is_non_singular=False).solve(np.ones((2, 1), np.float32))
    with pytest.raises(NotImplementedError, match="not be square"):
        L.LinearOperatorFullMatrix(np.ones((2, 3))).determinant()
    with pytest.raises(ValueError):
        L.LinearOperatorFullMatrix(np.ones((3, 3))).matmul(np.ones((2, 1)))
    with pytest.raises(TypeError):
        L.LinearOperatorFullMatrix(np.ones((2, 2))).matmul(tf.ones([2, 1], tf.float32))
    with pytest.raises(ValueError):
        L.LinearOperatorComposition([L.LinearOperatorFullMatrix(np.ones((2, 3))),
                                     L.LinearOperatorFullMatrix(np.ones((2, 2)))])
    with pytest.raises(tf.errors.InvalidArgumentError):
        L.LinearOperatorPermutation([0, 0, 1])
    z = L.LinearOperatorZeros(3, dtype=tf.float64)
    np.testing.assert_allclose(z.matmul(np.ones((3, 2))).numpy(), np.zeros((3, 2)))
    assert float(z.determinant()) == 0.0 and float(z.log_abs_determinant()) == -np.inf
    with pytest.raises(NotImplementedError):
        z.solve(np.ones((3, 1)))
    assert tuple(L.LinearOperatorZeros(2, 3, is_square=False, is_self_adjoint=False).shape) == (2, 3)
    with pytest.raises(ValueError, match="is_square=True"):
        L.LinearOperatorZeros(2, 3)
    with pytest.raises(ValueError, match="self-adjoint matrix is always square"):
        L.LinearOperatorZeros(2, 3, is_square=False)


def test_operators_built_inside_a_function_trace_as_eager():
    g = np.random.default_rng(8)
    d, u, x = g.uniform(1, 2, 4), g.normal(size=(4, 2)), g.normal(size=(4, 3))
    a2, b2 = g.normal(size=(2, 2)) + 3 * np.eye(2), g.normal(size=(2, 2)) + 3 * np.eye(2)
    tri = g.normal(size=(3, 4)) + np.array([[0.0], [4], [0]])

    def f(d, u, x, a2, b2, tri, perm):
        ones = tf.ones([4, 3], tf.float64)
        update = L.LinearOperatorLowRankUpdate(L.LinearOperatorDiag(d), u)
        permutation = L.LinearOperatorPermutation(perm, dtype=tf.float64)
        return tf.stack([
            L.LinearOperatorDiag(d).solve(x), update.solve(x), update.log_abs_determinant() * ones,
            L.LinearOperatorKronecker([L.LinearOperatorFullMatrix(a2), L.LinearOperatorFullMatrix(b2)]).matmul(x),
            L.LinearOperatorTridiag(tri).solve(x), L.LinearOperatorHouseholder(d).matmul(x),
            permutation.matmul(x), permutation.determinant() * ones])

    args = [tf.constant(v) for v in (d, u, x, a2, b2, tri)] + [tf.constant(np.array([2, 0, 3, 1], np.int32))]
    got = both_ways(f, *args, tol=1e-12)
    np.testing.assert_allclose(got[1], np.linalg.solve(np.diag(d) + u @ u.T, x), atol=1e-12)
    assert (got[7] == -1.0).all()  # [2, 0, 3, 1] is one 4-cycle: odd
