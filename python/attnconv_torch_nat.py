"""Neighborhood attention as NAT models were trained, for export_attention_layers (issue 23).

Recognised: a module of class NeighborhoodAttention2D (NATTEN 0.17 and earlier: `natten.NeighborhoodAttention2D`)
with Linear `qkv` (3D <- D), Linear `proj`, `num_heads`, `kernel_size`, `dilation`, `scale` and `rpb` (N_h, 2K - 1,
2K - 1) or None, called on (N, H, W, D). Each call becomes a case of proof
hassani2023.trained_neighborhood_attention; its tokens are the H x W grid in row-major order (no extra tokens).
The call is recomputed here from the state_dict alone — NATTEN's neighbourhood (clamped inside the grid, dilated:
every dilation-th pixel of the query's own phase) and its bias rpb[h, (key - query) / dilation + K - 1] — and must
give the module's output. Not expressible: causal masking, a kernel or dilation that differs between the axes, an
even kernel, parameters besides qkv, rpb and proj, attention dropout in training mode.
"""
import math

import torch
from torch import nn

import attnconv_torch_attention as attention


def _pair(value):
    if isinstance(value, int):
        return (value, value)
    return tuple(int(v) for v in value)


def window_start(index, length, kernel, dilation):
    """NATTEN's first key of query `index` along an axis: the window of `kernel` keys of the query's phase
    (index mod dilation), centred on it and shifted to stay inside the axis."""
    phase, i = index % dilation, index // dilation
    n = (length - phase + dilation - 1) // dilation  # positions of this phase
    r = kernel // 2
    start = min(max(i - r, 0), n - kernel)
    return start * dilation + phase


class Neighborhood(attention.Family):
    """NATTEN's NeighborhoodAttention2D: proof hassani2023.trained_neighborhood_attention."""
    proof = "hassani2023.trained_neighborhood_attention"
    case_suffix = "trained_neighborhood_attention"

    def __init__(self):
        self._grids = {}  # id(module) -> [(H, W) of each call, in call order]

    def matches(self, module):
        return type(module).__name__ == "NeighborhoodAttention2D" and isinstance(getattr(module, "qkv", None), nn.Linear) \
            and isinstance(getattr(module, "proj", None), nn.Linear)

    def layout(self, module):
        return "natten"

    def why_not(self, module):
        for name in ("num_heads", "kernel_size", "dilation"):
            if not hasattr(module, name):
                return f"no {name}"
        (k1, k2), (d1, d2) = _pair(module.kernel_size), _pair(module.dilation)
        if k1 != k2 or d1 != d2:
            return f"kernel_size {(k1, k2)} and dilation {(d1, d2)}: the proof takes one value for both axes"
        if k1 % 2 == 0:
            return f"even kernel_size {k1} (NATTEN 0.17's neighbourhoods are odd)"
        causal = getattr(module, "is_causal", False)
        if any(_pair(causal) if not isinstance(causal, bool) else (causal,)):
            return "causal masking (is_causal)"
        dim = module.qkv.in_features
        if module.qkv.out_features != 3 * dim or module.proj.in_features != dim or dim % module.num_heads:
            return f"qkv maps {dim} -> {module.qkv.out_features}, proj {module.proj.in_features} -> " \
                   f"{module.proj.out_features}, {module.num_heads} heads: not one self-attention"
        if module.proj.out_features != dim:
            return f"proj maps {dim} -> {module.proj.out_features}: the proof's proj is (D, D)"
        if module.proj.bias is None:
            return "proj has no bias"
        rpb = getattr(module, "rpb", None)
        if rpb is not None and tuple(rpb.shape) != (module.num_heads, 2 * k1 - 1, 2 * k1 - 1):
            return f"rpb of shape {list(rpb.shape)}, expected {[module.num_heads, 2 * k1 - 1, 2 * k1 - 1]}"
        others = sorted(set(module.state_dict()) - {"qkv.weight", "qkv.bias", "rpb", "proj.weight", "proj.bias"})
        if others:
            return f"parameters or buffers besides qkv, rpb and proj: {others[:4]}"
        drop = getattr(module, "attn_drop", None)
        if module.training and isinstance(drop, nn.Dropout) and drop.p > 0:
            return "attention dropout in training mode (call model.eval())"
        return None

    def call(self, module, args, kwargs, result):
        if len(args) != 1 or kwargs:
            return "called with more than the tokens"
        x, y = args[0], result
        if x.dim() != 4 or y.dim() != 4 or y.shape[:3] != x.shape[:3]:
            return f"input {list(x.shape)} and output {list(y.shape)}: expected (N, H, W, D) both"
        n, h, w, _ = x.shape
        span = _pair(module.kernel_size)[0] * _pair(module.dilation)[0]
        if h < span or w < span:
            return f"a {h}x{w} grid is smaller than kernel_size * dilation = {span}"
        self._grids.setdefault(id(module), []).append((h, w))
        return x.reshape(n, h * w, -1), y.reshape(n, h * w, -1)

    def recompute(self, module, x):
        h, w = self._grids[id(module)][-1]
        weights = self.weights(module)
        return forward(x.double(), {k: t.double() for k, t in weights.items()}, module.num_heads,
                       _pair(module.kernel_size)[0], _pair(module.dilation)[0], float(module.scale), (h, w))

    def weights(self, module):
        state = module.state_dict()
        return {k: state[k] for k in ("qkv.weight", "qkv.bias", "rpb", "proj.weight", "proj.bias")
                if state.get(k) is not None}

    def params(self, module, weights, extra, grid):
        return {"embed_dim": int(module.qkv.in_features), "heads": int(module.num_heads), "grid": list(grid),
                "kernel_size": _pair(module.kernel_size)[0], "dilation": _pair(module.dilation)[0],
                "rel_pos_bias": "rpb" in weights, "qkv_bias": "qkv.bias" in weights,
                "qk_scale": float(module.scale)}

    def grid(self, module, x, grid, extra_tokens, model_grid):
        sizes = {g for g in self._grids.get(id(module), []) if g[0] * g[1] == x.shape[1]}
        if len(sizes) != 1:
            return f"{x.shape[1]} tokens from calls on grids {sorted(self._grids.get(id(module), []))}: ambiguous"
        return 0, sizes.pop()


def forward(x, weights, heads, kernel, dilation, scale, grid):
    """The layer on tokens x (N, H*W, D), row-major over the H x W grid, from its state_dict alone."""
    h, w = grid
    n, t, dim = x.shape
    d = dim // heads
    qkv = x @ weights["qkv.weight"].T
    if "qkv.bias" in weights:
        qkv = qkv + weights["qkv.bias"]
    q, k, v = (qkv[..., i * dim:(i + 1) * dim].reshape(n, t, heads, d).transpose(1, 2) for i in range(3))
    scores = torch.full((n, heads, t, t), -math.inf, dtype=x.dtype)
    rpb = weights.get("rpb")
    for qi in range(h):
        rows = [window_start(qi, h, kernel, dilation) + a * dilation for a in range(kernel)]
        for qj in range(w):
            cols = [window_start(qj, w, kernel, dilation) + b * dilation for b in range(kernel)]
            query = qi * w + qj
            for ki in rows:
                for kj in cols:
                    key = ki * w + kj
                    s = (q[:, :, query] * scale * k[:, :, key]).sum(-1)
                    if rpb is not None:
                        s = s + rpb[:, (ki - qi) // dilation + kernel - 1, (kj - qj) // dilation + kernel - 1]
                    scores[:, :, query, key] = s
    p = torch.softmax(scores, dim=-1)
    o = (p @ v).transpose(1, 2).reshape(n, t, dim)
    return o @ weights["proj.weight"].T + weights["proj.bias"]


# Before the generic families: a NeighborhoodAttention2D has the Linear qkv and proj that timm's Attention has,
# and the first family that matches owns a module.
attention.FAMILIES.insert(0, Neighborhood())
