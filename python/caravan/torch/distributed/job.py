"""The Caravan job behind a torch.distributed group of backend "caravan".

Two ways in:

- The environment already describes a job (DMLC_PS_ROOT_URI and DMLC_ROLE
  set: caravan-launch, bpslaunch, a hostfile or Kubernetes launch): this
  process joins it as a worker, and torch's rank and world size must be the
  job's.
- Otherwise (torchrun, or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set by
  hand, tcp://, a store): the group brings up its own job through torch's
  store. Every rank says which host it is on; rank 0 starts the scheduler;
  the lowest rank of each host starts that host's servers
  (CARAVAN_TORCH_SERVERS_PER_HOST, default 1), so the job has a server on
  every host, the layout where a parameter server moves the bytes of a ring
  allreduce; then every rank joins as worker `rank`. The scheduler and
  servers end with the job; at exit any still running are stopped.
  Dedicated server hosts come from caravan-launch and the other launchers
  instead (docs/torch-distributed.md).
"""
import atexit
import os
import socket
import subprocess
import sys

from ...errors import CaravanError
from ... import launch
from .. import ops

_STORE_PREFIX = "caravan/"
_started = []  # the scheduler and servers this process started


def _env_int(name, default):
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError("%s=%r is not an integer" % (name, text)) from None
    if value < 1:
        raise ValueError("%s=%r must be at least 1" % (name, text))
    return value


def described_by_environment():
    """Whether DMLC_* already describe a job this process is a worker of."""
    return bool(os.environ.get("DMLC_PS_ROOT_URI")) and bool(os.environ.get("DMLC_ROLE"))


def fill_torch_environment():
    """Under a launcher that describes the job with DMLC_* (caravan-launch,
    bpslaunch), gives torch's env:// what it reads, where unset: RANK
    (DMLC_WORKER_ID x BYTEPS_LOCAL_SIZE + BYTEPS_LOCAL_RANK), WORLD_SIZE,
    MASTER_ADDR (the scheduler's host) and MASTER_PORT (the scheduler's port
    plus one), so that init_process_group("caravan") needs nothing more."""
    if not described_by_environment() or os.environ.get("DMLC_ROLE") != "worker":
        return
    local_size = _local_size()
    local_rank = os.environ.get("BYTEPS_LOCAL_RANK", "0").strip() or "0"
    worker_id = os.environ.get("DMLC_WORKER_ID", "").strip()
    if "RANK" not in os.environ and worker_id.isdigit() and local_rank.isdigit():
        os.environ["RANK"] = str(int(worker_id) * local_size + int(local_rank))
    workers = os.environ.get("DMLC_NUM_WORKER", "").strip()
    if "WORLD_SIZE" not in os.environ and workers.isdigit():
        os.environ["WORLD_SIZE"] = str(int(workers) * local_size)
    os.environ.setdefault("MASTER_ADDR", os.environ["DMLC_PS_ROOT_URI"])
    port = os.environ.get("DMLC_PS_ROOT_PORT", "").strip()
    if "MASTER_PORT" not in os.environ and port.isdigit():
        os.environ["MASTER_PORT"] = str(int(port) + 1)


def _reachable_address(peer):
    """The address of this host that `peer` (a host name or address) can
    reach: the source address the kernel picks to send there."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((socket.gethostbyname(peer), 9))  # nothing is sent
            return s.getsockname()[0]
    except OSError as e:
        raise CaravanError("caravan backend: cannot find this host's address towards "
                           "MASTER_ADDR=%r: %s" % (peer, e)) from None


def _scheduler_socket(address):
    """A socket listening on a port the OS picks, handed to the scheduler
    this process starts (CARAVAN_SCHEDULER_FD, as caravan-launch does): a
    port released for the scheduler to bind again could be taken in between
    by any process's connect()."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((address, 0))
    s.listen(1024)
    return s


def _start(role, env, index=None, listener=None):
    cmd = [launch.find_server()]
    child_env = dict(os.environ)
    for k in list(child_env):
        if k.startswith(("DMLC_", "BYTEPS_LOCAL")) or k in ("CARAVAN_SERVER_ID",
                                                             "CARAVAN_SCHEDULER_FD"):
            del child_env[k]
    child_env.update(env)
    child_env["DMLC_ROLE"] = role
    if index is not None:
        child_env["CARAVAN_SERVER_ID"] = str(index)
    passed = ()
    if listener is not None:
        passed = (listener.fileno(),)
        child_env["CARAVAN_SCHEDULER_FD"] = str(listener.fileno())
    proc = subprocess.Popen(cmd, env=child_env, stdin=subprocess.DEVNULL, pass_fds=passed)
    _started.append((role if index is None else "%s %d" % (role, index), proc))
    return proc


def _stop_started():
    """At exit: the job's own shutdown ends the scheduler and servers; any
    still running after a grace period (the job failed) are stopped."""
    for name, proc in _started:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            print("caravan backend: stopping the %s it started (pid %d), still running at exit" %
                  (name, proc.pid), file=sys.stderr)
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()


def join(store, rank, world_size, timeout):
    """Makes this process worker `rank` of the Caravan job of the group, and
    returns once it has joined (caravan.torch.init)."""
    if "CARAVAN_OP_TIMEOUT" not in os.environ and timeout is not None:
        # init_process_group(timeout=...): every wait of the job's collectives.
        os.environ["CARAVAN_OP_TIMEOUT"] = str(max(1, int(timeout.total_seconds())))
    if described_by_environment():
        return _join_described(rank, world_size)
    if world_size == 1:
        os.environ.update(DMLC_ROLE="worker", DMLC_NUM_WORKER="1")
        ops.init()
        return
    master = os.environ.get("MASTER_ADDR") or "127.0.0.1"
    address = os.environ.get("DMLC_NODE_HOST") or _reachable_address(master)
    servers_per_host = _env_int("CARAVAN_TORCH_SERVERS_PER_HOST", 1)
    store.set(_STORE_PREFIX + "host/%d" % rank, address)
    hosts = [store.get(_STORE_PREFIX + "host/%d" % r).decode() for r in range(world_size)]
    distinct = sorted(set(hosts))
    num_servers = servers_per_host * len(distinct)
    listener = None
    if rank == 0:
        listener = _scheduler_socket(address)
        store.set(_STORE_PREFIX + "root", "%s:%d" % (address, listener.getsockname()[1]))
    root_uri, root_port = store.get(_STORE_PREFIX + "root").decode().rsplit(":", 1)
    job = {
        "DMLC_PS_ROOT_URI": root_uri,
        "DMLC_PS_ROOT_PORT": root_port,
        "DMLC_NUM_WORKER": str(world_size),
        "DMLC_NUM_SERVER": str(num_servers),
        "DMLC_NODE_HOST": address,
    }
    if rank == 0:
        with listener:  # the scheduler has its own copy now
            _start("scheduler", job, listener=listener)
    if hosts.index(address) == rank:  # the lowest rank of this host
        first = distinct.index(address) * servers_per_host
        for i in range(first, first + servers_per_host):
            _start("server", job, index=i)
    if _started:
        atexit.register(_stop_started)
    os.environ.update(job)
    os.environ.update(DMLC_ROLE="worker", DMLC_WORKER_ID=str(rank))
    ops.init()
    _check_rank(rank, world_size)


def _join_described(rank, world_size):
    declared = os.environ.get("DMLC_NUM_WORKER", "").strip()
    if declared and declared.isdigit() and int(declared) * _local_size() != world_size:
        raise CaravanError(
            "caravan backend: torch's world size is %d, but the job DMLC_* describes has "
            "DMLC_NUM_WORKER=%s%s workers: launch as many torch ranks as Caravan workers" %
            (world_size, declared, _local_size_text()))
    if os.environ.get("DMLC_ROLE") != "worker":
        raise CaravanError("caravan backend: DMLC_ROLE=%r; a torch rank is a worker (servers and "
                           "the scheduler run caravan-server)" % os.environ.get("DMLC_ROLE"))
    ops.init()
    _check_rank(rank, world_size)


def _local_size():
    text = os.environ.get("BYTEPS_LOCAL_SIZE", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else 1


def _local_size_text():
    n = _local_size()
    return "" if n == 1 else " x BYTEPS_LOCAL_SIZE=%d" % n


def _check_rank(rank, world_size):
    if ops.size() != world_size or ops.rank() != rank:
        raise CaravanError(
            "caravan backend: torch says rank %d of %d, Caravan's job says rank %d of %d: give "
            "each process RANK = DMLC_WORKER_ID x BYTEPS_LOCAL_SIZE + BYTEPS_LOCAL_RANK" %
            (rank, world_size, ops.rank(), ops.size()))
