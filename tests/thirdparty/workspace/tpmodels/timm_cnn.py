"""timm convolutional families."""

import timm
from torch import nn


class TimmResNet18(nn.Module):
    """timm ``resnet18``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("resnet18", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmEfficientNetB0(nn.Module):
    """timm ``efficientnet_b0``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmMobileNetV3(nn.Module):
    """timm ``mobilenetv3_small_050``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("mobilenetv3_small_050", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmConvNeXtAtto(nn.Module):
    """timm ``convnext_atto``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("convnext_atto", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmRegNetX(nn.Module):
    """timm ``regnetx_002``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("regnetx_002", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmDenseNet121(nn.Module):
    """timm ``densenet121``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("densenet121", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmGhostNet(nn.Module):
    """timm ``ghostnet_100``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("ghostnet_100", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmDLA34(nn.Module):
    """timm ``dla34``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("dla34", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmDPN68(nn.Module):
    """timm ``dpn68``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("dpn68", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmNFResNet26(nn.Module):
    """timm ``nf_resnet26``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("nf_resnet26", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmECANFNetL0(nn.Module):
    """timm ``eca_nfnet_l0``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("eca_nfnet_l0", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmRexNet(nn.Module):
    """timm ``rexnet_100``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("rexnet_100", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmLCNet(nn.Module):
    """timm ``lcnet_050``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("lcnet_050", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmRepViT(nn.Module):
    """timm ``repvit_m1``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("repvit_m1", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmCSPResNet50(nn.Module):
    """timm ``cspresnet50``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("cspresnet50", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmRes2Net(nn.Module):
    """timm ``res2net50_26w_4s``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("res2net50_26w_4s", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmSEResNeXt26d(nn.Module):
    """timm ``seresnext26d_32x4d``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("seresnext26d_32x4d", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmGENet(nn.Module):
    """timm ``gernet_s``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("gernet_s", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmVoVNet(nn.Module):
    """timm ``ese_vovnet19b_dw``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("ese_vovnet19b_dw", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmHGNetV2(nn.Module):
    """timm ``hgnetv2_b0``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("hgnetv2_b0", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmHRNet(nn.Module):
    """timm ``hrnet_w18_small``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("hrnet_w18_small", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmTResNet(nn.Module):
    """timm ``tresnet_m``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("tresnet_m", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmMobileViT(nn.Module):
    """timm ``mobilevit_xxs``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("mobilevit_xxs", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmTinyNet(nn.Module):
    """timm ``tinynet_e``, no pretrained weights."""

    def __init__(self):
        super().__init__()
        self.model = timm.create_model("tinynet_e", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)
