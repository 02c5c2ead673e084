"""Gaussian self-attention (Cordonnier et al., ICLR 2020, Section 4) for export_attention_layers (issue 23).

Recognised: a module of class GaussianSelfAttention (epfml/attention-cnn, models/bert.py) with `attention_centers`
(N_h, 2), `attention_spreads` (N_h, 2, 2), or (N_h) with `attention_isotropic_gaussian`, Linear `value`
(C <- N_h C) and `num_attention_heads`, called as module(hidden_states, attention_mask, ...) on (N, W, H, C) (epfml's
names: the first spatial axis is the grid's rows here and the centres' first coordinate). Each call becomes a
case of proof cordonnier2020.trained_gaussian_attention, its tokens the grid in row-major order. The call is
recomputed here from the state_dict alone — P_h(q, k) = softmax over the image's keys of
-1/2 (k - q - mu_h)^T S_h S_h^T (k - q - mu_h) (isotropic: S_h S_h^T = s_h^2 I), each head averaging the tokens
themselves, `value` mapping the heads' concatenation — and must give the module's output. Not expressible: the
blur trick (attention_gaussian_blur_trick: a 7 x 7 Gaussian convolution renormalised at the border), attention
dropout in training mode, parameters besides attention_centers, attention_spreads, value (and the fixed buffer R).
"""
import torch
from torch import nn

import attnconv_torch_attention as attention

NAMES = ("attention_centers", "attention_spreads", "value.weight", "value.bias")


class Gaussian(attention.Family):
    """epfml/attention-cnn's GaussianSelfAttention: proof cordonnier2020.trained_gaussian_attention."""
    proof = "cordonnier2020.trained_gaussian_attention"
    case_suffix = "trained_gaussian_attention"

    def __init__(self):
        self._grids = {}  # id(module) -> [(H, W) of each call, in call order]

    def matches(self, module):
        return type(module).__name__ == "GaussianSelfAttention" and \
            isinstance(getattr(module, "attention_centers", None), torch.Tensor) and \
            isinstance(getattr(module, "attention_spreads", None), torch.Tensor) and \
            isinstance(getattr(module, "value", None), nn.Linear)

    def layout(self, module):
        return "epfml-isotropic" if module.attention_spreads.dim() == 1 else "epfml"

    def why_not(self, module):
        if getattr(module, "attention_gaussian_blur_trick", False):
            return "attention_gaussian_blur_trick: a truncated 7x7 Gaussian convolution renormalised at the border, " \
                   "not the softmax over the image"
        heads = module.attention_centers.shape[0]
        if tuple(module.attention_centers.shape) != (heads, 2):
            return f"attention_centers of shape {list(module.attention_centers.shape)}, expected (N_h, 2)"
        if tuple(module.attention_spreads.shape) not in {(heads,), (heads, 2, 2)}:
            return f"attention_spreads of shape {list(module.attention_spreads.shape)}, expected (N_h) or (N_h, 2, 2)"
        dim = module.value.out_features
        if module.value.in_features != heads * dim or module.value.bias is None:
            return f"value maps {module.value.in_features} -> {dim}{'' if module.value.bias is not None else ', no bias'}" \
                   f": expected N_h C -> C with a bias"
        others = sorted(set(module.state_dict()) - set(NAMES) - {"R"})
        if others:
            return f"parameters or buffers besides {', '.join(NAMES)}: {others[:4]}"
        drop = getattr(module, "dropout", None)
        if module.training and isinstance(drop, nn.Dropout) and drop.p > 0:
            return "attention dropout in training mode (call model.eval())"
        return None

    def call(self, module, args, kwargs, result):
        x = args[0] if args else kwargs.get("hidden_states")
        y = result[0] if isinstance(result, tuple) else result
        if x is None or x.dim() != 4 or y.dim() != 4 or y.shape[:3] != x.shape[:3]:
            return "expected hidden_states (N, W, H, C) and an output of the same grid"
        if kwargs.get("head_mask") is not None or (len(args) > 2 and args[2] is not None):
            return "called with a head_mask"
        n, h, w, _ = x.shape
        self._grids.setdefault(id(module), []).append((h, w))
        return x.reshape(n, h * w, -1), y.reshape(n, h * w, -1)

    def recompute(self, module, x):
        return forward(x.double(), {k: t.double() for k, t in self.weights(module).items()},
                       self._grids[id(module)][-1])

    def weights(self, module):
        state = module.state_dict()
        return {k: state[k] for k in NAMES}

    def params(self, module, weights, extra, grid):
        return {"hidden_size": int(module.value.out_features), "heads": int(module.attention_centers.shape[0]),
                "grid": list(grid), "isotropic": module.attention_spreads.dim() == 1}

    def grid(self, module, x, grid, extra_tokens, model_grid):
        sizes = {g for g in self._grids.get(id(module), []) if g[0] * g[1] == x.shape[1]}
        if len(sizes) != 1:
            return f"{x.shape[1]} tokens from calls on grids {sorted(self._grids.get(id(module), []))}: ambiguous"
        return 0, sizes.pop()


def forward(x, weights, grid):
    """The layer on tokens x (N, H*W, C), row-major over the H x W grid, from its state_dict alone."""
    h, w = grid
    mu, s = weights["attention_centers"], weights["attention_spreads"]
    heads = mu.shape[0]
    if s.dim() == 1:
        inverse = (s ** 2)[:, None, None] * torch.eye(2, dtype=x.dtype)
    else:
        inverse = s @ s.transpose(1, 2)
    rows, cols = torch.meshgrid(torch.arange(h, dtype=x.dtype), torch.arange(w, dtype=x.dtype), indexing="ij")
    position = torch.stack([rows.flatten(), cols.flatten()], dim=-1)  # (T, 2)
    offset = position[None, :, :] - position[:, None, :]  # (query, key, 2): key - query
    e = offset[None] - mu[:, None, None, :]  # (heads, T, T, 2)
    scores = -0.5 * torch.einsum("hqki,hij,hqkj->hqk", e, inverse, e)
    p = torch.softmax(scores, dim=-1)  # (heads, T, T)
    averaged = torch.einsum("hqk,nkc->nqhc", p, x).reshape(x.shape[0], h * w, -1)
    return averaged @ weights["value.weight"].T + weights["value.bias"]


attention.FAMILIES.append(Gaussian())
