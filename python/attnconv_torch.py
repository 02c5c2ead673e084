"""Export every convolution of a PyTorch model as attnconv cases (numpy and torch only).

    import attnconv_torch
    attnconv_torch.export_conv_layers(model.eval(), x, "export")
    # then: build/attnconv run export/cases.json --out export/report

One forward pass of `model` on `example_input` with a forward hook on every
nn.Conv2d and nn.Conv1d records what each layer received and returned. For
each layer call, `out_dir/layers/<module name>.npz` holds, under PyTorch's
names, `weight`, `bias` (when the layer has one), `input` (the activation it
received, float64, batch dimension kept) and `reference_output` (its own
output), and `out_dir/cases.json` one case per layer and proof, with the
layer's geometry (kernel, stride, padding incl. "same"/"valid", dilation,
groups, padding_mode, channels), heads = K1*K2 and head_dim =
min(in_channels, out_channels) (Theorem 1's construction: head h's W_val W_out
is the kernel slice at its shift, a C_in x C_out matrix, dense or
block-diagonal, of rank at most that). The case names are the module names.

A Conv1d layer is checked by cordonnier2020.theorem1_1d in place of
cordonnier2020.theorem1, and by acmix2022.conv_decomposition as the 2D
convolution it is on a 1 x L image (kernel 1 x K; its own .npz,
`<module name>.as_2d.npz`).

`max_pixels` bounds the activations: an input of more pixels (H*W, or L) is
cropped around its centre to at most that many, and its reference output is
the layer applied by torch to the *cropped* input, not the model's output:
the crop moves the image border, so the padded border of the cropped layer
differs from the full layer's output at the same place.

Any other convolution module (nn.Conv3d, nn.ConvTranspose*, ...) has no proof
to check it, and a convolution the forward pass did not call has no
activation: each is listed under "not_expressible" in the returned summary and
in `out_dir/export.json`, with a warning, never silently skipped.
"""
import copy
import json
import math
import os
import re
import warnings

import numpy as np
import torch
from torch import nn

THEOREM1 = "cordonnier2020.theorem1"
THEOREM1_1D = "cordonnier2020.theorem1_1d"
DECOMPOSITION = "acmix2022.conv_decomposition"
PROOFS = (THEOREM1, DECOMPOSITION)
# The reference_rel_l2 allowed of a layer output computed in lower precision than
# the cases' float64 (the float64 default of the harness otherwise: 1e-10).
REFERENCE_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}
SHORT = {THEOREM1: "theorem1", THEOREM1_1D: "theorem1_1d", DECOMPOSITION: "conv_decomposition"}


def export_conv_layers(model, example_input, out_dir, proofs=(THEOREM1, DECOMPOSITION), alpha=60.0,
                       max_pixels=None):
    """Writes out_dir/cases.json, out_dir/layers/*.npz and out_dir/export.json;
    returns the summary written to export.json: "layers" (name, type, input
    shape, cropped or not), "cases" (their number) and "not_expressible"
    (module name and reason)."""
    unknown = [p for p in proofs if p not in PROOFS]
    if unknown:
        raise ValueError(f"unknown proofs {unknown}: export_conv_layers knows {list(PROOFS)}")
    if max_pixels is not None and (not isinstance(max_pixels, int) or max_pixels < 1):
        raise ValueError(f"max_pixels must be a positive int or None, got {max_pixels!r}")
    calls, not_expressible = _record_calls(model, example_input)
    os.makedirs(os.path.join(out_dir, "layers"), exist_ok=True)
    cases, layers, names = [], [], set()
    for module_name, module, x, y in calls:
        name = _unique(_case_name(module_name), names)
        x, y, cropped = _crop(module, x, y, max_pixels, name)
        layers.append({"name": name, "type": type(module).__name__, "input_shape": list(x.shape), "cropped": cropped})
        cases += _layer_cases(name, module, x, y, proofs, alpha, out_dir)
    for entry in not_expressible:
        warnings.warn(f"attnconv_torch: {entry['name']} ({entry['type']}) is not exported: {entry['reason']}")
    summary = {"layers": layers, "cases": len(cases), "not_expressible": not_expressible}
    _write_text(os.path.join(out_dir, "cases.json"),
                '{"cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n")
    _write_text(os.path.join(out_dir, "export.json"), json.dumps(summary, indent=1) + "\n")
    return summary


def _record_calls(model, example_input):
    """[(module name, module, input, output)] of every Conv1d/Conv2d call, in call order."""
    calls, hooks, not_expressible = [], [], []

    altered = {}

    def hook_of(module_name):
        def hook(module, inputs, output):
            # A subclass may pad, rescale or quantise in its own forward (timm's Conv2dSame,
            # StdConv2d, QAT convolutions): its parameters then do not describe what it computes.
            if not torch.equal(module._conv_forward(inputs[0], module.weight, module.bias), output):
                altered[id(module)] = (module_name, type(module).__name__)
                return
            # Copies: a later in-place operation (ReLU(inplace=True)) must not rewrite what was recorded.
            calls.append((module_name, module, inputs[0].detach().clone(), output.detach().clone()))
        return hook

    for module_name, module in model.named_modules():
        if isinstance(module, (nn.Conv1d, nn.Conv2d)):
            hooks.append(module.register_forward_hook(hook_of(module_name)))
        elif isinstance(module, nn.modules.conv._ConvNd):
            not_expressible.append({"name": module_name or "model", "type": type(module).__name__,
                                    "reason": "no attnconv proof covers it (Conv1d and Conv2d only)"})
    try:
        with torch.no_grad():
            model(*example_input) if isinstance(example_input, tuple) else model(example_input)
    finally:
        for h in hooks:
            h.remove()
    for module_name, type_name in altered.values():
        not_expressible.append({"name": module_name or "model", "type": type_name,
                                "reason": "its forward is not the convolution of its own weight, bias, stride, "
                                          "padding, dilation and groups (a subclass with its own forward)"})
    called = {id(module) for _, module, _, _ in calls} | set(altered)
    for module_name, module in model.named_modules():
        if isinstance(module, (nn.Conv1d, nn.Conv2d)) and id(module) not in called:
            not_expressible.append({"name": module_name or "model", "type": type(module).__name__,
                                    "reason": "the forward pass on example_input did not call it"})
    return calls, not_expressible


def _case_name(module_name):
    return re.sub(r"[/\\\x00]", "_", module_name) or "model"


def _unique(name, names):
    """A module called more than once gets one case per call: name, name#2, ..."""
    candidate, n = name, 1
    while candidate in names:
        n += 1
        candidate = f"{name}#{n}"
    names.add(candidate)
    return candidate


def _crop(module, x, y, max_pixels, name):
    """The centre crop of x to at most max_pixels pixels and the layer's output on it."""
    spatial = list(x.shape[-module.weight.dim() + 2:])
    if max_pixels is None or math.prod(spatial) <= max_pixels:
        return x, y, False
    if len(spatial) == 1:
        sizes = [max_pixels]
    else:
        scale = math.sqrt(max_pixels / math.prod(spatial))
        rows = max(1, min(spatial[0], int(spatial[0] * scale)))
        sizes = [rows, max(1, min(spatial[1], max_pixels // rows))]
    index = [slice(None)] * (x.dim() - len(spatial))
    index += [slice((full - size) // 2, (full - size) // 2 + size) for full, size in zip(spatial, sizes)]
    cropped = x[tuple(index)]
    try:
        with torch.no_grad():
            return cropped, copy.deepcopy(module)(cropped).detach(), True
    except RuntimeError as error:
        raise ValueError(f"{name}: max_pixels={max_pixels} crops the input to {sizes}, too small for this layer: "
                         f"{error}") from error


def _layer_cases(name, module, x, y, proofs, alpha, out_dir):
    tensors = {"weight": module.weight, "input": x, "reference_output": y}
    if module.bias is not None:
        tensors["bias"] = module.bias
    layer_file = os.path.join("layers", name + ".npz")
    _save_npz(os.path.join(out_dir, layer_file), tensors)
    one_d = isinstance(module, nn.Conv1d)
    cases = []
    for proof in proofs:
        weights = layer_file
        if not one_d:
            params = _params_2d(module, x)
        elif proof == DECOMPOSITION:  # the 2D convolution of a 1 x L image: (.., 1, L), (.., 1, K)
            weights = os.path.join("layers", name + ".as_2d.npz")
            _save_npz(os.path.join(out_dir, weights),
                      {key: t if key == "bias" else t.unsqueeze(-2) for key, t in tensors.items()})
            params = _params_2d_of_1d(module, x)
        else:
            proof, params = THEOREM1_1D, _params_1d(module, x)
        if proof in (THEOREM1, THEOREM1_1D):
            params.update(_attention(module, alpha))
        case = {"name": f"{name}:{SHORT[proof]}", "proof": proof, "params": params, "weights": weights}
        if y.dtype in REFERENCE_TOLERANCE:
            case["tolerance"] = {"reference_rel_l2": REFERENCE_TOLERANCE[y.dtype]}
        cases.append(case)
    return cases


def _attention(module, alpha):
    """Theorem 1's MHSA: one head per kernel position, head_dim = min(in_channels, out_channels), the
    largest rank a kernel slice (dense or block-diagonal) can have."""
    return {"heads": math.prod(module.kernel_size), "head_dim": min(module.in_channels, module.out_channels),
            "alpha": float(alpha)}


def _common(module):
    return {"in_channels": module.in_channels, "out_channels": module.out_channels, "groups": module.groups,
            "padding_mode": module.padding_mode, "bias": module.bias is not None, "dtype": "float64"}


def _params_2d(module, x):
    padding = module.padding if isinstance(module.padding, str) else list(module.padding)
    return dict(_common(module), image=list(x.shape[-2:]), kernel=list(module.kernel_size), padding=padding,
                stride=list(module.stride), dilation=list(module.dilation))


def _params_1d(module, x):
    padding = module.padding if isinstance(module.padding, str) else module.padding[0]
    return dict(_common(module), length=x.shape[-1], kernel=module.kernel_size[0], padding=padding,
                stride=module.stride[0], dilation=module.dilation[0])


def _params_2d_of_1d(module, x):
    """A Conv1d as the 2D convolution of a 1 x L image by a 1 x K kernel."""
    p = module.padding
    padding = p if isinstance(p, str) else [0, 0, p[0], p[0]]
    return dict(_common(module), image=[1, x.shape[-1]], kernel=[1, module.kernel_size[0]], padding=padding,
                stride=[1, module.stride[0]], dilation=[1, module.dilation[0]])


def _save_npz(path, tensors):
    np.savez(path, **{key: t.detach().cpu().double().numpy() for key, t in tensors.items()})


def _write_text(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
from attnconv_torch_attention import export_attention_layers  # noqa: E402,F401  (issue 23: attention layers)
