"""Checkpoints saved from bgl.nn before SAGEConv became a wrapper of bgl.dgl.nn.SAGEConv still load
(strict) and give the old layer's outputs.  The keys and shapes below are the ones the old class
registered, written out here, and the expected outputs come from GraphSAGE's formula on a dense
adjacency, not from the layer.  Runs in both lanes (no DGL needed)."""
from __future__ import annotations

import pytest
import torch

from bgl.blocks import Block
from bgl.nn import SAGE, SAGEConv

IN, OUT = 5, 3
# what bgl.nn.SAGEConv(IN, OUT, aggregator) registered before: name -> shape
OLD_KEYS = {
    "mean": {"fc_neigh.weight": (OUT, IN), "fc_self.weight": (OUT, IN), "fc_self.bias": (OUT,)},
    "gcn": {"fc_neigh.weight": (OUT, IN), "bias": (OUT,)},
    "pool": {"fc_pool.weight": (IN, IN), "fc_pool.bias": (IN,), "fc_neigh.weight": (OUT, IN),
             "fc_self.weight": (OUT, IN), "fc_self.bias": (OUT,)},
}


def small_block():
    """6 src, 3 dst; dst 2 has no in-edge.  CSC: dst 0 <- {1, 4, 4}, dst 1 <- {0, 5}."""
    return Block(src_ids=torch.arange(10, 16), num_dst=3, indptr=torch.tensor([0, 3, 5, 5]),
                 indices=torch.tensor([1, 4, 4, 0, 5]))


def dense(block) -> torch.Tensor:
    a = torch.zeros(block.num_dst, block.src_ids.shape[0])
    for d in range(block.num_dst):
        for s in block.indices[block.indptr[d]:block.indptr[d + 1]].tolist():
            a[d, s] += 1
    return a


def old_state(aggregator: str, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    return {k: torch.randn(shape, generator=gen) for k, shape in OLD_KEYS[aggregator].items()}


def expected(aggregator: str, state: dict, block, x: torch.Tensor) -> torch.Tensor:
    a = dense(block)
    deg = a.sum(1, keepdim=True)
    x_dst = x[: block.num_dst]
    if aggregator == "mean":
        neigh = (a @ x) / deg.clamp(min=1)
    elif aggregator == "gcn":
        neigh = (a @ x + x_dst) / (deg + 1)
        return neigh @ state["fc_neigh.weight"].T + state["bias"]
    else:
        h = torch.relu(x @ state["fc_pool.weight"].T + state["fc_pool.bias"])
        masked = torch.where(a[:, :, None] > 0, h[None], torch.tensor(float("-inf")))
        neigh = masked.max(1).values
        neigh = torch.where(torch.isinf(neigh), torch.zeros_like(neigh), neigh)
    return x_dst @ state["fc_self.weight"].T + state["fc_self.bias"] + neigh @ state["fc_neigh.weight"].T


@pytest.mark.parametrize("aggregator", list(OLD_KEYS))
def test_old_checkpoint_loads_with_old_outputs(aggregator, tmp_path):
    path = tmp_path / "sage.pt"
    torch.save(old_state(aggregator), path)
    layer = SAGEConv(IN, OUT, aggregator)
    assert {k: tuple(v.shape) for k, v in layer.state_dict().items()} == OLD_KEYS[aggregator]
    layer.load_state_dict(torch.load(path), strict=True)
    block, x = small_block(), torch.randn(6, IN, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(layer(block, x), expected(aggregator, torch.load(path), block, x),
                               atol=1e-5, rtol=1e-5)


def test_old_sage_model_keys():
    """SAGE's layer keys are unchanged: ``layers.<i>.<old SAGEConv key>``."""
    model = SAGE(IN, 4, OUT, num_layers=2)
    want = {f"layers.0.{k}" for k in OLD_KEYS["mean"]} | {f"layers.1.{k}" for k in OLD_KEYS["mean"]}
    assert set(model.state_dict()) == want


def test_gcn_without_bias_registers_no_bias():
    assert set(SAGEConv(IN, OUT, "gcn", bias=False).state_dict()) == {"fc_neigh.weight"}
