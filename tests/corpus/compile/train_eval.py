"""Classes whose graph breaks depend on the nn.Module mode: dropout and batch norm, and a
branch on ``self.training`` (in forward, or in a helper handed the module) that breaks in one
mode only. fx-lsp compiles each that reads ``training`` beside torch's own layers in train and
eval mode (``module-mode = "auto"``), the others (``SameInBoth``: torch's layers alone) once;
real torch's answers come per mode (``MODULE_MODES``)."""

import torch
from torch import nn

MODULE_MODES = ("train", "eval")


class TrainOnlyBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.norm = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.drop(self.norm(self.linear(x)))
        if self.training:
            print("training step")
        return x.relu()


class EvalOnlyBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        x = self.linear(x)
        if not self.training:
            torch._dynamo.graph_break()
        return self.drop(x).sum(1)


class HoldsTrainOnly(nn.Module):
    """Its own code never reads ``training``: its submodule's does."""

    def __init__(self):
        super().__init__()
        self.inner = TrainOnlyBreak()
        self.out = nn.Linear(8, 4)

    def forward(self, x):
        return self.out(self.inner(x))


class SameInBoth(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.norm = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.drop(self.norm(self.linear(x)))
        print("step")
        return x


def announce_training(module, x):
    """A helper handed the module: the class's own methods never read ``training``."""
    if module.training:
        print("training step")
    return x


class HelperReadsTraining(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return announce_training(self, self.linear(x)).relu()


class NoisyWhenTraining(nn.Module):
    """Reads ``training`` nowhere: its ``train`` override sets what forward branches on."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.noisy = True

    def forward(self, x):
        if self.noisy:
            print("adding noise")
        return self.linear(x)

    def train(self, mode=True):
        super().train(mode)
        self.noisy = mode
        return self


class PredictSwitch(nn.Module):
    """Reads ``training`` only where no call runs it (segmentation-models-pytorch's
    architectures): compiled once."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        torch._dynamo.graph_break()
        return self.linear(x)

    def predict(self, x):
        if self.training:
            self.eval()
        return self(x)

    def train(self, mode=True):
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self
