"""CARAVAN_METRICS_PORT on a port something else holds: the node must stop at
start-up, non-zero, naming the variable and the port (not hang, not run on
without its endpoint).

usage: port_in_use.py CARAVAN_SERVER
"""
import os
import socket
import subprocess
import sys

server = sys.argv[1]
# A port the system gives, held by this process: no other test can have it.
holder = socket.socket()
holder.bind(("0.0.0.0", 0))
holder.listen()
port = holder.getsockname()[1]
env = dict(os.environ, CARAVAN_METRICS_PORT=str(port), DMLC_ROLE="scheduler",
           DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(port + 1),
           DMLC_NUM_WORKER="1", DMLC_NUM_SERVER="1")
p = subprocess.run([server], env=env, capture_output=True, text=True, timeout=30)
want = f"CARAVAN_METRICS_PORT: cannot serve metrics on port {port}"
if p.returncode == 0 or want not in p.stderr:
    print(f"port_in_use: FAIL: exit {p.returncode}, stderr:\n{p.stderr}")
    sys.exit(1)
print(f"port_in_use: the scheduler stopped (exit {p.returncode}): {p.stderr.strip()}")
