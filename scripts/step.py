#!/usr/bin/env python3
"""Runs one step of `make` (a build, CTest, pytest) with its full output in a log file, and
prints a short summary instead of the stream: progress every tenth, then what a person needs
(the warnings or errors of a build, the slowest and the failed tests, the runner's closing
line). Exits with the command's status; a build that warns in our own files fails too.

    step.py --kind build|ctest|pytest --label TEXT --log FILE [--build-dir DIR] -- COMMAND...
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARNING = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:\d+:)? warning: (?P<text>.*)$")
NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
CTEST_STEP = re.compile(r"^\s*\d+/(\d+) Test\s+#\d+: (\S+) \.+\**\s*(\w[\w ]*?)\s+([\d.]+) sec")


def our_file(path, build_dir):
    """A file of this repository, not a system header, a dependency or generated code. A relative
    path is the compiler's, relative to the build folder it runs in (ccache's base_dir makes
    every path under the checkout relative)."""
    full = os.path.realpath(path if os.path.isabs(path) else os.path.join(build_dir, path))
    return full.startswith(ROOT + os.sep) and not full.startswith(os.path.join(ROOT, "build") + os.sep)


def build_warnings(lines, build_dir):
    """Distinct warnings located in our files (a header's warning is reported once)."""
    seen, out = set(), []
    for line in lines:
        m = WARNING.match(line.strip())
        if m and our_file(m.group("file"), build_dir):
            key = (os.path.realpath(os.path.join(build_dir, m.group("file"))), m.group("line"), m.group("text"))
            if key not in seen:
                seen.add(key)
                out.append(line.strip())
    return out


def progress(kind, line, state):
    m = NINJA_STEP.match(line) if kind == "build" else CTEST_STEP.match(line) if kind == "ctest" else None
    if not m:
        return None
    if kind == "build":
        done, total = int(m.group(1)), int(m.group(2))
    else:
        state["done"] = state.get("done", 0) + 1
        done, total = state["done"], int(m.group(1))
    tenth = done * 10 // max(total, 1)
    if tenth > state.get("tenth", 0):
        state["tenth"] = tenth
        return f"{done}/{total}"
    return None


def summarize_build(lines, rc, build_dir):
    warnings = build_warnings(lines, build_dir)
    for w in warnings[:60]:
        print("  " + w)
    if len(warnings) > 60:
        print(f"  ... and {len(warnings) - 60} more")
    if rc != 0:
        errors = [i for i, l in enumerate(lines) if " error: " in l or l.startswith("FAILED:") or "Error" in l[:12]]
        shown = set()
        for i in errors[:20]:
            for j in range(max(0, i - 1), min(len(lines), i + 4)):
                if j not in shown:
                    shown.add(j)
                    print("  " + lines[j].rstrip())
    return warnings


def summarize_ctest(lines, rc):
    tests = []
    for line in lines:
        m = CTEST_STEP.match(line)
        if m:
            tests.append((float(m.group(4)), m.group(2), m.group(3)))
    slowest = sorted(tests, reverse=True)[:10]
    if slowest:
        print("  slowest: " + ", ".join(f"{name} {sec:.1f} s" for sec, name, _ in slowest))
    failed = [name for _, name, status in tests if status != "Passed"]
    if failed:
        # With --output-on-failure CTest prints a failed test's output after its status line.
        for name in failed[:10]:
            start = next(i for i, l in enumerate(lines) if CTEST_STEP.match(l) and CTEST_STEP.match(l).group(2) == name)
            block = []
            for l in lines[start + 1:]:
                if CTEST_STEP.match(l) or l.startswith("The following tests"):
                    break
                block.append(l.rstrip())
            print(f"  --- {name}: last lines of its output")
            for l in block[-40:]:
                print("    " + l)
    tail = False
    for line in lines:
        if re.search(r"tests passed, \d+ tests? failed out of \d+", line):
            tail = True
        if tail and line.strip() and not line.startswith("Errors while running"):
            print(line.rstrip())


def summarize_pytest(lines, rc):
    if rc != 0:
        start = next((i for i, l in enumerate(lines) if "short test summary info" in l), None)
        if start is not None:
            for l in lines[start:start + 60]:
                print("  " + l.rstrip())
        else:
            for l in lines[-60:]:
                print("  " + l.rstrip())
    slow = [l.strip() for l in lines if re.match(r"^\s*[\d.]+s (call|setup|teardown)\s", l)]
    if slow:
        print("  slowest: " + "; ".join(slow[:5]))
    closing = [l for l in lines if re.search(r"\b\d+ (passed|failed|error)", l)]
    if closing:
        print(closing[-1].strip())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["build", "ctest", "pytest"], required=True)
    p.add_argument("--label", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--build-dir", default=".", help="where the compiler runs (its relative paths start there)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    os.makedirs(os.path.dirname(os.path.abspath(a.log)), exist_ok=True)
    start = time.monotonic()
    print(f"{a.label}: running (full log: {os.path.relpath(a.log, os.getcwd())})", flush=True)
    lines, state = [], {}
    with open(a.log, "w", encoding="utf-8", errors="replace") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        for line in proc.stdout:
            log.write(line)
            lines.append(line)
            step = progress(a.kind, line, state)
            if step:
                print(f"{a.label}: {step} ({time.monotonic() - start:.0f} s)", flush=True)
        rc = proc.wait()
    seconds = time.monotonic() - start
    warnings = []
    if a.kind == "build":
        warnings = summarize_build(lines, rc, os.path.abspath(a.build_dir))
    elif a.kind == "ctest":
        summarize_ctest(lines, rc)
    else:
        summarize_pytest(lines, rc)
    status = "ok" if rc == 0 else f"FAILED (exit {rc})"
    extra = f", {len(warnings)} warning(s) in our code" if a.kind == "build" else ""
    if rc == 0 and warnings:
        status, rc = "FAILED: the build must not warn", 1
    print(f"{a.label}: {status} in {seconds:.0f} s{extra} (full log: {os.path.relpath(a.log, os.getcwd())})", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
