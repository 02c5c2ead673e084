"""What the ConViT end-to-end scripts share (trained_gpsa.py, trained_digits_convit.py):

  - a ConViT written here from the definitions of d'Ascoli et al. (ICML 2021, Eq. 5 and Sec. 3) and the
    names of facebookresearch/convit `convit.py` (GPSA, MHSA, Block, PatchEmbed, local_up_to_layer):
    GPSA blocks on the patch tokens, the class token joined after them, plain MHSA blocks;
  - check_case(...): one exported case's report entry and dumps against the attention and gates
    recomputed here in numpy from the layer's .npz alone (not from the C++ nor the exporter), and,
    from that attention, the least-squares and white-input convolutions, the defect, masses and mean
    attention distances (trained_checks.check_measurement).
"""
import math

import numpy as np
import torch
from torch import nn

import trained_checks


def _offsets(h, w=None):
    """(T, T, 2) integer (row, column) offsets key - query of an h x w grid (w = h by default), row-major tokens."""
    rc = np.stack(np.divmod(np.arange(h * (w or h)), w or h), axis=-1)  # (T, 2): row, column
    return rc[None, :, :] - rc[:, None, :]


class GPSA(nn.Module):
    """Gated positional self-attention, ConViT's names: qk (2D <- D), v, proj, pos_proj (N_h <- 3), gating_param."""

    def __init__(self, dim, num_heads, qkv_bias=False, locality_strength=1.0):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qk = nn.Linear(dim, 2 * dim, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.pos_proj = nn.Linear(3, num_heads)
        self.gating_param = nn.Parameter(torch.ones(num_heads))
        for linear in (self.qk, self.v, self.proj, self.pos_proj):
            nn.init.trunc_normal_(linear.weight, std=0.02)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)
        self.local_init(locality_strength)

    def local_init(self, strength):
        """Values the identity; head h1 + K h2 centred on (h1 - c, h2 - c) in (row, column), scores
        -strength (|delta - centre|^2 - |centre|^2) on pos_proj's inputs (delta_col, delta_row, |delta|^2)."""
        k = math.isqrt(self.num_heads)
        c = (k - 1) / 2
        with torch.no_grad():
            self.v.weight.copy_(torch.eye(self.v.in_features))
            for h1 in range(k):
                for h2 in range(k):
                    self.pos_proj.weight[h1 + k * h2] = strength * torch.tensor([2 * (h2 - c), 2 * (h1 - c), -1.0])

    def forward(self, x):
        n, t, dim = x.shape
        heads, d = self.num_heads, dim // self.num_heads
        off = torch.from_numpy(_offsets(math.isqrt(t))).double()
        r = torch.stack([off[..., 1], off[..., 0], (off ** 2).sum(-1)], dim=-1)  # (delta_col, delta_row, |delta|^2)
        pos = self.pos_proj(r).permute(2, 0, 1).softmax(dim=-1)  # (heads, T, T)
        q, k = self.qk(x).reshape(n, t, 2, heads, d).permute(2, 0, 3, 1, 4)
        patch = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        g = torch.sigmoid(self.gating_param)[None, :, None, None]
        a = (1 - g) * patch + g * pos
        a = a / a.sum(dim=-1, keepdim=True)
        v = self.v(x).reshape(n, t, heads, d).transpose(1, 2)
        return self.proj((a @ v).transpose(1, 2).reshape(n, t, dim))


class MHSA(nn.Module):
    """ConViT's plain self-attention: qkv (3D <- D, bias qkv_bias), proj."""

    def __init__(self, dim, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        n, t, dim = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.num_heads, dim // self.num_heads).permute(2, 0, 3, 1, 4)
        a = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(n, t, dim))


class Block(nn.Module):
    def __init__(self, dim, num_heads, use_gpsa, qkv_bias=False, locality_strength=1.0):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = GPSA(dim, num_heads, qkv_bias, locality_strength) if use_gpsa else MHSA(dim, num_heads, qkv_bias)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ConViT(nn.Module):
    """ConViT's VisionTransformer, small: `local_up_to_layer` GPSA blocks on the patches, then the class token
    is joined and `depth - local_up_to_layer` MHSA blocks follow; the class token's features are classified."""

    def __init__(self, img_size=8, patch_size=2, in_chans=1, num_classes=10, embed_dim=16, depth=3, num_heads=4,
                 local_up_to_layer=2, locality_strength=1.0, qkv_bias=False):
        super().__init__()
        self.local_up_to_layer = local_up_to_layer
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, self.patch_embed.num_patches, embed_dim))
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads, i < local_up_to_layer, qkv_bias, locality_strength)
                                     for i in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, images):
        x = self.patch_embed(images) + self.pos_embed
        for u, block in enumerate(self.blocks):
            if u == self.local_up_to_layer:
                x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def _softmax(s):
    s = np.exp(s - s.max(-1, keepdims=True))
    return s / s.sum(-1, keepdims=True)


def gpsa_attention(state, prefix, heads, x):
    """A (N, heads, T, T) and M_h (heads, D, D) of a GPSA state_dict, in numpy."""
    get = lambda key, default=0.0: state.get(prefix + key, default)  # noqa: E731
    n, t, dim = x.shape
    d = dim // heads
    qk = x @ state[prefix + "qk.weight"].T + get("qk.bias")
    q, k = (qk[..., i * dim:(i + 1) * dim].reshape(n, t, heads, d).transpose(0, 2, 1, 3) for i in range(2))
    patch = _softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d))
    off = _offsets(math.isqrt(t)).astype(float)
    w, c = state[prefix + "pos_proj.weight"], state[prefix + "pos_proj.bias"]
    scores = w[:, 0, None, None] * off[..., 1] + w[:, 1, None, None] * off[..., 0] + \
        w[:, 2, None, None] * (off ** 2).sum(-1) + c[:, None, None]
    g = 1 / (1 + np.exp(-state[prefix + "gating_param"]))[None, :, None, None]
    a = (1 - g) * patch + g * _softmax(scores)[None]
    a = a / a.sum(-1, keepdims=True)
    wv, wo = state[prefix + "v.weight"], state[prefix + "proj.weight"]
    m = np.stack([wo[:, h * d:(h + 1) * d] @ wv[h * d:(h + 1) * d] for h in range(heads)])
    b = state[prefix + "proj.bias"] + wo @ (get("v.bias") * np.ones(dim))
    return a, m, b


def mhsa_attention(state, prefix, heads, x):
    """P and M_h of a timm-layout (qkv, proj) state_dict, in numpy."""
    w, wo = state[prefix + "qkv.weight"], state[prefix + "proj.weight"]
    bq = state.get(prefix + "qkv.bias", np.zeros(w.shape[0]))
    n, t, dim = x.shape
    d = dim // heads
    qkv = x @ w.T + bq
    q, k = (qkv[..., i * dim:(i + 1) * dim].reshape(n, t, heads, d).transpose(0, 2, 1, 3) for i in range(2))
    p = _softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d))
    m = np.stack([wo[:, h * d:(h + 1) * d] @ w[2 * dim + h * d:2 * dim + (h + 1) * d] for h in range(heads)])
    return p, m, state[prefix + "proj.bias"] + wo @ bq[2 * dim:]


def check_case(case, layer_file, dump_dir, entry):
    """Checks one case of an export against numpy; returns its numbers for the docs."""
    from cli_check import check  # here: importing cli_check reads the script's arguments (make_gpsa_fixtures has none)
    name, params, prefix, metrics = case["name"], case["params"], case["weights_prefix"], entry["metrics"]
    trained_checks.check_entry(name, entry)
    data = np.load(layer_file)
    state = {key: data[key] for key in data.files}
    x, y = state["input"], state["reference_output"]
    extra, h, w = (int(v) for v in state["token_grid"])
    gpsa = case["proof"] == "dascoli2021.trained_gpsa"
    check([h, w] == params["grid"] and extra == params.get("extra_tokens", 0) and (extra == 0 or not gpsa),
          f"{name}: token_grid {state['token_grid']} vs params {params}")
    p, m, b = (gpsa_attention if gpsa else mhsa_attention)(state, prefix, params["heads"], x)
    trained_checks.check_identity(name, p, m, b, x, y)
    if gpsa:
        sigma = 1 / (1 + np.exp(-state[prefix + "gating_param"]))
        check(np.allclose(metrics["head_sigma"], sigma, rtol=1e-14, atol=0),
              f"{name}: head_sigma {metrics['head_sigma']} vs {sigma.tolist()}")
    trained_checks.check_measurement(name, metrics, dump_dir, x, y, p, m, b, (h, w), params["kernel"], extra)
    found = {key: metrics[key] for key in ("lstsq_rel_l2", "rel_l2", "translation_defect", "mean_attention_distance",
                                           "mass_outside", "mass_extra")}
    if gpsa:
        found["sigma"] = metrics["head_sigma"]
    return found
