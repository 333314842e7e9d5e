"""tf.random's gamma, poisson, stateless gamma/poisson/binomial/parameterized truncated normal, the
candidate samplers, and tf.nn's compute_accidental_hits, nce_loss and sampled_softmax_loss, as TF
2.21 defines them: shapes, dtypes, seeds, errors; distributions by their moments (tolerances from
the sample size); the losses against a NumPy reference given the same sampled_values."""
import math

import numpy as np
import pytest

import eagerflow as tf

N = 40000
FLT_MAX = float(np.finfo(np.float32).max)


def check_moments(x, mean, var, mu4, what=""):
    """Mean within 5 standard errors, variance within 5 of its standard errors."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    assert abs(x.mean(0) - mean) <= 5 * math.sqrt(var / n), (what, x.mean(0), mean)
    assert abs(x.var(0, ddof=1) - var) <= 5 * math.sqrt((mu4 - var * var) / n), (what, x.var(0, ddof=1), var)


# ------------------------------------------------------------------ shapes, dtypes, errors

def test_shapes_and_dtypes_as_tf():
    assert tf.random.gamma([2, 3], [1.0, 2.0], [[1.0], [2.0], [3.0]]).shape == (2, 3, 3, 2)
    assert tf.random.gamma([2], 1.5, dtype=tf.float64).dtype == tf.float64
    assert tf.random.gamma([2], 1.5, dtype="float16").dtype == tf.float16
    p = tf.random.poisson([2, 3], [1.0, 2.0])
    assert p.shape == (2, 3, 2) and p.dtype == tf.float32
    assert tf.random.poisson([2], [1.0, 2.0], dtype=tf.int64).dtype == tf.int64
    assert tf.random.stateless_gamma([3, 2], [1, 2], [1.0, 2.0], [[1.0], [2.0], [3.0]]).shape == (3, 2)
    s = tf.random.stateless_poisson([3, 2], [1, 2], [1.0, 2.0])
    assert s.shape == (3, 2) and s.dtype == tf.int32
    b = tf.random.stateless_binomial([3], [1, 2], [10.0, 5, 3], 0.5)
    assert b.dtype == tf.int32
    assert tf.random.stateless_binomial([3], [1, 2], 10, 0.5, output_dtype=tf.float32).dtype == tf.float32
    t = tf.random.stateless_parameterized_truncated_normal([3, 2], [1, 2], means=[[0.0], [1.0], [2.0]])
    assert t.shape == (3, 2) and t.dtype == tf.float32
    assert tf.random.stateless_parameterized_truncated_normal(
        [3], [1, 2], tf.constant(0.0, tf.float64), tf.constant(1.0, tf.float64), tf.constant(-1.0, tf.float64),
        tf.constant(1.0, tf.float64)).dtype == tf.float64


def test_tf_edge_values():
    assert np.isnan(tf.random.gamma([3], -1.0).numpy()).all()
    np.testing.assert_array_equal(tf.random.gamma([3], 0.0).numpy(), np.finfo(np.float32).tiny)
    assert (tf.random.gamma([500], 1e-3, dtype=tf.float64).numpy() >= np.finfo(np.float64).tiny).all()
    np.testing.assert_array_equal(tf.random.poisson([3], -1.0, dtype=tf.int32).numpy(), 0)
    np.testing.assert_array_equal(tf.random.stateless_binomial([3], [1, 2], [10.0, 5, 3], 1.5).numpy(), [10, 5, 3])
    np.testing.assert_array_equal(tf.random.stateless_binomial([3], [1, 2], -10.0, 0.5).numpy(), 0)
    x = tf.random.stateless_parameterized_truncated_normal([100], [1, 2], minvals=10.0, maxvals=float("inf")).numpy()
    assert (x >= 10).all() and x.mean() < 10.5


def test_errors_as_tf():
    with pytest.raises(TypeError):
        tf.random.gamma([3], 1.0, dtype=tf.int32)
    with pytest.raises(ValueError):
        tf.random.gamma([3], tf.constant(1.0, tf.float64))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.stateless_gamma([3, 2], [1, 2], [1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.stateless_poisson([3], [1, 2], [1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.poisson([3], 3.0, dtype=tf.bool)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.stateless_binomial([3], [1, 2], tf.constant(10.0, tf.float64), tf.constant(0.5, tf.float32))
    for kw in (dict(stddevs=0.0), dict(stddevs=-1.0), dict(minvals=2.0, maxvals=1.0), dict(minvals=5.0, maxvals=5.0)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="invalid parameters"):
            tf.random.stateless_parameterized_truncated_normal([3], [1, 2], **kw)
    with pytest.raises(ValueError):
        tf.random.stateless_gamma([3], [1, 2, 3], 1.0)


# ------------------------------------------------------------------ distributions

def test_gamma_moments():
    for alpha, beta in ((0.3, 1.0), (2.5, 4.0), (40.0, 0.5)):
        x = tf.random.gamma([N], alpha, beta, dtype=tf.float64, seed=3).numpy()
        check_moments(x, alpha / beta, alpha / beta ** 2, 3 * alpha * (alpha + 2) / beta ** 4, alpha)
        y = tf.random.stateless_gamma([N], [4, int(alpha * 10)], alpha, beta, dtype=tf.float64).numpy()
        check_moments(y, alpha / beta, alpha / beta ** 2, 3 * alpha * (alpha + 2) / beta ** 4, alpha)


def test_poisson_moments_and_support():
    for lam in (0.4, 6.0, 250.0):
        x = tf.random.poisson([N], lam, dtype=tf.int64, seed=5).numpy()
        assert (x >= 0).all()
        check_moments(x, lam, lam, lam * (1 + 3 * lam), lam)
        y = tf.random.stateless_poisson([N], [7, 1], lam, dtype=tf.float32).numpy()
        assert (y == np.floor(y)).all() and (y >= 0).all()
        check_moments(y, lam, lam, lam * (1 + 3 * lam), lam)


def test_binomial_moments_and_support():
    for n, p in ((12.0, 0.3), (30.0, 0.9), (2000.0, 0.45)):
        x = tf.random.stateless_binomial([N], [2, 9], n, p).numpy()
        assert ((x >= 0) & (x <= n)).all()
        v = n * p * (1 - p)
        check_moments(x, n * p, v, v * (1 + 3 * (n - 2) * p * (1 - p)), (n, p))


def test_parameterized_truncated_normal_moments_and_bounds():
    def phi(z):
        return 0.0 if math.isinf(z) else math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    def cdf(z):
        return 0.5 * math.erfc(-z / math.sqrt(2))

    for mu, sd, lo, hi in ((0.0, 1.0, -2.0, 2.0), (1.0, 2.0, -math.inf, 0.0), (0.0, 1.0, 4.0, 4.5), (2.0, 0.5, 1.9, 2.1)):
        x = tf.random.stateless_parameterized_truncated_normal([N], [3, 3], mu, sd, lo, hi).numpy().astype(np.float64)
        assert ((x >= lo) & (x <= hi)).all()
        a, b = (lo - mu) / sd, (hi - mu) / sd
        z = cdf(b) - cdf(a)
        r = (phi(a) - phi(b)) / z
        aphi = 0.0 if math.isinf(a) else a * phi(a)
        bphi = 0.0 if math.isinf(b) else b * phi(b)
        var = sd * sd * (1 + (aphi - bphi) / z - r * r)
        check_moments(x, mu + sd * r, var, 3 * var * var, (mu, sd, lo, hi))


# ------------------------------------------------------------------ seeds

def test_stateless_draws_are_pure_functions_of_the_seed_eager_and_traced():
    def draw(a):
        return [tf.random.stateless_gamma([4, 3], [5, 6], a), tf.random.stateless_poisson([4, 3], [5, 6], a),
                tf.random.stateless_binomial([4, 3], [5, 6], a * 3.0, a / 10.0),
                tf.random.stateless_parameterized_truncated_normal([4, 3], [5, 6], a, a, -a, a * 2.0)]

    a = tf.constant([0.5, 2.0, 9.0])
    eager = [t.numpy() for t in draw(a)]
    for x, y in zip(eager, draw(a)):
        np.testing.assert_array_equal(x, y.numpy())
    traced = tf.function(draw)
    for _ in range(2):
        for x, y in zip(eager, traced(a)):
            np.testing.assert_array_equal(x, y.numpy())
    assert not np.array_equal(tf.random.stateless_gamma([4, 3], [5, 7], a).numpy(), eager[0])


def test_stateful_draws_change_per_call_and_repeat_after_set_seed():
    def run():
        tf.random.set_seed(11)
        f = tf.function(lambda lam: tf.random.gamma([5], lam, seed=2))
        return [f(tf.constant(3.0)).numpy() for _ in range(2)] + [tf.random.poisson([5], 20.0).numpy()]

    a, b = run(), run()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[1])


# ------------------------------------------------------------------ gamma's gradient

def _lower_regularized_gamma(a, x):
    """P(a, x) by its power series (an independent float64 reference)."""
    term = math.exp(a * math.log(x) - x - math.lgamma(a + 1))
    total = term
    n = 1
    while term > 1e-18 * total:
        term *= x / (a + n)
        total += term
        n += 1
    return total


def test_gamma_gradient_is_the_implicit_reparameterization():
    # dx/dalpha = -(dP/dalpha) / p(x) at each draw, P by central differences of its series.
    for alpha in (0.7, 2.0, 6.0):
        a = tf.constant(alpha, tf.float64)
        for seed in range(4):
            with tf.GradientTape() as tape:
                tape.watch(a)
                x = tf.random.stateless_gamma([1], [seed, 1], a, dtype=tf.float64)
            g = float(tape.gradient(x, a).numpy())
            xv = float(x.numpy()[0])
            h = 1e-5
            dp = (_lower_regularized_gamma(alpha + h, xv) - _lower_regularized_gamma(alpha - h, xv)) / (2 * h)
            density = math.exp((alpha - 1) * math.log(xv) - xv - math.lgamma(alpha))
            assert g == pytest.approx(-dp / density, rel=1e-5), (alpha, xv)


def test_gamma_gradient_matches_the_means_derivatives():
    # E[x] = alpha / beta: d mean/d alpha = 1/beta, d mean/d beta = -alpha/beta^2.
    alpha, beta = tf.Variable(1.5, dtype=tf.float64), tf.Variable(2.0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        m = tf.reduce_mean(tf.random.gamma([N], alpha, beta, dtype=tf.float64, seed=4))
    ga, gb = tape.gradient(m, [alpha, beta])
    assert float(ga.numpy()) == pytest.approx(0.5, abs=0.02)
    assert float(gb.numpy()) == pytest.approx(-1.5 / 4, abs=0.02)


# ------------------------------------------------------------------ candidate samplers

TRUE = tf.constant([[1], [3]], tf.int64)


def test_sampler_results_are_tfs_named_tuples():
    r = tf.random.uniform_candidate_sampler(TRUE, 1, 3, True, 5, seed=1)
    assert type(r).__name__ == "UniformCandidateSampler"
    assert r.sampled_candidates.dtype == tf.int64 and r.sampled_candidates.shape == (3,)
    assert r.true_expected_count.dtype == tf.float32 and r.true_expected_count.shape == (2, 1)
    assert r.sampled_expected_count.shape == (3,)
    assert len(set(r.sampled_candidates.numpy().tolist())) == 3
    assert tf.nn.uniform_candidate_sampler is tf.random.uniform_candidate_sampler
    r = tf.random.uniform_candidate_sampler([[1], [3]], 1, 3, True, 5)  # lists become int64
    assert r.sampled_candidates.shape == (3,)


def test_log_uniform_expected_counts_are_tfs_formula():
    r = tf.random.log_uniform_candidate_sampler(TRUE, 1, 40, False, 50, seed=3)
    p = lambda k: np.log((k + 2.0) / (k + 1.0)) / np.log(51.0)  # noqa: E731
    np.testing.assert_allclose(r.sampled_expected_count.numpy(), 40 * p(r.sampled_candidates.numpy()), rtol=1e-6)
    np.testing.assert_allclose(r.true_expected_count.numpy(), 40 * p(np.array([[1], [3]])), rtol=1e-6)
    # unique: 1 - (1 - p)^tries, one number of tries for all
    r = tf.random.log_uniform_candidate_sampler(TRUE, 1, 20, True, 50, seed=3)
    c, e = r.sampled_candidates.numpy(), r.sampled_expected_count.numpy().astype(np.float64)
    assert len(set(c.tolist())) == 20
    tries = np.log1p(-e) / np.log1p(-p(c))
    assert tries.min() >= 19.99 and np.ptp(tries) < 1e-2
    np.testing.assert_allclose(e, 1 - (1 - p(c)) ** round(tries[0]), rtol=1e-5)


def test_log_uniform_frequencies():
    counts = np.zeros(8)
    for _ in range(300):
        c = tf.random.log_uniform_candidate_sampler(TRUE, 1, 40, False, 8).sampled_candidates.numpy()
        counts += np.bincount(c, minlength=8)
    p = np.log((np.arange(8) + 2.0) / (np.arange(8) + 1.0)) / np.log(9.0)
    n = counts.sum()
    assert (np.abs(counts / n - p) <= 5 * np.sqrt(p * (1 - p) / n)).all()


def test_fixed_unigram_as_tf():
    # TF 2.21's expected counts for these arguments (non-unique: p * num_sampled).
    r = tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 3, False, 5, unigrams=[1, 2, 3], num_reserved_ids=2,
                                                  distortion=0.5, seed=1)
    np.testing.assert_allclose(r.true_expected_count.numpy(), [[0.0], [1.023244]], rtol=1e-5)
    assert set(r.sampled_candidates.numpy().tolist()) <= {2, 3, 4}
    r = tf.random.fixed_unigram_candidate_sampler([[1], [0]], 1, 4, False, 2, unigrams=[9, 3, 7, 5, 1],
                                                  distortion=2.0, num_reserved_ids=1, num_shards=2, shard=1, seed=1)
    np.testing.assert_allclose(r.true_expected_count.numpy(), [[2.9411764], [1.0588236]], rtol=1e-5)


def test_fixed_unigram_vocab_file(tmp_path):
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("a,1\nb,2\nc,3\nd,4\n")
    r = tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 5, False, 4, vocab_file=str(vocab), seed=2)
    np.testing.assert_allclose(r.true_expected_count.numpy(), [[5 * 2 / 10], [5 * 4 / 10]], rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 3, False, 4, vocab_file=str(vocab), unigrams=[1, 2, 3, 4])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 3, False, 4)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 3, False, 5, unigrams=[1, 2, 3])


def test_learned_unigram_learns_the_true_classes():
    # Weights start at 1 and grow by one per true class seen, after each draw: TF's 0.6 then 3 * 2/7.
    args = (TRUE, 1, 3, False, 5)
    first = tf.random.learned_unigram_candidate_sampler(*args, seed=77)
    np.testing.assert_allclose(first.true_expected_count.numpy(), [[0.6], [0.6]], rtol=1e-6)
    second = tf.random.learned_unigram_candidate_sampler(*args, seed=77)
    np.testing.assert_allclose(second.true_expected_count.numpy(), [[6 / 7], [6 / 7]], rtol=1e-6)


def test_all_candidate_sampler_and_sampler_errors():
    r = tf.nn.all_candidate_sampler(TRUE, 1, 4, True)
    np.testing.assert_array_equal(r.sampled_candidates.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(r.true_expected_count.numpy(), [[1], [1]])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.all_candidate_sampler(TRUE, 1, 2, True)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.uniform_candidate_sampler(TRUE, 1, 6, True, 5)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.uniform_candidate_sampler(TRUE, 2, 3, True, 5)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.uniform_candidate_sampler(tf.constant([[1], [3]]), 1, 3, True, 5)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.uniform_candidate_sampler(tf.constant([[1], [7]], tf.int64), 1, 3, True, 5)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 3, True, 5, unigrams=[1, 0, 0, 0, 1])


def test_compute_accidental_hits_as_tf():
    r = tf.nn.compute_accidental_hits(tf.constant([[1, 2], [3, 3], [0, 4]], tf.int64),
                                      tf.constant([3, 1, 4, 3], tf.int64), 2)
    np.testing.assert_array_equal(r.indices.numpy(), [0, 1, 1, 2])
    assert r.indices.dtype == tf.int32 and r.ids.dtype == tf.int64
    np.testing.assert_array_equal(r.ids.numpy(), [1, 3, 3, 2])
    np.testing.assert_array_equal(r.weights.numpy(), np.full(4, -FLT_MAX, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.compute_accidental_hits(tf.constant([[1, 2]], tf.int64), tf.constant([1], tf.int64), 1)


# ------------------------------------------------------------------ sampled losses

def reference_logits(w, b, labels, x, sampled, true_count, sampled_count, num_true, remove_hits):
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels] - np.log(true_count)
    sampled_logits = x @ w[sampled].T + b[sampled]
    if remove_hits:
        for i in range(labels.shape[0]):
            for label in labels[i]:
                at = np.nonzero(sampled == label)[0]
                if at.size:
                    sampled_logits[i, at[-1]] = -FLT_MAX
    sampled_logits = sampled_logits - np.log(sampled_count)
    logits = np.concatenate([true_logits, sampled_logits], 1)
    targets = np.concatenate([np.full(true_logits.shape, 1.0 / num_true), np.zeros(sampled_logits.shape)], 1)
    return logits, targets


def reference_nce(*args):
    z, y = reference_logits(*args)
    return (np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))).sum(1)


def reference_softmax(*args):
    z, y = reference_logits(*args)
    m = z.max(1, keepdims=True)
    log_softmax = z - m - np.log(np.exp(z - m).sum(1, keepdims=True))
    return -(y * log_softmax).sum(1)


def loss_problem(num_true, seed=0):
    rng = np.random.default_rng(seed)
    w, b, x = rng.normal(size=(10, 4)), rng.normal(size=10), rng.normal(size=(3, 4))
    labels = np.array([[1, 4], [7, 2], [4, 9]])[:, :num_true]
    sampled = np.array([4, 0, 7, 5, 7])  # hits: 4 (rows 0 and 2), 7 twice (row 1: the last one)
    true_count = rng.uniform(0.2, 1.5, size=(3, num_true))
    sampled_count = rng.uniform(0.2, 1.5, size=5)
    return w, b, labels, x, sampled, true_count, sampled_count


@pytest.mark.parametrize("loss", ["nce", "softmax"])
@pytest.mark.parametrize("num_true", [1, 2])
@pytest.mark.parametrize("remove", [False, True])
def test_sampled_losses_match_numpy_and_differentiate(loss, num_true, remove):
    w, b, labels, x, sampled, tc, sc = loss_problem(num_true)
    fn = tf.nn.nce_loss if loss == "nce" else tf.nn.sampled_softmax_loss
    ref = reference_nce if loss == "nce" else reference_softmax
    values = (tf.constant(sampled, tf.int64), tf.constant(tc), tf.constant(sc))

    def f(w_, b_, x_):
        return fn(w_, b_, tf.constant(labels, tf.int64), x_, num_sampled=5, num_classes=10, num_true=num_true,
                  sampled_values=values, remove_accidental_hits=remove)

    args = [tf.constant(w), tf.constant(b), tf.constant(x)]
    out = f(*args)
    assert out.shape == (3,)
    np.testing.assert_allclose(out.numpy(), ref(w, b, labels, x, sampled, tc, sc, num_true, remove), rtol=1e-10)
    np.testing.assert_allclose(tf.function(f)(*args).numpy(), out.numpy(), rtol=1e-12)
    # Gradients of sum(loss) by central differences of the NumPy reference.
    with tf.GradientTape() as tape:
        for a in args:
            tape.watch(a)
        total = tf.reduce_sum(f(*args))
    grads = tape.gradient(total, args)
    arrays = [w, b, x]
    for k, g in enumerate(grads):
        g = tf.convert_to_tensor(g).numpy()
        numeric = np.zeros_like(arrays[k])
        for idx in np.ndindex(arrays[k].shape):
            hi, lo = [a.copy() for a in arrays], [a.copy() for a in arrays]
            hi[k][idx] += 1e-6
            lo[k][idx] -= 1e-6
            numeric[idx] = (ref(hi[0], hi[1], labels, hi[2], sampled, tc, sc, num_true, remove).sum() -
                            ref(lo[0], lo[1], labels, lo[2], sampled, tc, sc, num_true, remove).sum()) / 2e-6
        np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-7)


def test_sampled_losses_take_sharded_weights_and_draw_their_own_samples():
    w, b, labels, x, sampled, tc, sc = loss_problem(1)
    values = (tf.constant(sampled, tf.int64), tf.constant(tc), tf.constant(sc))
    whole = tf.nn.sampled_softmax_loss(tf.constant(w), b, labels, x, 5, 10, sampled_values=values)
    shards = tf.nn.sampled_softmax_loss([tf.constant(w[:4]), tf.constant(w[4:])], b, labels, x, 5, 10,
                                        sampled_values=values)
    np.testing.assert_allclose(shards.numpy(), whole.numpy(), rtol=1e-12)
    # Without sampled_values: the log-uniform sampler (unique) draws them; a finite loss per example.
    drawn = tf.nn.nce_loss(tf.constant(w), b, labels, x, num_sampled=4, num_classes=10)
    assert drawn.shape == (3,) and np.isfinite(drawn.numpy()).all()
