"""A message-passing layer over an edge list."""

import torch
from torch import nn


class GraphLayer(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.msg = nn.Linear(dim * 2, dim)
        self.upd = nn.GRUCell(dim, dim)

    def forward(self, nodes, edges):
        src, dst = edges
        messages = self.msg(torch.cat([nodes[src], nodes[dst]], -1))
        agg = torch.zeros_like(nodes)
        agg = agg.index_add(0, dst, messages)
        num_nodes = nodes.shape[0]
        if num_nodes == 0:
            return nodes
        degree = torch.bincount(dst, minlength=int(num_nodes))
        agg[degree == 0] = 0
        return self.upd(agg, nodes), degree
