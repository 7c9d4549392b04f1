"""A loader's position in ``torch.distributed.checkpoint``: one tensor per rank, under the rank's own key.

DCP writes a plain (non-tensor) object from the coordinator rank only, so each rank's
``loader.state_dict()`` would be lost but rank 0's.  :func:`dcp_state` therefore turns the state
into a tensor (its JSON, UTF-8, in a fixed-size uint8 buffer of :data:`STATE_BYTES`, the length in the
first 8 bytes) under ``bgl_loader.rank<r>``, which every rank writes for itself; the same call gives
the template to ``dcp.load`` into, and :func:`load_dcp_state` reads it back::

    sd = {"model": model.state_dict(), **bgl.dcp_state(loader)}
    dcp.save(sd, storage_writer=dcp.FileSystemWriter(path))
    ...
    sd = {"model": model.state_dict(), **bgl.dcp_state(loader)}
    dcp.load(sd, storage_reader=dcp.FileSystemReader(path))
    bgl.load_dcp_state(loader, sd)

Works for ``bgl.DataLoader`` and the ``bgl.pyg`` loaders (anything with ``state_dict`` /
``load_state_dict``).  Cost: 16 KiB per rank in the checkpoint.
"""
from __future__ import annotations

import json

import numpy as np
import torch

STATE_BYTES = 16 << 10
_PREFIX = "bgl_loader.rank"


def _key(state: dict) -> str:
    return f"{_PREFIX}{int(state['fingerprint']['rank'])}"


def dcp_state(loader) -> dict:
    """``{"bgl_loader.rank<r>": uint8 tensor [STATE_BYTES]}``: ``loader``'s state as this rank saves it
    (and the template it loads into)."""
    state = loader.state_dict()
    raw = json.dumps(state).encode()
    if len(raw) > STATE_BYTES - 8:
        raise ValueError(f"a loader state of {len(raw)} bytes does not fit the {STATE_BYTES - 8}-byte DCP buffer")
    buf = np.zeros(STATE_BYTES, np.uint8)
    buf[:8] = np.frombuffer(np.int64(len(raw)).tobytes(), np.uint8)
    buf[8:8 + len(raw)] = np.frombuffer(raw, np.uint8)
    return {_key(state): torch.from_numpy(buf)}


def load_dcp_state(loader, state_dict: dict) -> None:
    """Give ``loader`` the state this rank saved with :func:`dcp_state`, read back by ``dcp.load`` into
    ``state_dict``; ValueError when it holds none for this rank, or a corrupt one."""
    key = _key(loader.state_dict())
    if key not in state_dict:
        raise ValueError(f"the checkpoint's state dict has no {key!r}: save it with bgl.dcp_state(loader)")
    buf = state_dict[key].detach().cpu().numpy().astype(np.uint8, copy=False)
    n = int(np.frombuffer(buf[:8].tobytes(), np.int64)[0]) if buf.shape == (STATE_BYTES,) else -1
    if not 0 < n <= STATE_BYTES - 8:
        raise ValueError(f"{key!r} is not a bgl loader state (length field {n})")
    try:
        state = json.loads(buf[8:8 + n].tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{key!r} is not a bgl loader state: {e}") from None
    loader.load_state_dict(state)
