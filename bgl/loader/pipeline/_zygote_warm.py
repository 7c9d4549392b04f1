"""Imported by the stage zygote (spawn.py) before it forks any stage: torch, numba and
bgl's stage code, and numba's JIT set up once by one tiny serial kernel call (~0.7 s per
process otherwise).  Nothing here starts a thread: a fork of this process is safe."""
import numpy as np
import torch  # noqa: F401  (seconds, once per trainer instead of once per stage)

from . import stage_process  # noqa: F401
from ..stages import map as stages  # noqa: F401
from ...sampler import _kernels as K

_ids = np.zeros(1, np.int64)
K.gather_1d(_ids, _ids, np.int64(0), np.empty(1, np.int64))

from ...sampler.jit_pages import release_jit_pages  # noqa: E402

release_jit_pages()  # the forks fault back only the LLVM pages their own kernels need
