import torch
import torch.nn.functional as F
from torch import nn


class TrimToLongest(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        lengths = (x.abs().sum(-1) > 0).sum(-1)
        longest = lengths.max().item()
        return self.proj(x[:, :longest])


class SplitByCounts(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        counts = torch.tensor([1, x.shape[0] - 1])
        parts = torch.split(self.fc(x), counts.tolist())
        return torch.cat([p.mean(0, keepdim=True) for p in parts])


class StepsFromLog2(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        steps = int(torch.tensor(float(x.shape[-1])).log2())
        for _ in range(steps):
            x = self.fc(x).relu()
        return x


class WhereScalarTensor(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        return torch.where(h > 0, h, torch.tensor(0.0))


class MaskedFillNegatives(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        return h.masked_fill(x < 0, 0.0)


class BucketizedValues(nn.Module):
    def __init__(self, dim=8, buckets=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.embed = nn.Embedding(buckets, dim)

    def forward(self, x):
        boundaries = torch.linspace(-1.0, 1.0, 7)
        index = torch.bucketize(torch.tanh(self.fc(x)), boundaries)
        return self.embed(index).sum(1)


class SearchSortedTimesteps(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.table = nn.Embedding(9, dim)

    def forward(self, x):
        grid = torch.arange(0, 64, 8).float()
        level = torch.sigmoid(self.fc(x)).mean(-1) * 64
        return self.table(torch.searchsorted(grid, level.contiguous()))


class OneHotOfArange(nn.Module):
    def __init__(self, dim=16, period=4):
        super().__init__()
        self.proj = nn.Linear(dim + period, dim)
        self.period = period

    def forward(self, x):
        b, n, _ = x.shape
        phase = F.one_hot(torch.arange(n) % self.period, self.period).float()
        return self.proj(torch.cat([x, phase.expand(b, n, self.period)], dim=-1))


class ArgmaxItemLookup(nn.Module):
    def __init__(self, dim=8, choices=4):
        super().__init__()
        self.router = nn.Linear(dim, choices)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(choices))

    def forward(self, x):
        choice = int(self.router(x).mean(0).argmax())
        return self.experts[choice](x)


class GridSideFromTensor(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        side = int(torch.tensor(n).float().sqrt().item())
        h = self.proj(x).transpose(1, 2).reshape(b, c, side, -1)
        return F.avg_pool2d(h, 2)


class ShapeToList(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        h, w = torch.tensor(x.shape[-2:]).tolist()
        return F.interpolate(self.conv(x), size=(h // 2, w // 2))


class NoisyCountThenZeros(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        noisy = self.fc(x) + 0.01 * torch.randn(x.shape)
        active = int(noisy.gt(0).sum())
        return noisy.sum() + torch.zeros(active).sum()


class RandomRowSelect(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        keep = torch.rand(x.shape[0]) > 0.5
        return self.fc(x)[keep]


class GreedyDecodeUntilEos(nn.Module):
    def __init__(self, vocab=16, dim=8, eos=0, steps=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)
        self.eos = eos
        self.steps = steps

    def forward(self, input_ids):
        tokens = input_ids
        for _ in range(self.steps):
            logits = self.head(self.embed(tokens).mean(1))
            next_token = logits.argmax(-1, keepdim=True)
            tokens = torch.cat([tokens, next_token], dim=1)
            if next_token[0].item() == self.eos:
                break
        return tokens



class PackedByLengths(nn.Module):
    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.rnn = nn.GRU(dim, hidden, batch_first=True)

    def forward(self, x):
        lengths = (x.abs().sum(-1) > 0).sum(-1).clamp(min=1)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, h = self.rnn(packed)
        return h[-1]
