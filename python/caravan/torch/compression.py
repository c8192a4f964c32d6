"""What a gradient looks like on the wire (BytePS's Compression.none and
Compression.fp16). compress() returns the tensor to send and a context;
decompress() turns the received tensor back using that context."""
import torch


class Compressor:
    """Sends the tensor as it is."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


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
    none = Compressor
    fp16 = FP16Compressor
