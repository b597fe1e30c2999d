"""torchvision's image-classification builders (`torchvision.models.resnet50()`,
`models.__dict__[args.arch]()`): their parameter counts.

The counts are torchvision's own (`num_params` in each builder's weights metadata, the
same with and without pretrained weights) for the default 1,000 ImageNet classes; a
builder called with another `num_classes` is not in this table.
"""

from __future__ import annotations

from typing import Optional

#: builder name → parameters at num_classes=1000
TORCHVISION_PARAMS: dict[str, int] = {
    "alexnet": 61_100_840,
    "vgg11": 132_863_336, "vgg16": 138_357_544, "vgg19": 143_667_240,
    "resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032,
    "resnet101": 44_549_160, "resnet152": 60_192_808,
    "resnext50_32x4d": 25_028_904, "wide_resnet50_2": 68_883_240,
    "densenet121": 7_978_856, "googlenet": 6_624_904, "inception_v3": 27_161_264,
    "squeezenet1_0": 1_248_424, "mobilenet_v2": 3_504_872, "mobilenet_v3_large": 5_483_032,
    "efficientnet_b0": 5_288_548, "convnext_tiny": 28_589_128, "swin_t": 28_288_354,
    "vit_b_16": 86_567_656, "vit_l_16": 304_326_632,
}

#: keyword arguments of a builder that leave its size as tabulated
SIZE_NEUTRAL_KWARGS = frozenset({"pretrained", "weights", "progress"})


def torchvision_params(name: str, kwargs: Optional[dict] = None) -> Optional[int]:
    """Parameters of `torchvision.models.<name>(**kwargs)`, or None when not tabulated
    (an unknown builder, or keywords that change the size such as `num_classes=10`)."""
    kw = dict(kwargs or {})
    if kw.get("num_classes") == 1000:
        kw.pop("num_classes")
    if set(kw) - SIZE_NEUTRAL_KWARGS:
        return None
    return TORCHVISION_PARAMS.get(name)
