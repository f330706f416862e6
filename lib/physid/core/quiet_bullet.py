"""Import pybullet without its C-level banner ("pybullet build time: ...").

pybullet writes the banner straight to file descriptor 2 when it is first imported, below
Python's ``sys.stderr``, so it lands in a notebook cell's output. The only way to silence it
is to point descriptor 2 elsewhere for the duration of the import.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType


def import_pybullet() -> ModuleType:
    """The ``pybullet`` module, imported (the first time) with descriptor 2 muted."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        return importlib.import_module("pybullet")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
