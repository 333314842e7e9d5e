"""Central differences for the Python tests: one definition of the directional-derivative check
that the fused ops' tests (attention, layer_norm) run against their analytic gradients."""
import numpy as np


def assert_directional_derivatives(f, args, grads, eps=1e-6, seed=20):
    """For each argument i, <grads[i], d> must equal (f(.., a_i + eps d, ..) - f(.., a_i - eps d, ..)) / 2 eps
    for a random float64 direction d (f is evaluated in float64 by the caller)."""
    for i, a in enumerate(args):
        d = np.random.default_rng(seed + i).normal(size=a.shape)
        plus = [b + d * eps if j == i else b for j, b in enumerate(args)]
        minus = [b - d * eps if j == i else b for j, b in enumerate(args)]
        numeric = (f(*plus) - f(*minus)) / (2 * eps)
        assert abs((grads[i] * d).sum() - numeric) < 1e-6 * (1 + abs(numeric)), i
