#!/usr/bin/python3
"""What a PyTorch user would write to check Theorem 1 (Cordonnier et al., ICLR 2020)
on one case of bench/cases/: the peers bench/side_by_side.py times against attnconv.

  /usr/bin/python3 bench/torch_peers.py PEER CASE_FILE [--repeats 3] [--threads 2]

PEER:
  conv2d     F.conv2d alone: the floor (the convolution the check must compute anyway).
  dense      the naive check: the Theorem 1 layer as Eq. 8 with a full (HW)^2 softmax per
             head over every padded query (r_delta = (|delta|^2, delta1, delta2),
             v = -alpha (1, -2 Delta1, -2 Delta2), W_val = W[:, :, p, q]^T, W_out = I),
             cropped and subsampled, against F.conv2d.
  separable  the best check we could write: the softmax of each head splits into a row
             and a column softmax (P = P_rows (x) P_cols), computed only for the queries
             the output needs, applied on the input side with batched products, then the
             value/output projection of all heads as one product; against F.conv2d.
Every peer draws its own seeded inputs of the case's shapes (float64, CPU) and prints
one JSON line: {"peer", "seconds": [one per repeat], "max_abs"} (the max |MHSA - conv|;
null for conv2d). The times exclude starting Python and importing torch.
The peers compute max_abs only; attnconv also computes the finite-alpha bound.
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F


def case_geometry(params):
    h, w = params["image"]
    k1, k2 = params["kernel"]
    pad = params.get("padding", 0)
    if pad == "same":
        pad = [(k1 - 1) // 2, k1 - 1 - (k1 - 1) // 2, (k2 - 1) // 2, k2 - 1 - (k2 - 1) // 2]
    elif isinstance(pad, int):
        pad = [pad] * 4
    stride = params.get("stride", 1)
    stride = [stride, stride] if isinstance(stride, int) else list(stride)
    if params.get("dilation", 1) not in (1, [1, 1]):
        sys.exit("torch_peers.py: dilation is not supported")
    return h, w, k1, k2, pad, stride


def inputs(params):
    h, w = params["image"]
    k1, k2 = params["kernel"]
    g = torch.Generator().manual_seed(int(params.get("seed", 0)))
    x = torch.rand((params["in_channels"], h, w), generator=g, dtype=torch.float64) * 2 - 1
    weight = torch.rand((params["out_channels"], params["in_channels"], k1, k2), generator=g, dtype=torch.float64) * 2 - 1
    bias = torch.rand((params["out_channels"],), generator=g, dtype=torch.float64) * 2 - 1
    return x, weight, bias


def conv(params, x, weight, bias):
    _, _, _, _, pad, stride = case_geometry(params)
    xpad = F.pad(x, (pad[2], pad[3], pad[0], pad[1]))
    return F.conv2d(xpad[None], weight, bias, stride=stride)[0]


def shifts(k1, k2):
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    return [(p - c1, q - c2) for p in range(k1) for q in range(k2)]


def dense_check(params, x, weight, bias, alpha):
    h, w, k1, k2, pad, stride = case_geometry(params)
    expected = conv(params, x, weight, bias)
    xpad = F.pad(x, (pad[2], pad[3], pad[0], pad[1]))
    c_in, hp, wp = xpad.shape
    tokens = xpad.reshape(c_in, hp * wp).T  # (N, D_in)
    ii, jj = torch.meshgrid(torch.arange(hp, dtype=torch.float64), torch.arange(wp, dtype=torch.float64), indexing="ij")
    ii, jj = ii.reshape(-1), jj.reshape(-1)
    d1, d2 = ii[None, :] - ii[:, None], jj[None, :] - jj[:, None]  # delta = key - query
    r = torch.stack([d1 * d1 + d2 * d2, d1, d2])  # (3, N, N)
    y = bias[None, :].expand(hp * wp, -1).clone()
    for h_index, (s1, s2) in enumerate(shifts(k1, k2)):
        v = -alpha * torch.tensor([1.0, -2.0 * s1, -2.0 * s2], dtype=torch.float64)
        probabilities = torch.softmax(torch.einsum("p,pqk->qk", v, r), dim=1)
        w_val = weight[:, :, h_index // k2, h_index % k2].T  # (D_in, D_out): W_val W_out = W^T
        y += probabilities @ (tokens @ w_val)
    out = y.T.reshape(-1, hp, wp)
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    ho, wo = expected.shape[1], expected.shape[2]
    actual = out[:, c1: c1 + (ho - 1) * stride[0] + 1: stride[0], c2: c2 + (wo - 1) * stride[1] + 1: stride[1]]
    return float((actual - expected).abs().max())


def separable_check(params, x, weight, bias, alpha, head_chunk_bytes=256 << 20):
    h, w, k1, k2, pad, stride = case_geometry(params)
    expected = conv(params, x, weight, bias)
    xpad = F.pad(x, (pad[2], pad[3], pad[0], pad[1]))
    c_in, hp, wp = xpad.shape
    c_out, ho, wo = expected.shape
    c1, c2 = (k1 - 1) // 2, (k2 - 1) // 2
    qi = torch.arange(ho, dtype=torch.float64) * stride[0] + c1  # only the queries the output needs
    qj = torch.arange(wo, dtype=torch.float64) * stride[1] + c2
    ki, kj = torch.arange(hp, dtype=torch.float64), torch.arange(wp, dtype=torch.float64)
    all_shifts = torch.tensor(shifts(k1, k2), dtype=torch.float64)  # (N_h, 2)
    # -alpha (|delta - Delta|^2 - |Delta|^2) = f(delta1) + g(delta2): one softmax per axis.
    delta1 = ki[None, None, :] - qi[None, :, None] - all_shifts[:, 0, None, None]
    delta2 = kj[None, None, :] - qj[None, :, None] - all_shifts[:, 1, None, None]
    p_rows = torch.softmax(-alpha * delta1 * delta1, dim=2)  # (N_h, H_out, H_p)
    p_cols = torch.softmax(-alpha * delta2 * delta2, dim=2)  # (N_h, W_out, W_p)
    m = weight.permute(2, 3, 1, 0).reshape(k1 * k2, c_in, c_out)  # W_val W_out of each head
    y = bias[:, None].expand(-1, ho * wo).clone()
    per_head = 8 * c_in * ho * (wp + wo)
    chunk = max(1, head_chunk_bytes // per_head)
    for h0 in range(0, k1 * k2, chunk):
        h1 = min(k1 * k2, h0 + chunk)
        along_rows = torch.einsum("hik,ckl->hcil", p_rows[h0:h1], xpad)
        attended = torch.einsum("hcil,hjl->hcij", along_rows, p_cols[h0:h1])
        y += m[h0:h1].reshape(-1, c_out).T @ attended.reshape(-1, ho * wo)  # all heads of the chunk: one product
    return float((y.reshape(c_out, ho, wo) - expected).abs().max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer", choices=["conv2d", "dense", "separable"])
    parser.add_argument("case_file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    case = json.load(open(args.case_file))["cases"][0]
    params = case["params"]
    alpha = float(params.get("alpha", 60.0))
    seconds, max_abs = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        x, weight, bias = inputs(params)
        if args.peer == "conv2d":
            conv(params, x, weight, bias)
        elif args.peer == "dense":
            max_abs = dense_check(params, x, weight, bias, alpha)
        else:
            max_abs = separable_check(params, x, weight, bias, alpha)
        seconds.append(time.perf_counter() - start)
    if max_abs is not None and not math.isfinite(max_abs):
        sys.exit("torch_peers.py: %s gave a non-finite max_abs on %s" % (args.peer, args.case_file))
    print(json.dumps({"peer": args.peer, "seconds": seconds, "max_abs": max_abs}))


if __name__ == "__main__":
    main()
