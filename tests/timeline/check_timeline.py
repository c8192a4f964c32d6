"""Checks the timeline files of one job (BYTEPS_TRACE_ON=1, docs/timeline.md).

usage: check_timeline.py TRACE_DIR WORKERS SERVERS START_STEP END_STEP [device:PREFIX]

Every file must parse as Chrome trace JSON and every event must pass a schema
check. Every worker must have, for each tensor and each traced step, every
partition with its four stages in order (queue, push, pull, copy back); every
server, for each key and traced step, a receive and a sum per worker and an
answer per worker; the keys of all servers together must be exactly the
partitions of all tensors; no event may lie outside the step window. With
`device` (device tensors), every partition also has its copy to host
(ending before it is queued) and its copy to device (starting once its sum
arrived) when its tensor's name starts with PREFIX (the device tensors).
Exits 1 naming the first thing wrong.
"""
import json
import os
import sys
from collections import defaultdict

WORKER_STAGES = ["queue", "push", "pull", "copy back"]
DEVICE_STAGES = ["copy to host", "copy to device"]
SERVER_STAGES = ["receive", "sum", "answer"]


def fail(why):
    print("check_timeline: FAIL: " + why)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path} does not parse as JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(f"{path}: no traceEvents list")
    if doc.get("otherData", {}).get("dropped_events") != 0:
        fail(f"{path}: events were dropped: {doc.get('otherData')}")
    names = {}
    events = []
    for i, e in enumerate(doc["traceEvents"]):
        where = f"{path} event {i} ({e})"
        if not isinstance(e, dict) or e.get("ph") not in ("X", "M"):
            fail(where + ": ph is not X or M")
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail(where + ": pid and tid must be integers")
        if not isinstance(e.get("name"), str) or not isinstance(e.get("args"), dict):
            fail(where + ": name must be a string and args an object")
        if e["ph"] == "M":
            if e["name"] not in ("process_name", "thread_name") or not isinstance(e["args"].get("name"), str):
                fail(where + ": a metadata event names a process or a thread")
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            continue
        for field, kind in (("ts", int), ("dur", int), ("cat", str)):
            if not isinstance(e.get(field), kind):
                fail(where + f": {field} must be {kind.__name__}")
        if e["ts"] <= 0 or e["dur"] < 0:
            fail(where + ": ts must be positive and dur not negative")
        for field, kind in (("key", str), ("bytes", int), ("priority", int), ("peer", str), ("step", int)):
            if not isinstance(e["args"].get(field), kind):
                fail(where + f": args.{field} must be {kind.__name__}")
        events.append(e)
    for e in events:
        if e["tid"] not in names:
            fail(f"{path}: tid {e['tid']} has no thread_name")
    return events, names


def main():
    trace_dir, workers, servers, start, end = sys.argv[1], *map(int, sys.argv[2:6])
    device_prefix = sys.argv[6][len("device:"):] if len(sys.argv) > 6 and sys.argv[6].startswith("device:") else None
    device = device_prefix is not None
    window = set(range(start, end))
    worker_parts = {}  # tensor -> {partition: key}
    for w in range(workers):
        path = os.path.join(trace_dir, f"worker{w}", "0", "comm.json")
        events, names = load(path)
        stages = defaultdict(dict)  # (tensor, step, partition) -> stage -> event
        for e in events:
            a = e["args"]
            if e["name"] not in WORKER_STAGES + (DEVICE_STAGES if device else []):
                fail(f"{path}: unknown worker stage {e['name']!r}")
            if names[e["tid"]] != a.get("tensor"):
                fail(f"{path}: event of tensor {a.get('tensor')!r} on the row of {names[e['tid']]!r}")
            if a["step"] not in window:
                fail(f"{path}: {a['tensor']} step {a['step']} is outside the window {start}..{end - 1}")
            if not a["peer"].startswith("server "):
                fail(f"{path}: peer {a['peer']!r} is not a server")
            k = (a["tensor"], a["step"], a["partition"])
            if e["name"] in stages[k]:
                fail(f"{path}: {k} has two {e['name']} events")
            stages[k][e["name"]] = e
            parts = worker_parts.setdefault(a["tensor"], {})
            if parts.setdefault(a["partition"], a["key"]) != a["key"]:
                fail(f"{path}: {a['tensor']} partition {a['partition']} has two keys")
        per_tensor_step = defaultdict(set)
        for (tensor, step, part), st in stages.items():
            missing = [s for s in WORKER_STAGES if s not in st]
            if missing:
                fail(f"{path}: {tensor} step {step} partition {part} lacks {missing}")
            for a, b in zip(WORKER_STAGES, WORKER_STAGES[1:]):
                if st[b]["ts"] + 1 < st[a]["ts"] + st[a]["dur"]:
                    fail(f"{path}: {tensor} step {step} partition {part}: {b} starts before {a} ends")
            if device and tensor.startswith(device_prefix):
                missing = [s for s in DEVICE_STAGES if s not in st]
                if missing:
                    fail(f"{path}: {tensor} step {step} partition {part} lacks {missing}")
                out, back = st["copy to host"], st["copy to device"]
                if st["queue"]["ts"] + 1 < out["ts"] + out["dur"]:
                    fail(f"{path}: {tensor} step {step} partition {part}: queued before its copy to host ended")
                if back["ts"] + 1 < st["pull"]["ts"] + st["pull"]["dur"]:
                    fail(f"{path}: {tensor} step {step} partition {part}: copied to device before its sum arrived")
            per_tensor_step[(tensor, step)].add(part)
        for tensor, parts in worker_parts.items():
            for step in window:
                got = per_tensor_step.get((tensor, step), set())
                if got != set(parts):
                    fail(f"{path}: {tensor} step {step} has partitions {sorted(got)}, want {sorted(parts)}")
        print(f"check_timeline: worker {w}: {len(worker_parts)} tensors, {len(events)} events, "
              f"steps {start}..{end - 1}, every partition's stages in order"
              + (f" (6 for tensors {device_prefix}*)" if device else ""))
    all_keys = {k for parts in worker_parts.values() for k in parts.values()}
    server_keys = set()
    for s in range(servers):
        path = os.path.join(trace_dir, f"server{s}", "comm.json")
        events, names = load(path)
        counts = defaultdict(lambda: defaultdict(set))  # (key, step) -> stage -> peers
        for e in events:
            a = e["args"]
            if e["name"] not in SERVER_STAGES:
                fail(f"{path}: unknown server stage {e['name']!r}")
            if a["step"] not in window:
                fail(f"{path}: key {a['key']} step {a['step']} is outside the window")
            if a["peer"] in counts[(a["key"], a["step"])][e["name"]]:
                fail(f"{path}: key {a['key']} step {a['step']}: two {e['name']} events for {a['peer']}")
            counts[(a["key"], a["step"])][e["name"]].add(a["peer"])
        keys = {k for k, _ in counts}
        for key in keys:
            for step in window:
                for stage in SERVER_STAGES:
                    peers = counts.get((key, step), {}).get(stage, set())
                    if len(peers) != workers:
                        fail(f"{path}: key {key} step {step}: {stage} for {sorted(peers)}, want {workers} workers")
        server_keys |= keys
        print(f"check_timeline: server {s}: {len(keys)} keys, {len(events)} events, "
              f"a receive, sum and answer per worker per step")
    if server_keys != all_keys:
        fail(f"the servers' keys and the workers' partitions differ: {len(server_keys)} against {len(all_keys)}")
    print(f"check_timeline: OK: {len(all_keys)} partitions of {len(worker_parts)} tensors on every node")


main()
