"""Co-located reads: a client answers for the parts served on its own host from their files.

A graph server memory-maps its part store and answers SAMPLE/FEATURES from
it.  A trainer on the same host can map the same files and run the same
kernels itself: the page cache is shared, so it costs no memory, and it saves
the request encode, two loopback copies, the reply decode and, above all, the
wait behind the other trainers' requests in the server's queue.  DistDGL does
the same with its shared-memory partition: a trainer reads its own machine's
part directly and only the other machines' parts over RPC.

The answers are the servers' answers: the same kernels (serial, as in the
server) on the same arrays, and a row's sample depends only on
``(seed, global id)``, so blocks and features do not change whether a part is
read here or over a socket (tested).

Which parts are local is the launcher's call, not a guess: ``bgl launch`` puts
``BGL_LOCAL_PARTS`` (the parts whose server runs on the trainer's host) and
``BGL_PARTITION`` (the partition dir) in every trainer's environment; a
:class:`~bgl.sampler.client.SamplingClient` built without ``local_stores``
reads them.  A local store must be the very part its server serves (same id
range, edge count, feature shape); anything else is a :class:`ProtocolError`
naming both, because a stale or foreign partition dir would otherwise give
silently wrong samples.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from bgl.errors import ProtocolError
from bgl.store import GraphStore

from . import ops
from . import protocol as P

# Comma-separated part ids whose graph server runs on this host (``bgl launch`` sets it).
ENV_LOCAL_PARTS = "BGL_LOCAL_PARTS"
ENV_PARTITION = "BGL_PARTITION"


def parse_local_parts(text: str) -> list[int]:
    """``"0,2"`` -> ``[0, 2]``; ValueError naming ``BGL_LOCAL_PARTS`` for anything else."""
    parts = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        try:
            part = int(item, 10)
        except ValueError:
            raise ValueError(f"{ENV_LOCAL_PARTS}={text!r}: expected comma-separated part ids, "
                             f"got {item!r}") from None
        if part < 0:
            raise ValueError(f"{ENV_LOCAL_PARTS}={text!r}: part ids are >= 0, got {part}")
        parts.append(part)
    return parts


def stores_from_env() -> list[GraphStore]:
    """The part stores named by ``$BGL_LOCAL_PARTS`` in ``$BGL_PARTITION`` (empty when unset)."""
    parts = parse_local_parts(os.environ.get(ENV_LOCAL_PARTS, ""))
    if not parts:
        return []
    partition_dir = os.environ.get(ENV_PARTITION, "").strip()
    if not partition_dir:
        raise ValueError(f"{ENV_LOCAL_PARTS} is set but {ENV_PARTITION} (the partition dir) is not")
    from .server import open_part_store

    return [open_part_store(partition_dir, part) for part in parts]


def _mismatch(store: GraphStore, info: dict) -> str | None:
    """Why ``store`` is not the part the server with INFO ``info`` serves, or None if it is."""
    codec = store.feat_codec.to_dict() if store.feat_codec is not None else store.meta.feat_codec  # typed: by type
    for key, mine in (("num_nodes", store.num_nodes), ("global_num_nodes", store.global_num_nodes),
                      ("num_edges", store.num_edges), ("feat_dim", store.feat_dim),
                      ("feat_dtype", store.feat_dtype_name), ("has_label", store.label is not None),
                      ("schema", store.meta.schema), ("feat_codec", codec)):
        if key in info and info[key] != mine:
            return f"{key} {mine} here, {info[key]} on the server"
    return None


class LocalParts:
    """Server index -> memory-mapped part store, for the servers whose part is readable here.

    Costs nothing per node or edge beyond the mapping itself: the kernels read
    the same page-cache pages the co-located server reads.

    Parameters
    ----------
    stores : the part stores readable on this host (matched to servers by id range)
    infos, addresses : the servers' INFO replies and endpoints, in server order

    Raises
    ------
    ProtocolError : a store matches no server's id range, or differs from the part its server serves
    """

    def __init__(self, stores: Sequence[GraphStore], infos: Sequence[dict], addresses: Sequence[str]):
        by_offset = {int(info["node_offset"]): i for i, info in enumerate(infos)}
        self.stores: dict[int, GraphStore] = {}
        self._indptr: dict[int, np.ndarray] = {}
        self._weights: dict[int, ops.EdgeWeights] = {}
        self._keys: dict[int, np.ndarray | None] = {}  # typed parts' stream keys, opened on first use
        for store in stores:
            srv = by_offset.get(int(store.node_offset))
            why = "no server serves the id range starting at %d" % store.node_offset if srv is None \
                else _mismatch(store, infos[srv])
            if why is not None:
                where = "" if srv is None else f" served by {addresses[srv]}"
                raise ProtocolError(f"local part store {store.path} is not the part{where}: {why} "
                                    f"(a stale or different partition dir?)")
            self.stores[srv] = store
            self._indptr[srv] = np.asarray(store.indptr)
            self._weights[srv] = ops.EdgeWeights(store)

    def __contains__(self, srv: int) -> bool:
        return srv in self.stores

    def __len__(self) -> int:
        return len(self.stores)

    def sample(self, srv: int, ids: np.ndarray, fanout: int, replace: bool, seed: int,
               weights: str | None = None, edge_data=(), labor=None, exclude=None):
        """``[counts, nbrs]`` (plus ``{name: rows}`` when ``edge_data`` names edge arrays) for ``ids``
        of server ``srv``'s part, exactly as its SAMPLE reply (``exclude``: the part's CSC positions
        never to draw, as that request's excluded-edges frame)."""
        store = self.stores[srv]  # sample_neighbors checks that the ids are this part's
        counts, nbrs, rows = ops.sample_with_edge_data(self._indptr[srv], store, ids, fanout, replace, seed,
                                                       self._weights[srv](weights), edge_data, labor,
                                                       exclude=exclude)
        return [counts, nbrs] if rows is None else [counts, nbrs, rows]

    def sample_typed(self, srv: int, ids: np.ndarray, fanouts: np.ndarray, replace: bool, seed: int,
                     exclude=None, weights: str | None = None, edge_data=(), labor=None) -> list:
        """``[counts, nbrs, etypes]`` (plus ``{name: rows}`` when ``edge_data`` names edge arrays) for ``ids``
        of server ``srv``'s typed part, as its typed SAMPLE reply (``exclude``: the part's CSC positions
        never drawn; ``weights``: the edge array to draw by)."""
        from .typed.sampling import sample_typed_store, stream_keys

        store = self.stores[srv]
        if srv not in self._keys:
            self._keys[srv] = stream_keys(store)
        counts, nbrs, _, etypes, *rows = sample_typed_store(store, self._indptr[srv], ids, fanouts, replace, seed,
                                                            self._keys[srv], exclude=exclude,
                                                            prob=self._weights[srv](weights), edge_data=edge_data,
                                                            labor=labor)
        return [counts, nbrs, etypes, *rows]

    def gather_typed(self, srv: int, ids: np.ndarray, ntype: int, label: bool) -> tuple:
        """Rows of node type index ``ntype`` for global ``ids`` of server ``srv``'s part, as its typed FEATURES reply."""
        from .typed.sampling import typed_rows

        return (typed_rows(self.stores[srv], ids, ntype, label),)

    def gather(self, srv: int, ids: np.ndarray, field: int) -> np.ndarray:
        """Rows of ``field`` (``FIELD_FEAT``/``FIELD_LABEL``) for ``ids``, as server ``srv``'s FEATURES reply."""
        store = self.stores[srv]
        array = store.feat_rows if field == P.FIELD_FEAT else store.label  # encoded rows stay encoded
        return ops.gather(array, ids, store.node_offset, parallel=False)

    def gather_into(self, srv: int, ids: np.ndarray, out: np.ndarray, pos: np.ndarray) -> None:
        """``out[pos[i]]`` = the feature row of ``ids[i]``, all owned by server ``srv``'s part."""
        store = self.stores[srv]
        ops.gather_into(store.feat_rows, ids, store.node_offset, out, pos)
