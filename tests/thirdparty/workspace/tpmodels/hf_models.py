"""Hugging Face transformers architectures, tiny configurations, traced as they are.

Each class *is* the library model (a subclass whose constructor passes a tiny config), so
torch.fx traces the library's own decorated ``forward``."""

from transformers import (
    AlbertConfig,
    AlbertModel,
    BartConfig,
    BartModel,
    BeitConfig,
    BeitModel,
    BertConfig,
    BertModel,
    BloomConfig,
    BloomModel,
    CLIPVisionConfig,
    CLIPVisionModel,
    ConvNextConfig,
    ConvNextModel,
    DebertaConfig,
    DebertaModel,
    DeiTConfig,
    DeiTModel,
    Dinov2Config,
    Dinov2Model,
    DistilBertConfig,
    DistilBertModel,
    ElectraConfig,
    ElectraModel,
    GemmaConfig,
    GemmaModel,
    GPT2Config,
    GPT2Model,
    GPTJConfig,
    GPTJModel,
    GPTNeoXConfig,
    GPTNeoXModel,
    LlamaConfig,
    LlamaModel,
    MistralConfig,
    MistralModel,
    MixtralConfig,
    MixtralModel,
    MobileBertConfig,
    MobileBertModel,
    OPTConfig,
    OPTModel,
    PhiConfig,
    PhiModel,
    Qwen2Config,
    Qwen2Model,
    RobertaConfig,
    RobertaModel,
    T5Config,
    T5Model,
    ViTConfig,
    ViTModel,
    Wav2Vec2Config,
    Wav2Vec2Model,
    WhisperConfig,
    WhisperModel,
)

#: One tiny configuration for every architecture: each config class takes what it knows
#: (unknown keys are kept as plain attributes). No weights are ever loaded.
TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=37,
    max_position_embeddings=64,
    embedding_size=32,
    n_embd=32,
    n_layer=2,
    n_head=2,
    d_model=32,
    d_ff=37,
    num_layers=2,
    num_heads=2,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=37,
    decoder_ffn_dim=37,
    image_size=32,
    patch_size=8,
    num_channels=3,
    bos_token_id=0,
    eos_token_id=1,
    pad_token_id=0,
)


class TinyBert(BertModel):
    """``BertModel`` with a tiny ``BertConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(BertConfig(**TINY))


class TinyRoberta(RobertaModel):
    """``RobertaModel`` with a tiny ``RobertaConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(RobertaConfig(**TINY))


class TinyDistilBert(DistilBertModel):
    """``DistilBertModel`` with a tiny ``DistilBertConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(DistilBertConfig(**TINY))


class TinyAlbert(AlbertModel):
    """``AlbertModel`` with a tiny ``AlbertConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(AlbertConfig(**TINY))


class TinyElectra(ElectraModel):
    """``ElectraModel`` with a tiny ``ElectraConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(ElectraConfig(**TINY))


class TinyMobileBert(MobileBertModel):
    """``MobileBertModel`` with a tiny ``MobileBertConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(MobileBertConfig(**TINY))


class TinyDeberta(DebertaModel):
    """``DebertaModel`` with a tiny ``DebertaConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(DebertaConfig(**TINY))


class TinyGPT2(GPT2Model):
    """``GPT2Model`` with a tiny ``GPT2Config``; its own forward is traced."""

    def __init__(self):
        super().__init__(GPT2Config(**TINY))


class TinyGPTJ(GPTJModel):
    """``GPTJModel`` with a tiny ``GPTJConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(GPTJConfig(**TINY))


class TinyOPT(OPTModel):
    """``OPTModel`` with a tiny ``OPTConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(OPTConfig(**TINY))


class TinyBloom(BloomModel):
    """``BloomModel`` with a tiny ``BloomConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(BloomConfig(**TINY))


class TinyLlama(LlamaModel):
    """``LlamaModel`` with a tiny ``LlamaConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(LlamaConfig(**TINY))


class TinyMistral(MistralModel):
    """``MistralModel`` with a tiny ``MistralConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(MistralConfig(**TINY))


class TinyQwen2(Qwen2Model):
    """``Qwen2Model`` with a tiny ``Qwen2Config``; its own forward is traced."""

    def __init__(self):
        super().__init__(Qwen2Config(**TINY))


class TinyPhi(PhiModel):
    """``PhiModel`` with a tiny ``PhiConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(PhiConfig(**TINY))


class TinyGemma(GemmaModel):
    """``GemmaModel`` with a tiny ``GemmaConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(GemmaConfig(**TINY))


class TinyGPTNeoX(GPTNeoXModel):
    """``GPTNeoXModel`` with a tiny ``GPTNeoXConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(GPTNeoXConfig(**TINY))


class TinyMixtral(MixtralModel):
    """``MixtralModel`` with a tiny ``MixtralConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(MixtralConfig(**TINY))


class TinyT5(T5Model):
    """``T5Model`` with a tiny ``T5Config``; its own forward is traced."""

    def __init__(self):
        super().__init__(T5Config(**TINY))


class TinyBart(BartModel):
    """``BartModel`` with a tiny ``BartConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(BartConfig(**TINY))


class TinyWhisper(WhisperModel):
    """``WhisperModel`` with a tiny ``WhisperConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(WhisperConfig(**TINY))


class TinyViT(ViTModel):
    """``ViTModel`` with a tiny ``ViTConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(ViTConfig(**TINY))


class TinyDeiT(DeiTModel):
    """``DeiTModel`` with a tiny ``DeiTConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(DeiTConfig(**TINY))


class TinyBeit(BeitModel):
    """``BeitModel`` with a tiny ``BeitConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(BeitConfig(**TINY))


class TinyDinov2(Dinov2Model):
    """``Dinov2Model`` with a tiny ``Dinov2Config``; its own forward is traced."""

    def __init__(self):
        super().__init__(Dinov2Config(**TINY))


class TinyConvNext(ConvNextModel):
    """``ConvNextModel`` with a tiny ``ConvNextConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(ConvNextConfig(**TINY))


class TinyCLIPVision(CLIPVisionModel):
    """``CLIPVisionModel`` with a tiny ``CLIPVisionConfig``; its own forward is traced."""

    def __init__(self):
        super().__init__(CLIPVisionConfig(**TINY))


class TinyWav2Vec2(Wav2Vec2Model):
    """``Wav2Vec2Model`` with a tiny ``Wav2Vec2Config``; its own forward is traced."""

    def __init__(self):
        super().__init__(Wav2Vec2Config(**TINY))
