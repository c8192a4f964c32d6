"""bpslaunch: starts this machine's part of a job, as BytePS's launcher does.

    DMLC_ROLE=worker    bpslaunch COMMAND [ARGS...]
    DMLC_ROLE=server    bpslaunch [COMMAND...]      (COMMAND is not run)
    DMLC_ROLE=scheduler bpslaunch [COMMAND...]

Also `python3 -m caravan.launch COMMAND...`.

worker: runs BYTEPS_LOCAL_SIZE copies of COMMAND (default: one per GPU
listed in NVIDIA_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES, else one),
each with BYTEPS_LOCAL_RANK and BYTEPS_LOCAL_SIZE set, their output lines
prefixed "[worker local_rank=N] ". If one fails, the others are stopped and
the launcher exits non-zero naming it. When COMMAND starts with python or
python3 and that interpreter cannot import torch, an interpreter that can
(CARAVAN_PYTHON, the one Caravan was built for, /usr/bin/python3) runs it
instead, said once on stderr. A COMMAND given as one word with spaces
("python3 train.py --epochs 3") runs through /bin/sh, as BytePS's launcher
runs its command line; several words run as given.

server, scheduler: becomes caravan-server (the one beside this package's
libcaravan, else on PATH).
"""
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading

from . import _paths

_STOP_GRACE_SECONDS = 10
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)?)?")
_HAS_TORCH = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)"


class LaunchError(Exception):
    """A problem with the environment or the command, said before anything runs."""


def _say(prog, message):
    print("%s: %s" % (prog, message), file=sys.stderr, flush=True)


# ---- how many workers -------------------------------------------------------


def _visible_gpus():
    """(count, variable) from NVIDIA_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES,
    or (0, None) when neither is set."""
    for var in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        value = os.environ.get(var)
        if value is None:
            continue
        value = value.strip()
        if value.lower() in ("", "none", "void", "nodevfiles"):
            return 0, var
        if value.lower() == "all":
            try:
                return len(os.listdir("/proc/driver/nvidia/gpus")), var
            except OSError:
                return 0, var
        count = 0
        for item in value.split(","):
            # CUDA hides every device after an invalid index such as -1.
            if not item.strip() or item.strip().startswith("-"):
                break
            count += 1
        return count, var
    return 0, None


# The engine's limit (engine/local/local_config.h): checked here too, before
# starting that many processes each to refuse it.
MAX_LOCAL_SIZE = 1024


def _engine_integer(text):
    """`text` as the engine reads an integer variable (strtoll: blanks before,
    a sign, ASCII digits, nothing after), or None. str.isdigit() took "²",
    which int() then refused with a traceback."""
    if text is None or not re.fullmatch(r"\s*[+-]?[0-9]+", text):
        return None
    return int(text)


def local_size():
    """The number of worker processes to start on this machine."""
    value = os.environ.get("BYTEPS_LOCAL_SIZE")
    if value is not None and value.strip():
        count = _engine_integer(value)
        if count is None or not 1 <= count <= MAX_LOCAL_SIZE:
            raise LaunchError("BYTEPS_LOCAL_SIZE='%s' is not an integer from 1 to %d" %
                              (value, MAX_LOCAL_SIZE))
        return count
    gpus, _ = _visible_gpus()
    return max(gpus, 1)


# ---- which interpreter ------------------------------------------------------


def _can_import_torch(python):
    try:
        return subprocess.run([python, "-c", _HAS_TORCH], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def torch_interpreters():
    """Interpreters to try, in order: CARAVAN_PYTHON, the one the build
    found, /usr/bin/python3, this one."""
    seen, result = set(), []
    for python in (os.environ.get("CARAVAN_PYTHON"), _paths.PYTHON, "/usr/bin/python3",
                   sys.executable):
        if python and python not in seen:
            seen.add(python)
            result.append(python)
    return result


def find_torch_interpreter(skip=None):
    """The first interpreter of torch_interpreters() that can import torch, or
    None. CARAVAN_PYTHON, when set, must be one: a choice the user made is
    not passed over in silence."""
    chosen = os.environ.get("CARAVAN_PYTHON")
    if chosen:
        path = shutil.which(chosen)
        if not path or not _can_import_torch(path):
            raise LaunchError("CARAVAN_PYTHON='%s' %s" % (
                chosen, "cannot import torch" if path else "is not an interpreter found here"))
        return path
    for python in torch_interpreters():
        path = shutil.which(python)
        if path and path != skip and _can_import_torch(path):
            return path
    return None


def with_torch_interpreter(command, prog):
    """COMMAND, with its interpreter replaced when it is python/python3/
    pythonX.Y and cannot import torch while another one can."""
    if not _PYTHON_NAME.fullmatch(os.path.basename(command[0])):
        return command
    named = shutil.which(command[0])
    if named and _can_import_torch(named):
        return command
    other = find_torch_interpreter(skip=named)
    shown = "'%s' (%s)" % (command[0], named or "not found")
    if other is None:
        _say(prog, "%s cannot import torch, and neither can any of %s; running it as it is "
             "(install PyTorch, or set CARAVAN_PYTHON to an interpreter that has it)" %
             (shown, ", ".join(torch_interpreters())))
        return command
    _say(prog, "%s cannot import torch; running %s instead (set CARAVAN_PYTHON to choose)" %
         (shown, other))
    return [other] + list(command[1:])


# A plain first word of a shell line: no quotes, expansions or operators.
_FIRST_WORD = re.compile(r"\s*([^\s'\"\\$`;&|<>()]+)(?=\s|$)")


def _as_shell_line(command, prog):
    """BytePS's launcher runs ' '.join(COMMAND) through a shell, so scripts
    pass the whole command as one quoted word ("python3 train.py --epochs 3",
    "cd /data && python3 train.py"). One word with a space in it runs that
    way here too (its python replaced as with_torch_interpreter would), as
    ["/bin/sh", "-c", line]; None otherwise. Several words run as they are,
    their quoting kept, where BytePS would split and expand them again."""
    if len(command) != 1 or not any(c.isspace() for c in command[0]):
        return None
    line = command[0]
    first = _FIRST_WORD.match(line)
    if first:
        chosen = with_torch_interpreter([first.group(1)], prog)[0]
        if chosen != first.group(1):
            line = line[:first.start(1)] + shlex.quote(chosen) + line[first.end(1):]
    return ["/bin/sh", "-c", line]


# ---- worker processes -------------------------------------------------------


def _find_prctl():
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _find_prctl()  # looked up before any fork
_PR_SET_PDEATHSIG = 1


def _child_setup():
    """In each worker before exec: a process group of its own, so stopping
    it stops whatever it started; and SIGTERM when the launcher dies."""
    os.setpgid(0, 0)
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _describe(status):
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "unknown"
        return "killed by signal %d (%s)" % (-status, name)
    return "exit status %d" % status


class _Output:
    """Copies a worker's stdout or stderr to ours, a prefix on every line."""

    lock = threading.Lock()

    def __init__(self, source, sink, prefix):
        self.thread = threading.Thread(target=self._copy, args=(source, sink, prefix), daemon=True)
        self.thread.start()

    @classmethod
    def _copy(cls, source, sink, prefix):
        for line in iter(source.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            with cls.lock:
                sink.write(prefix + line)
                sink.flush()
        source.close()


class WorkerGroup:
    """The local workers of one machine."""

    def __init__(self, command, count, prog):
        self.prog = prog
        self.command = command
        self.count = count
        self.procs = []
        self.outputs = []
        self.exits = queue.Queue()

    def _environment(self, local_rank):
        env = dict(os.environ)
        env["BYTEPS_LOCAL_RANK"] = str(local_rank)
        env["BYTEPS_LOCAL_SIZE"] = str(self.count)
        # Their output comes through pipes (for the prefix): without this, a
        # Python worker's prints wait in its block buffer, and are lost if it
        # is killed. BytePS's launcher sets it too.
        env.setdefault("PYTHONUNBUFFERED", "1")
        if _paths.BUILD_TREE:  # build/python holds only Caravan's packages
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        return env

    def start(self):
        for rank in range(self.count):
            try:
                proc = subprocess.Popen(self.command, env=self._environment(rank),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        preexec_fn=_child_setup)
            except OSError as e:
                self.stop()
                raise LaunchError("cannot start '%s': %s" % (self.command[0], e.strerror))
            self.procs.append(proc)
        for rank, proc in enumerate(self.procs):
            prefix = b"[worker local_rank=%d] " % rank
            self.outputs.append(_Output(proc.stdout, sys.stdout.buffer, prefix))
            self.outputs.append(_Output(proc.stderr, sys.stderr.buffer, prefix))
            threading.Thread(target=lambda r=rank, p=proc: self.exits.put((r, p.wait())),
                             daemon=True).start()

    def signal_all(self, sig):
        for proc in self.procs:
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass

    def stop(self):
        """SIGTERM to every worker still running; SIGKILL after the grace period."""
        self.signal_all(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=_STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.signal_all(signal.SIGKILL)

    def wait(self):
        """Waits for all; returns (local rank, status) of the first that failed, or None."""
        failed = None
        for _ in range(self.count):
            rank, status = self.exits.get()
            if status != 0 and failed is None:
                failed = (rank, status)
                running = sum(1 for p in self.procs if p.poll() is None)
                if running:
                    _say(self.prog, "worker local_rank=%d failed (%s); stopping the other %d "
                         "worker(s)" % (rank, _describe(status), running))
                    threading.Thread(target=self.stop, daemon=True).start()
        for out in self.outputs:
            out.thread.join(timeout=5)  # a grandchild may still hold the pipe
        return failed


def _run_workers(command, prog):
    if not command:
        raise LaunchError("DMLC_ROLE=worker needs a COMMAND to run, e.g. "
                          "'%s python3 train.py'" % prog)
    count = local_size()
    command = _as_shell_line(command, prog) or with_torch_interpreter(command, prog)
    group = WorkerGroup(command, count, prog)

    received = []

    def forward(sig, frame):
        # A worker blocked in the engine (a wait of up to CARAVAN_OP_TIMEOUT)
        # sees a signal only when the wait ends: a second Ctrl-C kills.
        received.append(sig)
        if len(received) == 1:
            _say(prog, "received %s; passing it to the workers (again: SIGKILL)" %
                 signal.Signals(sig).name)
            group.signal_all(sig)
        else:
            _say(prog, "received %s again; sending SIGKILL to the workers" %
                 signal.Signals(sig).name)
            group.signal_all(signal.SIGKILL)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    group.start()
    failed = group.wait()
    if failed is None:
        return 0
    rank, status = failed
    _say(prog, "worker local_rank=%d of %d failed: %s" % (rank, count, _describe(status)))
    return status if status > 0 else 128 - status


# ---- server and scheduler ---------------------------------------------------


def find_server():
    """caravan-server beside this package's libcaravan (the build's bin/ or
    the install's bindir), else on PATH."""
    beside = os.path.join(_paths.BINDIR, "caravan-server")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("caravan-server")
    if found:
        return found
    raise LaunchError("cannot find caravan-server in %s or on PATH" % _paths.BINDIR)


def _needed(role, prog):
    """False when the job has one worker and BYTEPS_FORCE_DISTRIBUTED is not
    1: that worker sums alone and never connects, so a server or scheduler
    started for it would wait out CARAVAN_CONNECT_TIMEOUT and fail. BytePS's
    launcher exits at once then, and so does this one."""
    # Read as the engine reads them, so that this launcher and the worker
    # agree ("01" is one worker, "true" forces distribution).
    workers = _engine_integer(os.environ.get("DMLC_NUM_WORKER"))
    if workers != 1 or os.environ.get("BYTEPS_FORCE_DISTRIBUTED") in ("1", "true"):
        return True
    _say(prog, "DMLC_ROLE=%s: DMLC_NUM_WORKER=1 needs no %s (the worker runs alone; "
         "BYTEPS_FORCE_DISTRIBUTED=1 would start one); exiting" % (role, role))
    return False


def _exec_server(role, command, prog):
    server = find_server()
    if command:
        _say(prog, "DMLC_ROLE=%s: running %s; the command (%s) is for workers and is not run"
             % (role, server, " ".join(command)))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(server, [server])


USAGE = """usage: DMLC_ROLE=worker|server|scheduler %(prog)s COMMAND [ARGS...]

Starts this machine's part of a Caravan (BytePS-style) job. The job is
described by DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_WORKER,
DMLC_NUM_SERVER (and DMLC_WORKER_ID for workers).

  DMLC_ROLE=worker     runs BYTEPS_LOCAL_SIZE copies of COMMAND (default:
                       one per GPU in NVIDIA_VISIBLE_DEVICES or
                       CUDA_VISIBLE_DEVICES, else 1), each with
                       BYTEPS_LOCAL_RANK and BYTEPS_LOCAL_SIZE set; fails
                       if one fails, naming it
  DMLC_ROLE=server     runs caravan-server (COMMAND is not run); exits at
                       once with DMLC_NUM_WORKER=1 unless
                       BYTEPS_FORCE_DISTRIBUTED=1, as BytePS's launcher
  DMLC_ROLE=scheduler  the same

COMMAND given as one word with spaces ("python3 train.py --epochs 3",
"cd /data && python3 train.py") runs through /bin/sh, as BytePS's
launcher runs its command line; several words run as given.

A COMMAND starting with python/python3 whose interpreter cannot import
torch runs under one that can (CARAVAN_PYTHON, else the one Caravan was
built for, else /usr/bin/python3).
"""


def main(argv=None, prog="bpslaunch"):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE % {"prog": prog}, end="")
        return 0
    role = os.environ.get("DMLC_ROLE")
    try:
        if role is None or not role.strip():
            raise LaunchError("DMLC_ROLE is not set: set it to worker, server or scheduler")
        if role in ("server", "scheduler"):
            if not _needed(role, prog):
                return 0
            _exec_server(role, argv, prog)
        if role == "worker":
            return _run_workers(argv, prog)
        raise LaunchError("DMLC_ROLE='%s' is not worker, server or scheduler" % role)
    except LaunchError as e:
        _say(prog, str(e))
        return 2


if __name__ == "__main__":
    sys.exit(main(prog="python3 -m caravan.launch"))
