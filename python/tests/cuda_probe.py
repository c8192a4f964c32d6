"""Exit 0 when torch sees a CUDA device, else 77 (CTest's skip) saying why."""
import sys

import torch

if not torch.cuda.is_available():
    print("skipped: torch %s (%s) sees no CUDA device" % (torch.__version__, sys.executable))
    sys.exit(77)
