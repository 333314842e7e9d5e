"""Eager ef.scan keeps nothing per step when no tape records it: 1e5 scalar steps add about the
stacked ys (0.4 MB), not the ~50 MB that keeping each step's tensors cost. Coarse and in a fresh
process (peak RSS of this one depends on the tests before)."""
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import eagerflow as ef

    def peak_kb():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])

    def step(c, x):
        return c + x, c * 2.0

    ef.scan(step, ef.constant(0.0), ef.constant(np.ones(1000, np.float32)))  # warm up
    xs = ef.constant(np.ones(100_000, np.float32))
    before = peak_kb()
    carry, ys = ef.scan(step, ef.constant(0.0), xs)
    grown_mb = (peak_kb() - before) / 1024
    assert float(carry) == 100_000.0 and ys.shape == (100_000,), (carry, ys.shape)
    assert float(ys[3]) == 6.0
    print(grown_mb)
    """
)


def test_eager_scan_without_a_tape_keeps_nothing_per_step():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    grown_mb = float(r.stdout.strip().splitlines()[-1])
    assert grown_mb < 20, f"peak RSS grew by {grown_mb:.1f} MB over 1e5 eager scan steps"


def test_eager_scan_under_a_tape_still_differentiates():
    import numpy as np

    import eagerflow as ef

    xs = ef.constant(np.arange(1.0, 6.0, dtype=np.float32))
    w = ef.Variable(2.0)
    with ef.GradientTape() as tape:
        carry, ys = ef.scan(lambda c, x: (c + w * x, c), ef.constant(0.0), xs)
        loss = ef.reduce_sum(ys) + carry
    # ys = [0, w, 3w, 6w, 10w], carry = 15w: d/dw = 20 + 15
    assert abs(float(tape.gradient(loss, w)) - 35.0) < 1e-5
