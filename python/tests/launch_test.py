"""bpslaunch and `python3 -m caravan.launch` (pytest).

CTest runs it with CARAVAN_BUILD_DIR set; the launcher under test is
$CARAVAN_BUILD_DIR/bin/bpslaunch, its packages $CARAVAN_BUILD_DIR/python.
"""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

BUILD = os.environ.get("CARAVAN_BUILD_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
BPSLAUNCH = os.path.join(BUILD, "bin", "bpslaunch")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BUILD, "python"))

from caravan import launch  # noqa: E402

JOB_VARIABLES = ("DMLC_ROLE", "DMLC_WORKER_ID", "DMLC_NUM_WORKER", "DMLC_NUM_SERVER",
                 "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "BYTEPS_LOCAL_SIZE", "BYTEPS_LOCAL_RANK",
                 "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "BYTEPS_FORCE_DISTRIBUTED",
                 "CARAVAN_SERVER_ID", "DMLC_NODE_HOST")


def environment(**variables):
    env = {k: v for k, v in os.environ.items() if k not in JOB_VARIABLES}
    env["CARAVAN_PYTHON"] = sys.executable  # this interpreter runs pytest: it has torch
    env.update({k: str(v) for k, v in variables.items()})
    return env


def run(command, timeout=120, **variables):
    return subprocess.run(command, env=environment(**variables), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def python_c(code):
    return [sys.executable, "-c", code]


def test_missing_or_bad_role_is_named():
    r = run([BPSLAUNCH, "true"])
    assert r.returncode == 2 and "DMLC_ROLE is not set" in r.stderr
    r = run([BPSLAUNCH, "true"], DMLC_ROLE="workr")
    assert r.returncode == 2 and "DMLC_ROLE='workr' is not worker, server or scheduler" in r.stderr
    r = run([BPSLAUNCH], DMLC_ROLE="worker")
    assert r.returncode == 2 and "needs a COMMAND" in r.stderr
    for bad in ("two", "\u00b2"):  # "²" passed str.isdigit(), then int() raised
        r = run([BPSLAUNCH, "true"], DMLC_ROLE="worker", BYTEPS_LOCAL_SIZE=bad)
        assert r.returncode == 2 and "BYTEPS_LOCAL_SIZE='%s'" % bad in r.stderr, r.stderr


def test_each_local_worker_gets_its_rank_and_a_prefix():
    code = "import os; print(os.environ['BYTEPS_LOCAL_RANK'], os.environ['BYTEPS_LOCAL_SIZE'])"
    r = run([BPSLAUNCH] + python_c(code), DMLC_ROLE="worker", BYTEPS_LOCAL_SIZE=3)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["[worker local_rank=%d] %d 3" % (i, i) for i in range(3)]


def test_python_workers_run_unbuffered():
    env = environment(DMLC_ROLE="worker")
    env.pop("PYTHONUNBUFFERED", None)
    code = "import os; print('unbuffered', os.environ.get('PYTHONUNBUFFERED'))"
    r = subprocess.run([BPSLAUNCH] + python_c(code), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0 and "unbuffered 1" in r.stdout, (r.stdout, r.stderr)


def test_module_form_and_gpu_count_default():
    code = "import os; print(os.environ['BYTEPS_LOCAL_RANK'])"
    r = run([sys.executable, "-m", "caravan.launch"] + python_c(code), DMLC_ROLE="worker",
            NVIDIA_VISIBLE_DEVICES="0,1", PYTHONPATH=os.path.join(BUILD, "python"))
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["[worker local_rank=0] 0", "[worker local_rank=1] 1"]


@pytest.mark.parametrize("variables,count", [
    ({}, 1),
    ({"NVIDIA_VISIBLE_DEVICES": "0,1,2"}, 3),
    ({"NVIDIA_VISIBLE_DEVICES": "none"}, 1),
    ({"NVIDIA_VISIBLE_DEVICES": ""}, 1),
    ({"NVIDIA_VISIBLE_DEVICES": "void", "CUDA_VISIBLE_DEVICES": "0,1"}, 1),
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, 2),
    ({"CUDA_VISIBLE_DEVICES": "1,-1,2"}, 1),
    ({"CUDA_VISIBLE_DEVICES": "0,1", "BYTEPS_LOCAL_SIZE": "4"}, 4),
])
def test_local_size(monkeypatch, variables, count):
    for name in JOB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert launch.local_size() == count


def test_a_failing_local_worker_stops_the_others_and_is_named():
    code = ("import os, sys, time\n"
            "if os.environ['BYTEPS_LOCAL_RANK'] == '1':\n"
            "    print('rank 1 fails', flush=True); sys.exit(3)\n"
            "time.sleep(100)\n")
    start = time.monotonic()
    r = run([BPSLAUNCH] + python_c(code), DMLC_ROLE="worker", BYTEPS_LOCAL_SIZE=2)
    assert time.monotonic() - start < 30, "the sleeping worker was not stopped"
    assert r.returncode == 3
    assert "[worker local_rank=1] rank 1 fails" in r.stdout
    assert "stopping the other 1 worker(s)" in r.stderr
    assert "worker local_rank=1 of 2 failed: exit status 3" in r.stderr


def test_a_worker_killed_by_a_signal_is_named():
    code = ("import os, signal, time\n"
            "if os.environ['BYTEPS_LOCAL_RANK'] == '0':\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "time.sleep(100)\n")
    r = run([BPSLAUNCH] + python_c(code), DMLC_ROLE="worker", BYTEPS_LOCAL_SIZE=2)
    assert r.returncode == 128 + signal.SIGKILL
    assert "worker local_rank=0 of 2 failed: killed by signal 9 (SIGKILL)" in r.stderr


def test_a_second_interrupt_kills_the_workers():
    """A worker blocked in a long wait (here: ignoring SIGINT) does not end on
    Ctrl-C; the second one sends SIGKILL. Every SIGINT was only passed on."""
    code = ("import signal, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(100)\n")
    proc = subprocess.Popen([BPSLAUNCH] + python_c(code), env=environment(DMLC_ROLE="worker",
                            BYTEPS_LOCAL_SIZE=2), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        ready = 0
        while ready < 2:
            line = proc.stdout.readline()
            assert line, "bpslaunch ended before its workers were ready"
            ready += line.endswith("ready\n")
        proc.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)  # SIGINT alone leaves them running
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.monotonic() - start < 10
    assert "received SIGINT again; sending SIGKILL to the workers" in err, err
    assert proc.returncode == 128 + signal.SIGKILL, (proc.returncode, err)


def test_python_without_torch_is_replaced_once(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho 'the interpreter without torch ran'\nexit 9\n")
    fake.chmod(0o755)
    code = "import torch; print('torch', torch.__version__)"
    r = run([BPSLAUNCH, "python3", "-c", code], DMLC_ROLE="worker", BYTEPS_LOCAL_SIZE=2,
            PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    assert r.returncode == 0, r.stderr
    assert "without torch ran" not in r.stdout
    assert r.stdout.count("torch") == 2
    notes = [line for line in r.stderr.splitlines() if "cannot import torch" in line]
    assert len(notes) == 1 and "'python3' (%s)" % fake in notes[0], r.stderr
    assert "running %s instead" % os.path.realpath(sys.executable) in notes[0] or \
        "running %s instead" % sys.executable in notes[0], notes


def test_one_quoted_command_line_runs_through_a_shell(tmp_path):
    """BytePS's launcher runs ' '.join(COMMAND) with shell=True, so scripts
    give the command as one quoted word; it failed here with 'cannot start
    ...: No such file or directory'. Its python is replaced as in the
    several-word form."""
    (tmp_path / "show.py").write_text(
        "import os, sys, torch\nprint('args', sys.argv[1:], os.environ['BYTEPS_LOCAL_RANK'])\n")
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho 'the interpreter without torch ran'\nexit 9\n")
    fake.chmod(0o755)
    r = run([BPSLAUNCH, "python3 %s --tag x" % (tmp_path / "show.py")], DMLC_ROLE="worker",
            BYTEPS_LOCAL_SIZE=2, PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == [
        "[worker local_rank=%d] args ['--tag', 'x'] %d" % (i, i) for i in range(2)], r.stdout
    assert "cannot import torch; running" in r.stderr
    r = run([BPSLAUNCH, "cd %s && %s show.py $0" % (tmp_path, sys.executable)],
            DMLC_ROLE="worker")
    assert r.returncode == 0 and "args ['/bin/sh'] 0" in r.stdout, (r.stdout, r.stderr)
    # Several words keep their quoting: "a b" stays one argument.
    r = run([BPSLAUNCH, sys.executable, str(tmp_path / "show.py"), "a b"], DMLC_ROLE="worker")
    assert r.returncode == 0 and "args ['a b'] 0" in r.stdout, (r.stdout, r.stderr)


def test_a_bad_caravan_python_is_named(tmp_path):
    """A CARAVAN_PYTHON that cannot run torch stops the launch, naming it;
    it used to be passed over for /usr/bin/python3 with advice to set it."""
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexit 9\n")
    fake.chmod(0o755)
    path = "%s:%s" % (tmp_path, os.environ["PATH"])
    r = run([BPSLAUNCH, "python3", "-c", "print(1)"], DMLC_ROLE="worker",
            CARAVAN_PYTHON="/nonexistent/python3", PATH=path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "CARAVAN_PYTHON='/nonexistent/python3' is not an interpreter found here" in r.stderr
    r = run([BPSLAUNCH, "python3", "-c", "print(1)"], DMLC_ROLE="worker",
            CARAVAN_PYTHON=str(fake), PATH=path)
    assert r.returncode == 2 and "CARAVAN_PYTHON='%s' cannot import torch" % fake in r.stderr


def test_local_size_beyond_the_engines_limit_starts_nothing(tmp_path):
    marker = tmp_path / "started"
    r = run([BPSLAUNCH, "touch", str(marker)], timeout=30, DMLC_ROLE="worker",
            BYTEPS_LOCAL_SIZE=1025)
    assert r.returncode == 2 and "BYTEPS_LOCAL_SIZE='1025' is not an integer from 1 to 1024" \
        in r.stderr, r.stderr
    assert not marker.exists()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_role_runs_caravan_server():
    """DMLC_ROLE=server: bpslaunch becomes caravan-server (same process) and
    does not run COMMAND; with no scheduler it fails naming it."""
    job = dict(DMLC_ROLE="server", DMLC_NUM_WORKER=2, DMLC_NUM_SERVER=1,
               DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=free_port(),
               DMLC_NODE_HOST="127.0.0.1", CARAVAN_CONNECT_TIMEOUT=3)
    proc = subprocess.Popen([BPSLAUNCH, "python3", "no-such-script.py"],
                            env=environment(**job), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    exe = ""
    while time.monotonic() < deadline and not exe.endswith("caravan-server"):
        try:
            exe = os.readlink("/proc/%d/exe" % proc.pid)
        except OSError:
            break
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert exe == os.path.realpath(os.path.join(BUILD, "bin", "caravan-server")), (exe, err)
    assert "is for workers and is not run" in err
    assert "no-such-script" not in out
    assert proc.returncode > 0 and "scheduler" in err


def test_a_one_worker_job_needs_no_server_or_scheduler():
    """With DMLC_NUM_WORKER=1 the worker sums alone and never connects: a
    server or scheduler pod started for it exits 0 at once, as with BytePS's
    launcher (it used to wait out CARAVAN_CONNECT_TIMEOUT and fail)."""
    # "01" is one worker to the engine too.
    for role, workers in (("server", "1"), ("scheduler", "1"), ("scheduler", "01")):
        start = time.monotonic()
        r = run([BPSLAUNCH], timeout=30, DMLC_ROLE=role, DMLC_NUM_WORKER=workers,
                DMLC_NUM_SERVER=1, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=free_port())
        assert r.returncode == 0, r.stderr
        assert "DMLC_NUM_WORKER=1 needs no %s" % role in r.stderr, r.stderr
        assert time.monotonic() - start < 10
    # Forced ("true" as the engine reads it too): it serves.
    for force in ("1", "true"):
        r = run([BPSLAUNCH], timeout=30, DMLC_ROLE="scheduler", DMLC_NUM_WORKER=1,
                DMLC_NUM_SERVER=1, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=free_port(),
                BYTEPS_FORCE_DISTRIBUTED=force, CARAVAN_CONNECT_TIMEOUT=2)
        assert r.returncode > 0 and "0 of 1 workers" in r.stderr, r.stderr


def test_a_job_started_by_hand_as_with_byteps():
    """Scheduler, server and two workers, each started by bpslaunch (one
    worker by python3 -m caravan.launch, the scheduler by python3 -c 'import
    byteps.server', as BytePS's launcher starts it) with DMLC_* as in
    BytePS's docs."""
    job = dict(DMLC_NUM_WORKER=2, DMLC_NUM_SERVER=1, DMLC_PS_ROOT_URI="127.0.0.1",
               DMLC_PS_ROOT_PORT=free_port(), DMLC_NODE_HOST="127.0.0.1",
               CARAVAN_CONNECT_TIMEOUT=60, CARAVAN_OP_TIMEOUT=60)
    worker = os.path.join(HERE, "launched_worker.py")
    procs = {
        "scheduler": [sys.executable, "-c", "import byteps.server"], "server": [BPSLAUNCH],
        "worker 0": [BPSLAUNCH, "python3", worker],
        "worker 1": [sys.executable, "-m", "caravan.launch", "python3", worker],
    }
    started = {}
    for name, command in procs.items():
        role = name.split()[0]
        extra = {"DMLC_ROLE": role, "PYTHONPATH": os.path.join(BUILD, "python")}
        if role == "worker":
            extra["DMLC_WORKER_ID"] = name.split()[1]
        started[name] = subprocess.Popen(command, env=environment(**job, **extra),
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
    results = {}
    try:
        for name, proc in started.items():
            out, err = proc.communicate(timeout=120)
            results[name] = (proc.returncode, out, err)
    finally:
        for proc in started.values():
            if proc.poll() is None:
                proc.kill()
    for name, (rc, out, err) in results.items():
        assert rc == 0, "%s exited with %s:\n%s\n%s" % (name, rc, out, err)
    for i in range(2):
        out = results["worker %d" % i][1]
        assert "[worker local_rank=0] launched worker rank=%d size=2 local_rank=0 local_size=1 ok" \
            % i in out, out


def test_local_group_of_two_workers_on_one_machine():
    """BYTEPS_LOCAL_SIZE=2 on one machine (DMLC_NUM_WORKER=1): the two local
    workers sum and broadcast through shared memory, and caravan.torch's
    rank(), size(), local_rank(), local_size() agree with bpslaunch (C API
    1.1: CTest runs this one as Python.Launcher.LocalGroup)."""
    code = ("import torch, byteps.torch as bps\n"
            "bps.init()\n"
            "out = bps.push_pull(torch.full((3,), bps.rank() + 1.0), average=False, name='x')\n"
            "b = bps.broadcast(torch.full((2,), float(bps.rank())), root_rank=1, name='b')\n"
            "print(bps.rank(), bps.size(), bps.local_rank(), bps.local_size(), out.tolist(),"
            " b.tolist())\n")
    r = run([BPSLAUNCH] + python_c(code), DMLC_ROLE="worker", DMLC_NUM_WORKER=1,
            BYTEPS_LOCAL_SIZE=2, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=free_port())
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(r.stdout.splitlines()) == [
        "[worker local_rank=%d] %d 2 %d 2 [3.0, 3.0, 3.0] [1.0, 1.0]" % (i, i, i) for i in range(2)]
