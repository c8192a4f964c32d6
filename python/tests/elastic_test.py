"""Elastic training with BytePS's suspend() and resume(), as its
elastic_benchmark_byteps.py uses them: train, suspend, resume, train on.

Every worker trains the same small MLP with DistributedOptimizer on its
shard of each batch, suspends after some steps and resumes:
- on 2 workers, every worker calls resume(2, 1, 0), as BytePS's benchmark
  does (global rank 0 on each: one keeps it, the other gets a free rank);
- on 3 workers, the job shrinks: the worker of rank 1 leaves after the
  suspend and the others resume(2, 1): rank 0 keeps its rank, and rank 2,
  beyond the new size, gets the free rank 1.
After the resume, training goes on with the same optimizer. After every
step each worker's parameters must be bitwise equal to rank 0's, and after
the run equal (within 1e-5) to one model trained in this process on the
union of the live workers' shards, step by step.
"""
import torch

import byteps.torch as bps
from jobcheck import (ELASTIC_LOCAL_BATCH as LOCAL_BATCH, check, check_equal, done,
                      elastic_batch as global_batch, elastic_model as make_model,
                      mse as loss_of, step_with_reference)

STEPS = 4


def same_everywhere(model, step):
    """Every worker's parameters are bitwise rank 0's."""
    for name, p in model.named_parameters():
        mine = p.detach().clone()
        theirs = bps.broadcast(mine.clone(), 0, name="check.%s" % name)
        check(torch.equal(mine, theirs), "step %d: parameter %s differs from rank 0's" %
              (step, name))


def train(model, optimizer, reference, ref_optimizer, first_step, rank, size):
    for step in range(first_step, first_step + STEPS):
        x, y = global_batch(step, size)
        step_with_reference(model, optimizer, reference, ref_optimizer, loss_of, x, y, rank,
                            LOCAL_BATCH)
        same_everywhere(model, step)
    for (name, p), ref in zip(model.named_parameters(), reference.parameters()):
        check_equal(p.detach(), ref.detach(), "rank %d, parameter %s after step %d on %d workers"
                    % (rank, name, first_step + STEPS - 1, size), atol=1e-5)


def main():
    bps.init()
    rank, size = bps.rank(), bps.size()
    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                         named_parameters=model.named_parameters())
    bps.broadcast_parameters(model.state_dict(), root_rank=0)
    bps.broadcast_optimizer_state(optimizer, root_rank=0)
    reference = make_model()
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    train(model, optimizer, reference, ref_optimizer, 0, rank, size)

    bps.suspend()
    check(not bps.is_initialized(), "suspended, the worker is out of the job")
    # BytePS's benchmark logs with local_rank() between the two calls.
    check((bps.rank(), bps.size(), bps.local_rank()) == (rank, size, 0),
          "suspended: rank(), size(), local_rank() as before the suspend")
    if size == 3:
        if rank == 1:
            done(rank, "trained on 3 workers, then left the job at the suspend")
            return
        bps.resume(2, 1)
        check(bps.rank() == rank // 2, "resume(2, 1) gives rank %d rank %d, got %d" %
              (rank, rank // 2, bps.rank()))
    else:
        bps.resume(size, 1, 0)  # as elastic_benchmark_byteps.py, on every worker
    new_rank, new_size = bps.rank(), bps.size()
    check(new_size == min(size, 2), "size %d after the resume, expected %d" %
          (new_size, min(size, 2)))
    # The ranks after the resume are all different: gather them.
    ranks = bps.push_pull(torch.nn.functional.one_hot(torch.tensor(new_rank), new_size).float(),
                          average=False, name="check.ranks")
    check(torch.equal(ranks, torch.ones(new_size)), "ranks after the resume: %s" % ranks)
    train(model, optimizer, reference, ref_optimizer, STEPS, new_rank, new_size)
    done(new_rank, "trained on %d workers, suspended, resumed on %d (rank %d was %d), trained "
         "on: bitwise equal workers, equal to the reference" % (size, new_size, new_rank, rank))
    bps.shutdown()


if __name__ == "__main__":
    main()
