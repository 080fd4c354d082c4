"""Model builders on ``stax`` layers: an MLP, All-CNN-C and VGG19.

- ``MLP(sizes)``: dense layers with ``tanh`` between them (the JAX paper's Listing 1).
- ``AllCNNC(num_classes=10)``: Springenberg et al.'s all-convolutional CIFAR-10 net
  as specified in WORKLOADS W4 (NHWC, SAME padding except the 3x3 valid conv, ReLU
  after every conv but the last, global average pooling; outputs logits).
- ``VGG19(num_classes=1000)``: configuration E (Simonyan & Zisserman), as in the
  Julia-to-TPU paper: 16 3x3 convs in blocks 64,64 | 128,128 | 256x4 | 512x4 |
  512x4, each block followed by 2x2 max pooling (stride 2), then dense 4096, 4096
  and ``num_classes``, with ReLU; NHWC.
"""
from __future__ import annotations

from typing import Sequence

from plait.example_libraries import stax

VGG19_BLOCKS = ((64, 64), (128, 128), (256,) * 4, (512,) * 4, (512,) * 4)
ALL_CNN_C = (  # (out channels, kernel, stride, padding); ReLU follows all but the last
    (96, 3, 1, "SAME"), (96, 3, 1, "SAME"), (96, 3, 2, "SAME"),
    (192, 3, 1, "SAME"), (192, 3, 1, "SAME"), (192, 3, 2, "SAME"),
    (192, 3, 1, "VALID"), (192, 1, 1, "SAME"), (None, 1, 1, "SAME"))


def MLP(sizes: Sequence[int], activation: stax.Layer = stax.Tanh) -> stax.Layer:
    """Dense layers of widths ``sizes[1:]`` (``sizes[0]`` is the input width) with
    ``activation`` between them (none after the last)."""
    layers = []
    for i, n in enumerate(sizes[1:]):
        layers.append(stax.Dense(n))
        if i < len(sizes) - 2:
            layers.append(activation)
    return stax.serial(*layers)


def AllCNNC(num_classes: int = 10) -> stax.Layer:
    """All-CNN-C for 32x32x3 NHWC inputs, returning ``(N, num_classes)`` logits."""
    layers = []
    for i, (c, k, s, pad) in enumerate(ALL_CNN_C):
        layers.append(stax.Conv(c or num_classes, (k, k), (s, s), pad))
        if i < len(ALL_CNN_C) - 1:
            layers.append(stax.Relu)
    layers.append(stax.GlobalAvgPool())
    return stax.serial(*layers)


def VGG19(num_classes: int = 1000, dense_width: int = 4096) -> stax.Layer:
    """VGG19 (configuration E) for NHWC images, returning ``(N, num_classes)`` logits."""
    layers = []
    for block in VGG19_BLOCKS:
        for c in block:
            layers += [stax.Conv(c, (3, 3), (1, 1), "SAME"), stax.Relu]
        layers.append(stax.MaxPool((2, 2), (2, 2)))
    layers += [stax.Flatten, stax.Dense(dense_width), stax.Relu, stax.Dense(dense_width),
               stax.Relu, stax.Dense(num_classes)]
    return stax.serial(*layers)
