#!/usr/bin/env python3
"""Screenshots of the MLflow UI on a tracked sweep, taken in headless Chromium driven over the
DevTools protocol (the clicks a person makes: the sweep's row unfolded, the trials' charts, the
trials compared), for docs/tracking.md's walk-through. Standard library only.

  scripts/mlflow_screenshots.py --uri http://127.0.0.1:5000 --experiment quickstart-sweep --out shots/

The experiment should hold a sweep cvtrain tracked (`cvtrain sweep` with MLFLOW_TRACKING_URI set).
"""
import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request


class DevTools:
    """The smallest WebSocket client the DevTools protocol needs: text frames out (masked), frames in."""

    def __init__(self, ws_url):
        parsed = urllib.parse.urlparse(ws_url)
        self.sock = socket.create_connection((parsed.hostname, parsed.port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {parsed.path} HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += self.sock.recv(4096)
        if b" 101 " not in answer.split(b"\r\n")[0]:
            raise SystemExit(f"DevTools refused the connection: {answer[:200]!r}")
        self.buffer, self.next_id = answer.split(b"\r\n\r\n", 1)[1], 0

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise SystemExit("DevTools closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _frame(self):
        first, second = self._read(2)
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(self._read(2), "big")
        elif length == 127:
            length = int.from_bytes(self._read(8), "big")
        return first & 0x80, self._read(length)

    def call(self, method, **params):
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        header = bytes([0x81]) + (bytes([0x80 | len(payload)]) if len(payload) < 126 else
                                  bytes([0x80 | 126]) + len(payload).to_bytes(2, "big") if len(payload) < 65536 else
                                  bytes([0x80 | 127]) + len(payload).to_bytes(8, "big"))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        while True:
            message, fin = b"", 0
            while not fin:
                fin, part = self._frame()
                message += part
            reply = json.loads(message)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise SystemExit(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def js(self, expression):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True).get("result", {}).get("value")

    def shot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        print("wrote", path)


def until(devtools, expression, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if devtools.js(expression):
            return
        time.sleep(0.5)
    raise SystemExit(f"the page never showed: {expression}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uri", required=True)
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with urllib.request.urlopen(f"{args.uri}/api/2.0/mlflow/experiments/get-by-name?experiment_name={urllib.parse.quote(args.experiment)}") as r:
        experiment = json.load(r)["experiment"]["experiment_id"]

    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    debug_port = port.getsockname()[1]
    port.close()
    profile = tempfile.mkdtemp(prefix="cvtrain-chromium-")
    browser = subprocess.Popen([args.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                f"--remote-debugging-port={debug_port}", f"--user-data-dir={profile}", "--window-size=1500,1150",
                                "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{debug_port}/json") as r:
                    page = next(t for t in json.load(r) if t["type"] == "page")
                break
            except (OSError, StopIteration):
                time.sleep(0.2)
        devtools = DevTools(page["webSocketDebuggerUrl"])
        devtools.call("Page.enable")
        base = f"{args.uri}/#/experiments/{experiment}/runs?workflowType=machine_learning"

        # 1. The runs table: the sweep's row, unfolded to its trials (the assistant's panel closed).
        devtools.call("Page.navigate", url=base)
        until(devtools, "document.querySelectorAll('[role=row]').length > 1")
        time.sleep(2)
        devtools.js("""(() => { const c = document.querySelector('button[data-component-id="mlflow.assistant.chat_panel.close"]');
                       if (c) c.click(); return !!c; })()""")
        time.sleep(1)
        devtools.js("""(() => { const b = document.querySelector('button[data-component-id*="runnamecellrenderer"]');
                       if (b) b.click(); return !!b; })()""")
        time.sleep(3)
        devtools.shot(os.path.join(args.out, "mlflow-runs.png"))

        # 2. The chart view of the unfolded trials, the charts narrowed to top1.
        devtools.call("Page.navigate", url=base + "&compareRunsMode=CHART")
        time.sleep(6)
        devtools.js("""(() => { const i = [...document.querySelectorAll('input')].find(i => /metric charts/i.test(i.placeholder || ''));
                       if (!i) return false; const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
                       set.call(i, 'top1'); i.dispatchEvent(new Event('input', {bubbles: true})); return true; })()""")
        time.sleep(4)
        devtools.shot(os.path.join(args.out, "mlflow-charts.png"))
    finally:
        browser.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
