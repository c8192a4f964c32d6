"""Starts N copies of a command the way torchrun starts its workers: each
with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and
MASTER_PORT (Debian's torch 1.13 torchrun fails before starting any worker
under Python 3.11). Waits for all; if one fails or the deadline passes, the
others are stopped and this exits non-zero naming them.

    torchrun_env.py N TIMEOUT_S COMMAND [ARGS...]
"""
import os
import random
import socket
import subprocess
import sys
import time


def free_port():
    """A port below the ephemeral range that is free now, for torch's store
    (rank 0 binds it later): one the kernel handed out for port 0 could go
    to any process's connect() before that, as tests/support/process.cc's
    free_port() says. Below the range only tests choosing ports collide."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    for _ in range(1000):
        port = random.randint(10000, low - 1)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port in 10000..%d" % (low - 1))


def main():
    n, timeout, command = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    port = free_port()
    procs = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n),
                   LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        for k in list(env):  # a job of its own, not one DMLC_* describes
            if k.startswith("DMLC_"):
                del env[k]
        procs.append(subprocess.Popen(command, env=env))
    deadline = time.monotonic() + timeout
    failed = []
    while any(p.poll() is None for p in procs):
        if time.monotonic() > deadline:
            failed.append("still running after %g s" % timeout)
            break
        failed = ["rank %d exited %d" % (r, p.returncode) for r, p in enumerate(procs)
                  if p.returncode not in (None, 0)]
        if failed:
            break
        time.sleep(0.1)
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    failed += ["rank %d exited %d" % (r, p.returncode) for r, p in enumerate(procs)
               if p.returncode != 0 and "rank %d exited %d" % (r, p.returncode) not in failed]
    if failed:
        print("torchrun_env.py: %s" % "; ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
