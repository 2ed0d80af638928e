#!/usr/bin/env python3
"""A stand-in for an overloaded MLflow server: every request is answered correctly (the shapes of
MLflow's REST API that cvtrain uses) but only after DELAY seconds. For scripts/bench_tracking.sh.
Usage: slow_mlflow.py PORT DELAY"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RUN = {"info": {"run_id": "bench", "experiment_id": "1", "status": "RUNNING", "lifecycle_stage": "active",
                "artifact_uri": "mlflow-artifacts:/1/bench/artifacts"}, "data": {}}
ANSWERS = {"/api/2.0/mlflow/experiments/get-by-name": {"experiment": {"experiment_id": "1"}},
           "/api/2.0/mlflow/runs/create": {"run": RUN}, "/api/2.0/mlflow/runs/get": {"run": RUN},
           "/api/2.0/mlflow/metrics/get-history": {"metrics": []}, "/api/2.0/mlflow/artifacts/list": {"files": []}}


class Slow(BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        time.sleep(DELAY)
        body = json.dumps(ANSWERS.get(self.path.split("?")[0], {})).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = answer

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    DELAY = float(sys.argv[2])
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
