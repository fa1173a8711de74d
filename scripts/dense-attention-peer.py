#!/usr/bin/env python3
"""What a user would write instead of MegaGraph's dense fused kernels: topology-biased attention
over all S x S pairs in JAX, forward + backward (grads of Q, K, V and the per-head bias table),
jit-compiled on the CPU.

The same function as `megagraph bench attention --nodes S`: q, k, v [H, S, D], a bias table
[H, 7] and the bench's buckets, bucket(i, j) = (i * S + j) % 7;
    scores[h, i, j] = q[h, i] . k[h, j] / sqrt(D) + table[h, bucket(i, j)]
    out = softmax_j(scores) @ v

Prints one JSON line: nodes, heads, head_dim, seconds (best of 3 after a warm-up that compiles),
peak_bytes (the process's peak resident memory above what it held before the warm-up).

Usage: dense-attention-peer.py --nodes S [--heads 4] [--head-dim 32]
       dense-attention-peer.py --self-test     (small shapes, against NumPy in float64)
"""

import argparse
import json
import resource
import sys
import time

import numpy as np

BUCKETS = 7


def buckets_of(nodes):
    i, j = np.meshgrid(np.arange(nodes), np.arange(nodes), indexing="ij")
    return ((i * nodes + j) % BUCKETS).astype(np.int32)


def make_step(jax, jnp, buckets):
    def loss(q, k, v, table):
        scale = 1.0 / np.sqrt(q.shape[-1])
        scores = jnp.einsum("hid,hjd->hij", q, k) * scale + table[:, buckets]
        out = jnp.einsum("hij,hjd->hid", jax.nn.softmax(scores, axis=-1), v)
        return jnp.sum(out[..., 0])

    return jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def run(nodes, heads, head_dim):
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    shape = (heads, nodes, head_dim)
    q, k, v = (jnp.asarray(rng.uniform(-1, 1, shape), jnp.float32) for _ in range(3))
    table = jnp.zeros((heads, BUCKETS), jnp.float32)
    step = make_step(jax, jnp, jnp.asarray(buckets_of(nodes)))
    before = rss_bytes()
    jax.block_until_ready(step(q, k, v, table))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        jax.block_until_ready(step(q, k, v, table))
        best = min(best, time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({
        "nodes": nodes,
        "heads": heads,
        "head_dim": head_dim,
        "seconds": best,
        "peak_bytes": max(0, peak - before),
        "jax": jax.__version__,
    }))


def self_test():
    """The gradients equal NumPy's float64 finite differences of the same loss."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    nodes, heads, head_dim = 5, 2, 4
    rng = np.random.default_rng(1)
    args = [rng.normal(size=(heads, nodes, head_dim)) for _ in range(3)]
    args.append(rng.normal(size=(heads, BUCKETS)))
    buckets = buckets_of(nodes)

    def loss(q, k, v, table):
        scores = np.einsum("hid,hjd->hij", q, k) / np.sqrt(head_dim) + table[:, buckets]
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return np.einsum("hij,hjd->hid", p, v)[..., 0].sum()

    grads = make_step(jax, jnp, jnp.asarray(buckets))(*(jnp.asarray(a) for a in args))
    eps = 1e-6
    for which, (arg, grad) in enumerate(zip(args, grads)):
        numeric = np.zeros_like(arg)
        for index in np.ndindex(arg.shape):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[which][index] += eps
            minus[which][index] -= eps
            numeric[index] = (loss(*plus) - loss(*minus)) / (2 * eps)
        error = float(np.max(np.abs(np.asarray(grad) - numeric)))
        assert error < 1e-6, (which, error)
    print(json.dumps({"self_test": "ok"}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
    elif args.nodes:
        run(args.nodes, args.heads, args.head_dim)
    else:
        parser.error("--nodes or --self-test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
