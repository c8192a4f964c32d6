"""What a gradient looks like on the wire. Compression.none and
Compression.fp16 (BytePS's): compress() returns the tensor to send and a
context; decompress() turns the received tensor back using that context.
Gradient compressors (onebit, top-k, random-k, dithering) run in the
engine, chosen per tensor by byteps_* parameters: tensor_params() turns
BytePS's compression_params dict into them (docs/compression.md)."""
import torch


class Compressor:
    """Sends the tensor as it is."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class NoneCompressor(Compressor):
    """BytePS's name for Compression.none (its Compressor is only a base)."""


class FP16Compressor(Compressor):
    """Floating-point tensors travel as float16 and come back in their own
    dtype; other tensors travel as they are."""

    @staticmethod
    def compress(tensor):
        if tensor.is_floating_point() and tensor.dtype != torch.float16:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)


class Compression:
    """The compressors, as BytePS names them."""
    none = NoneCompressor
    fp16 = FP16Compressor


# BytePS's compression_params keys (its DistributedTrainer), as the
# byteps_* parameter each one sets.
_SHORT_KEYS = {
    "compressor": "byteps_compressor_type",
    "ef": "byteps_error_feedback_type",
    "momentum": "byteps_momentum_type",
    "k": "byteps_compressor_k",
    "scaling": "byteps_compressor_onebit_scaling",
    "seed": "byteps_seed",
    "mu": "byteps_momentum_mu",
}
_DITHERING_CHOICES = {
    "partition": ("byteps_dithering_partition", {"linear": "0", "natural": "1"}),
    "normalize": ("byteps_dithering_normalize", {"max": "0", "l2": "1"}),
}


def param_text(value):
    """A parameter's value as the engine reads it: True/False as
    "true"/"false", numbers and strings as str() writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def tensor_params(compression_params):
    """The byteps_* parameters of a compression_params dict. Takes BytePS's
    short keys (compressor, ef, momentum, k, scaling, seed, partition:
    linear|natural, normalize: max|l2) and this package's mu, and full
    byteps_* keys as they are; anything else is a ValueError naming it."""
    out = {}
    for key, value in (compression_params or {}).items():
        if key.startswith("byteps_"):
            full, text = key, param_text(value)
        elif key in _SHORT_KEYS:
            full, text = _SHORT_KEYS[key], param_text(value)
        elif key in _DITHERING_CHOICES:
            full, choices = _DITHERING_CHOICES[key]
            if value not in choices:
                raise ValueError("compression_params[%r] = %r: expected one of %s"
                                 % (key, value, ", ".join(sorted(choices))))
            text = choices[value]
        elif key == "fp16":
            raise ValueError("compression_params['fp16']: pass compression=Compression.fp16 "
                             "instead; the engine's compressors take float32 and float64")
        else:
            raise ValueError(
                "compression_params has no key %r: use compressor, ef, momentum, k, scaling, "
                "seed, mu, partition, normalize, or byteps_* names" % (key,))
        if full in out and out[full] != text:
            raise ValueError("compression_params sets %s twice (%r and %r)"
                             % (full, out[full], text))
        out[full] = text
    return out
