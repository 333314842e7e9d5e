#!/usr/bin/env python3
"""Interop with the Python ecosystem: files eagerflow writes load with Python's safetensors
package, and files it writes load in eagerflow. Run by CTest with the interop virtualenv's
Python: interop_test.py TOOL WORKDIR"""
import os
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

tool, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)


def run(*args):
    status = os.spawnv(os.P_WAIT, tool, [tool, *args])
    assert status == 0, f"interop_tool {' '.join(args)} failed ({status})"


# eagerflow -> Python
path = os.path.join(work, "from_eagerflow.safetensors")
run("write-safetensors", path)
t = load_file(path)
np.testing.assert_array_equal(t["dense/kernel"], np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5)
assert t["dense/kernel"].dtype == np.float32
assert t["f64"].dtype == np.float64 and t["f64"][0] == 1.0 / 3.0 and t["f64"][1] == -1e300
assert t["i32"].dtype == np.int32 and list(t["i32"]) == [-5, 7]
assert t["i64"].dtype == np.int64 and list(t["i64"]) == [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
assert t["mask"].dtype == np.bool_ and list(t["mask"]) == [True, False, True]
assert t["scalar"].shape == () and t["scalar"] == 2.5
assert t["empty"].shape == (0, 4)
with safe_open(path, framework="numpy") as f:
    assert f.metadata() == {"written_by": "eagerflow"}, f.metadata()

# Python -> eagerflow
path = os.path.join(work, "from_python.safetensors")
save_file({"a": np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32), "b": np.array([-1, 0, 1], dtype=np.int64),
           "c": np.array([0.1], dtype=np.float64)}, path)
run("check-safetensors", path)
print("safetensors interop: ok")

# ONNX: exported models run in onnxruntime and agree with eagerflow. Tolerance: 1e-5 absolute
# and relative (different kernels: onnxruntime's MLAS against oneDNN and SLEEF).
import onnxruntime as ort

run("export-onnx", work)
io = load_file(os.path.join(work, "onnx_io.safetensors"))
for name in ("mlp", "cnn"):
    session = ort.InferenceSession(os.path.join(work, name + ".onnx"), providers=["CPUExecutionProvider"])
    (inp,) = session.get_inputs()
    assert inp.name == "inputs" and inp.shape == ["batch", 28, 28] and inp.type == "tensor(float)", (inp.name, inp.shape, inp.type)
    for batch in (5, 2):  # the batch is dynamic
        (got,) = session.run(None, {"inputs": io["x"][:batch]})
        np.testing.assert_allclose(got, io[name][:batch], rtol=1e-5, atol=1e-5, err_msg=name)
session = ort.InferenceSession(os.path.join(work, "many.onnx"), providers=["CPUExecutionProvider"])
outs = session.run(None, {"inputs": io["many_x"]})
assert len(outs) == 4
for i, got in enumerate(outs):
    np.testing.assert_allclose(got, io[f"many_{i}"], rtol=1e-5, atol=1e-5, err_msg=f"many output {i}")
print("onnx interop: ok")
