#!/usr/bin/env python3
"""PyTorch peer of MegaGraph's fused topology-biased attention benchmark: what a user would write
with PyTorch's fused scaled_dot_product_attention (SDPA), timed forward + backward on one device.

Function (the same as our kernel): q, k, v [H, S, D] f32, a bias table [H, B=7] and a bucket
matrix [S, S] in [0, B) shared by all heads;
    scores[h, i, j] = q[h, i] . k[h, j] / sqrt(D) + table[h, buckets[i, j]]
    out = softmax_j(scores) @ v
with the gradients of q, k, v and the table (dScores summed per bucket).

SDPA takes the bias only as a float attn_mask, so each step gathers table[:, buckets] into a
[H, S, S] f32 mask (autograd tracks it; the gather is part of the timed step) and SDPA's
backward returns a [H, S, S] mask gradient, which the gather's backward sums into the table.
Memory therefore grows as S^2 (H=4, S=16384: 4 GiB mask + 4 GiB mask gradient + 1 GiB index);
a size that does not fit is reported as skipped and the next size runs.

Timing: one warm-up step, then the median of --repeats steps (2 at most when the warm-up took
over 2 s), with CUDA events on a GPU and perf_counter on the CPU. GFLOP/s counts as our bench
does: forward 4*H*S^2*D + backward 10*H*S^2*D. peak_bytes is torch.cuda.max_memory_allocated
over the timed steps (inputs, bucket index and grad_out included; null on the CPU).

Usage: gpu-attention-peer.py --sizes 4096,16384,65536 --heads 4 --head-dim 32
                             [--device cuda|cpu] [--repeats 5]
       gpu-attention-peer.py --self-test [--device cuda|cpu]   (small shapes vs a float64 reference)
Prints a line per size, then as the LAST line one JSON object:
    {"peer": "torch <version> sdpa <device name>", "device": "<device name>",
     "cases": [{"nodes", "heads", "head_dim", "seconds", "gflops", "peak_bytes", "backend"}
               or {"nodes", "heads", "head_dim", "skipped": "out of memory: ..."}, ...]}
"""

import argparse
import gc
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

BUCKETS = 7


def attention(q, k, v, table, index):
    """Biased attention via SDPA; returns [1, H, S, D] (its grad_fn names the SDPA backend)."""
    mask = table[:, index]  # [H, S, S] f32 gathered from the [H, B] table
    return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask[None])


def backend_of(out):
    """The SDPA kernel that ran, read off the output's autograd node."""
    name = out.grad_fn.name()
    for key, label in (("Flash", "flash"), ("Efficient", "efficient"), ("Cudnn", "cudnn")):
        if key in name:
            return label + ("-cpu" if "ForCpu" in name else "")
    return "math"


def make_inputs(heads, nodes, head_dim, device, dtype=torch.float32):
    """q, k, v, table (leaves requiring grad), bucket index [S, S] int32, grad_out [1, H, S, D]."""
    shape = (heads, nodes, head_dim)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype).requires_grad_() for _ in range(3))
    table = (torch.randn(heads, BUCKETS, device=device, dtype=dtype) * 0.1).requires_grad_()
    buckets = torch.randint(0, BUCKETS, (nodes, nodes), device=device, dtype=torch.uint8)
    index = buckets.int()  # a uint8 index would be read as a boolean mask
    del buckets
    grad_out = torch.randn((1,) + shape, device=device, dtype=dtype)
    return q, k, v, table, index, grad_out


def timed(fn, device):
    """Seconds one call of fn takes on device, and what it returned."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        result = fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3, result
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run_case(nodes, heads, head_dim, device, repeats):
    torch.manual_seed(0)
    q, k, v, table, index, grad_out = make_inputs(heads, nodes, head_dim, device)

    def step():
        for t in (q, k, v, table):
            t.grad = None
        out = attention(q, k, v, table, index)
        out.backward(grad_out)
        return backend_of(out)

    warm, backend = timed(step, device)
    if warm > 2.0:
        repeats = min(repeats, 2)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
    seconds = statistics.median(timed(step, device)[0] for _ in range(repeats))
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    gflops = 14 * heads * nodes**2 * head_dim / seconds / 1e9
    return {"seconds": seconds, "gflops": gflops, "peak_bytes": peak, "backend": backend}


def is_oom(error):
    text = str(error)
    return isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in text \
        or "can't allocate memory" in text  # the CPU allocator's wording


def bench_case(nodes, heads, head_dim, device, repeats):
    case = {"nodes": nodes, "heads": heads, "head_dim": head_dim}
    try:
        return {**case, **run_case(nodes, heads, head_dim, device, repeats)}
    except RuntimeError as error:
        if not is_oom(error):
            raise
        reason = "out of memory: " + str(error).strip().splitlines()[0]
    # Leaving the except block drops the traceback, and with it run_case's tensors.
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {**case, "skipped": reason}


def rel_error(a, b):
    """||a - b|| / ||b||, or ||a|| where b is exactly zero (S=1: one key, no score gradient)."""
    diff = (a.double() - b).norm()
    return (diff / b.norm() if b.norm() > 0 else diff).item()


def self_test(device):
    """The SDPA path in f32 against an explicit float64 softmax, on random small shapes."""
    seed = torch.seed()
    for nodes in (1, 5, 37, 64):
        q, k, v, table, index, grad_out = make_inputs(2, nodes, 8, device)
        out = attention(q, k, v, table, index)
        out.backward(grad_out)
        got = {"out": out.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad, "dtable": table.grad}

        q64, k64, v64, t64 = (t.detach().double().requires_grad_() for t in (q, k, v, table))
        scores = q64 @ k64.transpose(-1, -2) / q64.shape[-1] ** 0.5 + t64[:, index.long()]
        ref = torch.softmax(scores, dim=-1) @ v64
        ref.backward(grad_out[0].double())
        want = {"out": ref.detach()[None], "dq": q64.grad, "dk": k64.grad, "dv": v64.grad,
                "dtable": t64.grad}
        for name, value in got.items():
            err = rel_error(value, want[name])
            if not err < 1e-4:
                print(f"self-test FAILED: {name} at S={nodes}: relative error {err:.3e} "
                      f"(seed {seed}, backend {backend_of(out)})", flush=True)
                return 1
    print(f"self-test ok ({device}, backend {backend_of(out)})", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="4096,16384,65536", help="sequence lengths S")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--device", choices=("cuda", "cpu"),
                        default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.self_test:
        return self_test(device)

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    cases = []
    for nodes in (int(s) for s in args.sizes.split(",")):
        case = bench_case(nodes, args.heads, args.head_dim, device, args.repeats)
        cases.append(case)
        if "skipped" in case:
            print(f"S={nodes}: skipped ({case['skipped']})", flush=True)
        else:
            peak = "n/a" if case["peak_bytes"] is None else f"{case['peak_bytes'] / 2**30:.2f} GiB"
            print(f"S={nodes} H={args.heads} D={args.head_dim}: {case['seconds'] * 1e3:.2f} ms, "
                  f"{case['gflops']:.1f} GFLOP/s, peak {peak}, backend {case['backend']}",
                  flush=True)
    peer = f"torch {torch.__version__} sdpa {name}"
    print(json.dumps({"peer": peer, "device": name, "cases": cases}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
