"""The wheel as a user gets it: scripts/make_wheel.py builds it from the release tree, a fresh
virtualenv installs it with pip, and outside the source tree (no PYTHONPATH, no
LD_LIBRARY_PATH) it runs the seed program and a small fit. Its extension must find every
library it needs inside the wheel (eagerflow.libs/), except the C and C++ runtimes the
manylinux policy allows, so a machine without the -dev packages runs it too.

    check_wheel.py SOURCE_DIR BUILD_DIR WORK_DIR   (CTest: wheel_install)
"""
import glob
import os
import shutil
import subprocess
import sys

source, build, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONHOME")}


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    return r.stdout


wheel = run([sys.executable, os.path.join(source, "scripts", "make_wheel.py"), "--build", build,
             "--out", os.path.join(work, "dist")]).strip().splitlines()[-1]
print("wheel:", os.path.basename(wheel), f"{os.path.getsize(wheel) / 2**20:.0f} MiB")
assert "manylinux" in os.path.basename(wheel), "auditwheel did not give the wheel a manylinux tag: " + wheel

venv = os.path.join(work, "venv")
run([sys.executable, "-m", "venv", venv])
py = os.path.join(venv, "bin", "python")
run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel])

# Every library the installed extension loads comes from the wheel or is a runtime every Linux has.
core = run([py, "-c", "import eagerflow._core as c; print(c.__file__)"], cwd=work).strip()
allowed = ("libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "libpthread.so", "libdl.so", "librt.so",
           "ld-linux", "linux-vdso", "libresolv.so", "libz.so")
ldd = run(["ldd", core])
assert "not found" not in ldd, ldd
for line in ldd.splitlines():
    name = os.path.basename(line.split()[0])
    if name.startswith(allowed):
        continue
    assert "eagerflow.libs" in line or "eagerflow/" in line, f"{name} is not bundled in the wheel:\n{ldd}"
assert "libmpi" not in ldd, "Open MPI must be loaded at run time, not bundled or linked:\n" + ldd

# The seed program: the layer's Python runs once, at the first trace.
seed = run([py, os.path.join(source, "examples", "python", "seed.py")], cwd=work)
assert seed.count("Currently running eagerly") == 1, seed

fit = run([py, "-c", """
import numpy as np, eagerflow as ef
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype(np.float32)
y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
model = ef.keras.Sequential([ef.keras.layers.Dense(16, activation="relu"), ef.keras.layers.Dense(2)])
model.compile(optimizer=ef.keras.optimizers.Adam(learning_rate=1e-2),
              loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
h = model.fit(x, y, batch_size=32, epochs=8, verbose=0)
loss, acc = model.evaluate(x, y, verbose=0)
print("accuracy", acc, "traced", model.tracing_count if hasattr(model, "tracing_count") else "?")
assert acc > 0.9, acc
assert h.history["loss"][-1] < h.history["loss"][0]
"""], cwd=work)
print(fit.strip())
print("wheel installs and runs in a fresh virtualenv")
