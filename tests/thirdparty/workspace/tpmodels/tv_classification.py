"""torchvision classification builders, no weights."""

from torch import nn
from torchvision import models as tvm


class TvResNet18(nn.Module):
    """``tvm.resnet18``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.resnet18(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvResNeXt50(nn.Module):
    """``tvm.resnext50_32x4d``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.resnext50_32x4d(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvMobileNetV2(nn.Module):
    """``tvm.mobilenet_v2``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.mobilenet_v2(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvMobileNetV3Small(nn.Module):
    """``tvm.mobilenet_v3_small``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.mobilenet_v3_small(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvEfficientNetB0(nn.Module):
    """``tvm.efficientnet_b0``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.efficientnet_b0(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvEfficientNetV2S(nn.Module):
    """``tvm.efficientnet_v2_s``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.efficientnet_v2_s(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvSqueezeNet(nn.Module):
    """``tvm.squeezenet1_1``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.squeezenet1_1(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvShuffleNetV2(nn.Module):
    """``tvm.shufflenet_v2_x0_5``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.shufflenet_v2_x0_5(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvMNASNet(nn.Module):
    """``tvm.mnasnet0_5``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.mnasnet0_5(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvRegNetY(nn.Module):
    """``tvm.regnet_y_400mf``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.regnet_y_400mf(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvDenseNet121(nn.Module):
    """``tvm.densenet121``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.densenet121(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvGoogLeNet(nn.Module):
    """``tvm.googlenet``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.googlenet(weights=None, num_classes=10, init_weights=False)

    def forward(self, x):
        return self.model(x)


class TvInceptionV3(nn.Module):
    """``tvm.inception_v3``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.inception_v3(weights=None, num_classes=10, init_weights=False)

    def forward(self, x):
        return self.model(x)


class TvConvNeXtTiny(nn.Module):
    """``tvm.convnext_tiny``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.convnext_tiny(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvSwinT(nn.Module):
    """``tvm.swin_t``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.swin_t(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvSwinV2T(nn.Module):
    """``tvm.swin_v2_t``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.swin_v2_t(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvViTB32(nn.Module):
    """``tvm.vit_b_32``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.vit_b_32(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvMaxViTT(nn.Module):
    """``tvm.maxvit_t``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.maxvit_t(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TvAlexNet(nn.Module):
    """``tvm.alexnet``, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = tvm.alexnet(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)
