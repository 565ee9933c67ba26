"""timm transformer, MLP and hybrid families."""

import timm
from torch import nn


class TimmViTTiny(nn.Module):
    """timm ``vit_tiny_patch16_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmDeiTTiny(nn.Module):
    """timm ``deit_tiny_patch16_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("deit_tiny_patch16_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmSwinTiny(nn.Module):
    """timm ``swin_tiny_patch4_window7_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model(
            "swin_tiny_patch4_window7_224", pretrained=False, num_classes=10
        )

    def forward(self, x):
        return self.model(x)


class TimmLeViT(nn.Module):
    """timm ``levit_128s``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("levit_128s", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmPiT(nn.Module):
    """timm ``pit_ti_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("pit_ti_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmCaiT(nn.Module):
    """timm ``cait_xxs24_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("cait_xxs24_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmXCiT(nn.Module):
    """timm ``xcit_nano_12_p16_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("xcit_nano_12_p16_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmPoolFormer(nn.Module):
    """timm ``poolformer_s12``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("poolformer_s12", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmMixer(nn.Module):
    """timm ``mixer_s32_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("mixer_s32_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmResMLP(nn.Module):
    """timm ``resmlp_12_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("resmlp_12_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmGMLP(nn.Module):
    """timm ``gmlp_ti16_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("gmlp_ti16_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmEVA02(nn.Module):
    """timm ``eva02_tiny_patch14_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("eva02_tiny_patch14_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmMaxViT(nn.Module):
    """timm ``maxvit_nano_rw_256``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("maxvit_nano_rw_256", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmCoAtNet(nn.Module):
    """timm ``coatnet_nano_rw_224``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("coatnet_nano_rw_224", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmEdgeNeXt(nn.Module):
    """timm ``edgenext_xx_small``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("edgenext_xx_small", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmEfficientFormer(nn.Module):
    """timm ``efficientformer_l1``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("efficientformer_l1", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmFastViT(nn.Module):
    """timm ``fastvit_t8``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("fastvit_t8", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmPVTv2(nn.Module):
    """timm ``pvt_v2_b0``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("pvt_v2_b0", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmCrossViT(nn.Module):
    """timm ``crossvit_tiny_240``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("crossvit_tiny_240", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmVisformer(nn.Module):
    """timm ``visformer_tiny``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("visformer_tiny", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)
