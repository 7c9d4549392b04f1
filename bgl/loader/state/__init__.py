"""Where a loader stands, so a run can resume: ``position`` (``state_dict()`` as plain data) and
``dcp`` (the same through ``torch.distributed.checkpoint``)."""
