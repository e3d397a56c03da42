"""pyfork.py - one Python that has imported torch, onnx and numpy, forked for each tool run.

Importing torch costs 1.5 to 2.5 CPU seconds, and make test runs Python tools that import it
about a hundred times: most of those runs are the import. tests/run.sh starts one server
per run (`pyfork.py serve SOCKET`); a test runs a tool through `$TORCH_PY` (tests/lib.sh),
which is `/usr/bin/python3 tests/tools/pyfork.py run` while the server is up, and the
server forks a child that takes the client's argv, working directory, environment,
standard streams and cgroup, and runs the script as __main__ (as `python3 SCRIPT ARGS`,
`python3 -c CODE ARGS` or `python3 - ARGS` would). The client exits with the child's status
and passes SIGTERM and SIGINT on to it.

Why forking is safe here: the server only imports (no tensor operation has run, so no
OpenMP or intra-op thread pool exists to be lost by fork), and OpenBLAS re-creates its
threads after a fork. What a fork cannot change is chosen when a library loads: the
OpenBLAS kernels (OPENBLAS_CORETYPE), thread counts read at load, preloaded or searched
libraries. So a client whose value of any of ENV_FIXED_AT_LOAD differs from the server's,
or any other Python option, runs a fresh /usr/bin/python3 instead: the same answer, only
slower.

  pyfork.py serve SOCKET      imports, listens on SOCKET (a path), forks per request
  pyfork.py run ARGS...       runs `python3 ARGS...` through $PACER_PYFORK's server, or
                              execs /usr/bin/python3 ARGS... when there is none
"""

import json
import os
import signal
import socket
import struct
import sys

PYTHON = "/usr/bin/python3"
ENV_FIXED_AT_LOAD = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OPENBLAS_VERBOSE", "OMP_NUM_THREADS",
                     "MKL_NUM_THREADS", "GOTO_NUM_THREADS", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONHASHSEED", "PYTHONWARNINGS", "CUDA_VISIBLE_DEVICES")
REQUEST_MAX = 1 << 20  # argv, cwd and environment of one run


def fixed_env(env):
    return {k: env.get(k) for k in ENV_FIXED_AT_LOAD}


def send_msg(sock, obj):
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            return None
        buf += part
    return buf


def recv_msg(sock):
    head = recv_exact(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack("!I", head)
    if n > REQUEST_MAX:
        return None
    data = recv_exact(sock, n)
    return None if data is None else json.loads(data)


# ---- the child: becomes `python3 ARGS` -------------------------------------------------

def cgroup_mounts():
    """{controllers or "": mount point} of the cgroup hierarchies (v1 by controller, v2 as "")."""
    mounts = {}
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, right = line.split(" - ", 1)
                fstype, _, opts = right.split()[:3]
                point = left.split()[4]
                if fstype == "cgroup2":
                    mounts.setdefault("", point)
                elif fstype == "cgroup":
                    names = sorted(o for o in opts.split(",") if o not in ("rw", "ro") and "=" not in o or
                                   o.startswith("name="))
                    mounts[",".join(names)] = point
    except (OSError, ValueError):
        pass
    return mounts


def join_cgroups(lines):
    # the client's cgroups, so that tests/run.sh's per-test CPU column (cpuacct, or v2's
    # cpu.stat) counts the tool as it counted the python3 it replaces
    mounts = cgroup_mounts()
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        key = "" if parts[0] == "0" else ",".join(sorted(parts[1].split(",")))
        point = mounts.get(key)
        if not point:
            continue
        try:
            with open(os.path.join(point, parts[2].lstrip("/"), "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass


def child_streams(fds):
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = open(0, "r", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1 if (unbuffered or os.isatty(1)) else -1,
                                       closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)


def child_run(args):
    """Runs ARGS as python3 would; returns the exit status."""
    import runpy
    import traceback
    try:
        if args[0] == "-c":
            sys.argv = ["-c"] + args[2:]
            sys.path[0] = ""
            exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        elif args[0] == "-":
            sys.argv = ["-"] + args[1:]
            sys.path[0] = ""
            code = sys.stdin.read()
            exec(compile(code, "<stdin>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            sys.argv = list(args)
            sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
            runpy.run_path(args[0], run_name="__main__")
        return 0
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code & 0xFF
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:
        traceback.print_exc()
        return 1


def watch_client(conn):
    # a client that goes away (killed by a test's timeout, even with SIGKILL) takes its
    # run with it, as a killed python3 would have ended
    import threading

    def wait_for_close():
        try:
            while conn.recv(1):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=wait_for_close, daemon=True).start()


def serve_one(conn, req, fds):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setsid()
    join_cgroups(req.get("cgroups", []))
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    # PYTHONPATH is read at start-up: its folders go where python3 puts them, after the
    # script's own
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = extra
    child_streams(fds)
    send_msg(conn, {"pid": os.getpid()})
    watch_client(conn)
    status = child_run(req["args"])
    import atexit
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass
    try:
        send_msg(conn, {"status": status})
    except OSError:
        pass
    os._exit(status)


def serve(path):
    import numpy  # noqa: F401  (the imports are the point)
    import onnx  # noqa: F401
    import torch  # noqa: F401
    try:
        import torchvision  # noqa: F401
    except ImportError:
        pass
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o600)
    srv.listen(64)
    with open(path + ".env", "w") as f:
        json.dump(fixed_env(os.environ), f)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print("pyfork: serving on %s (pid %d)" % (path, os.getpid()), flush=True)
    parent = os.getppid()
    srv.settimeout(5)
    while True:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            if os.getppid() != parent:  # tests/run.sh is gone (killed): so is its server
                os._exit(0)
            continue
        conn.settimeout(None)
        try:
            msg, fds, _, _ = socket.recv_fds(conn, REQUEST_MAX, 3)
            if len(fds) != 3 or len(msg) < 4:
                raise ValueError("a request without its three streams")
            (n,) = struct.unpack("!I", msg[:4])
            data = msg[4:]
            while len(data) < n and n <= REQUEST_MAX:
                part = conn.recv(n - len(data))
                if not part:
                    break
                data += part
            req = json.loads(data)
        except (OSError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:
            srv.close()
            serve_one(conn, req, fds)
        for fd in fds:
            os.close(fd)
        conn.close()


# ---- the client ---------------------------------------------------------------------------

def direct(args):
    os.execv(PYTHON, [PYTHON] + args)


def own_cgroups():
    try:
        with open("/proc/self/cgroup") as f:
            return [line.rstrip("\n") for line in f]
    except OSError:
        return []


def run(args):
    path = os.environ.get("PACER_PYFORK", "")
    if not args or not path or not (args[0] in ("-c", "-") or not args[0].startswith("-")):
        direct(args)
    try:
        with open(path + ".env") as f:
            if json.load(f) != fixed_env(os.environ):
                direct(args)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
    except (OSError, ValueError):
        direct(args)
    data = json.dumps({"args": args, "cwd": os.getcwd(), "env": dict(os.environ), "cgroups": own_cgroups()}).encode()
    socket.send_fds(sock, [struct.pack("!I", len(data)) + data], [0, 1, 2])
    first = recv_msg(sock)
    if first is None or "pid" not in first:
        direct(args)  # the server refused or died before forking: nothing ran yet
    pid = first["pid"]

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except OSError:
            pass
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    last = recv_msg(sock)
    if last is None:  # the child died without a word: killed by a signal
        sys.stderr.write("pyfork: %s ended without an exit status (killed?)\n" % " ".join(args[:1]))
        sys.exit(1)
    sys.exit(last["status"])


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "run":
        run(sys.argv[2:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
