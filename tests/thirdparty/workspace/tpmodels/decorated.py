"""Modules whose own ``forward`` is wrapped by a decorator (a failure is located on the decorated
``forward`` definition, with a message that names the decorator)."""

import functools

import torch
from torch import nn
from transformers.utils.generic import can_return_tuple


def log_calls(fn):
    """A user's own decorator: ``functools.wraps`` over ``*args, **kwargs``."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    return wrapper


class _Config:
    return_dict = True
    use_return_dict = True


class LoggedForward(nn.Module):
    """A plain module whose ``forward`` is decorated with ``log_calls``."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    @log_calls
    def forward(self, x):
        return torch.relu(self.fc(x))


class LoggedForwardKwargs(nn.Module):
    """The same decorator on a ``forward`` that takes ``**kwargs``."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    @log_calls
    def forward(self, x, **kwargs):
        return self.fc(x)


class ReturnsTuple(nn.Module):
    """A module decorated with transformers' ``can_return_tuple``, as its models are."""

    config = _Config()

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    @can_return_tuple
    def forward(self, x, **kwargs):
        return (self.fc(x),)
