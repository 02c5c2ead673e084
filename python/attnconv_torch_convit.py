"""ConViT's gated positional self-attention (GPSA) for export_attention_layers (issue 23).

d'Ascoli et al., "ConViT", ICML 2021, Eq. 5; facebookresearch/convit `convit.py`, class GPSA, whose
names timm's ConViT keeps (read for this file, the formulas written anew). A module is of this family
by its class name (GPSA) or its parameter names (qk, v, proj, pos_proj, gating_param); each call
becomes the case `<module name>:trained_gpsa` of proof dascoli2021.trained_gpsa, its state_dict under
the model's names:

  qk.weight (2D, D) = [W_q; W_k], qk.bias (2D, with qkv_bias), v.weight (D, D), v.bias (with qkv_bias),
  proj.weight (D, D), proj.bias (D), pos_proj.weight (N_h, 3), pos_proj.bias (N_h), gating_param (N_h).

GPSA sees the patch tokens only (ConViT joins the class token after its GPSA blocks) on a square grid
(its rel_indices are built from sqrt(N)): its case has no extra tokens whatever `extra_tokens` says
(that is for the model's other attention layers), and its grid is `grid`, the model's, or sqrt(T).
ConViT's plain MHSA blocks (`qkv` without bias, `proj`) are timm-layout self-attention and export
through the ViT family (layout "timm", "bias": false).

Each call is recomputed here from the state_dict alone:
  patch = softmax((W_q x_q + b_q)·(W_k x_k + b_k) / sqrt(d)) per head,
  pos = softmax(pos_proj(r(q, k))), r = (delta_col, delta_row, delta_col^2 + delta_row^2), delta = key - query,
  A = ((1 - sigmoid(lambda)) patch + sigmoid(lambda) pos) / its row sum,
  y = proj(concat_h A_h (W_v x + b_v)_h);
a module whose output is something else (a qk_scale of its own, a subclass with another forward) goes
to not_expressible with the reason.
"""
import math

import torch
from torch import nn

import attnconv_torch_attention as attention

TRAINED_GPSA = "dascoli2021.trained_gpsa"
_NAMES = ("qk", "v", "proj", "pos_proj")


class Gpsa(attention.Family):
    """facebookresearch/convit's (and timm's) GPSA: proof dascoli2021.trained_gpsa."""
    proof = TRAINED_GPSA
    case_suffix = "trained_gpsa"

    def matches(self, module):
        by_names = all(isinstance(getattr(module, n, None), nn.Linear) for n in _NAMES) and \
            isinstance(getattr(module, "gating_param", None), torch.Tensor)
        return by_names or "GPSA" in type(module).__name__

    def layout(self, module):
        return "gpsa"

    def why_not(self, module):
        if not all(isinstance(getattr(module, n, None), nn.Linear) for n in _NAMES) or \
                not isinstance(getattr(module, "gating_param", None), torch.Tensor):
            return "a GPSA without ConViT's Linear qk, v, proj, pos_proj and a gating_param"
        heads = getattr(module, "num_heads", None)
        if not isinstance(heads, int) or heads < 1:
            return "no integer num_heads"
        qk, v, proj, pos = (getattr(module, n) for n in _NAMES)
        dim = qk.in_features
        if (qk.out_features, v.in_features, v.out_features, proj.in_features, proj.out_features) != \
                (2 * dim, dim, dim, dim, dim) or dim % heads:
            return (f"qk {qk.in_features} -> {qk.out_features}, v {v.in_features} -> {v.out_features}, proj "
                    f"{proj.in_features} -> {proj.out_features}, {heads} heads: not ConViT's (2D <- D), (D <- D), "
                    "(D <- D) with N_h dividing D")
        if (pos.in_features, pos.out_features) != (3, heads) or pos.bias is None or \
                tuple(module.gating_param.shape) != (heads,):
            return f"pos_proj {pos.in_features} -> {pos.out_features} and gating_param " \
                   f"{list(module.gating_param.shape)}: not ConViT's Linear(3, N_h) and (N_h)"
        if (qk.bias is None) != (v.bias is None):
            return "qk and v disagree on a bias (ConViT's qkv_bias gives both or neither)"
        if proj.bias is None:
            return "proj has no bias (ConViT's has)"
        allowed = {"qk.weight", "qk.bias", "v.weight", "v.bias", "proj.weight", "proj.bias", "pos_proj.weight",
                   "pos_proj.bias", "gating_param"}
        others = sorted(set(module.state_dict()) - allowed)
        if others:
            return f"parameters or buffers besides ConViT's: {others[:4]}"
        scale = getattr(module, "scale", None)
        if scale is not None and not math.isclose(float(scale), (dim // heads) ** -0.5, rel_tol=1e-15):
            return f"qk_scale {float(scale)!r} is not head_dim ** -0.5 (the proof scales by 1/sqrt(d))"
        drop = getattr(module, "attn_drop", None)
        if module.training and isinstance(drop, nn.Dropout) and drop.p > 0:
            return "attention dropout in training mode (call model.eval())"
        return None

    def call(self, module, args, kwargs, result):
        if len(args) != 1 or any(value is not None for value in kwargs.values()):
            return "called with more than the tokens"
        return args[0], result

    def recompute(self, module, x):
        return gpsa_recompute(x, self.weights(module), module.num_heads)

    def weights(self, module):
        return {key: t for key, t in module.state_dict().items() if t is not None}

    def params(self, module, weights, extra, grid):
        return {"embed_dim": int(weights["qk.weight"].shape[1]), "heads": int(module.num_heads), "grid": list(grid),
                "qkv_bias": "qk.bias" in weights}

    def grid(self, module, x, grid, extra_tokens, model_grid):
        tokens = x.shape[1]
        if grid is not None:
            h, w = int(grid[0]), int(grid[1])
        elif model_grid is not None:
            h, w = model_grid[1]
        else:
            h = w = math.isqrt(tokens)
        if h * w != tokens:
            return f"{tokens} tokens are not the {h}x{w} grid of patches (GPSA sees no class token)"
        if h != w:
            return f"a {h}x{w} grid: ConViT's GPSA builds its rel_indices from sqrt(N), a square grid only"
        return 0, (h, w)


def rel_indices(side):
    """(T, T, 3) for T = side^2 patches, row-major: (delta_col, delta_row, delta_col^2 + delta_row^2), key - query."""
    rows, cols = torch.div(torch.arange(side * side), side, rounding_mode="floor"), torch.arange(side * side) % side
    d_col = (cols[None, :] - cols[:, None]).double()
    d_row = (rows[None, :] - rows[:, None]).double()
    return torch.stack([d_col, d_row, d_col ** 2 + d_row ** 2], dim=-1)


def gpsa_recompute(x, weights, heads):
    """GPSA (Eq. 5, ConViT's renormalisation) of the state_dict `weights` on x (N, T, D), in float64."""
    x = x.double()
    n, t, dim = x.shape
    d = dim // heads
    w = {key: value.double() for key, value in weights.items()}
    qk = x @ w["qk.weight"].T + (w["qk.bias"] if "qk.bias" in w else 0)
    q, k = (qk[..., i * dim:(i + 1) * dim].reshape(n, t, heads, d).transpose(1, 2) for i in range(2))
    patch = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
    side = math.isqrt(t)
    pos = torch.softmax((rel_indices(side) @ w["pos_proj.weight"].T + w["pos_proj.bias"]).permute(2, 0, 1), dim=-1)
    gate = torch.sigmoid(w["gating_param"]).view(1, heads, 1, 1)
    a = (1 - gate) * patch + gate * pos
    a = a / a.sum(dim=-1, keepdim=True)
    v = (x @ w["v.weight"].T + (w["v.bias"] if "v.bias" in w else 0)).reshape(n, t, heads, d).transpose(1, 2)
    return (a @ v).transpose(1, 2).reshape(n, t, dim) @ w["proj.weight"].T + w["proj.bias"]


attention.FAMILIES.append(Gpsa())
