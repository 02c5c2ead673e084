"""The models whose attention layers the trained-attention tests measure, built here once so that the tests
and bench/trained_table.py measure the same ones: torchvision's VisionTransformer and SwinTransformer
(small, random init, seeded: no weights can be downloaded here) with their seeded inputs, and the ConViT,
Swin and Gaussian models trained on scikit-learn's 8x8 digits (digits_common.train, seeded). The caller sets
torch.set_default_dtype(torch.float64) first (each builder checks it)."""
import copy

import torch
from torch import nn
import torchvision
from torchvision.models.swin_transformer import SwinTransformerBlock

from convit_checks import ConViT
from digits_common import train
from local_attention_modules import GaussianSelfAttention, gaussian_config


def _float64():
    assert torch.get_default_dtype() == torch.float64, "set torch.set_default_dtype(torch.float64) first"


def torchvision_vit():
    """torchvision's VisionTransformer (image 32, patch 8: a 4 x 4 grid and a class token; 2 layers, 2 heads,
    hidden 16), random init with seed 0, and the 16 images 3 x 32 x 32 drawn after it."""
    _float64()
    torch.manual_seed(0)
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                               mlp_dim=32).eval()
    return vit, torch.randn(16, 3, 32, 32)


def tv_swin():
    """torchvision's SwinTransformer, one stage of two blocks (2 heads, window 4 x 4: W-MSA, then SW-MSA with
    shift 2), 2 x 2 patches, 24 channels; random init from the current seed."""
    _float64()
    return torchvision.models.SwinTransformer(patch_size=[2, 2], embed_dim=24, depths=[2], num_heads=[2],
                                              window_size=[4, 4], num_classes=10).eval()


def torchvision_swin():
    """tv_swin() with seed 0 and the 8 images 3 x 16 x 16 drawn after it (an 8 x 8 grid of tokens)."""
    torch.manual_seed(0)
    model = tv_swin()
    return model, torch.randn(8, 3, 16, 16)


class DigitSwin(nn.Module):
    """A 3 x 3 convolution stem (every pixel a `dim`-wide token: an 8 x 8 grid), LayerNorm, two of torchvision's
    SwinTransformerBlocks (window 4 x 4; shift 0, then 2), LayerNorm, mean pooling, a linear classifier."""
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.stem = nn.Conv2d(1, dim, 3, padding=1)
        self.embed_norm = nn.LayerNorm(dim)
        self.blocks = nn.Sequential(SwinTransformerBlock(dim, heads, [4, 4], [0, 0], mlp_ratio=2.0),
                                    SwinTransformerBlock(dim, heads, [4, 4], [2, 2], mlp_ratio=2.0))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, image):  # (N, 1, 8, 8) -> (N, 10)
        x = self.embed_norm(self.stem(image).permute(0, 2, 3, 1))  # (N, 8, 8, D)
        return self.head(self.norm(self.blocks(x)).mean(dim=(1, 2)))


class GaussianDigits(nn.Module):
    """Pixels embedded, `layers` blocks of GaussianSelfAttention (Cordonnier et al.'s quadratic encoding, full
    spreads), residual, LayerNorm and MLP as in BERT's blocks, a linear classifier on the flattened grid."""
    def __init__(self, dim=16, heads=9, layers=2):
        super().__init__()
        self.embed = nn.Linear(1, dim)
        self.attention = nn.ModuleList([GaussianSelfAttention(gaussian_config(dim, heads)) for _ in range(layers)])
        self.norm1 = nn.ModuleList([nn.LayerNorm(dim) for _ in range(layers)])
        self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
                                  for _ in range(layers)])
        self.norm2 = nn.ModuleList([nn.LayerNorm(dim) for _ in range(layers)])
        self.head = nn.Linear(dim * 64, 10)

    def forward(self, image):  # (N, 1, 8, 8)
        x = self.embed(image.permute(0, 2, 3, 1))
        for attention, norm1, mlp, norm2 in zip(self.attention, self.norm1, self.mlp, self.norm2):
            x = norm1(x + attention(x, None))
            x = norm2(x + mlp(x))
        return self.head(x.flatten(1))


def digits_convit():
    """(trained, the same at init, test accuracy): a ConViT (convit_checks.ConViT: 2 x 2 patches, a 4 x 4 grid of
    32-wide tokens, 4 heads, two GPSA blocks with ConViT's local init, then the class token and one MHSA block),
    seed 0, Adam 30 epochs."""
    _float64()
    torch.manual_seed(0)
    model = ConViT(img_size=8, patch_size=2, embed_dim=32, depth=3, num_heads=4, local_up_to_layer=2)
    at_init = copy.deepcopy(model)
    accuracy = train(model, epochs=30, seed=0)
    return model.eval(), at_init.eval(), accuracy


def digits_swin():
    """(trained DigitSwin, test accuracy): seed 0, Adam 15 epochs."""
    _float64()
    torch.manual_seed(0)
    model = DigitSwin()
    accuracy = train(model, epochs=15, seed=0)
    return model.eval(), accuracy


def digits_gaussian():
    """(trained GaussianDigits (16 channels, 9 heads, 2 blocks), test accuracy): seed 0, Adam 12 epochs."""
    _float64()
    torch.manual_seed(0)
    model = GaussianDigits().double()
    accuracy = train(model, epochs=12, seed=0)
    return model.eval(), accuracy
