"""ctypes binding of Caravan's C API (api/include/caravan/caravan.h).

Nothing here knows about tensors: callers pass addresses, element counts
and caravan_dtype values. ctypes releases the GIL for the length of every
call, so a blocking caravan_wait() lets other Python threads run.

The library is the one this copy of the package was built or installed
with (caravan/_paths.py, written by CMake), or CARAVAN_LIBRARY when set.
It is loaded on first use.
"""
import ctypes
import os
import threading

from . import _paths
from .errors import CODE_NAMES, CaravanError, error_class

# caravan_dtype (api/include/caravan/dtype.h); the values never change.
FLOAT32 = 0
FLOAT64 = 1
FLOAT16 = 2
UINT8 = 3
INT32 = 4
INT8 = 5
INT64 = 6
BFLOAT16 = 7

_c_int = ctypes.c_int
_c_str = ctypes.c_char_p
_c_ptr = ctypes.c_void_p
_c_size = ctypes.c_size_t
_c_handle_p = ctypes.POINTER(ctypes.c_void_p)

# name: (argtypes, C API minor version that added it)
_SIGNATURES = {
    "caravan_init": ([], 0),
    "caravan_shutdown": ([], 0),
    "caravan_rank": ([], 0),
    "caravan_size": ([], 0),
    "caravan_push_pull": ([_c_str, _c_ptr, _c_size, _c_int, _c_int], 0),
    "caravan_push_pull_async": ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_handle_p], 0),
    "caravan_poll": ([_c_ptr], 0),
    "caravan_wait": ([_c_ptr], 0),
    "caravan_local_rank": ([], 1),
    "caravan_local_size": ([], 1),
    "caravan_broadcast": ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_int], 1),
    "caravan_broadcast_async": ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_int, _c_handle_p], 1),
    # Device memory: the last argument before the handle is a cudaStream_t.
    "caravan_push_pull_device": ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_ptr], 2),
    "caravan_push_pull_device_async":
        ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_ptr, _c_handle_p], 2),
    "caravan_broadcast_device": ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_int, _c_ptr], 2),
    "caravan_broadcast_device_async":
        ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_int, _c_ptr, _c_handle_p], 2),
    "caravan_get_pushpull_stats": ([_c_str, _c_ptr], 2),
    "caravan_declare_tensor":
        ([_c_str, ctypes.POINTER(_c_str), ctypes.POINTER(_c_str), _c_size], 3),
    "caravan_reduce_scatter": ([_c_str, _c_ptr, _c_size, _c_int, _c_int], 4),
    "caravan_reduce_scatter_async": ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_handle_p], 4),
    "caravan_allgather": ([_c_str, _c_ptr, _c_size, _c_int, _c_int], 4),
    "caravan_allgather_async": ([_c_str, _c_ptr, _c_size, _c_int, _c_int, _c_handle_p], 4),
    "caravan_suspend": ([], 5),
    "caravan_resume": ([_c_int, _c_int, _c_int], 5),
    "caravan_rejoin": ([], 6),
    "caravan_alltoall": ([_c_str, _c_ptr, _c_ptr, _c_size, _c_int, _c_int], 7),
    "caravan_alltoall_async": ([_c_str, _c_ptr, _c_ptr, _c_size, _c_int, _c_int, _c_handle_p], 7),
}


class PushPullStats(ctypes.Structure):
    """caravan_pushpull_stats (caravan.h)."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("window_s", ctypes.c_double),
                ("operations", ctypes.c_ulonglong), ("bytes", ctypes.c_ulonglong),
                ("mbytes_per_s", ctypes.c_double), ("p50_us", ctypes.c_double),
                ("p90_us", ctypes.c_double), ("p99_us", ctypes.c_double)]


def pushpull_stats(name=None):
    """The telemetry of tensor `name` (every tensor when None)."""
    out = PushPullStats()
    out.struct_size = ctypes.sizeof(out)
    call("caravan_get_pushpull_stats", name.encode("utf-8") if name else None, ctypes.byref(out),
         what="push_pull telemetry")
    return out

_lock = threading.Lock()
_library = None


def library_path():
    """The libcaravan this process uses: CARAVAN_LIBRARY, else the one
    beside this package's build or install."""
    return os.environ.get("CARAVAN_LIBRARY") or _paths.LIBRARY


class _Library:
    def __init__(self, path):
        self.path = path
        try:
            dll = ctypes.CDLL(path)
        except OSError as e:
            raise CaravanError(
                "cannot load libcaravan from %s (%s); rebuild Caravan, or set CARAVAN_LIBRARY "
                "to the libcaravan.so to use" % (path, e)) from None
        self._strerror = dll.caravan_strerror
        self._strerror.argtypes = [_c_int]
        self._strerror.restype = _c_str
        self._functions = {}
        for name, (argtypes, _) in _SIGNATURES.items():
            fn = getattr(dll, name, None)
            if fn is not None:
                fn.argtypes = argtypes
                fn.restype = _c_int
                self._functions[name] = fn
        self._dll = dll

    def function(self, name):
        fn = self._functions.get(name)
        if fn is None:
            raise CaravanError(
                "%s lacks %s, which C API 1.%d added: this libcaravan is older than the "
                "Python package; rebuild Caravan" % (self.path, name, _SIGNATURES[name][1]))
        return fn

    def strerror(self, code):
        return self._strerror(code).decode("utf-8", "replace")


def library():
    global _library
    if _library is not None:  # the common case, without the lock
        return _library
    with _lock:
        if _library is None:
            _library = _Library(library_path())
        return _library


def _error(code, message, what, tensor_name):
    return error_class(code)("%s: %s [%s]" % (what, message, CODE_NAMES.get(code, code)),
                             code=code, tensor_name=tensor_name)


def raise_for(code, what, tensor_name=None):
    """Raises the exception for a negative C API return `code`: `what` says
    which operation failed, the engine's message (caravan_strerror, read on
    this thread right after the call) why."""
    raise _error(code, library().strerror(code), what, tensor_name)


def call(name, *args, what=None, tensor_name=None):
    """Calls C function `name`; returns its non-negative result or raises."""
    rc = library().function(name)(*args)
    if rc < 0:
        raise_for(rc, what or name, tensor_name)
    return rc


def start(name, *args, what, tensor_name):
    """Calls an asynchronous C function (`name`: caravan_push_pull_async or
    caravan_broadcast_async) and returns its handle (an integer address)."""
    handle = ctypes.c_void_p()
    rc = library().function(name)(*args, ctypes.byref(handle))
    if rc < 0:
        raise_for(rc, what, tensor_name)
    return handle.value


def poll(handle, what, tensor_name):
    """1 when done, 0 when pending; raises when the operation failed (the
    handle is then released)."""
    lib = library()
    rc = lib.function("caravan_poll")(handle)
    if rc < 0:
        error = _error(rc, lib.strerror(rc), what, tensor_name)
        lib.function("caravan_wait")(handle)  # releases the handle; the error is the poll's
        raise error
    return rc


def wait(handle, what, tensor_name):
    """Blocks (without the GIL) until the operation ends; releases the handle."""
    call("caravan_wait", handle, what=what, tensor_name=tensor_name)
