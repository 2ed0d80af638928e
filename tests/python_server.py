#!/usr/bin/env python3
"""A venv Python with torch, torchvision, timm, transformers, numpy and Pillow already imported, which
forks once per test script (a CTest fixture). Importing them costs 8-15 s of CPU per process on a
2-core machine, and the suite runs some forty Python scripts: each now starts in milliseconds.

    python_server.py start FOLDER    imports, listens on FOLDER/python.sock, detaches; returns once it
                                     answers (FOLDER/server.log has what it printed)
    python_server.py stop FOLDER     stops it; running scripts are killed

python_client.py is the other end: it hands the server its argv, working folder, environment and
its stdin, stdout and stderr (file descriptors passed over the socket), and exits with the script's
exit status; without a server it runs the script in a fresh interpreter instead, so nothing depends
on the fixture but the time.

Each script runs in a child forked from a process that has computed nothing (no thread pools started,
no random numbers drawn: torch's generator is at its default seed as in a fresh interpreter; Python's
and numpy's are seeded anew from the OS), as the script's `__main__`, with sys.path[0] its folder. A
script killed with its client (a CTest timeout) takes its whole process group with it.
Variables that libraries read as they load were read by the server; the one that matters, the
client's OMP_NUM_THREADS (CTest gives single-processor cases 1), is applied with torch.set_num_threads
in the child, and without it the child computes on every usable core as a fresh interpreter would."""
import array
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

PRELOAD = ["numpy", "PIL.Image", "yaml", "scipy.stats", "skimage.data", "safetensors.torch", "torch", "torch.distributed",
           "torch.multiprocessing", "torchvision", "timm", "transformers", "transformers.models.segformer",
           "tensorboard.backend.event_processing.event_accumulator"]


def receive_request(connection):
    """The client's request (JSON: argv, cwd, env) and its three file descriptors."""
    fds = array.array("i")
    data, ancillary, _, _ = connection.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    while not data.endswith(b"\n"):
        more = connection.recv(1 << 20)
        if not more:
            break
        data += more
    return json.loads(data), list(fds)


def apply_thread_count(omp_num_threads):
    """torch's intra-op threads as a fresh interpreter with this OMP_NUM_THREADS would have them."""
    if "torch" not in sys.modules:
        return
    threads = int(omp_num_threads) if omp_num_threads and omp_num_threads.isdigit() and int(omp_num_threads) > 0 \
        else len(os.sched_getaffinity(0))
    sys.modules["torch"].set_num_threads(threads)


def run_script(request, fds):
    """In the forked child: become the script and exit with its status."""
    os.setpgid(0, 0)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    apply_thread_count(os.environ.get("OMP_NUM_THREADS"))
    import random
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    argv = request["argv"]
    sys.argv = list(argv)
    status = 0
    try:
        import runpy
        if argv[0] == "-":  # the script on stdin, as `python - <<'PY'`
            sys.path[0] = ""
            code = compile(sys.stdin.read(), "<stdin>", "exec")
            exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if not isinstance(done.code, int) and done.code is not None:
            print(done.code, file=sys.stderr)
    except BaseException:  # as an interpreter would: the traceback, exit 1
        import traceback
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def serve(folder):
    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() > 1:  # a fork copies only the forking thread: locks others hold stay held
        sys.exit(f"the python server will not fork: importing started threads {[t.name for t in threading.enumerate()]}")
    path = os.path.join(folder, "python.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children = {}  # pid -> connection
    print(f"python server {os.getpid()}: {len(PRELOAD)} modules imported, listening on {path}", flush=True)
    while True:
        for key, _ in selector.select(timeout=0.05):
            if key.fileobj is listener:
                connection, _ = listener.accept()
                request, fds = receive_request(connection)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    connection.close()
                    run_script(request, fds)
                for fd in fds:
                    os.close(fd)
                children[pid] = connection
                selector.register(connection, selectors.EVENT_READ, pid)
            else:  # a client went away before its script ended (killed): so does the script
                pid = key.data
                selector.unregister(key.fileobj)
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for pid, connection in list(children.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done:
                continue
            del children[pid]
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
            try:
                selector.unregister(connection)
            except KeyError:
                pass
            try:
                connection.sendall(f"{code}\n".encode())
            except OSError:
                pass
            connection.close()


def start(folder):
    stop(folder)
    os.makedirs(folder, exist_ok=True)
    log = open(os.path.join(folder, "server.log"), "w")
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", folder], stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    with open(os.path.join(folder, "server.pid"), "w") as f:
        f.write(str(server.pid))
    deadline = time.time() + 240
    while time.time() < deadline:
        if server.poll() is not None:
            sys.exit(f"the python server exited {server.returncode}:\n" + open(os.path.join(folder, "server.log")).read())
        if os.path.exists(os.path.join(folder, "python.sock")):
            print(open(os.path.join(folder, "server.log")).read().strip())
            return
        time.sleep(0.1)
    sys.exit("the python server did not listen within 240 s")


def stop(folder):
    pid_file = os.path.join(folder, "server.pid")
    if os.path.exists(pid_file):
        try:
            os.killpg(int(open(pid_file).read()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
        os.remove(pid_file)
    if os.path.exists(os.path.join(folder, "python.sock")):
        os.remove(os.path.join(folder, "python.sock"))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop", "serve"):
        sys.exit(__doc__)
    {"start": start, "stop": stop, "serve": serve}[sys.argv[1]](sys.argv[2])
