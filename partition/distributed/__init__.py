"""``bgl partition --distributed`` and ``bgl ingest --distributed``: partition as MPI ranks, no rank
holding the whole graph.

==============  =====================================================================
``driver``      what every rank runs: read a slice, coarsen, engine, relabel, write (``partition_distributed``)
``ingest``      edge-list / Parquet shards straight into a partition (``ingest_distributed``)
``shards``      each rank's share of the input shards, parsed
``graph``       a rank's slice of the symmetric distributed CSR; relabelling; owner lookups
``coarsen``     rank-local clustering and contraction before the engine
``weights``     vertex weights of the balance the engine keeps
``exchange``    ``Exchange``: the ranks' all-to-all of arrays
``write``       each node's rows sent to the rank writing its part, part stores written
``typed``       a typed store's relation ids and per-type rows through the same steps
``rank_watch``  rank 0 watching every rank over TCP: a rank that dies is named and ends the job
==============  =====================================================================

The engines (ParHIP, PT-Scotch) are :mod:`bgl.partition.engines`.  ``partition_distributed`` and
``mpi_rank`` load on first use (PEP 562), so ``bgl partition --help`` reads :mod:`.weights` and
:mod:`.coarsen` without the driver's imports.
"""
from __future__ import annotations

import importlib

_LAZY = {"partition_distributed": "driver", "mpi_rank": "driver"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
