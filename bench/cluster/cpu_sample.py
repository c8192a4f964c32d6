#!/usr/bin/env python3
"""CPU per gradient byte, by role and thread, for bench/cluster/run.sh --cpu.

  cpu_sample.py record DIR ROOT EXE...
                                    samples, until SIGTERM, every thread of every
                                    process that runs one of EXE and descends from
                                    process ROOT (the benchmark, not another job
                                    on the machine): user and system
                                    CPU and context switches (/proc/<pid>/task),
                                    and, where perf can count tracepoints, the
                                    system calls of every process (perf stat)
  cpu_sample.py report DIR --window START END --steps N --bytes B --workers W
                       [--prep-cpu S] [--compute-step-ms M] [--title T]
                                    prints what each role's threads used within
                                    the timed window [START, END] (wall clock,
                                    seconds since the epoch, as the workers print
                                    it), per gradient byte

Why outside the programs: the servers are caravan-server itself, and the
same sampler must read Gloo's ranks, Caravan's workers and its servers alike.
Why a window: start-up, warm-up and shutdown are not what a training step
costs. Each thread's counters are interpolated linearly between the samples
either side of the window's edges (samples every 50 ms; a step is longer).

"Per gradient byte" divides a role's CPU (all its processes together) by the
bytes the workers push_pull in the window (workers x steps x workload bytes),
so worker, server and Gloo figures add up and compare directly. cpu_s, and
the figures per byte and per step, come from /proc/<pid>/task/<tid>/schedstat
(nanoseconds on a CPU); user_s and sys_s split it as /proc's 10 ms ticks do,
so they are coarse in short windows. --prep-cpu is
the CPU each worker's main thread spent on its own computation in the window
(filling and checking tensors, or a model's steps: not communication); it is
taken off the workers' main threads, and once per worker off the machine.
--compute-step-ms is what the machine spent a step on computation alone (the
--api none run of a model's training); a row "less compute" then shows the
rest, communication's cost to the whole machine.
The machine's rows are every CPU's busy time in the window (/proc/stat, all
processes, the kernel's softirq work for the network included, which no
process is charged with when ksoftirqd or an interrupt does it).
"""
import bisect
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict

INTERVAL_S = 0.05
HZ = os.sysconf("SC_CLK_TCK")


def role_of(pid, exe):
    """DMLC_ROLE; else "gloo" for Gloo's ring, "worker" for a torch rank (RANK set)."""
    env = {}
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for item in f.read().split(b"\0"):
                key, _, value = item.partition(b"=")
                env[key] = value
    except OSError:
        pass
    if b"DMLC_ROLE" in env:
        return env[b"DMLC_ROLE"].decode()
    name = os.path.basename(exe)
    if "gloo" in name:
        return "gloo"
    return "worker" if b"RANK" in env else name


def machine():
    """The whole machine's CPU from /proc/stat, as a thread's counters: (user ticks,
    system ticks with interrupts, 0, 0, busy ns); and the softirq part alone."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, system, irq, softirq = v[0] + v[1], v[2], v[5], v[6]
    busy = user + system + irq + softirq + (v[7] if len(v) > 7 else 0)
    ns = 1e9 / HZ
    return ((user, system + irq + softirq, 0, 0, int(busy * ns)),
            (0, softirq, 0, 0, int(softirq * ns)))


def read_thread(pid, tid):
    """(comm, user ticks, system ticks, voluntary, involuntary, ns on a CPU) or None once gone."""
    base = "/proc/%d/task/%d/" % (pid, tid)
    try:
        with open(base + "stat") as f:
            stat = f.read()
        with open(base + "status") as f:
            status = f.read()
        with open(base + "schedstat") as f:  # exact, where stat counts 10 ms ticks
            run_ns = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    rest = stat[stat.rindex(")") + 2:].split()
    vol = invol = 0
    for line in status.splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            vol = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches:"):
            invol = int(line.split()[1])
    return comm, int(rest[11]), int(rest[12]), vol, invol, run_ns


def descends_from(pid, root):
    while pid > 1:
        if pid == root:
            return True
        try:
            with open("/proc/%d/stat" % pid) as f:
                stat = f.read()
        except OSError:
            return False
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
    return False


def record(out_dir, root, exes):
    exes = {os.path.realpath(e) for e in exes}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    perf = None
    perf_log = open(os.path.join(out_dir, "syscalls.csv"), "w")
    try:  # system calls per thread, in 100 ms intervals; absent where perf cannot
        perf_start = time.time()
        perf = subprocess.Popen(
            ["perf", "stat", "-e", "raw_syscalls:sys_enter", "--per-thread", "-a", "-I", "100",
             "-x,"], stdout=subprocess.DEVNULL, stderr=perf_log)
        with open(os.path.join(out_dir, "perf_start"), "w") as f:
            f.write("%.6f\n" % perf_start)
    except OSError:
        pass
    roles = {}
    ready = os.path.join(out_dir, "ready")
    if not os.path.exists(ready):
        ready = None  # no one waits
    with open(os.path.join(out_dir, "threads.csv"), "w") as out:
        out.write("time,pid,role,tid,comm,user_ticks,sys_ticks,voluntary,involuntary,run_ns\n")
        while not stop:
            now = time.time()
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                pid = int(name)
                if pid not in roles:
                    try:
                        exe = os.path.realpath("/proc/%d/exe" % pid)
                    except OSError:
                        continue
                    if exe not in exes:
                        continue  # not yet, maybe: timeout, ip netns exec and env exec it
                    roles[pid] = role_of(pid, exe) if descends_from(pid, root) else None
                if roles[pid] is None:
                    continue
                try:
                    tids = os.listdir("/proc/%d/task" % pid)
                except OSError:
                    continue
                for t in tids:
                    tid = int(t)
                    r = read_thread(pid, tid)
                    if r is None:
                        continue
                    comm = "main" if tid == pid else r[0]
                    out.write("%.4f,%d,%s,%d,%s,%d,%d,%d,%d,%d\n" %
                              (now, pid, roles[pid], tid, comm.replace(",", ";"), *r[1:]))
            whole, soft = machine()
            out.write("%.4f,0,machine,0,all CPUs,%d,%d,%d,%d,%d\n" % (now, *whole))
            out.write("%.4f,0,machine,-1,softirq,%d,%d,%d,%d,%d\n" % (now, *soft))
            out.flush()
            if ready:  # run.sh starts the run once told, through its fifo
                with open(ready, "w") as f:
                    f.write("ready\n")
                ready = None
            time.sleep(max(0.0, INTERVAL_S - (time.time() - now)))
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    perf_log.close()


def at(samples, t):
    """A thread's counters at time t, interpolated; 0 before it existed."""
    times = [s[0] for s in samples]
    i = bisect.bisect_left(times, t)
    if i == 0:
        return [0.0] * len(samples[0][1]) if times[0] > t + INTERVAL_S else list(samples[0][1])
    if i == len(samples):
        return list(samples[-1][1])
    (t0, a), (t1, b) = samples[i - 1], samples[i]
    w = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
    return [x + (y - x) * w for x, y in zip(a, b)]


def report(out_dir, start, end, steps, nbytes, workers, prep_cpu, title, compute_ms=None):
    # (role, pid, tid, comm) -> [(time, [user_s, sys_s, voluntary, involuntary, cpu_s])]
    series = defaultdict(list)
    with open(os.path.join(out_dir, "threads.csv")) as f:
        next(f)
        for line in f:
            t, pid, role, tid, comm, u, s, v, n, ns = line.rstrip("\n").split(",")
            series[(role, int(pid), int(tid), comm)].append(
                (float(t), [int(u) / HZ, int(s) / HZ, int(v), int(n), int(ns) / 1e9]))
    syscalls = defaultdict(int)  # pid -> system calls within the window (perf counts processes)
    perf_start = None
    try:
        with open(os.path.join(out_dir, "perf_start")) as f:
            perf_start = float(f.read())
    except OSError:
        pass
    if perf_start is not None:
        with open(os.path.join(out_dir, "syscalls.csv")) as f:
            for line in f:
                p = line.strip().split(",")
                if len(p) < 5 or "raw_syscalls" not in p[4] or "-" not in p[1]:
                    continue
                t = perf_start + float(p[0])  # the end of a 100 ms interval
                if start < t - 0.05 <= end and p[2].isdigit():
                    syscalls[int(p[1].rsplit("-", 1)[1])] += int(p[2])
    # (role, comm) -> user_s, sys_s, voluntary, involuntary, syscalls, cpu_s
    total = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0, 0.0])
    procs = defaultdict(set)
    for (role, pid, tid, comm), samples in series.items():
        if samples[-1][0] < start or samples[0][0] > end:
            continue
        a, b = at(samples, start), at(samples, end)
        acc = total[(role, comm)]
        for i in range(4):
            acc[i] += b[i] - a[i]
        acc[5] += b[4] - a[4]
        if b[4] > a[4] and pid > 0:  # a process that ran in the window
            procs[role].add(pid)
    # perf counts what it attributes to each process; none for a process that
    # used CPU means perf missed it (it maps tasks as it goes): nan, not 0.
    calls = {}
    for role, pids in procs.items():
        counted = [syscalls[p] for p in pids if syscalls.get(p, 0) > 0]
        calls[role] = sum(counted) if len(counted) == len(pids) else float("nan")
    # The workers' own computation (filling and checking, or a model's
    # steps) is not communication: off their main threads and the machine.
    ranks = len(procs["worker"]) + len(procs["gloo"])
    for key in (("worker", "main"), ("gloo", "main"), ("machine", "all CPUs")):
        if prep_cpu and key in total:
            prep = prep_cpu * (ranks if key[0] == "machine" else len(procs[key[0]]))
            total[key][0] = max(0.0, total[key][0] - prep)  # ticks: coarser than the clock
            total[key][5] = max(0.0, total[key][5] - prep)
    ran = sum(v[5] for (r, _), v in total.items() if r not in ("scheduler", "machine"))
    if end <= start or ran <= 0:
        sys.stderr.write("cpu_sample: %s: no CPU was seen in the timed window [%.3f, %.3f] "
                         "(%d thread(s) sampled in %s)\n" % (title, start, end, len(series), out_dir))
        return 1
    grad_bytes = workers * steps * nbytes
    mb = grad_bytes / 1e6
    print("cpu: %s; timed window %.2f s, %d step(s) x %d worker(s) x %.1f MB" %
          (title, end - start, steps, workers, nbytes / 1e6))
    print("%-10s %-16s %8s %8s %8s %9s %12s %10s %11s" %
          ("role", "thread", "cpu_s", "user_s", "sys_s", "ns/byte", "core-ms/step",
           "wakeups/MB", "syscalls/MB"))
    # perf counts system calls per process, so they are on the "all" rows only.
    line = "%-10s %-16s %8.3f %8.2f %8.2f %9.2f %12.1f %10.1f %11.1f"
    for role in sorted({r for r, _ in total}):
        rows = sorted(((c, v) for (r, c), v in total.items() if r == role), key=lambda cv: -cv[1][5])
        sums = [0.0] * 6
        for comm, v in rows:
            for i in range(6):
                sums[i] += v[i]
            if v[5] < 0.002 and role != "machine":
                continue  # idle threads (heartbeat, control) would only crowd the table
            print(line % (role, comm, v[5], v[0], v[1], v[5] * 1e9 / grad_bytes, v[5] * 1e3 / steps,
                          (v[2] + v[3]) / mb, float("nan")))
        if role == "machine":
            if compute_ms is not None:  # what communication cost the machine, as issue 34 counts
                comm_s = max(0.0, total[("machine", "all CPUs")][5] - compute_ms * steps / 1e3)
                print(line % (role, "less compute", comm_s, float("nan"), float("nan"),
                              comm_s * 1e9 / grad_bytes, comm_s * 1e3 / steps, float("nan"),
                              float("nan")))
            continue  # its rows overlap: every CPU's busy time, and the softirq part of it
        print(line % (role, "all (%d proc)" % len(procs[role]), sums[5], sums[0], sums[1],
                      sums[5] * 1e9 / grad_bytes, sums[5] * 1e3 / steps, (sums[2] + sums[3]) / mb,
                      calls.get(role, float("nan")) / mb if perf_start is not None else float("nan")))
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "record":
        record(argv[2], int(argv[3]), argv[4:])
        return 0
    if len(argv) >= 3 and argv[1] == "report":
        args = argv[3:]
        opts = {"--prep-cpu": "0", "--title": "", "--compute-step-ms": None}
        i = 0
        while i < len(args):
            if args[i] == "--window":
                opts["--window"] = (float(args[i + 1]), float(args[i + 2]))
                i += 3
            else:
                opts[args[i]] = args[i + 1]
                i += 2
        start, end = opts["--window"]
        return report(argv[2], start, end, int(opts["--steps"]), float(opts["--bytes"]),
                      int(opts["--workers"]), float(opts["--prep-cpu"]), opts["--title"],
                      None if opts["--compute-step-ms"] is None else float(opts["--compute-step-ms"]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
