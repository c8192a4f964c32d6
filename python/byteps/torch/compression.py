"""byteps.torch.compression on Caravan."""
from caravan.torch.compression import (Compression, Compressor, FP16Compressor,  # noqa: F401
                                       NoneCompressor)
