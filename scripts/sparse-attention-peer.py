#!/usr/bin/env python3
"""What a user would write instead of MegaGraph's hops kernels: sparse biased attention over a
list of (query, key) pairs from JAX's gather and segment-sum ops, forward + backward (grads of
Q, K, V and the per-head bias table), jit-compiled on the CPU.

Reads the pairs MegaGraph's `bench attention --scope hops:K --export-pairs FILE` wrote
(offsets [S + 1], keys [pairs], buckets [pairs]) so that both run the same attention, and
prints one JSON line: nodes, pairs, heads, head_dim, seconds (best of 3 after a warm-up that
compiles), peak_bytes (the process's peak resident memory above what it held before the
warm-up: the temporaries of the computation), and on a GPU device_peak_bytes (JAX's peak
device bytes in use; null on the CPU).

Usage: sparse-attention-peer.py PAIRS.npz [--heads 4] [--head-dim 16]
       sparse-attention-peer.py --self-test     (small shapes, against a dense softmax)
"""

import argparse
import json
import resource
import sys
import time

import numpy as np

BUCKETS = 7


def attention(jax, jnp, q, k, v, table, rows, keys, buckets, nodes):
    """Sparse biased attention: [S, H, D] queries, keys, values; [H, buckets] table."""
    scale = 1.0 / np.sqrt(q.shape[-1])
    s = jnp.sum(q[rows] * k[keys], axis=-1) * scale + table.T[buckets]  # [P, H]
    m = jax.ops.segment_max(s, rows, num_segments=nodes)
    e = jnp.exp(s - jax.lax.stop_gradient(m)[rows])
    l = jax.ops.segment_sum(e, rows, num_segments=nodes)
    p = e / l[rows]
    return jax.ops.segment_sum(p[..., None] * v[keys], rows, num_segments=nodes)


def make_step(jax, jnp, rows, keys, buckets, nodes):
    def loss(q, k, v, table):
        out = attention(jax, jnp, q, k, v, table, rows, keys, buckets, nodes)
        return jnp.sum(out[..., 0])

    return jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def run(path, heads, head_dim):
    import jax
    import jax.numpy as jnp

    pairs = np.load(path)
    offsets, keys, buckets = pairs["offsets"], pairs["keys"], pairs["buckets"]
    nodes = len(offsets) - 1
    rows = np.repeat(np.arange(nodes, dtype=np.int32), np.diff(offsets))
    rng = np.random.default_rng(0)
    shape = (nodes, heads, head_dim)
    q, k, v = (jnp.asarray(rng.uniform(-1, 1, shape), jnp.float32) for _ in range(3))
    table = jnp.zeros((heads, BUCKETS), jnp.float32)
    rows, keys, buckets = (jnp.asarray(x, jnp.int32) for x in (rows, keys, buckets))
    step = make_step(jax, jnp, rows, keys, buckets, nodes)
    before = rss_bytes()
    jax.block_until_ready(step(q, k, v, table))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        jax.block_until_ready(step(q, k, v, table))
        best = min(best, time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    device = jax.devices()[0]
    stats = device.memory_stats() or {}
    print(json.dumps({
        "nodes": nodes,
        "pairs": int(len(keys)),
        "heads": heads,
        "head_dim": head_dim,
        "seconds": best,
        "peak_bytes": max(0, peak - before),
        "jax": jax.__version__,
        "device": str(device.device_kind),
        "device_peak_bytes": stats.get("peak_bytes_in_use"),
    }))


def self_test():
    """The sparse attention with every pair present equals dense softmax attention."""
    import jax
    import jax.numpy as jnp

    nodes, heads, head_dim = 9, 2, 4
    rng = np.random.default_rng(1)
    q, k, v = (jnp.asarray(rng.normal(size=(nodes, heads, head_dim)), jnp.float32) for _ in range(3))
    table = jnp.asarray(rng.normal(size=(heads, BUCKETS)), jnp.float32)
    bucket = rng.integers(0, BUCKETS, size=(nodes, nodes))
    rows = jnp.asarray(np.repeat(np.arange(nodes), nodes), jnp.int32)
    keys = jnp.asarray(np.tile(np.arange(nodes), nodes), jnp.int32)
    sparse = attention(jax, jnp, q, k, v, table, rows, keys, jnp.asarray(bucket.reshape(-1)), nodes)
    scores = jnp.einsum("ihd,jhd->hij", q, k) / np.sqrt(head_dim) + table[:, bucket]
    dense = jnp.einsum("hij,jhd->ihd", jax.nn.softmax(scores, axis=-1), v)
    error = float(jnp.max(jnp.abs(sparse - dense)))
    assert error < 1e-5, error
    print(json.dumps({"self_test": "ok", "max_error": error}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="?")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=16)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
    elif args.pairs:
        run(args.pairs, args.heads, args.head_dim)
    else:
        parser.error("give a PAIRS.npz or --self-test")


if __name__ == "__main__":
    sys.exit(main())
