"""A screenshot of TensorBoard's scalars dashboard, taken offline with headless Chromium.

    python scripts/tensorboard_screenshot.py [LOGDIR] [OUT.png]   (defaults: build/demo/logs, build/demo/tensorboard.png)

Starts `tensorboard --logdir LOGDIR` on 127.0.0.1 at a free port, waits until it answers and
lists the runs, takes the screenshot, stops TensorBoard, and checks that the PNG is not blank
(its pixels vary). Runs with the test virtualenv's Python (it has tensorboard and numpy).
Nothing reaches the network: TensorBoard binds to localhost and Chromium's proxy is pinned to
nothing, so a page asset that would come from the internet fails at once instead of hanging."""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib

import numpy as np


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_runs(url, proc, timeout=90.0):
    """Until TensorBoard answers and has loaded at least one run with scalars."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"tensorboard exited early with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/data/plugin/scalars/tags", timeout=2) as r:
                tags = json.load(r)
            if any(tags.values()):
                return tags
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"tensorboard did not list any scalars at {url} within {timeout:.0f} s")


def png_pixels(path):
    """RGB(A) 8-bit PNG -> array [h, w, c] (what Chromium writes), without extra packages."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path} is not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise SystemExit(f"unexpected PNG format (depth {depth}, color {color}, interlace {interlace})")
            c = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    out = np.zeros((h, w * c), np.int32)
    prev = np.zeros(w * c, np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:
            cur = np.zeros_like(line)
            for x in range(w * c):
                a = cur[x - c] if x >= c else 0
                b = prev[x]
                d = prev[x - c] if x >= c else 0
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + b) // 2
                else:  # Paeth
                    pa, pb, pc = abs(b - d), abs(a - d), abs(a + b - 2 * d)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else d)
                cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, c)


def main():
    logdir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/demo/logs")
    out = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "build/demo/tensorboard.png")
    if not os.path.isdir(logdir):
        raise SystemExit(f"no log directory {logdir} (run the demo's training first)")
    tb = shutil.which("tensorboard", path=os.path.dirname(sys.executable)) or shutil.which("tensorboard")
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if not tb or not chromium:
        raise SystemExit("needs tensorboard (the test virtualenv) and chromium (scripts/install_deps.sh)")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.exists(out):
        os.remove(out)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, no_proxy="*", NO_PROXY="*")
    # load_fast=false: the pure-Python loader (the Rust data server is optional and may fetch).
    proc = subprocess.Popen([tb, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port), "--load_fast=false",
                             "--reload_interval", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    profile = tempfile.mkdtemp(prefix="ef_chromium_")
    try:
        tags = wait_for_runs(url, proc)
        print(f"tensorboard at {url}: runs {sorted(tags)}")
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--disable-extensions", "--disable-background-networking", "--disable-sync", "--disable-default-apps",
               "--proxy-server=direct://", "--proxy-bypass-list=*", f"--user-data-dir={profile}",
               f"--screenshot={out}", "--window-size=1400,900", "--virtual-time-budget=15000",
               f"{url}/?darkMode=false#scalars"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if not os.path.exists(out):
            raise SystemExit(f"chromium wrote no screenshot (status {r.returncode}):\n{r.stderr[-2000:]}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    px = png_pixels(out)[..., :3].astype(np.float64)
    # Not blank: many distinct colours and real variance (a chart, text, the toolbar).
    colours = len(np.unique(px.reshape(-1, 3) @ np.array([65536.0, 256.0, 1.0])))
    std = float(px.std())
    print(f"{out}: {px.shape[1]}x{px.shape[0]}, {os.path.getsize(out)} bytes, {colours} colours, pixel std {std:.1f}")
    if colours < 16 or std < 5.0:
        raise SystemExit(f"{out} looks blank ({colours} colours, pixel std {std:.1f})")


if __name__ == "__main__":
    main()
