"""Swin window attention for export_attention_layers (issue 23): proof liu2021.trained_window_attention.

Two families, both loaded by the state_dict names qkv.weight, qkv.bias, proj.weight, proj.bias and
relative_position_bias_table ((2 M1 - 1)(2 M2 - 1), N_h), with the window and shift of their block:

  - torchvision's ShiftedWindowAttention (torchvision.models.swin_transformer), called with
    x (N, H, W, D): the grid is x's; the tokens are flattened row-major to (N, H*W, D), and so is
    its output. It pads the grid with zero tokens to a multiple of the window, sets the shift to 0
    on an axis where the window covers the padded grid, rolls by -s and masks with -100.
  - microsoft/Swin-Transformer's WindowAttention, which its SwinTransformerBlock calls on windows of
    the rolled map with the block's attn_mask: the call is mapped by its block (input_resolution,
    window_size, shift_size, attn_mask): its windows are put back on the H x W grid (reversed and
    rolled back as the block does) for the tokens (norm1's output) and for its output, which is the
    block's attention part before the residual. A WindowAttention outside such a block, or called
    with another mask, is not expressible.

Each call is recomputed here from the state_dict alone (a statement of the formulas of
src/construction/trained_window_attention.hpp, query by query) and must give the module's output.
Not expressible, with the reason: Swin V2 (cosine attention, logit_scale, cpb_mlp), dropout that acts
(torchvision's shifted_window_attention calls F.dropout without training=, so attention_dropout or
dropout > 0 drops in eval mode too), microsoft's qk_scale, a relative_position_index that is not
Swin's, parameters besides those above.
"""
import math
import weakref

import torch
from torch import nn

import attnconv_torch_attention as attention
from attnconv_torch_attention import Family

WINDOW_ATTENTION = "liu2021.trained_window_attention"
MASK_VALUE = -100.0  # Swin's finite mask, both codes
NAMES = ("qkv.weight", "qkv.bias", "proj.weight", "proj.bias", "relative_position_bias_table")


def relative_position_index(window):
    """(M1 M2, M1 M2): Swin's index of query a and key b, (a1 - b1 + M1 - 1)(2 M2 - 1) + (a2 - b2 + M2 - 1)."""
    m1, m2 = window
    a1, a2 = torch.div(torch.arange(m1 * m2), m2, rounding_mode="floor"), torch.arange(m1 * m2) % m2
    return (a1[:, None] - a1[None, :] + m1 - 1) * (2 * m2 - 1) + (a2[:, None] - a2[None, :] + m2 - 1)


def geometry(grid, window, shift):
    """(padded, shift applied): the grid padded to multiples of the window; shift 0 on an axis the window covers."""
    padded = [-(-g // m) * m for g, m in zip(grid, window)]
    return padded, [0 if m >= p else s for m, p, s in zip(window, padded, shift)]


def _labels(padded, window, shift):
    """The label of Swin's mask at each rolled position (Hp, Wp): its slices [0, L-M), [L-M, L-s), [L-s, L)."""
    def axis(length, m, s):
        t = torch.arange(length)
        if s == 0:
            return torch.zeros(length, dtype=torch.long)
        return (t >= length - m).long() + (t >= length - s).long()
    return 3 * axis(padded[0], window[0], shift[0])[:, None] + axis(padded[1], window[1], shift[1])[None, :]


def window_keys(grid, window, shift):
    """For each grid query (row-major), the padded positions of its window's keys (H W, M1 M2) and the
    index of its place in the window (H W,), and Swin's mask (H W, M1 M2)."""
    (hp, wp), s = geometry(grid, window, shift)
    m1, m2 = window
    i, j = torch.meshgrid(torch.arange(grid[0]), torch.arange(grid[1]), indexing="ij")
    r1, r2 = (i.flatten() - s[0]) % hp, (j.flatten() - s[1]) % wp  # rolled positions of the queries
    c1, c2 = r1 - r1 % m1, r2 - r2 % m2
    b1, b2 = torch.div(torch.arange(m1 * m2), m2, rounding_mode="floor"), torch.arange(m1 * m2) % m2
    k1, k2 = c1[:, None] + b1[None, :], c2[:, None] + b2[None, :]  # rolled positions of the keys
    keys = ((k1 + s[0]) % hp) * wp + (k2 + s[1]) % wp
    labels = _labels((hp, wp), window, s)
    mask = torch.where(labels[k1, k2] != labels[r1, r2][:, None], MASK_VALUE, 0.0)
    return keys, (r1 % m1) * m2 + r2 % m2, mask, (hp, wp)


def recompute(x, weights, heads, grid, window, shift):
    """The layer on grid tokens x (N, H W, D), float64, from its state_dict alone."""
    x = x.double()
    n, t, dim = x.shape
    d = dim // heads
    keys, place, mask, (hp, wp) = window_keys(grid, window, shift)
    padded = x.new_zeros(n, hp, wp, dim)
    padded[:, :grid[0], :grid[1]] = x.reshape(n, grid[0], grid[1], dim)
    qkv = padded.reshape(n, hp * wp, dim) @ weights["qkv.weight"].double().T
    if "qkv.bias" in weights:
        qkv = qkv + weights["qkv.bias"].double()  # the zero tokens of the padding: q, k, v = the biases
    q, k, v = (qkv[..., c * dim:(c + 1) * dim].reshape(n, hp * wp, heads, d) for c in range(3))
    inside = (torch.arange(hp)[:, None] < grid[0]) & (torch.arange(wp)[None, :] < grid[1])
    q = q[:, inside.flatten()]  # the grid queries, row-major
    table = weights["relative_position_bias_table"].double()
    bias = table[relative_position_index(window)[place]]  # (H W, M1 M2, heads)
    scores = torch.einsum("nqhc,nqkhc->nhqk", q, k[:, keys]) / math.sqrt(d) + bias.permute(2, 0, 1) + mask
    p = torch.softmax(scores, dim=-1)
    o = torch.einsum("nhqk,nqkhc->nqhc", p, v[:, keys]).reshape(n, t, dim)
    y = o @ weights["proj.weight"].double().T
    return y + weights["proj.bias"].double() if "proj.bias" in weights else y


class _SwinFamily(Family):
    proof = WINDOW_ATTENTION
    case_suffix = "trained_window_attention"

    def __init__(self):
        # Per module, the grids of its accepted calls in call order (grid() reads them in that order) and
        # the call being recorded (recompute() follows call() at once).
        self._grids = weakref.WeakKeyDictionary()
        self._current = None

    def geometry_of(self, module):
        """(window [M1, M2], shift [s1, s2]) as the module's forward uses them, or the reason (str)."""
        raise NotImplementedError

    def tokens(self, module, args, kwargs, result):
        """(x (N, H, W, D), y (N, H, W, D)) on the grid, or the reason (str)."""
        raise NotImplementedError

    def reset(self, module):
        self._grids[module] = []

    def why_not(self, module):
        return _why_not(module, self.geometry_of(module))

    def call(self, module, args, kwargs, result):
        grid_tokens = self.tokens(module, args, kwargs, result)
        if isinstance(grid_tokens, str):
            return grid_tokens
        x4, y4 = grid_tokens
        if x4.dim() != 4 or y4.shape[:3] != x4.shape[:3]:
            return f"tokens {list(x4.shape)} and output {list(y4.shape)}: expected (N, H, W, D) both"
        n, h, w, c = x4.shape
        x, y = x4.reshape(n, h * w, c), y4.reshape(n, h * w, -1)
        # The recorder recomputes too; checked here as well so that a grid is kept only for a call it records.
        with torch.no_grad():
            again = self._recompute(module, x, (h, w))
        distance = attention._rel_l2(again, y.double())
        if not distance <= attention.RECOMPUTE_TOLERANCE.get(y.dtype, 1e-3):
            return (f"its output is not what its window-attention parameters compute (rel_l2 {distance:.3g}): "
                    "a forward of its own")
        self._current = (x, again)
        self._grids.setdefault(module, []).append((h, w))
        return x, y

    def _recompute(self, module, x, grid):
        window, shift = self.geometry_of(module)
        return recompute(x, self.weights(module), module.num_heads, grid, window, shift)

    def recompute(self, module, x):
        if self._current is not None and self._current[0] is x:
            return self._current[1]
        raise RuntimeError("attnconv_torch_swin: recompute() of a call that call() did not accept")

    def weights(self, module):
        state = module.state_dict()
        return {key: state[key] for key in NAMES if state.get(key) is not None}

    def params(self, module, weights, extra, grid):
        window, shift = self.geometry_of(module)
        return {"embed_dim": int(weights["qkv.weight"].shape[1]), "heads": int(module.num_heads),
                "grid": list(grid), "window": list(window), "shift": list(shift),
                "qkv_bias": "qkv.bias" in weights, "proj_bias": "proj.bias" in weights}

    def grid(self, module, x, grid, extra_tokens, model_grid):
        grids = self._grids.get(module) or []
        if not grids:
            return "no grid recorded for this call"
        h, w = grids.pop(0)
        if h * w != x.shape[1]:
            return f"{x.shape[1]} tokens are not the {h}x{w} grid recorded"
        return 0, (h, w)


def _has_window_parameters(module):
    return (isinstance(getattr(module, "qkv", None), nn.Linear) and isinstance(getattr(module, "proj", None), nn.Linear)
            and (isinstance(getattr(module, "relative_position_bias_table", None), torch.Tensor)
                 or hasattr(module, "cpb_mlp"))  # Swin V2: recognised, to be listed
            and isinstance(getattr(module, "num_heads", None), int)
            and isinstance(getattr(module, "window_size", None), (list, tuple)) and len(module.window_size) == 2)


def _why_not(module, window_shift):
    """Why the module's parameters alone cannot describe Swin's window attention, or None."""
    if isinstance(window_shift, str):
        return window_shift
    window, shift = window_shift
    if getattr(module, "logit_scale", None) is not None or getattr(module, "cpb_mlp", None) is not None:
        return "Swin V2's cosine attention (logit_scale) and continuous position bias (cpb_mlp)"
    qkv, proj, heads = module.qkv, module.proj, module.num_heads
    if qkv.out_features != 3 * qkv.in_features or proj.in_features != qkv.in_features or qkv.in_features % heads:
        return f"qkv maps {qkv.in_features} -> {qkv.out_features} and proj {proj.in_features} -> " \
               f"{proj.out_features} with {heads} heads: not one self-attention"
    if any(m < 1 for m in window) or any(not 0 <= s < m for s, m in zip(shift, window)):
        return f"window {list(window)} and shift {list(shift)}: the shift must be in [0, window)"
    table = module.relative_position_bias_table
    rows = (2 * window[0] - 1) * (2 * window[1] - 1)
    if tuple(table.shape) != (rows, heads):
        return f"relative_position_bias_table is {list(table.shape)}, not Swin's [{rows}, {heads}]"
    index = getattr(module, "relative_position_index", None)
    if index is not None and not torch.equal(index.reshape(-1).cpu().long(), relative_position_index(window).flatten()):
        return "relative_position_index is not Swin's"
    others = sorted(set(module.state_dict()) - set(NAMES) - {"relative_position_index"})
    if others:
        return f"parameters or buffers besides qkv, proj and the relative position bias: {others[:4]}"
    return None


class TorchvisionSwin(_SwinFamily):
    """torchvision's ShiftedWindowAttention (and modules of its names and forward): x (N, H, W, D)."""

    def matches(self, module):
        found = _has_window_parameters(module) and isinstance(getattr(module, "shift_size", None), (list, tuple))
        if found:
            self.reset(module)
        return found

    def layout(self, module):
        return "torchvision"

    def geometry_of(self, module):
        if len(module.shift_size) != 2:
            return f"shift_size {module.shift_size}: expected two"
        return [int(m) for m in module.window_size], [int(s) for s in module.shift_size]

    def why_not(self, module):
        reason = super().why_not(module)
        if reason is None:
            for name in ("attention_dropout", "dropout"):
                if float(getattr(module, name, 0.0) or 0.0) > 0:
                    return f"{name} > 0: torchvision's shifted_window_attention drops without regard to eval mode"
        return reason

    def tokens(self, module, args, kwargs, result):
        if len(args) != 1 or kwargs:
            return "called with more than x (N, H, W, D)"
        if not torch.is_tensor(args[0]) or args[0].dim() != 4 or not torch.is_tensor(result):
            return "not called with x (N, H, W, D)"
        return args[0], result


class MicrosoftSwin(_SwinFamily):
    """microsoft/Swin-Transformer's WindowAttention, mapped by its SwinTransformerBlock."""

    def __init__(self):
        super().__init__()
        self._block = weakref.WeakKeyDictionary()  # WindowAttention -> weakref of its block

    def matches(self, module):
        attn = getattr(module, "attn", None)
        if attn is not None and _is_block(module):
            self._block[attn] = weakref.ref(module)  # named_modules lists a block before its attn
        found = _has_window_parameters(module) and not hasattr(module, "shift_size")
        if found:
            self.reset(module)
        return found

    def layout(self, module):
        return "microsoft"

    def block_of(self, module):
        ref = self._block.get(module)
        return ref() if ref is not None else None

    def geometry_of(self, module):
        block = self.block_of(module)
        if block is None:
            return "a WindowAttention called on windows outside a SwinTransformerBlock (input_resolution, " \
                   "window_size, shift_size, attn_mask): its grid and shift are unknown"
        m, s = int(block.window_size), int(block.shift_size)
        if list(module.window_size) != [m, m]:
            return f"window_size {list(module.window_size)} is not its block's {m}"
        return [m, m], [s, s]

    def why_not(self, module):
        reason = super().why_not(module)
        if reason is None:
            d = module.qkv.in_features // module.num_heads
            if not math.isclose(float(module.scale), d ** -0.5, rel_tol=1e-15):
                return f"qk_scale {module.scale}: not head_dim ** -0.5"
            drop = getattr(module, "attn_drop", None)
            if module.training and isinstance(drop, nn.Dropout) and drop.p > 0:
                return "attention dropout in training mode (call model.eval())"
        return reason

    def tokens(self, module, args, kwargs, result):
        block = self.block_of(module)
        windows = args[0]
        mask = kwargs["mask"] if "mask" in kwargs else (args[1] if len(args) > 1 else None)
        if len(args) > 2 or set(kwargs) - {"mask"} or windows.dim() != 3:
            return "not called as its block calls it: windows (B nW, M M, D) and mask"
        (h, w), (m, _), (s, _) = block.input_resolution, *self.geometry_of(module)
        if h % m or w % m:
            return f"input_resolution {h}x{w} is not a multiple of the window {m}"
        expected = _block_mask((h, w), m, s)
        if (mask is None) != (expected is None) or (mask is not None and not torch.equal(mask.cpu(), expected.to(mask))):
            return "called with a mask that is not Swin's for its block's window and shift"
        windows_per_image = (h // m) * (w // m)
        if windows.shape[0] % windows_per_image or windows.shape[1] != m * m:
            return f"{list(windows.shape)} windows: not {windows_per_image} windows of {m}x{m} per image"

        def on_grid(t):  # the block's window_reverse, then its roll back by +s
            n = t.shape[0] // windows_per_image
            t = t.reshape(n, h // m, w // m, m, m, -1).permute(0, 1, 3, 2, 4, 5).reshape(n, h, w, -1)
            return torch.roll(t, shifts=(s, s), dims=(1, 2)) if s else t
        return on_grid(windows), on_grid(result)


def _is_block(module):
    return all(hasattr(module, a) for a in ("input_resolution", "window_size", "shift_size", "norm1", "attn")) and \
        isinstance(module.window_size, int) and isinstance(module.shift_size, int)


def _block_mask(resolution, m, s):
    """(nW, M M, M M): Swin's mask for its block's windows in window order, or None without a shift."""
    if s == 0:
        return None
    h, w = resolution
    labels = _labels((h, w), (m, m), (s, s))
    windows = labels.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).reshape(-1, m * m)
    return torch.where(windows[:, None, :] != windows[:, :, None], MASK_VALUE, 0.0)


# Before the ViT family, whose timm layout matches any module with qkv and proj (first match wins).
attention.FAMILIES[:0] = [TorchvisionSwin(), MicrosoftSwin()]
