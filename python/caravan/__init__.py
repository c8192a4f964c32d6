"""Caravan's Python packages.

caravan.torch   BytePS's byteps.torch API for PyTorch (also importable as
                byteps.torch)
caravan.launch  the worker launcher, BytePS's bpslaunch (python3 -m caravan.launch)
caravan.errors  the exceptions every layer raises

The packages call libcaravan's C API through ctypes; caravan/_paths.py,
written by the build, says where this copy finds libcaravan and
caravan-server (CARAVAN_LIBRARY overrides the library).
"""
from ._paths import VERSION as __version__  # noqa: F401
