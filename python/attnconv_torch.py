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
in `out_dir/export.json`, with a warning, never silently skipped. So is a layer
call whose parameters do not describe what it computed: a subclass with its
own forward, or one overriding `_conv_forward` (weight standardisation, as
timm's StdConv2d: the weight it convolves with is not its `weight`; it is
listed, not exported with a derived weight), a parametrized weight recomputed
on every access in training mode (spectral_norm's power iteration), complex
weights or activations (the proofs are real; an export would keep only the
real part), a non-finite weight, input or output, or a call that does not pass
the input positionally or as the keyword of the layer's forward (`input`). A
TorchScript model (torch.jit.script / torch.jit.trace) is refused with a
ValueError (its submodules run as compiled code no hook sees); a TorchScript
submodule of an eager model is listed with each convolution it holds.

The model runs in its own mode: in training mode BatchNorm normalises by the
batch's statistics and dropout is random, and the activations exported are
those of that pass, with a warning; every buffer the pass changed (BatchNorm's
running statistics, spectral_norm's u and v) is restored afterwards, so the
export leaves the model (and torch's CPU random state) as it was. Call `model.eval()` for inference
activations.

The export is written to a new hidden folder beside `out_dir`
(`.<name>.attnconv-new-*`) and swapped in by one rename (Linux's
renameat2 RENAME_EXCHANGE; elsewhere two renames), so an export that fails or
is interrupted leaves a previous export in `out_dir` as it was, complete.
Entries of a previous export that the exporter does not write (a `report/`
written inside it) are then moved into the new one (an interruption while they
move leaves the rest in that hidden folder, not removed); a non-empty `out_dir`
that holds no `export.json` is not an export and is refused. A process killed
while writing leaves its hidden folder beside `out_dir`. Layer file names are the
case names when those are short and plain (letters, digits, `._#+-`), else a
clipped name and a hash of the name; `layers` in the summary gives each file.
"""
import copy
import ctypes
import errno
import hashlib
import inspect
import json
import math
import numbers
import os
import re
import shutil
import tempfile
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


# Case names are at most this many characters (the loader's limit, 1024, less the ":conv_decomposition" suffix).
MAX_CASE_NAME = 1000
# A layer file's name stem: plain characters, at most this long (else clipped, with a hash of the case name).
MAX_FILE_STEM = 80
PLAIN_STEM = re.compile(r"[A-Za-z0-9_.#+-]+")
# What an export writes into out_dir; anything else found in a previous export is carried over.
EXPORT_ENTRIES = ("cases.json", "export.json", "layers")


def export_conv_layers(model, example_input, out_dir, proofs=(THEOREM1, DECOMPOSITION), alpha=60.0,
                       max_pixels=None):
    """Writes out_dir/cases.json, out_dir/layers/*.npz and out_dir/export.json;
    returns the summary written to export.json: "layers" (name, type, input
    shape, cropped or not, the file), "cases" (their number) and
    "not_expressible" (module name, type and reason). Bad arguments raise
    ValueError before anything runs or is written."""
    proofs = _check_arguments(model, proofs, alpha, max_pixels)
    alpha, max_pixels = float(alpha), None if max_pixels is None else int(max_pixels)
    target = _check_out_dir(out_dir)
    calls, not_expressible = _record_calls(model, example_input)
    new = tempfile.mkdtemp(prefix="." + os.path.basename(target) + ".attnconv-new-", dir=os.path.dirname(target))
    try:
        os.makedirs(os.path.join(new, "layers"))
        cases, layers, names, stems = [], [], set(), set()
        for module_name, module, x, y in calls:
            name = _unique(_case_name(module_name), names)
            stem = _file_stem(name, stems)
            x, y, cropped = _crop(module, x, y, max_pixels, name)
            layers.append({"name": name, "type": type(module).__name__, "input_shape": list(x.shape),
                           "cropped": cropped, "file": os.path.join("layers", stem + ".npz")})
            cases += _layer_cases(name, stem, module, x, y, proofs, alpha, new)
        summary = {"layers": layers, "cases": len(cases), "not_expressible": not_expressible}
        _write_text(os.path.join(new, "cases.json"),
                    '{"cases": [\n' + ",\n".join(json.dumps(c, allow_nan=False) for c in cases) + "\n]}\n")
        _write_text(os.path.join(new, "export.json"), json.dumps(summary, indent=1, allow_nan=False) + "\n")
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    _swap_in(new, target)
    for entry in not_expressible:
        warnings.warn(f"attnconv_torch: {entry['name']} ({entry['type']}) is not exported: {entry['reason']}")
    return summary


def _check_arguments(model, proofs, alpha, max_pixels):
    if isinstance(model, torch.jit.ScriptModule):
        raise ValueError(f"model is a TorchScript module ({type(model).__name__} of "
                         f"{getattr(model, 'original_name', '?')}, from torch.jit.script or torch.jit.trace): its "
                         "convolutions run as compiled code that the exporter's hooks cannot see; export the nn.Module "
                         "before scripting or tracing it")
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(proofs, str) or not isinstance(proofs, (list, tuple)):
        raise ValueError(f"proofs must be a list or tuple of proof names, got {proofs!r}")
    unknown = [p for p in proofs if p not in PROOFS]
    if unknown:
        raise ValueError(f"unknown proofs {unknown}: export_conv_layers knows {list(PROOFS)}")
    if not proofs or len(set(proofs)) != len(proofs):
        raise ValueError(f"proofs must name each proof once and at least one, got {list(proofs)}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha must be a finite number > 0 (Theorem 1's attention sharpness), got {alpha!r}")
    if max_pixels is not None and (isinstance(max_pixels, bool) or not isinstance(max_pixels, numbers.Integral)
                                   or max_pixels < 1):
        raise ValueError(f"max_pixels must be a positive int or None, got {max_pixels!r}")
    return tuple(proofs)


def _check_out_dir(out_dir):
    """The folder the export replaces (a symlink's target): absent, empty or a previous export."""
    if not isinstance(out_dir, (str, os.PathLike)) or not os.fspath(out_dir):
        raise ValueError(f"out_dir must be a folder path, got {out_dir!r}")
    target = os.path.realpath(out_dir)
    if os.path.lexists(target) and not os.path.isdir(target):
        raise ValueError(f"out_dir {os.fspath(out_dir)!r} exists and is not a folder")
    if os.path.isdir(target) and os.listdir(target) and not os.path.isfile(os.path.join(target, "export.json")):
        raise ValueError(f"out_dir {os.fspath(out_dir)!r} is not empty and holds no export.json: it is not a previous "
                         "export, and the exporter replaces out_dir as a whole; give a new or empty folder")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    return target


def _swap_in(new, target):
    """Puts the complete export `new` at `target` in one rename; a previous export's other entries move over."""
    if not os.path.isdir(target):
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(new, 0o777 & ~mask)
        os.rename(new, target)
        return
    try:
        os.chmod(new, os.stat(target).st_mode & 0o7777)
        exchanged = _exchange(new, target)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    if exchanged:  # the previous export is now at `new`
        old = new
    else:  # two renames: between them target is absent, the previous export complete beside it
        old = tempfile.mkdtemp(prefix="." + os.path.basename(target) + ".attnconv-old-", dir=os.path.dirname(target))
        os.rmdir(old)
        try:
            os.rename(target, old)
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)
            raise
        try:
            os.rename(new, target)
        except BaseException:
            os.rename(old, target)
            shutil.rmtree(new, ignore_errors=True)
            raise
    # From here the new export is in place; an interruption leaves what is not yet moved in `old`, never removed.
    for entry in os.listdir(old):
        if entry not in EXPORT_ENTRIES:
            os.rename(os.path.join(old, entry), os.path.join(target, entry))
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a, b):
    """Swaps two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), b)


CONV_TYPES = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
TRAINING_SENSITIVE = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd)


def _record_calls(model, example_input):
    """[(module name, module, input, output)] of every Conv1d/Conv2d call whose parameters describe it, in call
    order, and the not_expressible entries."""
    calls, not_expressible, wrapped = [], [], []
    listed = {}  # (module id, reason) -> entry: a layer called twice the same way is listed once

    def unexpressible(module_name, module, reason):
        listed.setdefault((id(module), reason), {"name": module_name or "model", "type": type(module).__name__,
                                                 "reason": reason})

    def record(module_name, module, x, output):
        base = nn.Conv1d if isinstance(module, nn.Conv1d) else nn.Conv2d
        weight, bias = module.weight, module.bias
        params = [weight] + ([bias] if bias is not None else [])
        if not isinstance(x, torch.Tensor) or not isinstance(output, torch.Tensor):
            return unexpressible(module_name, module, "called without a tensor as its input (positional, or the "
                                                      "keyword of its forward)")
        if any(t.is_complex() for t in params + [x, output]):
            return unexpressible(module_name, module, "complex weights or activations: attnconv's proofs are real "
                                                      "(an export would keep only the real part)")
        if not all(torch.isfinite(t).all() for t in params):
            return unexpressible(module_name, module, "non-finite weight/bias")
        if not (torch.isfinite(x).all() and torch.isfinite(output).all()):
            return unexpressible(module_name, module, "non-finite input/output")
        if type(module)._conv_forward is not base._conv_forward:
            return unexpressible(module_name, module, "it overrides _conv_forward (as weight standardisation does): "
                                                      "the weight it convolves with is not its weight parameter")
        # A subclass may pad, rescale or quantise in its own forward (timm's Conv2dSame,
        # QAT convolutions): its parameters then do not describe what it computes.
        if not torch.equal(base._conv_forward(module, x, weight, bias), output):
            if module.training and torch.nn.utils.parametrize.is_parametrized(module):
                return unexpressible(module_name, module,
                                     "its weight is parametrized (torch.nn.utils.parametrize, e.g. spectral_norm) and "
                                     "recomputed on every access in training mode (a power iteration): the weight it "
                                     "convolved with is gone; export model.eval()")
            return unexpressible(module_name, module,
                                 "its forward is not the convolution of its own weight, bias, stride, padding, "
                                 "dilation and groups (a subclass with its own forward)")
        # Copies: a later in-place operation (ReLU(inplace=True)) must not rewrite what was recorded.
        calls.append((module_name, module, x.detach().clone(), output.detach().clone()))

    def wrap(module_name, module):
        """The module's forward, recording its input (positional or keyword) and output; hooks in torch < 2.0
        see positional inputs only."""
        original = module.forward
        try:
            first = next(iter(inspect.signature(original).parameters.values()))
            keyword = first.name if first.kind in (first.POSITIONAL_OR_KEYWORD, first.KEYWORD_ONLY) else None
        except (StopIteration, TypeError, ValueError):
            keyword = None

        def forward(*args, **kwargs):
            output = original(*args, **kwargs)
            try:
                record(module_name, module, args[0] if args else kwargs.get(keyword), output)
            except Exception as error:  # noqa: BLE001 - the model's pass goes on; the layer is listed, with why
                unexpressible(module_name, module, f"the exporter could not compare it with its parameters "
                                                   f"({type(error).__name__}: {str(error)[:200]})")
            return output
        wrapped.append((module, module.__dict__.get("forward")))
        module.__dict__["forward"] = forward

    scripted = []  # names of the TorchScript submodules met so far
    for module_name, module in model.named_modules():
        inside = next((s for s in scripted if module_name.startswith(s + ".")), None)
        if inside is None and isinstance(module, torch.jit.ScriptModule):
            scripted.append(module_name)
            inside = module_name
            if not any(getattr(m, "original_name", "") in CONV_TYPES for m in module.modules()) and \
                    _calls_convolution(module):
                not_expressible.append({"name": module_name, "type": _script_type(module),
                                        "reason": "a TorchScript module (torch.jit.script or torch.jit.trace) whose "
                                                  "code calls a convolution: compiled code the exporter's hooks "
                                                  "cannot see; export the nn.Module before scripting it"})
        if inside is not None:
            if getattr(module, "original_name", "") in CONV_TYPES:
                not_expressible.append({"name": module_name, "type": _script_type(module),
                                        "reason": f"TorchScript ('{inside}' is from torch.jit.script or "
                                                  "torch.jit.trace): compiled code the exporter's hooks cannot see; "
                                                  "export the nn.Module before scripting it"})
            continue
        if isinstance(module, (nn.Conv1d, nn.Conv2d)):
            wrap(module_name, module)
        elif isinstance(module, nn.modules.conv._ConvNd):
            not_expressible.append({"name": module_name or "model", "type": type(module).__name__,
                                    "reason": "no attnconv proof covers it (Conv1d and Conv2d only)"})
    training = [name or "model" for name, m in model.named_modules() if m.training and (
        isinstance(m, TRAINING_SENSITIVE) or torch.nn.utils.parametrize.is_parametrized(m)
        or isinstance(m, nn.modules.instancenorm._InstanceNorm) and m.track_running_stats)]
    buffers = [(name, b, b.detach().clone()) for name, b in model.named_buffers()]
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):  # dropout's draws leave the caller's RNG as it was
            model(*example_input) if isinstance(example_input, tuple) else model(example_input)
    finally:
        for module, forward in wrapped:
            if forward is None:
                del module.__dict__["forward"]
            else:
                module.__dict__["forward"] = forward
        changed = _restore(buffers)
    if training or (changed and model.training):
        warnings.warn(f"attnconv_torch: the model is in training mode ({_some(training or ['model'])}): the activations exported "
                      "are those of this training-mode pass (BatchNorm normalises by the batch's statistics, dropout "
                      f"is random); the buffers the pass changed ({_some(changed) if changed else 'none'}) are "
                      "restored. Call model.eval() to export inference activations.")
    elif changed:
        warnings.warn(f"attnconv_torch: the forward pass changed buffers ({_some(changed)}); they are restored")
    not_expressible += listed.values()
    called = {id(module) for _, module, _, _ in calls} | {key[0] for key in listed}
    for module_name, module in model.named_modules():
        if isinstance(module, (nn.Conv1d, nn.Conv2d)) and id(module) not in called:
            not_expressible.append({"name": module_name or "model", "type": type(module).__name__,
                                    "reason": "the forward pass on example_input did not call it"})
    return calls, not_expressible


def _restore(buffers):
    """Copies each saved buffer back; the names of those the forward pass changed."""
    changed = []
    with torch.no_grad():
        for name, buffer, saved in buffers:
            same = buffer.shape == saved.shape and buffer.dtype == saved.dtype and (
                torch.allclose(buffer, saved, rtol=0, atol=0, equal_nan=True)
                if buffer.is_floating_point() or buffer.is_complex() else torch.equal(buffer, saved))
            if not same:
                changed.append(name)
                if buffer.shape == saved.shape and buffer.dtype == saved.dtype:
                    buffer.copy_(saved)
    return changed


def _some(names, count=4):
    return ", ".join(names[:count]) + (f" and {len(names) - count} more" if len(names) > count else "")


def _script_type(module):
    return f"{getattr(module, 'original_name', '?')} (TorchScript {type(module).__name__})"


def _calls_convolution(module):
    try:
        graph = str(module.inlined_graph)
    except (AttributeError, RuntimeError):
        return True  # unreadable: say so rather than be silent
    return re.search(r"aten::(_?conv|_convolution|cudnn_conv|mkldnn_conv)", graph) is not None


def _case_name(module_name):
    """The module name (the loader refuses '/', '\\' and NUL); one too long for a case name is clipped, with a
    hash of it."""
    name = re.sub(r"[/\\\x00]", "_", module_name) or "model"
    if len(name) > MAX_CASE_NAME:
        name = name[:MAX_CASE_NAME - 13] + "-" + hashlib.sha256(module_name.encode()).hexdigest()[:12]
    return name


def _file_stem(name, stems):
    """A safe, bounded file name for a case: the name itself when short and plain, else a clipped plain name and a
    hash of the name (also when two names differ only in case)."""
    stem = name
    if not PLAIN_STEM.fullmatch(name) or len(name) > MAX_FILE_STEM or name.lower() in stems:
        plain = re.sub(r"[^A-Za-z0-9_.#+-]", "_", name)[:MAX_FILE_STEM - 13].lstrip(".") or "layer"
        stem = plain + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    stems.add(stem.lower())
    return stem


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


def _layer_cases(name, stem, module, x, y, proofs, alpha, out_dir):
    tensors = {"weight": module.weight, "input": x, "reference_output": y}
    if module.bias is not None:
        tensors["bias"] = module.bias
    layer_file = os.path.join("layers", stem + ".npz")
    _save_npz(os.path.join(out_dir, layer_file), tensors)
    one_d = isinstance(module, nn.Conv1d)
    cases = []
    for proof in proofs:
        weights = layer_file
        if not one_d:
            params = _params_2d(module, x)
        elif proof == DECOMPOSITION:  # the 2D convolution of a 1 x L image: (.., 1, L), (.., 1, K)
            weights = os.path.join("layers", stem + ".as_2d.npz")
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
import attnconv_torch_swin  # noqa: E402,F401  (issue 23: Swin window attention, liu2021.trained_window_attention)
import attnconv_torch_nat  # noqa: E402,F401  (issue 23: NATTEN's NeighborhoodAttention2D)
import attnconv_torch_gaussian  # noqa: E402,F401  (issue 23: epfml's GaussianSelfAttention)
import attnconv_torch_convit  # noqa: E402,F401  (issue 23: ConViT's GPSA family)
