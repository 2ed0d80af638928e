#!/usr/bin/env python3
"""Runs a Python script of the test suite in the preloaded venv interpreter (python_server.py), or,
where no server answers, in a fresh one: the same script, arguments, folder, environment and standard
streams either way, and this process exits with the script's status.

    python_client.py --python VENV_PYTHON --server FOLDER SCRIPT|- [ARGS...]

Standard library only, so that it starts in milliseconds under any python3."""
import array
import json
import os
import socket
import sys


def main():
    argv = sys.argv[1:]
    if len(argv) < 5 or argv[0] != "--python" or argv[2] != "--server":
        sys.exit(__doc__)
    python, folder, script = argv[1], argv[3], argv[4:]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(os.path.join(folder, "python.sock"))
    except OSError:  # no server (a test run on its own, or the fixture failed): a fresh interpreter
        os.execv(python, [python, *script])
    request = json.dumps({"argv": script, "cwd": os.getcwd(), "env": dict(os.environ)}).encode() + b"\n"
    fds = array.array("i", [0, 1, 2])
    connection.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
    answer = b""
    while not answer.endswith(b"\n"):
        more = connection.recv(64)
        if not more:
            sys.exit("python_client: the python server went away before the script ended")
        answer += more
    sys.exit(int(answer))


if __name__ == "__main__":
    main()
