"""byteps.server on Caravan: `python3 -c 'import byteps.server'`, the way
BytePS's launcher and many job scripts start a scheduler or server
(DMLC_ROLE=scheduler or server), becomes caravan-server in this process,
which then runs that role from the same DMLC_* environment."""
import os
import sys

from caravan.launch import find_server

_server = find_server()
sys.stdout.flush()
sys.stderr.flush()
os.execv(_server, [_server])
