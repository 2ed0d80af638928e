#!/usr/bin/env python3
"""One `mlflow server` for every tracking case of the suite (a CTest fixture): it takes about 25 s to
start, which each case paid for itself before.

    mlflow_server.py start FOLDER   a fresh server on a free local port, sqlite and artifacts in
                                    FOLDER, detached; FOLDER/server.json says where (uri, pid, port)
    mlflow_server.py stop FOLDER    kills it (and whatever a case restarted in its place)

check_mlflow.py --server FOLDER attaches to it; its outage case stops and restarts the server on the
same port and data, rewriting server.json, so the cases run one at a time (RESOURCE_LOCK)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mlflow server` on FOLDER/mlflow.db with FOLDER/artifacts served, described by FOLDER/server.json."""

    def __init__(self, folder, port=None):
        self.folder, self.port = os.path.abspath(folder), port or free_port()
        self.uri, self.pid = f"http://127.0.0.1:{self.port}", None

    @classmethod
    def attach(cls, folder):
        with open(os.path.join(folder, "server.json")) as f:
            about = json.load(f)
        server = cls(folder, about["port"])
        server.pid = about["pid"]
        return server

    def start(self, python=sys.executable):
        mlflow = os.path.join(os.path.dirname(python), "mlflow")
        env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="true")  # off the network
        with open(os.path.join(self.folder, "server.log"), "a") as log:
            process = subprocess.Popen(
                [mlflow, "server", "--backend-store-uri", f"sqlite:///{self.folder}/mlflow.db", "--artifacts-destination",
                 f"{self.folder}/artifacts", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        self.pid = process.pid
        with open(os.path.join(self.folder, "server.json"), "w") as f:
            json.dump({"uri": self.uri, "port": self.port, "pid": self.pid}, f)
        deadline = time.time() + 180
        while time.time() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"mlflow server exited {process.returncode}; see {self.folder}/server.log")
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise SystemExit(f"mlflow server did not answer on {self.uri} within 180 s; see {self.folder}/server.log")

    def stop(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        for _ in range(100):  # not our child once a case restarted it: wait for the port to free
            try:
                os.kill(self.pid, 0)
                time.sleep(0.05)
            except ProcessLookupError:
                break


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    command, folder = sys.argv[1:]
    if command == "start":
        if os.path.exists(os.path.join(folder, "server.json")):  # an earlier suite's, never stopped
            Server.attach(folder).stop()
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        server = Server(folder)
        server.start()
        print(f"mlflow server {server.uri} (pid {server.pid}), data in {server.folder}")
    elif os.path.exists(os.path.join(folder, "server.json")):
        Server.attach(folder).stop()
        print("mlflow server stopped")


if __name__ == "__main__":
    main()
