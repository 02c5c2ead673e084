"""Export every self-attention layer of a PyTorch model as attnconv cases (numpy and torch only).

    import attnconv_torch
    attnconv_torch.export_attention_layers(vit.eval().double(), x.double(), "export_attention")
    # then: build/attnconv run export_attention/cases.json --out export_attention/report \
    #         --dump-tensors export_attention/dump

The counterpart of export_conv_layers (same conventions) for the question of
Cordonnier et al. asked of a trained model: how convolutional did this
attention layer become (issue 23)? Each call of a recognised attention module
in one forward pass of `model` on `example_input` is recorded by wrapping the
module's forward (so that calls with keyword arguments are seen too), and
becomes the case `<module name>:trained_attention` (`#2` for a second call) of
proof cordonnier2020.trained_attention, with `out_dir/layers/<module
name>.npz` holding

  - the module's state_dict under the model's own names (`<module name>.in_proj_weight`,
    ...; the case reads it with "weights_prefix": "<module name>."),
  - `input`: the tokens it received, (N, T, D), float64, batch first,
  - `reference_output`: its own output, (N, T, D),
  - `token_grid`: [extra tokens, H, W] (int64): the extra tokens (ViT's class
    token) come first and are kept; the case marks them as "extra_tokens".

Recognised: torch.nn.MultiheadAttention as torchvision's VisionTransformer
calls it (self-attention, query is key is value, no masks, no bias_k/bias_v,
no add_zero_attn, one in_proj_weight) and timm's Attention (a module with
Linear `qkv` (3D <- D), Linear `proj` and `num_heads`, whose state_dict is
qkv.weight, qkv.bias, proj.weight, proj.bias, q_norm/k_norm identities). Every
recorded call is recomputed here as plain softmax attention of those weights
and must give the module's output: a module that computes anything else (a
relative position bias, a mask, normalised queries, a subclass with its own
forward) is listed under "not_expressible" with a warning, like any
attention-like module (a MultiheadAttention or a module with `qkv` and `proj`)
that cannot be mapped, or that the forward pass did not call — never skipped
silently.

The token grid: `grid=(H, W)` and `extra_tokens`, or read from the model
(torchvision VisionTransformer: image_size // patch_size of the example input,
one class token; timm: patch_embed.grid_size and num_prefix_tokens).
"""
import json
import math
import os
import re
import warnings

import numpy as np
import torch
from torch import nn

TRAINED_ATTENTION = "cordonnier2020.trained_attention"
REFERENCE_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}
# How far (rel_l2) the plain recomputation may be from the module's output before the module is
# declared not expressible: far above round-off in any dtype, far below a different computation.
RECOMPUTE_TOLERANCE = {torch.float64: 1e-9, torch.float32: 1e-3, torch.float16: 3e-2, torch.bfloat16: 3e-2}


def export_attention_layers(model, example_input, out_dir, kernel=(3, 3), grid=None, extra_tokens=None,
                            kernel_mass=None):
    """Writes out_dir/cases.json, out_dir/layers/*.npz and out_dir/export.json
    (use another out_dir than export_conv_layers'); returns the summary
    written to export.json: "layers" (name, type, layout, input shape, grid,
    extra tokens), "cases" (their number) and "not_expressible" (module name,
    type and reason). kernel is [K1, K2] or "auto" (the smallest odd K x K
    window holding kernel_mass of the attention, 0.9 unless given)."""
    auto = isinstance(kernel, str) and kernel == "auto"
    if not auto:
        kernel = [int(k) for k in kernel]
        if len(kernel) != 2 or min(kernel) < 1:
            raise ValueError(f"kernel must be two positive ints or \"auto\", got {kernel!r}")
    if kernel_mass is not None and not 0 < kernel_mass <= 1:
        raise ValueError(f"kernel_mass must be in (0, 1], got {kernel_mass!r}")
    model_grid = _model_grid(model, example_input)
    calls, not_expressible = _record_attention_calls(model, example_input)
    os.makedirs(os.path.join(out_dir, "layers"), exist_ok=True)
    cases, layers, names = [], [], set()
    for module_name, module, family, x, y in calls:
        name = _unique(_case_name(module_name), names)
        layer_grid = family.grid(module, x, grid, extra_tokens, model_grid)
        if isinstance(layer_grid, str):
            not_expressible.append({"name": name, "type": type(module).__name__, "reason": layer_grid})
            continue
        extra, (h, w) = layer_grid
        if not auto and (kernel[0] > h or kernel[1] > w):
            not_expressible.append({"name": name, "type": type(module).__name__,
                                    "reason": f"the {kernel[0]}x{kernel[1]} window does not fit its {h}x{w} grid"})
            continue
        weights = family.weights(module)
        prefix = (module_name + ".") if module_name else ""
        layer_file = os.path.join("layers", name + ".npz")
        _save_npz(os.path.join(out_dir, layer_file),
                  {**{prefix + key: t for key, t in weights.items()}, "input": x, "reference_output": y},
                  {"token_grid": np.array([extra, h, w], dtype=np.int64)})
        params = {**family.params(module, weights, extra, (h, w)), "kernel": kernel, "dtype": "float64"}
        if kernel_mass is not None:
            params["kernel_mass"] = float(kernel_mass)
        case = {"name": f"{name}:{family.case_suffix}", "proof": family.proof, "params": params,
                "weights": layer_file, "weights_prefix": prefix}
        if y.dtype in REFERENCE_TOLERANCE:
            case["tolerance"] = {"reference_rel_l2": REFERENCE_TOLERANCE[y.dtype]}
        cases.append(case)
        layers.append({"name": name, "type": type(module).__name__, "layout": family.layout(module),
                       "input_shape": list(x.shape), "grid": [h, w], "extra_tokens": extra})
    for entry in not_expressible:
        warnings.warn(f"attnconv_torch: {entry['name']} ({entry['type']}) is not exported: {entry['reason']}")
    summary = {"layers": layers, "cases": len(cases), "not_expressible": not_expressible}
    _write_text(os.path.join(out_dir, "cases.json"),
                '{"cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n")
    _write_text(os.path.join(out_dir, "export.json"), json.dumps(summary, indent=1) + "\n")
    return summary


class Family:
    """One family of attention modules: how to recognise one, read the tokens a call received and its
    output, recompute that output from the state_dict alone, and write the case's params. A family of its
    own file subclasses this and is appended to FAMILIES; the first family whose matches() holds owns a
    module."""
    proof = TRAINED_ATTENTION
    case_suffix = "trained_attention"

    def matches(self, module):
        """Whether the module is of this family (by class and parameter names)."""
        raise NotImplementedError

    def why_not(self, module):
        """Why the module's parameters alone cannot describe it, or None."""
        return None

    def call(self, module, args, kwargs, result):
        """(x, y): the tokens (N, T, D) the call received and its output (N, T, D_out), or the reason (str)
        it cannot be measured."""
        raise NotImplementedError

    def recompute(self, module, x):
        """The module's output on x (N, T, D) from its state_dict alone, in float64."""
        raise NotImplementedError

    def weights(self, module):
        """{state_dict name: tensor} the case loads."""
        raise NotImplementedError

    def params(self, module, weights, extra, grid):
        """The case's params besides kernel and dtype."""
        raise NotImplementedError

    def layout(self, module):
        """A word for export.json's "layout"."""
        return type(module).__name__

    def grid(self, module, x, grid, extra_tokens, model_grid):
        """(extra, (H, W)) of the call's tokens x, or the reason (str) it is not known."""
        return _layer_grid(x.shape[1], grid, extra_tokens, model_grid)


class VitAttention(Family):
    """torch.nn.MultiheadAttention as torchvision's VisionTransformer calls it (self-attention, query is key
    is value, no masks, no bias_k/bias_v, no add_zero_attn, one in_proj_weight) and timm's Attention (Linear
    `qkv` (3D <- D), Linear `proj`, `num_heads`; state_dict qkv.weight, qkv.bias, proj.weight, proj.bias,
    q_norm/k_norm identities): proof cordonnier2020.trained_attention, layouts "torch" and "timm"."""

    def matches(self, module):
        return isinstance(module, nn.MultiheadAttention) or _is_timm_like(module)

    def layout(self, module):
        return "torch" if isinstance(module, nn.MultiheadAttention) else "timm"

    def why_not(self, module):
        return _why_not(module)

    def call(self, module, args, kwargs, result):
        y = result[0] if isinstance(result, tuple) else result
        if self.layout(module) == "torch":
            names = ["query", "key", "value"]
            given = list(args[:3]) + [kwargs.get(k) for k in names[len(args[:3]):]]
            if not (given[0] is given[1] is given[2]):
                return "not self-attention: query, key and value are different tensors"
            if any(kwargs.get(k) is not None for k in ("key_padding_mask", "attn_mask")) or \
                    any(a is not None for a in (args[3:4] + args[5:6])):
                return "called with a mask"
            if kwargs.get("is_causal"):
                return "called causal"
            return (given[0], y) if module.batch_first else (given[0].transpose(0, 1), y.transpose(0, 1))
        if len(args) != 1 or any(v is not None for v in kwargs.values()):
            return "called with more than the tokens (a mask?)"
        return args[0], y

    def recompute(self, module, x):
        layout = self.layout(module)
        return _recompute(x, self.weights(module), layout, module.num_heads)

    def weights(self, module):
        return _weights(module, self.layout(module))

    def params(self, module, weights, extra, grid):
        layout = self.layout(module)
        dim = weights[_names(layout)[0]].shape[1]
        return {"embed_dim": int(dim), "heads": int(module.num_heads), "grid": list(grid), "extra_tokens": extra,
                "layout": layout, "bias": _names(layout)[1] in weights}


def _names(layout):
    """The state_dict names: qkv weight, qkv bias, projection weight, projection bias."""
    if layout == "timm":
        return "qkv.weight", "qkv.bias", "proj.weight", "proj.bias"
    return "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"


def _is_timm_like(module):
    return (isinstance(getattr(module, "qkv", None), nn.Linear) and isinstance(getattr(module, "proj", None), nn.Linear)
            and not isinstance(module, nn.MultiheadAttention))


def _why_not(module):
    """Why the module's parameters alone cannot describe softmax self-attention, or None."""
    if isinstance(module, nn.MultiheadAttention):
        if not module._qkv_same_embed_dim or module.in_proj_weight is None:
            return "separate q/k/v projections (kdim or vdim differ from embed_dim)"
        if module.bias_k is not None or module.bias_v is not None:
            return "add_bias_kv: learned key and value biases appended to the sequence"
        if module.add_zero_attn:
            return "add_zero_attn: a zero token appended to the sequence"
        if module.training and module.dropout > 0:
            return "attention dropout in training mode (call model.eval())"
        return None
    if not isinstance(getattr(module, "num_heads", None), int):
        return "no integer num_heads"
    qkv, proj = module.qkv, module.proj
    if qkv.out_features != 3 * qkv.in_features or proj.in_features != qkv.in_features:
        return f"qkv maps {qkv.in_features} -> {qkv.out_features} and proj {proj.in_features} -> {proj.out_features}: " \
               "not the (3D, D) and (D, D) of one self-attention"
    if proj.bias is None:
        return "proj has no bias (the proof's timm layout always loads proj.bias)"
    allowed = {"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"}
    others = sorted(set(module.state_dict()) - allowed)
    if others:
        return f"parameters or buffers besides qkv and proj: {others[:4]}"
    for norm in ("q_norm", "k_norm"):
        if not isinstance(getattr(module, norm, nn.Identity()), nn.Identity):
            return f"{norm} normalises the {norm[0]}s (qk_norm)"
    drop = getattr(module, "attn_drop", None)
    if module.training and isinstance(drop, nn.Dropout) and drop.p > 0:
        return "attention dropout in training mode (call model.eval())"
    return None


def _weights(module, layout):
    w, b, pw, pb = _names(layout)
    state = module.state_dict()
    out = {w: state[w], pw: state[pw]}
    if state.get(b) is not None:
        out[b] = state[b]
    if state.get(pb) is not None:
        out[pb] = state[pb]
    if layout == "torch" and (b in out) != (pb in out):
        raise ValueError("nn.MultiheadAttention with one of in_proj_bias, out_proj.bias only")
    return out


def _recompute(x, weights, layout, heads):
    """Plain softmax self-attention of the weights on x (N, T, D), in float64."""
    w, b, pw, pb = _names(layout)
    x = x.double()
    dim = weights[w].shape[1]
    qkv = x @ weights[w].double().T
    if b in weights:
        qkv = qkv + weights[b].double()
    n, t, _ = x.shape
    d = dim // heads
    q, k, v = (qkv[..., i * dim:(i + 1) * dim].reshape(n, t, heads, d).transpose(1, 2) for i in range(3))
    p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
    o = (p @ v).transpose(1, 2).reshape(n, t, dim)
    y = o @ weights[pw].double().T
    if pb in weights:
        y = y + weights[pb].double()
    return y


def _rel_l2(a, b):
    return float(torch.linalg.norm((a - b).flatten()) / max(float(torch.linalg.norm(b.flatten())), 1e-300))


def _family_of(module):
    return next((family for family in FAMILIES if family.matches(module)), None)


def _record_attention_calls(model, example_input):
    """[(module name, module, family, tokens (N, T, D), output (N, T, D_out))] of every call, in call order."""
    calls, not_expressible, wrapped, refused = [], [], [], {}
    modules = [(name, m, _family_of(m)) for name, m in model.named_modules()]
    modules = [entry for entry in modules if entry[2] is not None]

    def wrapper_of(module_name, module, family, forward):
        def wrapped_forward(*args, **kwargs):
            result = forward(*args, **kwargs)
            reason = family.why_not(module)
            if reason is None:
                reason = family.call(module, args, kwargs, result)
            if not isinstance(reason, str):
                x, y = reason
                reason = None
                if x.dim() != 3 or y.dim() != 3 or y.shape[:2] != x.shape[:2]:
                    reason = f"tokens of shape {list(x.shape)} and output {list(y.shape)}: expected (N, T, D) both"
            if reason is None:
                with torch.no_grad():
                    again = family.recompute(module, x)
                distance = _rel_l2(again, y.double())
                if not distance <= RECOMPUTE_TOLERANCE.get(y.dtype, 1e-3):
                    reason = (f"its output is not what its {family.layout(module)} parameters compute (rel_l2 "
                              f"{distance:.3g}): a forward of its own")
            if reason is None:
                # Copies: a later in-place operation must not rewrite what was recorded.
                calls.append((module_name, module, family, x.detach().clone(), y.detach().clone()))
            else:
                refused.setdefault(id(module), (module_name, type(module).__name__, reason))
            return result
        return wrapped_forward

    for module_name, module, family in modules:
        wrapped.append((module, module.__dict__.get("forward")))
        module.forward = wrapper_of(module_name, module, family, module.forward)
    try:
        with torch.no_grad():
            model(*example_input) if isinstance(example_input, tuple) else model(example_input)
    finally:
        for module, own in wrapped:  # the forward it had: its class's, or one set on the instance before
            if own is None:
                del module.forward
            else:
                module.forward = own
    recorded = {id(m) for _, m, _, _, _ in calls}
    for module_name, type_name, reason in refused.values():
        not_expressible.append({"name": module_name or "model", "type": type_name, "reason": reason})
    for module_name, module, _ in modules:
        if id(module) not in recorded and id(module) not in refused:
            not_expressible.append({"name": module_name or "model", "type": type(module).__name__,
                                    "reason": "the forward pass on example_input did not call it"})
    return calls, not_expressible


def _model_grid(model, example_input):
    """(extra tokens, (H, W)) read from a known model, or None."""
    x = example_input[0] if isinstance(example_input, tuple) else example_input
    patch = getattr(model, "patch_size", None)
    if isinstance(patch, int) and hasattr(model, "class_token") and torch.is_tensor(x) and x.dim() == 4:
        return 1, (x.shape[-2] // patch, x.shape[-1] // patch)  # torchvision VisionTransformer
    embed = getattr(model, "patch_embed", None)
    size = getattr(embed, "grid_size", None)
    if size is not None and len(size) == 2:
        return int(getattr(model, "num_prefix_tokens", 1 if getattr(model, "cls_token", None) is not None else 0)), \
            (int(size[0]), int(size[1]))
    # facebookresearch/convit's VisionTransformer: a square patch grid (num_patches, no grid_size), its class
    # token joined after the GPSA blocks (local_up_to_layer), so the later blocks see one extra token.
    patches = getattr(embed, "num_patches", None)
    if hasattr(model, "local_up_to_layer") and isinstance(patches, int) and math.isqrt(patches) ** 2 == patches:
        return 1, (math.isqrt(patches), math.isqrt(patches))
    return None


def _layer_grid(tokens, grid, extra_tokens, model_grid):
    """(extra, (H, W)) of a layer of `tokens` tokens, or the reason (str) it is not known."""
    if grid is not None:
        h, w = int(grid[0]), int(grid[1])
        extra = tokens - h * w if extra_tokens is None else int(extra_tokens)
    elif model_grid is not None:
        extra, (h, w) = model_grid
        if extra_tokens is not None:
            extra = int(extra_tokens)
    else:
        extra = 0 if extra_tokens is None else int(extra_tokens)
        side = math.isqrt(max(tokens - extra, 0))
        if side * side != tokens - extra:
            return (f"{tokens} tokens: the grid is unknown (pass grid=(H, W) and extra_tokens= to "
                    "export_attention_layers)")
        h = w = side
    if extra < 0 or extra + h * w != tokens:
        return f"{tokens} tokens are not {extra} extra tokens and a {h}x{w} grid"
    return extra, (h, w)


def _unique(name, names):
    """name, name#2, ...: export_conv_layers's rule (attnconv_torch imports this module, so it is fetched late)."""
    from attnconv_torch import _unique as unique
    return unique(name, names)


def _case_name(module_name):
    return re.sub(r"[/\\\x00]", "_", module_name) or "model"


def _save_npz(path, tensors, arrays):
    np.savez(path, **{key: t.detach().cpu().double().numpy() for key, t in tensors.items()}, **arrays)


def _write_text(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


# The families export_attention_layers recognises, first match wins; a family in a file of its own
# appends itself here (import it from attnconv_torch).
FAMILIES = [VitAttention()]
