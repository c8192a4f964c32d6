"""Exceptions raised by the Caravan Python layer.

Every failure of the C API becomes a CaravanError that carries the C error
code (`code`, a negative CARAVAN_ERR_* value), the tensor it concerns
(`tensor_name`, or None) and the engine's own message. Subclasses add the
built-in exception a caller would naturally catch:

    CaravanError(RuntimeError)
      NotInitializedError        called before init() or after shutdown()
      MismatchError(ValueError)  a name reused with another shape or dtype
      UnsupportedTensorError(TypeError)
                                 a dtype or device Caravan cannot carry
      RegroupedError             CARAVAN_ELASTIC=1: the job lost a node and goes on
                                 without it; rejoin() and redo the step
"""

# The C API's error codes (api/include/caravan/caravan.h).
OK = 0
ERR_INVALID_ARGUMENT = -1
ERR_NOT_INITIALIZED = -2
ERR_MISMATCH = -3
ERR_BUSY = -4
ERR_TIMEOUT = -5
ERR_PEER_LOST = -6
ERR_CONFIG = -7
ERR_PLUGIN = -8
ERR_TRANSPORT = -9
ERR_STATE = -10
ERR_INTERNAL = -11
ERR_SERVER = -12
ERR_REGROUPED = -13

# code -> "CARAVAN_ERR_...", from the constants above.
CODE_NAMES = {value: "CARAVAN_" + name for name, value in list(globals().items())
              if name.startswith("ERR_")}


class CaravanError(RuntimeError):
    """A Caravan operation failed. `code` is the C API's error code (or
    None for errors found in Python), `tensor_name` the tensor concerned."""

    def __init__(self, message, code=None, tensor_name=None):
        super().__init__(message)
        self.code = code
        self.tensor_name = tensor_name


class NotInitializedError(CaravanError):
    """A call that needs init() came before it (or after shutdown())."""


class MismatchError(CaravanError, ValueError):
    """A tensor name was reused with another shape, dtype or operation."""


class UnsupportedTensorError(CaravanError, TypeError):
    """Caravan cannot carry this tensor: its dtype or device."""


class RegroupedError(CaravanError):
    """With CARAVAN_ELASTIC=1, the job lost a worker or a server and goes
    on without it: this operation was abandoned. Call rejoin(), then redo
    the step on every worker from the same parameters
    (caravan.torch.elastic.run does both)."""


def error_class(code):
    """The exception class for a C API error code."""
    if code == ERR_REGROUPED:
        return RegroupedError
    if code == ERR_NOT_INITIALIZED:
        return NotInitializedError
    if code == ERR_MISMATCH:
        return MismatchError
    return CaravanError
