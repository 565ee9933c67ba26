"""timm models ported from TensorFlow: 'same' padding (Conv2dSame, pad_same)."""

import timm
from torch import nn


class TimmTfEfficientNetB0(nn.Module):
    """timm ``tf_efficientnet_b0``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("tf_efficientnet_b0", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmTfMixNetS(nn.Module):
    """timm ``tf_mixnet_s``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("tf_mixnet_s", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmTfMobileNetV3(nn.Module):
    """timm ``tf_mobilenetv3_small_minimal_100``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model(
            "tf_mobilenetv3_small_minimal_100", pretrained=False, num_classes=10
        )

    def forward(self, x):
        return self.model(x)


class TimmTfEfficientNetV2B0(nn.Module):
    """timm ``tf_efficientnetv2_b0``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("tf_efficientnetv2_b0", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmDmNFNetF0(nn.Module):
    """timm ``dm_nfnet_f0``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("dm_nfnet_f0", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)
