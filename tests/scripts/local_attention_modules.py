"""Two attention modules written here in PyTorch from their official definitions, for the tests and fixtures of
the NAT and Gaussian trained-attention families (issue 23). Neither package installs here (NATTEN needs its
compiled kernels; epfml/attention-cnn is a research repository), so the modules are stated again, with the
same class names, attributes and state_dict names:

  - NeighborhoodAttention2D: NATTEN 0.17's module (natten/na2d.py, its unfused path: q scaled by
    head_dim^-1/2, na2d_qk with rpb, softmax, na2d_av, proj), the neighbourhood of NATTEN's naive CPU kernels
    (natten_cpu_commons.h: get_window_start with the padded-length rule of dilated axes, get_pb_start for the
    bias) — written from those formulas, not from the exporter's.
  - GaussianSelfAttention: epfml/attention-cnn's (models/bert.py): per head a centre mu_h and S_h (or an
    isotropic s_h), the target vector u_h = -1/2 (-2 (a mu1 + b mu2), -2 (c mu2 + b mu1), a, c, 2 b) of
    Sigma^-1 = S S^T = [[a, b], [b, c]] against the relative encoding R = (d1, d2, d1^2, d2^2, d1 d2) of key -
    query over a 50 x 50 buffer, a softmax over the image's keys, the heads' averages of the tokens
    concatenated and mapped by `value`; input (B, W, H, C) in epfml's names. Its blur trick is only sketched
    (a 7 x 7 Gaussian convolution renormalised at the border, channels in an order of its own): the tests need a
    module that has it on and runs, to see the exporter refuse it.
"""
import math
import types

import torch
from torch import nn
import torch.nn.functional as F


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def natten_window_start(index, length, kernel, dilation):
    """natten_cpu_commons.h get_window_start (not causal)."""
    neighborhood = kernel // 2
    dilation_idx, index_pdp = index % dilation, index // dilation
    length_pdp = (length + dilation - 1) // dilation
    num_padded = length_pdp * dilation - length
    if dilation_idx >= dilation - num_padded:
        length_pdp -= 1
    start = max(index_pdp - neighborhood, 0)
    if index_pdp + neighborhood >= length_pdp:
        start += length_pdp - index_pdp - neighborhood - 1
    return start * dilation + dilation_idx


def natten_pb_start(index, length, kernel, dilation):
    """natten_cpu_commons.h get_pb_start: the rpb index of the window's first key."""
    neighborhood = kernel // 2
    if dilation <= 1:
        return neighborhood + (neighborhood - index if index < neighborhood else 0) + \
            (length - index - 1 - neighborhood if index + neighborhood >= length else 0)
    if index - neighborhood * dilation < 0:
        return kernel - 1 - index // dilation
    if index + neighborhood * dilation >= length:
        return (length - index - 1) // dilation
    return neighborhood


def na2d_qk(q, k, kernel_size, dilation, rpb):
    """(B, heads, H, W, d) x2 -> (B, heads, H, W, K1 K2): q . k over each neighbourhood, plus rpb."""
    b, heads, h, w, _ = q.shape
    (k1, k2), (d1, d2) = kernel_size, dilation
    attn = torch.zeros(b, heads, h, w, k1 * k2, dtype=q.dtype)
    for i in range(h):
        si, pi = natten_window_start(i, h, k1, d1), natten_pb_start(i, h, k1, d1)
        for j in range(w):
            sj, pj = natten_window_start(j, w, k2, d2), natten_pb_start(j, w, k2, d2)
            for a in range(k1):
                for c in range(k2):
                    s = (q[:, :, i, j] * k[:, :, si + a * d1, sj + c * d2]).sum(-1)
                    if rpb is not None:
                        s = s + rpb[:, pi + a, pj + c]
                    attn[:, :, i, j, a * k2 + c] = s
    return attn


def na2d_av(attn, v, kernel_size, dilation):
    b, heads, h, w, d = v.shape
    (k1, k2), (d1, d2) = kernel_size, dilation
    out = torch.zeros(b, heads, h, w, d, dtype=v.dtype)
    for i in range(h):
        si = natten_window_start(i, h, k1, d1)
        for j in range(w):
            sj = natten_window_start(j, w, k2, d2)
            for a in range(k1):
                for c in range(k2):
                    out[:, :, i, j] += attn[:, :, i, j, a * k2 + c, None] * v[:, :, si + a * d1, sj + c * d2]
    return out


class NeighborhoodAttention2D(nn.Module):
    """NATTEN 0.17's NeighborhoodAttention2D (unfused path), input (B, H, W, C)."""

    def __init__(self, dim, num_heads, kernel_size, dilation=1, is_causal=False, rel_pos_bias=False, qkv_bias=True,
                 qk_scale=None, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = qk_scale or self.head_dim ** -0.5
        self.kernel_size = _pair(kernel_size)
        self.dilation = _pair(dilation)
        self.is_causal = _pair(is_causal)
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        if rel_pos_bias:
            self.rpb = nn.Parameter(torch.zeros(num_heads, 2 * self.kernel_size[0] - 1, 2 * self.kernel_size[1] - 1))
            nn.init.trunc_normal_(self.rpb, std=0.02, mean=0.0, a=-2.0, b=2.0)
        else:
            self.register_parameter("rpb", None)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        b, h, w, c = x.shape
        qkv = self.qkv(x).reshape(b, h, w, 3, self.num_heads, self.head_dim).permute(3, 0, 4, 1, 2, 5)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * self.scale
        attn = na2d_qk(q, k, self.kernel_size, self.dilation, self.rpb).softmax(dim=-1)
        x = na2d_av(self.attn_drop(attn), v, self.kernel_size, self.dilation)
        return self.proj_drop(self.proj(x.permute(0, 2, 3, 1, 4).reshape(b, h, w, c)))


def gaussian_config(hidden_size, num_attention_heads, isotropic=False, blur=False, mu_std=2.0, sigma_std=0.01,
                    dropout=0.0):
    """The fields of epfml's config GaussianSelfAttention reads."""
    return types.SimpleNamespace(attention_gaussian_blur_trick=blur, attention_isotropic_gaussian=isotropic,
                                 gaussian_init_mu_std=mu_std, gaussian_init_sigma_std=sigma_std,
                                 num_attention_heads=num_attention_heads, hidden_size=hidden_size,
                                 attention_probs_dropout_prob=dropout)


class GaussianSelfAttention(nn.Module):
    """epfml/attention-cnn's GaussianSelfAttention, input (B, W, H, C)."""

    def __init__(self, config, output_attentions=False):
        super().__init__()
        self.attention_gaussian_blur_trick = config.attention_gaussian_blur_trick
        self.attention_isotropic_gaussian = config.attention_isotropic_gaussian
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size
        self.all_head_size = self.num_attention_heads * config.hidden_size
        self.output_attentions = output_attentions
        heads = self.num_attention_heads
        self.attention_centers = nn.Parameter(torch.zeros(heads, 2).normal_(0.0, config.gaussian_init_mu_std))
        if config.attention_isotropic_gaussian:
            spreads = 1 + torch.zeros(heads).normal_(0, config.gaussian_init_sigma_std)
        else:
            spreads = torch.eye(2).unsqueeze(0).repeat(heads, 1, 1)
            spreads += torch.zeros_like(spreads).normal_(0, config.gaussian_init_sigma_std)
        self.attention_spreads = nn.Parameter(spreads)
        self.value = nn.Linear(self.all_head_size, config.hidden_size)
        if not config.attention_gaussian_blur_trick:
            side = torch.arange(50)
            grid = torch.stack(torch.meshgrid(side, side, indexing="ij"), dim=-1)  # (50, 50, 2)
            rel = grid[None, None] - grid[:, :, None, None]  # [i, j, k, l] = (k, l) - (i, j)
            self.register_buffer("R", torch.cat([rel, rel ** 2, (rel[..., 0] * rel[..., 1])[..., None]], -1).float())
            self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def get_heads_target_vectors(self):
        if self.attention_isotropic_gaussian:
            a = c = self.attention_spreads ** 2
            b = torch.zeros_like(self.attention_spreads)
        else:
            inv = torch.einsum("hij,hkj->hik", self.attention_spreads, self.attention_spreads)
            a, b, c = inv[:, 0, 0], inv[:, 0, 1], inv[:, 1, 1]
        mu1, mu2 = self.attention_centers[:, 0], self.attention_centers[:, 1]
        return -0.5 * torch.stack([-2 * (a * mu1 + b * mu2), -2 * (c * mu2 + b * mu1), a, c, 2 * b], dim=-1)

    def get_attention_probs(self, width, height):
        """(W, H, heads, W, H)."""
        u = self.get_heads_target_vectors()
        scores = torch.einsum("ijkld,hd->ijhkl", self.R[:width, :height, :width, :height, :], u)
        probs = torch.softmax(scores.reshape(width, height, self.num_attention_heads, -1), dim=-1)
        return probs.reshape(width, height, self.num_attention_heads, width, height)

    def blured_attention(self, x):
        b, width, height, c = x.shape
        y = x.permute(0, 3, 1, 2)
        offsets = torch.arange(7, dtype=x.dtype) - 3
        d = torch.stack(torch.meshgrid(offsets, offsets, indexing="ij"), -1)  # (7, 7, 2)
        kernels = []
        for mu, s in zip(self.attention_centers, self.attention_spreads):
            inv = s ** 2 * torch.eye(2, dtype=x.dtype) if s.dim() == 0 else s @ s.T
            e = d - mu
            g = torch.exp(-0.5 * torch.einsum("abi,ij,abj->ab", e, inv, e))
            kernels.append((g / g.sum()).reshape(1, 1, 7, 7).repeat(c, 1, 1, 1))
        weights = torch.cat(kernels)
        out = F.conv2d(y.repeat(1, len(kernels), 1, 1), weights, groups=c * len(kernels), padding=3)
        norm = F.conv2d(torch.ones(1, c * len(kernels), width, height, dtype=x.dtype), weights,
                        groups=c * len(kernels), padding=3)
        return (out / norm).permute(0, 2, 3, 1)

    def forward(self, hidden_states, attention_mask, head_mask=None):
        b, w, h, c = hidden_states.shape
        if not self.attention_gaussian_blur_trick:
            probs = self.dropout(self.get_attention_probs(w, h))
            values = torch.einsum("ijhkl,bkld->bijhd", probs, hidden_states).reshape(b, w, h, -1)
        else:
            probs = None
            values = self.blured_attention(hidden_states)
        out = self.value(values)
        return (out, probs) if self.output_attentions else out


def neighborhood_probabilities(module, x):
    """P (N, heads, H W, H W) of NeighborhoodAttention2D `module` on x (N, H, W, C): its softmax over each
    neighbourhood, scattered onto the grid (this file's statement, not the exporter's)."""
    b, h, w, c = x.shape
    qkv = module.qkv(x).reshape(b, h, w, 3, module.num_heads, module.head_dim).permute(3, 0, 4, 1, 2, 5)
    attn = na2d_qk(qkv[0] * module.scale, qkv[1], module.kernel_size, module.dilation, module.rpb).softmax(-1)
    (k1, k2), (d1, d2) = module.kernel_size, module.dilation
    p = torch.zeros(b, module.num_heads, h * w, h * w, dtype=x.dtype)
    for i in range(h):
        si = natten_window_start(i, h, k1, d1)
        for j in range(w):
            sj = natten_window_start(j, w, k2, d2)
            for a in range(k1):
                for cc in range(k2):
                    p[:, :, i * w + j, (si + a * d1) * w + sj + cc * d2] = attn[:, :, i, j, a * k2 + cc]
    return p


def neighborhood_head_maps(module):
    """M_h = W_o^h W_v^h (heads, D, D) and b = W_o b_v + b_o."""
    dim, hd = module.qkv.in_features, module.head_dim
    wv = module.qkv.weight[2 * dim:]
    bv = module.qkv.bias[2 * dim:] if module.qkv.bias is not None else torch.zeros(dim, dtype=wv.dtype)
    wo = module.proj.weight
    m = torch.stack([wo[:, h * hd:(h + 1) * hd] @ wv[h * hd:(h + 1) * hd] for h in range(module.num_heads)])
    return m, wo @ bv + module.proj.bias


def gaussian_probabilities(module, x):
    """P (N, heads, W H, W H) of GaussianSelfAttention `module` on x (N, W, H, C), from its own get_attention_probs."""
    b, w, h, _ = x.shape
    p = module.get_attention_probs(w, h).reshape(w * h, module.num_attention_heads, w * h).transpose(0, 1)
    return p[None].expand(b, -1, -1, -1)


def gaussian_head_maps(module):
    """M_h = value.weight[:, h C:(h+1) C] (heads, C, C) and b = value.bias."""
    c = module.attention_head_size
    m = torch.stack([module.value.weight[:, h * c:(h + 1) * c] for h in range(module.num_attention_heads)])
    return m, module.value.bias
