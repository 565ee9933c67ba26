"""Hugging Face transformers models used from a user's own module (tiny configurations)."""

from torch import nn
from transformers import (
    BartConfig,
    BartModel,
    BertConfig,
    BertModel,
    ConvNextConfig,
    ConvNextModel,
    GPT2Config,
    GPT2Model,
    LlamaConfig,
    LlamaModel,
    OPTConfig,
    OPTModel,
    RobertaConfig,
    RobertaModel,
    T5Config,
    T5EncoderModel,
    ViTConfig,
    ViTModel,
    Wav2Vec2Config,
    Wav2Vec2Model,
)

from .hf_models import TINY


class WrappedBert(nn.Module):
    """A user module that builds ``BertModel`` and calls it with ``input_ids``."""

    def __init__(self):
        super().__init__()
        self.model = BertModel(BertConfig(**TINY))

    def forward(self, input_ids):
        return self.model(input_ids)


class WrappedRoberta(nn.Module):
    """A user module that builds ``RobertaModel`` and calls it with ``input_ids``."""

    def __init__(self):
        super().__init__()
        self.model = RobertaModel(RobertaConfig(**TINY))

    def forward(self, input_ids):
        return self.model(input_ids)


class WrappedGPT2(nn.Module):
    """A user module that builds ``GPT2Model`` and calls it with ``input_ids``."""

    def __init__(self):
        super().__init__()
        self.model = GPT2Model(GPT2Config(**TINY))

    def forward(self, input_ids):
        return self.model(input_ids)


class WrappedLlama(nn.Module):
    """A user module that builds ``LlamaModel`` and calls it with ``input_ids``."""

    def __init__(self):
        super().__init__()
        self.model = LlamaModel(LlamaConfig(**TINY))

    def forward(self, input_ids):
        return self.model(input_ids)


class WrappedOPT(nn.Module):
    """A user module that builds ``OPTModel`` and calls it with ``input_ids``."""

    def __init__(self):
        super().__init__()
        self.model = OPTModel(OPTConfig(**TINY))

    def forward(self, input_ids):
        return self.model(input_ids)


class WrappedT5Encoder(nn.Module):
    """A user module that builds ``T5EncoderModel`` and calls it with ``input_ids``."""

    def __init__(self):
        super().__init__()
        self.model = T5EncoderModel(T5Config(**TINY))

    def forward(self, input_ids):
        return self.model(input_ids)


class WrappedBart(nn.Module):
    """A user module that builds ``BartModel`` and calls it with ``input_ids``."""

    def __init__(self):
        super().__init__()
        self.model = BartModel(BartConfig(**TINY))

    def forward(self, input_ids):
        return self.model(input_ids)


class WrappedViT(nn.Module):
    """A user module that builds ``ViTModel`` and calls it with ``pixel_values``."""

    def __init__(self):
        super().__init__()
        self.model = ViTModel(ViTConfig(**TINY))

    def forward(self, pixel_values):
        return self.model(pixel_values)


class WrappedConvNext(nn.Module):
    """A user module that builds ``ConvNextModel`` and calls it with ``pixel_values``."""

    def __init__(self):
        super().__init__()
        self.model = ConvNextModel(ConvNextConfig(**TINY))

    def forward(self, pixel_values):
        return self.model(pixel_values)


class WrappedWav2Vec2(nn.Module):
    """A user module that builds ``Wav2Vec2Model`` and calls it with ``input_values``."""

    def __init__(self):
        super().__init__()
        self.model = Wav2Vec2Model(Wav2Vec2Config(**TINY))

    def forward(self, input_values):
        return self.model(input_values)
