"""The interoperability tests: eagerflow's files against the real clients (Keras 3 with its
TensorFlow backend, TensorFlow's checkpoints, h5py). Those run in their own virtualenv
(scripts/install_interop_deps.sh; `make test-interop` makes it), as a subprocess: TensorFlow and
eagerflow never share a process here. Without that virtualenv every test here skips, saying why."""
import os
import subprocess
import textwrap

import pytest


def _client_python():
    path = os.environ.get("EF_INTEROP_PYTHON")
    if path:
        return path if os.access(path, os.X_OK) else None
    for candidate in (os.path.expanduser("~/.cache/eagerflow/interop-venv/bin/python"),):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="session")
def client_python():
    path = _client_python()
    if path is None:
        pytest.skip("no Keras/TensorFlow virtualenv for the interoperability tests: run `make test-interop` "
                    "(it makes one with scripts/install_interop_deps.sh) or set EF_INTEROP_PYTHON")
    return path


@pytest.fixture(scope="session")
def run_client(client_python):
    """run_client(code, cwd) runs `code` (Python text) in the Keras/TensorFlow virtualenv and
    returns its standard output; a failure raises with the client's error text."""
    def run(code, cwd, timeout=600):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EF_VERIFY_IR")}
        env.update(TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow", CUDA_VISIBLE_DEVICES="",
                   OMP_NUM_THREADS="1", TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1")
        r = subprocess.run([client_python, "-c", textwrap.dedent(code)], cwd=str(cwd), env=env,
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"the client failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
        return r.stdout
    return run
