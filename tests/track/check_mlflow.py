#!/usr/bin/env python3
"""cvtrain against a real MLflow server: `mlflow server` from the venv (sqlite, artifacts served, a
free local port), started once for the suite by mlflow_server.py (the CTest fixture) and named with
--server, and MLflow's own Python client reading back what cvtrain sent.

Cases (--cases, comma-separated):
  run      a run: every metrics.jsonl value at its step, params equal to recipe.yaml, cvtrain's tags
           and the recipe's, the artifacts, FINISHED; the token in MLFLOW_TRACKING_TOKEN nowhere in
           the folder or the output
  resume   a start stopped by SIGTERM (KILLED), resumed on 2 ranks: one run, FINISHED, world size 2,
           no step logged twice, the weights uploaded (log_weights); resumed from its checkpoint
           into another folder, still the same run; a group restarted after a
           rank's crash is one FINISHED run, its first attempt's error gone; a failing start
           (non-finite steps) ends FAILED with its error
  sweep    a sweep: a parent run and one child per trial, every one FINISHED, the parent's best
           metric the best child's; `cvtrain track SWEEP` afterwards adds no run and no point
  outage   the server killed mid-run: training ends normally (exit 0, one warning), and
           `cvtrain track RUN` afterwards fills the gap; twice, without a duplicate point
"""
import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml
from mlflow.tracking import MlflowClient

from mlflow_server import Server

SECRET = "cvtrain-test-token-7f3a9c"


def cvtrain(args, env=None, check=True):
    run = subprocess.run([ARGS.cvtrain] + args, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600)
    if check and run.returncode != 0:
        raise SystemExit(f"cvtrain {' '.join(args)} exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
    return run


def quick(output, uri, *more):
    return ["--recipe", ARGS.recipe, "data.max_samples=256", "data.max_val_samples=128", "train.epochs=2", "train.global_batch=64",
            "train.log_every=2", f"output={output}", f"track.mlflow.uri={uri}", "track.mlflow.experiment=cvtrain-e2e", *more]


def metrics_of_folder(folder):
    """(key, step) -> value over every start's metrics file, the first line of a step winning, as the tracker sends them."""
    names = sorted((f for f in os.listdir(folder) if f.startswith("metrics.") and f.endswith(".jsonl") and f != "metrics.jsonl"),
                   key=lambda f: int(f.split(".")[1])) + ["metrics.jsonl"]
    points = {}
    for name in names:
        for line in open(os.path.join(folder, name)):
            if not line.endswith("\n"):
                continue
            record = json.loads(line)
            kind = record.get("kind", "metrics")
            if kind == "resume":
                continue
            for key, value in record.items():
                if key in ("kind", "step") or isinstance(value, str):
                    continue
                points.setdefault((f"{kind}/{key}", record["step"]), float("nan") if value is None else float(value))
    return points


def metrics_of_run(client, run_id):
    points, counts = {}, {}
    for key in client.get_run(run_id).data.metrics:
        for m in client.get_metric_history(run_id, key):
            points[(key, m.step)] = m.value
            counts[(key, m.step)] = counts.get((key, m.step), 0) + 1
    return points, counts


def expect(condition, message):
    if not condition:
        raise SystemExit("FAIL: " + message)


def check_metrics(client, run_id, folder):
    expected = metrics_of_folder(folder)
    got, counts = metrics_of_run(client, run_id)
    expect(set(got) == set(expected), f"metric points differ: only in MLflow {sorted(set(got) - set(expected))[:5]}, "
                                      f"only in metrics.jsonl {sorted(set(expected) - set(got))[:5]}")
    for point, value in expected.items():
        same = (math.isnan(value) and math.isnan(got[point])) or value == got[point]
        expect(same, f"{point}: metrics.jsonl {value!r}, MLflow {got[point]!r}")
    twice = [p for p, n in counts.items() if n > 1]
    expect(not twice, f"points logged twice: {twice[:5]}")
    return len(expected)


def flatten(tree, prefix=""):
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and path != "track.mlflow.tags":
            yield from flatten(value, path + ".")
        else:
            yield path, value


def the_run(client, experiment, name):
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], f"attributes.run_name = '{name}'")
    expect(len(runs) == 1, f"expected one run called {name} in {experiment}, found {len(runs)}")
    return runs[0]


def case_run(server, work):
    folder = os.path.join(work, "run")
    done = cvtrain(quick(folder, server.uri, "track.mlflow.tags={team: vision, dataset: fmnist}"), env={"MLFLOW_TRACKING_TOKEN": SECRET})
    client = MlflowClient(server.uri)
    run = the_run(client, "cvtrain-e2e", "run")
    expect(run.info.status == "FINISHED" and run.info.end_time, f"status {run.info.status}")
    n = check_metrics(client, run.info.run_id, folder)
    recipe = yaml.safe_load(open(os.path.join(folder, "recipe.yaml")))
    params = run.data.params
    for key, value in flatten(recipe):
        if key in ("distributed.master_port", "train.stop_at_epoch"):  # set per start by a sweep: not params (docs/tracking.md)
            expect(key not in params, f"{key} is a param")
            continue
        expect(key in params, f"param {key} missing")
        sent = yaml.safe_load(params[key]) if params[key] != "" else ""  # an empty string stays one
        expect(sent == value, f"param {key}: recipe.yaml {value!r}, MLflow {params[key]!r}")
    tags = run.data.tags
    for key, value in {"team": "vision", "dataset": "fmnist", "cvtrain.strategy": "single", "cvtrain.world_size": "1",
                       "cvtrain.device": "cpu", "mlflow.source.name": "cvtrain", "cvtrain.version": None,
                       "mlflow.source.git.commit": None, "cvtrain.host": socket.gethostname()}.items():
        expect(key in tags and (value is None or tags[key] == value), f"tag {key}: {tags.get(key)!r}, expected {value!r}")
    expect(tags["cvtrain.precision"].startswith("fp32"), f"precision tag {tags['cvtrain.precision']!r}")
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    for name in ["report.html", "recipe.yaml", "metrics.jsonl", "perf_summary.json", "provenance.json"]:
        expect(name in artifacts, f"artifact {name} missing: {sorted(artifacts)}")
    expect("model.pt" not in artifacts, "model.pt uploaded without track.mlflow.log_weights")
    copy = client.download_artifacts(run.info.run_id, "recipe.yaml", tempfile.mkdtemp(dir=work))
    expect(open(copy).read() == open(os.path.join(folder, "recipe.yaml")).read(), "recipe.yaml artifact differs from the folder's")
    for root, _, files in os.walk(folder):
        for f in files:
            expect(SECRET.encode() not in open(os.path.join(root, f), "rb").read(), f"the token is written in {f}")
    expect(SECRET not in done.stdout + done.stderr, "the token is in the output")
    print(f"run: {n} points equal to metrics.jsonl, {len(params)} params equal to recipe.yaml, tags and {len(artifacts)} artifacts")


def wait_for_line(path, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and open(path).read().count("\n") >= 2:
            return
        time.sleep(0.2)
    raise SystemExit(f"no metrics in {path}")


def case_resume(server, work):
    folder = os.path.join(work, "resumed")
    longer = ["data.max_samples=4096", "train.log_every=1", "checkpoint.every_steps=5"]
    first = subprocess.Popen([ARGS.cvtrain] + quick(folder, server.uri, *longer), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_line(os.path.join(folder, "metrics.jsonl"))
    time.sleep(1)
    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=300)
    expect(first.returncode == 75, f"a stopped start exits 75, got {first.returncode}:\n{err}")
    client = MlflowClient(server.uri)
    stopped = the_run(client, "cvtrain-e2e", "resumed")
    expect(stopped.info.status == "KILLED", f"a stopped start is KILLED, got {stopped.info.status}")
    cvtrain(quick(folder, server.uri, *longer, "distributed.nproc_per_node=2", "track.mlflow.log_weights=true"))
    run = the_run(client, "cvtrain-e2e", "resumed")
    weights = [a for a in client.list_artifacts(run.info.run_id) if a.path == "model.pt"]
    expect(weights and weights[0].file_size == os.path.getsize(os.path.join(folder, "model.pt")), "model.pt not uploaded whole with log_weights")
    expect(run.info.run_id == stopped.info.run_id, "the resumed start made another run")
    expect(run.info.status == "FINISHED", f"status {run.info.status}")
    expect(run.data.tags["cvtrain.world_size"] == "2", f"world size tag {run.data.tags['cvtrain.world_size']}")
    n = check_metrics(client, run.info.run_id, folder)
    steps = {step for (key, step) in metrics_of_run(client, run.info.run_id)[0] if key == "train/loss"}
    expect(steps == set(range(1, max(steps) + 1)), f"train/loss misses steps: {sorted(set(range(1, max(steps) + 1)) - steps)}")

    moved = os.path.join(work, "moved")  # resumed from its last checkpoint into another folder, for a third epoch
    last = sorted(os.listdir(os.path.join(folder, "checkpoints")))[-1]
    cvtrain(quick(moved, server.uri, *longer, "train.epochs=3", f"checkpoint.resume={os.path.join(folder, 'checkpoints', last)}"))
    continued = client.get_run(run.info.run_id)
    expect(continued.info.status == "FINISHED", f"the run continued elsewhere: {continued.info.status}")
    expect(json.load(open(os.path.join(moved, "mlflow_run.json")))["run_id"] == run.info.run_id, "a resume into another folder made another run")
    steps_after = {m.step for m in client.get_metric_history(run.info.run_id, "train/loss")}
    expect(max(steps_after) > max(steps), f"the third epoch's points are not in the run (last step {max(steps_after)})")

    restarted = os.path.join(work, "restarted")  # rank 1 crashes; the launcher restarts the group from its checkpoint
    cvtrain(quick(restarted, server.uri, "checkpoint.every_steps=4", "distributed.nproc_per_node=2", "distributed.max_restarts=1"),
            env={"CVTRAIN_FAULT_RANK": "1", "CVTRAIN_FAULT_STEP": "5"})
    run = the_run(client, "cvtrain-e2e", "restarted")
    expect(run.info.status == "FINISHED", f"a restarted group's run: {run.info.status}")
    expect("cvtrain.error" not in run.data.tags, f"the first attempt's error stays on a finished run: {run.data.tags.get('cvtrain.error')}")
    check_metrics(client, run.info.run_id, restarted)

    failing = os.path.join(work, "failing")
    broken = cvtrain(quick(failing, server.uri, "train.max_bad_steps=2"), env={"CVTRAIN_NAN_STEPS": "3-100"}, check=False)
    expect(broken.returncode == 1, f"a failing run exits 1, got {broken.returncode}")
    failed = the_run(client, "cvtrain-e2e", "failing")
    expect(failed.info.status == "FAILED", f"a failing run is FAILED, got {failed.info.status}")
    error = failed.data.tags.get("cvtrain.error", "")
    expect("non-finite" in error or "NaN" in error or "nan" in error, f"error tag: {error!r}")
    print(f"resume: KILLED, then the same run FINISHED on 2 ranks with {n} points, each step once; a restarted group one run; "
          f"a failure FAILED: {error[:80]}")


def case_sweep(server, work):
    space = os.path.join(work, "space.yaml")
    with open(space, "w") as f:
        f.write("space:\n  optim.lr: [0.05, 0.1]\nmetric: top1\nsampler: grid\ntrials: 0\nparallel: 1\n")
    cvtrain(["sweep", "--space", space, "--out", os.path.join(work, "sweep")] + quick(os.path.join(work, "base"), server.uri, "train.epochs=1"))
    client = MlflowClient(server.uri)
    parent = the_run(client, "cvtrain-e2e", "sweep")
    expect(parent.data.tags.get("cvtrain.kind") == "sweep" and parent.info.status == "FINISHED", f"parent: {parent.info.status}")
    expect(parent.data.params.get("sweep.space.optim.lr") == "[0.05, 0.1]", f"space param: {parent.data.params}")
    exp = client.get_experiment_by_name("cvtrain-e2e")
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    expect(len(children) == 2, f"expected 2 child runs, found {len(children)}")
    for child in children:
        expect(child.info.status == "FINISHED", f"{child.info.run_name}: {child.info.status}")
        check_metrics(client, child.info.run_id, os.path.join(work, "sweep", child.info.run_name))
    lrs = sorted(float(c.data.params["optim.lr"]) for c in children)
    expect(lrs == [0.05, 0.1], f"children's optim.lr: {lrs}")
    best = max(float(c.data.metrics["epoch/top1"]) for c in children)
    expect(parent.data.metrics.get("sweep/best_top1") == best, f"parent's sweep/best_top1 {parent.data.metrics.get('sweep/best_top1')}, best child {best}")
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    expect({"results.md", "report.html", "space.yaml"} <= artifacts, f"sweep artifacts: {sorted(artifacts)}")
    cvtrain(["track", os.path.join(work, "sweep")])  # sent again afterwards: the same runs, nothing twice
    again = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    expect(sorted(c.info.run_id for c in again) == sorted(c.info.run_id for c in children), "cvtrain track SWEEP made other runs")
    for child in again:
        check_metrics(client, child.info.run_id, os.path.join(work, "sweep", child.info.run_name))
    expect(len(client.search_runs([exp.experiment_id], "attributes.run_name = 'sweep'")) == 1, "cvtrain track SWEEP made another parent")
    print(f"sweep: parent run with {len(children)} children ({', '.join(sorted(c.info.run_name for c in children))}), all FINISHED")


def case_outage(server, work):
    folder = os.path.join(work, "outage")
    training = subprocess.Popen([ARGS.cvtrain] + quick(folder, server.uri, "data.max_samples=2048", "train.log_every=1"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    client = MlflowClient(server.uri)
    deadline = time.time() + 300
    while time.time() < deadline:  # the server has taken some points: now it goes away
        runs = client.search_runs([e.experiment_id for e in client.search_experiments()], "attributes.run_name = 'outage'")
        if runs and "train/loss" in runs[0].data.metrics:
            break
        time.sleep(0.3)
    server.stop()
    out, err = training.communicate(timeout=600)
    expect(training.returncode == 0, f"training with its server gone exits {training.returncode}:\n{err}")
    warnings = err.count("the tracker retries")
    expect(warnings == 1, f"expected one warning about the server, got {warnings}:\n{err}")
    expect("cvtrain track" in err, "the output does not say how to fill the gap")
    server.start()
    run = the_run(client, "cvtrain-e2e", "outage")
    expect(run.info.status == "RUNNING", f"a run cut off from its server stays RUNNING until filled in, got {run.info.status}")
    held = len(metrics_of_run(client, run.info.run_id)[0])
    cvtrain(["track", folder])
    run = the_run(client, "cvtrain-e2e", "outage")
    expect(run.info.status == "FINISHED", f"after cvtrain track: {run.info.status}")
    n = check_metrics(client, run.info.run_id, folder)
    expect(n > held, f"cvtrain track added nothing ({held} points before, {n} after)")
    cvtrain(["track", folder])  # again: nothing twice
    check_metrics(client, run.info.run_id, folder)
    expect("report.html" in {a.path for a in client.list_artifacts(run.info.run_id)}, "no report after cvtrain track")
    print(f"outage: training finished without its server; cvtrain track added {n - held} of {n} points, twice without a duplicate")


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cvtrain", required=True)
    parser.add_argument("--recipe", required=True)
    parser.add_argument("--server", required=True, help="the folder `mlflow_server.py start` ran on")
    parser.add_argument("--cases", default="run,resume,sweep,outage")
    ARGS = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cvtrain-mlflow-") as work:
        os.environ.pop("MLFLOW_TRACKING_URI", None)
        os.environ.update(MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="true")  # the server and client stay off the network
        server = Server.attach(ARGS.server)
        for case in ARGS.cases.split(","):
            {"run": case_run, "resume": case_resume, "sweep": case_sweep, "outage": case_outage}[case](server, work)


if __name__ == "__main__":
    main()
