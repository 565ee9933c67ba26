"""transformers' mixture-of-experts models, tiny and without weights, in both experts
implementations: grouped matmuls (``grouped_mm``, transformers' default for a model it
defines; in float32 the meta kernel refuses them where the CPU kernel runs them, and under
export and compile transformers takes a loop instead), and the eager experts (a loop over the
experts hit, which breaks the graph and indexes by a tensor's value in the code dynamo runs
eagerly). Named in each config: transformers' default for a subclass depends on which model
class the process built first. Imported beside the workspace's ``tpmodels`` package, whose
shim lets torchvision import beside a CPU torch."""

import torch
from transformers import MixtralConfig, MixtralModel, Qwen2MoeConfig, Qwen2MoeModel

TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, head_dim=16, intermediate_size=32, num_local_experts=4,
            num_experts_per_tok=2, max_position_embeddings=64, pad_token_id=0,
            num_experts=4, moe_intermediate_size=16, shared_expert_intermediate_size=16)


class MixtralBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = MixtralModel(MixtralConfig(**TINY, experts_implementation="grouped_mm"))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids).last_hidden_state


class QwenMoeBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Qwen2MoeModel(Qwen2MoeConfig(**TINY, experts_implementation="grouped_mm"))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids).last_hidden_state


class TinyMixtral(MixtralModel):
    def __init__(self):
        super().__init__(MixtralConfig(**TINY, experts_implementation="eager"))


class TinyQwenMoe(Qwen2MoeModel):
    def __init__(self):
        super().__init__(Qwen2MoeConfig(**TINY, experts_implementation="eager"))
