"""``bgl partition import-distdgl``: a partition written by DGL's ``dgl.distributed.partition_graph``
read into bgl's partition format, part by part, without repartitioning.

============  =====================================================================
``importer``  ``import_distdgl``: the untyped import, and the entry point for both kinds
``typed``     a heterogeneous DistDGL partition as a typed bgl partition
``common``    what both share: the config, a part's graph, split masks, publishing OUT
============  =====================================================================

Reading the ``.dgl`` files needs DGL, imported inside the functions that read them.
"""
