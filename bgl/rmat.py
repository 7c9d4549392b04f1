"""``bgl.rmat``: the public name of :mod:`bgl.sources.rmat` (Graph500 R-MAT generator).

README documents ``bgl.rmat.generate_rmat_store(out_dir, scale)``; the code
lives with the other graph sources.  This module *is* that module: importing
``bgl.rmat`` returns :mod:`bgl.sources.rmat` itself, so both names share
one set of functions and globals.
"""
import sys
from typing import TYPE_CHECKING

from .sources import rmat as _rmat

if TYPE_CHECKING:  # the module's public functions, spelled out for type checkers and the API reference (griffe)
    from .sources.rmat import generate_rmat_store, rmat_source

sys.modules[__name__] = _rmat
