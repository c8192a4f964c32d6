"""Elastic training through a lost worker (CARAVAN_ELASTIC=1) with
caravan.torch.elastic, as a Horovod elastic script is written.

    elastic_regroup_test.py job BIN WORKERS SERVERS   starts the job
        (scheduler and servers: BIN/caravan-server; workers: this script
        with "worker"), waits, checks how each exited
    elastic_regroup_test.py worker STEPS              one worker

Every worker trains the same small MLP with DistributedOptimizer on its
shard of each step's global batch, in an elastic.run function with a
TorchState (model, optimizer, step counter, and the size of every step
done). Worker 1 (DMLC_WORKER_ID) kills itself with SIGKILL at step 3, after
backward() has started its gradients' push_pulls and before step(). The
others must finish every step: after the run each worker's parameters are
bitwise equal to rank 0's, and equal (within 1e-5) to one model trained in
this process on the union of the live workers' shards, step by step, with
the sizes the job had.
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 8
DIES, DIES_AT = 1, 3


def worker(steps):
    import torch

    import byteps.torch as bps
    from byteps.torch import elastic
    from jobcheck import (ELASTIC_LOCAL_BATCH as LOCAL_BATCH, check, check_equal,
                          elastic_batch as global_batch, elastic_model as make_model,
                          mse as loss_of)

    bps.init()
    me = int(os.environ["DMLC_WORKER_ID"])
    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    state = elastic.TorchState(model, optimizer, step=0, sizes=[])
    resets = []
    state.register_reset_callbacks([lambda: resets.append(bps.size())])

    @elastic.run
    def train(state):
        while state.step < steps:
            rank, size = bps.rank(), bps.size()
            x, y = global_batch(state.step, size)
            shard = slice(rank * LOCAL_BATCH, (rank + 1) * LOCAL_BATCH)
            optimizer.zero_grad()
            loss_of(model, x[shard], y[shard]).backward()
            if me == DIES and state.step == DIES_AT:
                print("worker %d: dying at step %d" % (me, state.step), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            optimizer.step()
            state.sizes.append(size)
            state.step += 1
            state.commit()

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
    check(len(resets) == 1 and state.sizes[-1] == 2,
          "expected one regroup to 2 workers; resets %s, sizes %s" % (resets, state.sizes))
    print("elastic: %d steps as rank %d, sizes %s, parameters checked" %
          (steps, bps.rank(), state.sizes), flush=True)
    bps.shutdown()


def job(build_bin, workers, servers):
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
            [sys.executable, os.path.abspath(__file__), "worker", str(STEPS)],
            env=dict(base, DMLC_ROLE="worker", DMLC_WORKER_ID=str(w)))
    deadline = time.monotonic() + 150
    failed = []
    for name, p in procs.items():
        try:
            rc = p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            failed.append("%s still running" % name)
            continue
        expected = -signal.SIGKILL if name == "worker %d" % DIES else 0
        if rc != expected:
            failed.append("%s exited %d, expected %d" % (name, rc, expected))
    for p in procs.values():
        if p.poll() is None:
            p.kill()
    if failed:
        print("elastic_regroup_test: " + "; ".join(failed), file=sys.stderr)
        sys.exit(1)
    print("elastic_regroup_test: the job trained through the loss of worker %d" % DIES)


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(int(sys.argv[2]))
    else:
        job(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
