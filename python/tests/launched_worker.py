"""A worker started by bpslaunch in launch_test.py: joins the job, checks
one push_pull and says who it is."""
import os

import torch

import byteps.torch as bps

bps.init()
rank, size = bps.rank(), bps.size()
out = bps.push_pull(torch.full((4,), float(rank)), average=False, name="launched")
expected = torch.full((4,), float(size * (size - 1) / 2))
if not torch.equal(out, expected):
    raise AssertionError("push_pull gave %s, expected %s" % (out, expected))
print("launched worker rank=%d size=%d local_rank=%s local_size=%s ok" %
      (rank, size, os.environ.get("BYTEPS_LOCAL_RANK"), os.environ.get("BYTEPS_LOCAL_SIZE")),
      flush=True)
bps.shutdown()
