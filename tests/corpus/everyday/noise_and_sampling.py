import math

import torch
import torch.nn.functional as F
from torch import nn


class LinearScheduleNoising(nn.Module):
    def __init__(self, dim=8, steps=1000):
        super().__init__()
        self.steps = steps
        self.denoise = nn.Linear(dim, dim)

    def forward(self, x):
        betas = torch.linspace(1e-4, 0.02, self.steps)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        t = torch.randint(0, self.steps, (x.shape[0],))
        noise = torch.randn_like(x)
        a = alphas_cumprod[t].view(-1, 1)
        noisy = a.sqrt() * x + (1 - a).sqrt() * noise
        return F.mse_loss(self.denoise(noisy), noise)


class CosineScheduleNoising(nn.Module):
    def __init__(self, dim=8, steps=100, s=0.008):
        super().__init__()
        self.steps = steps
        self.s = s
        self.denoise = nn.Linear(dim, dim)

    def forward(self, x):
        steps = torch.arange(self.steps + 1, dtype=torch.float64) / self.steps
        alphas_cumprod = torch.cos((steps + self.s) / (1 + self.s) * math.pi * 0.5) ** 2
        alphas_cumprod = (alphas_cumprod / alphas_cumprod[0]).float()
        t = torch.randint(0, self.steps, (x.shape[0],))
        a = alphas_cumprod[t][:, None]
        return self.denoise(a.sqrt() * x + (1 - a).sqrt() * torch.randn(x.shape))


class NoiseLevelEmbedding(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.mlp = nn.Linear(dim, dim)

    def forward(self, x):
        t = torch.randint(0, 1000, (x.shape[0],))
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return x + self.mlp(torch.cat([args.cos(), args.sin()], dim=-1))


class KarrasSigmas(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.net = nn.Linear(dim, dim)

    def forward(self, x):
        u = torch.rand(x.shape[0])
        sigma = torch.exp(math.log(0.002) + u * (math.log(80.0) - math.log(0.002)))
        noisy = x + sigma[:, None] * torch.randn_like(x)
        return self.net(noisy / (sigma[:, None] ** 2 + 1).sqrt())


class GumbelSoftmaxHead(nn.Module):
    def __init__(self, dim=8, classes=4, tau=0.5):
        super().__init__()
        self.logits = nn.Linear(dim, classes)
        self.tau = tau

    def forward(self, x):
        logits = self.logits(x)
        u = torch.rand(logits.shape)
        gumbel = -torch.log(-torch.log(u + 1e-9) + 1e-9)
        return F.softmax((logits + gumbel) / self.tau, dim=-1)


class DropPathMask(nn.Module):
    def __init__(self, dim=8, p=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.p = p

    def forward(self, x):
        keep = 1.0 - self.p
        mask = (torch.rand(x.shape[0], 1) < keep).float() / keep
        return x + self.fc(x) * mask


class RandLikeDropout(nn.Module):
    def __init__(self, dim=8, p=0.2):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.p = p

    def forward(self, x):
        h = self.fc(x)
        keep = torch.rand_like(h) > self.p
        return h * keep / (1 - self.p)


class BernoulliFeatureMask(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        mask = torch.bernoulli(torch.full(x.shape, 0.9))
        return self.fc(x * mask)


class EmptyNormalNoise(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        noise = torch.empty(x.shape).normal_(0.0, 0.1)
        return self.fc(x + noise)


class MultinomialSampler(nn.Module):
    def __init__(self, dim=8, vocab=16):
        super().__init__()
        self.head = nn.Linear(dim, vocab)
        self.embed = nn.Embedding(vocab, dim)

    def forward(self, x):
        probs = self.head(x).softmax(-1)
        token = torch.multinomial(probs, 1).squeeze(-1)
        return self.embed(token)


class RandomTokenMasking(nn.Module):
    def __init__(self, dim=16, mask_ratio=0.75):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.mask_ratio = mask_ratio

    def forward(self, x):
        x = self.embed(x)
        n, length, d = x.shape
        len_keep = int(length * (1 - self.mask_ratio))
        noise = torch.rand(n, length)
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        return torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, d))


class RandpermTokens(nn.Module):
    def __init__(self, dim=16, keep=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.keep = keep

    def forward(self, x):
        perm = torch.randperm(x.shape[1])[: self.keep]
        return self.proj(x[:, perm])


class VAEReparameterize(nn.Module):
    def __init__(self, dim=8, latent=4):
        super().__init__()
        self.mu = nn.Linear(dim, latent)
        self.logvar = nn.Linear(dim, latent)

    def forward(self, x):
        mu, logvar = self.mu(x), self.logvar(x)
        std = torch.exp(0.5 * logvar)
        eps = torch.randn(std.size())
        return mu + eps * std


class ExponentialGumbelTopK(nn.Module):
    def __init__(self, dim=8, k=2):
        super().__init__()
        self.scores = nn.Linear(dim, dim)
        self.k = k

    def forward(self, x):
        logits = self.scores(x)
        gumbel = -torch.empty(logits.shape).exponential_().log()
        return (logits + gumbel).topk(self.k, dim=-1).indices


class LabelSmoothingTargets(nn.Module):
    def __init__(self, dim=8, classes=5, eps=0.1):
        super().__init__()
        self.head = nn.Linear(dim, classes)
        self.classes = classes
        self.eps = eps

    def forward(self, x):
        logits = self.head(x)
        target = torch.randint(0, self.classes, (x.shape[0],))
        smooth = torch.full_like(logits, self.eps / (self.classes - 1))
        smooth.scatter_(1, target.unsqueeze(1), 1.0 - self.eps)
        return -(smooth * logits.log_softmax(-1)).sum(-1).mean()


class MultinomialIndexSelect(nn.Module):
    def __init__(self, dim=16, keep=3):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.keep = keep

    def forward(self, x):
        idx = torch.multinomial(torch.ones(x.shape[1]), self.keep, replacement=False)
        return self.proj(x).index_select(1, idx)


class RandomWhereSwap(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)

    def forward(self, x):
        pick = torch.rand(x.shape[0], 1) < 0.5
        return torch.where(pick, self.a(x), self.b(x))
