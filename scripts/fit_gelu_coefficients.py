"""Fits the float32 coefficients of eagerflow's gelu kernel (src/kernels/cpu/vec/vec_kernels.inc).

Phi(x), the standard normal CDF, in two pieces:
  |x| <= 0.75:  Phi(x) = 0.5 + x * A(x^2)                  (A: a polynomial of degree 4)
  |x| >  0.75:  Phi(-s) = exp(-s^2 / 2) * P(s) / Q(s)       (degrees 4 and 5, Q(0) = 1)
                Phi(s)  = 1 - Phi(-s)
P/Q approximates exp(s^2/2) * Phi(-s) = erfcx(s / sqrt 2) / 2, which is smooth and has no
cancellation; the exponential is shared with the gradient's phi(x) = exp(-x^2/2) / sqrt(2 pi).
Both fits are near-minimax in relative error (reweighted least squares on Chebyshev nodes):
about 1e-10 and 6e-10, far below float32's 6e-8. The kernel's exp(-s^2 / 2) has its own fit
too (e^r on |r| <= ln 2 / 2, 3e-9).

Needs numpy and scipy (not a dependency of the project: run it from any environment that has
them). Prints the C++ arrays.
"""
import numpy as np
from scipy.special import erfcx, ndtr

X0, HI = 0.75, 14.0


def chebyshev_nodes(lo, hi, n=6000):
    return np.cos(np.pi * (np.arange(n) + 0.5) / n) * 0.5 * (hi - lo) + 0.5 * (hi + lo)


def fit_small(degree=4):
    x = chebyshev_nodes(1e-6, X0)
    y = (ndtr(x) - 0.5) / x
    v = np.vander(x * x, degree + 1, increasing=True)
    w = np.ones_like(x)
    for _ in range(30):
        c = np.linalg.lstsq(v * (w / y)[:, None], w, rcond=None)[0]
        e = np.abs(v @ c - y) / y
        w = w * (e / e.max()) ** 0.5 + 1e-12
    return c, e.max()


def fit_tail(p=4, q=5):
    s = chebyshev_nodes(X0, HI)
    y = 0.5 * erfcx(s / np.sqrt(2))
    q_prev, w = np.ones_like(s), np.ones_like(s)
    for _ in range(40):  # linearized: P(s) - y * (Q(s) - 1) = y, weighted by 1 / (y * Q_prev)
        a_mat = np.hstack([np.vander(s, p + 1, increasing=True), -y[:, None] * np.vander(s, q + 1, increasing=True)[:, 1:]])
        weight = w / (y * np.abs(q_prev))
        c = np.linalg.lstsq(a_mat * weight[:, None], y * weight, rcond=None)[0]
        num, den = c[: p + 1], np.concatenate([[1.0], c[p + 1 :]])
        q_prev = np.polyval(den[::-1], s)
        e = np.abs(np.polyval(num[::-1], s) / q_prev - y) / y
        w = w * (e / e.max()) ** 0.3 + 1e-12
    roots = np.roots(den[::-1])
    assert not any(abs(r.imag) < 1e-9 and r.real > 0 for r in roots), "Q has a positive root"
    return num, den, e.max()


def fit_exp(degree=6):
    """e^r = 1 + r + r^2 E(r) on |r| <= ln 2 / 2 (the range left after t - n ln 2), E of degree
    degree - 2, for the kernel's own exp of -s^2 / 2."""
    half = np.log(2) / 2 + 1e-3
    r = chebyshev_nodes(-half, half)
    y = np.exp(r)
    t = (y - 1 - r) / (r * r)
    v = np.vander(r, degree - 1, increasing=True)
    w = np.ones_like(r)
    for _ in range(30):
        scale = w * r * r / y
        c = np.linalg.lstsq(v * scale[:, None], t * scale, rcond=None)[0]
        e = np.abs(1 + r + r * r * (v @ c) - y) / y
        w = w * (e / e.max()) ** 0.5 + 1e-12
    return c, e.max()


def cxx(name, coefs):
    return "constexpr float %s[] = {%s};" % (name, ", ".join(repr(float(np.float32(c))) + "f" for c in coefs))


if __name__ == "__main__":
    small, e_small = fit_small()
    num, den, e_tail = fit_tail()
    print("// relative errors of the fits: %.1e (|x| <= %g), %.1e (tail)" % (e_small, X0, e_tail))
    print(cxx("kPhiSmall", small))
    print(cxx("kPhiTailP", num))
    print(cxx("kPhiTailQ", den))
    expo, e_exp = fit_exp()
    print("// relative error of exp's fit on |r| <= ln 2 / 2: %.1e" % e_exp)
    print(cxx("kExp", expo))
