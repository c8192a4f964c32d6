"""Elastic training through a lost worker and a joining one
(CARAVAN_ELASTIC=1) with caravan.torch.elastic, as a Horovod elastic
script is written.

    elastic_regroup_test.py SCENARIO BIN WORKERS SERVERS   starts the job
        (scheduler and servers: BIN/caravan-server; workers: this script
        with "worker"), waits, checks how each exited
    elastic_regroup_test.py worker SCENARIO STEPS          one worker

Every worker trains the same small MLP with DistributedOptimizer on its
shard of each step's global batch, in an elastic.run function with a
TorchState (model, optimizer, step counter, and the size of every step
done). Scenarios:
- lose: worker 1 (DMLC_WORKER_ID) kills itself with SIGKILL at step 3,
  after backward() has started its gradients' push_pulls and before
  step(); the others finish every step.
- join: worker 0 starts a third worker (the job's DMLC_*, no
  DMLC_WORKER_ID) at step 3; it joins at a regroup and trains with the
  others, which go on past STEPS until 3 steps were done by the three.
After the run each worker's parameters are bitwise equal to rank 0's, and
equal (within 1e-5) to one model trained in this process on the union of
the live workers' shards, step by step, with the sizes the job had. Each
step also takes this worker's next batch of sample indices from an
ElasticSampler in the state: no batch holds a sample it already processed,
and at the end every worker's processed samples are the same, the union
of what the live workers recorded.
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 8
AT = 3  # the step at which worker 1 dies (lose) or worker 0 starts another (join)


def worker(scenario, steps):
    import torch

    import byteps.torch as bps
    from byteps.torch import elastic
    from jobcheck import (ELASTIC_LOCAL_BATCH as LOCAL_BATCH, check, check_equal,
                          elastic_batch as global_batch, elastic_model as make_model,
                          mse as loss_of)

    bps.init()
    me = int(os.environ.get("DMLC_WORKER_ID", "-1"))
    want = 3 if scenario == "join" else 0
    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    sampler = elastic.ElasticSampler(range(100000), seed=7)
    state = elastic.TorchState(model, optimizer, sampler=sampler, step=0, sizes=[])
    recorded = set()  # the samples this worker recorded
    resets = []
    state.register_reset_callbacks([lambda: resets.append(bps.size())])
    newcomer = []

    @elastic.run
    def train(state):
        taken = 0  # batches taken from the sampler since it was divided
        # join: on until 3 steps were done with the newcomer (the counters
        # are rank 0's on every worker, so all stop alike).
        while state.step < steps or (want and state.sizes[-3:] != [want] * 3):
            mine = sampler.indices[taken * LOCAL_BATCH:(taken + 1) * LOCAL_BATCH]
            check(len(mine) == LOCAL_BATCH and not set(mine) & sampler.processed,
                  "the sampler handed out %s, of which %s were processed" %
                  (mine, set(mine) & sampler.processed))
            rank, size = bps.rank(), bps.size()
            x, y = global_batch(state.step, size)
            shard = slice(rank * LOCAL_BATCH, (rank + 1) * LOCAL_BATCH)
            optimizer.zero_grad()
            loss_of(model, x[shard], y[shard]).backward()
            if scenario == "lose" and me == 1 and state.step == AT:
                print("worker %d: dying at step %d" % (me, state.step), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            optimizer.step()
            sampler.record_batch(taken, LOCAL_BATCH)
            recorded.update(mine)
            taken += 1
            state.sizes.append(size)
            state.step += 1
            state.commit()
            if scenario == "join" and me == 0 and state.step == AT and not newcomer:
                env = dict(os.environ, DMLC_NUM_WORKER="3")
                del env["DMLC_WORKER_ID"]
                newcomer.append(subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), "worker", scenario, str(steps)],
                    env=env))

    train(state)
    # Every worker ends with rank 0's parameters, bit for bit.
    theirs = bps.broadcast_object([p.detach().clone() for p in model.parameters()], root_rank=0,
                                  name="final")
    for i, (mine, root) in enumerate(zip(model.parameters(), theirs)):
        check_equal(mine.detach(), root, "parameter %d against rank 0's" % i)
    # And those of one model trained on the live workers' union, step by step.
    reference = make_model()
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step, size in enumerate(state.sizes):
        x, y = global_batch(step, size)
        ref_optimizer.zero_grad()
        loss_of(reference, x, y).backward()
        ref_optimizer.step()
    for i, (mine, ref) in enumerate(zip(model.parameters(), reference.parameters())):
        check_equal(mine.detach(), ref.detach(), "parameter %d against the reference" % i,
                    atol=1e-5)
    # The sampler: every worker has the union of what the live ones recorded.
    sampler.sync()
    union = set()
    for r in range(bps.size()):
        union |= bps.broadcast_object(recorded, root_rank=r, name="recorded.%d" % r)
    check(sampler.processed == union, "the sampler's %d processed samples are not the %d the "
          "live workers recorded" % (len(sampler.processed), len(union)))
    check(bps.broadcast_object(sampler.processed, root_rank=0, name="processed") ==
          sampler.processed, "the workers' processed samples differ")
    final = 2 if scenario == "lose" else 3
    check(state.sizes[-1] == final and len(resets) == (0 if me < 0 else 1),
          "expected one regroup to %d workers; resets %s, sizes %s" %
          (final, resets, state.sizes))
    runs = []  # the sizes as "3 x 4 steps"
    for size in state.sizes:
        if runs and runs[-1][0] == size:
            runs[-1][1] += 1
        else:
            runs.append([size, 1])
    print("elastic %s: %d steps as rank %d (%s), parameters checked" %
          (scenario, state.step, bps.rank(),
           ", then ".join("%d workers x %d steps" % (s, n) for s, n in runs)), flush=True)
    bps.shutdown()
    for p in newcomer:
        check(p.wait(timeout=120) == 0, "the worker started at step %d failed" % AT)


def job(scenario, build_bin, workers, servers):
    sys.path.insert(0, HERE)
    from torchrun_env import free_port
    base = dict(os.environ, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(free_port()),
                DMLC_NUM_WORKER=str(workers), DMLC_NUM_SERVER=str(servers),
                DMLC_NODE_HOST="127.0.0.1", CARAVAN_ELASTIC="1")
    procs = {"scheduler": subprocess.Popen([build_bin + "/caravan-server"],
                                           env=dict(base, DMLC_ROLE="scheduler"))}
    for s in range(servers):
        procs["server %d" % s] = subprocess.Popen([build_bin + "/caravan-server"],
                                                  env=dict(base, DMLC_ROLE="server"))
    for w in range(workers):
        procs["worker %d" % w] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "worker", scenario, str(STEPS)],
            env=dict(base, DMLC_ROLE="worker", DMLC_WORKER_ID=str(w)))
    deadline = time.monotonic() + 150
    failed = []
    for name, p in procs.items():
        try:
            rc = p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            failed.append("%s still running" % name)
            continue
        expected = -signal.SIGKILL if scenario == "lose" and name == "worker 1" else 0
        if rc != expected:
            failed.append("%s exited %d, expected %d" % (name, rc, expected))
    for p in procs.values():
        if p.poll() is None:
            p.kill()
    if failed:
        print("elastic_regroup_test: " + "; ".join(failed), file=sys.stderr)
        sys.exit(1)
    print("elastic_regroup_test %s: the job trained on" % scenario)


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(sys.argv[2], int(sys.argv[3]))
    else:
        job(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
