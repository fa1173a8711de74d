#!/usr/bin/env bash
# Sparse biased attention side by side in one session: MegaGraph's hops kernels on the wgpu
# adapter (lavapipe on a CPU-only machine) against JAX's gather/segment-sum version on the CPU,
# over the same near pairs (hops:1 of an R-MAT graph of S nodes), forward + backward.
#
# Usage: scripts/sparse-attention-compare.sh [S ...]      (default: 2^14 2^16 2^18 2^20)
# Env:   MEGAGRAPH=path/to/megagraph (default target/release/megagraph, built if missing)
#        HEADS (4), HEAD_DIM (16), SCOPE (hops:1), VENV (a directory for JAX; default
#        target/jax-venv, created with `pip install jax[cpu]` when missing)
# Output: a table, then one JSON line per S with both sides' seconds and peak bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

heads=${HEADS:-4}
head_dim=${HEAD_DIM:-16}
scope=${SCOPE:-hops:1}
venv=${VENV:-target/jax-venv}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16384 65536 262144 1048576)

megagraph=${MEGAGRAPH:-target/release/megagraph}
if [ ! -x "$megagraph" ]; then
    cargo build --release -p megagraph-cli >&2
fi
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "jax[cpu]" >&2
fi
"$venv/bin/python" scripts/sparse-attention-peer.py --self-test >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# JAX held about 24.4 KB per node at 17 pairs per node (6.4 GB at 2^18): skip what would not
# fit in the memory available now.
available=$(awk '/MemAvailable/ {printf "%.0f", $2 * 1024}' /proc/meminfo)

printf '%-9s %-10s %-12s %-12s %-12s %-12s %-8s %-8s\n' S pairs ours_s jax_s ours_MiB jax_MiB time memory
for s in "${sizes[@]}"; do
    ours=$("$megagraph" bench attention --scope "$scope" --nodes "$s" --heads "$heads" \
        --head-dim "$head_dim" --fused-only --dense-up-to 0 --export-pairs "$work/pairs.npz" --json | tail -1)
    need=$((s * 25000))
    if [ "$need" -lt "$available" ]; then
        peer=$("$venv/bin/python" scripts/sparse-attention-peer.py "$work/pairs.npz" \
            --heads "$heads" --head-dim "$head_dim" | tail -1)
    else
        peer='{"seconds": null, "peak_bytes": null, "skipped": "needs about '"$need"' bytes, '"$available"' available"}'
    fi
    python3 - "$s" "$ours" "$peer" <<'PY'
import json, sys
s, ours, peer = int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
mib = lambda b: "-" if b is None else f"{b / 2**20:.0f}"
sec = lambda x: "-" if x is None else f"{x:.3f}"
ours_s = ours["hops_ms"] / 1e3
ratio = lambda a, b: "-" if a is None or b is None else f"{a / b:.1f}x"
print(f"{s:<9} {ours['pairs']:<10} {sec(ours_s):<12} {sec(peer['seconds']):<12} "
      f"{mib(ours['hops_peak_bytes']):<12} {mib(peer['peak_bytes']):<12} "
      f"{ratio(peer['seconds'], ours_s):<8} {ratio(peer['peak_bytes'], ours['hops_peak_bytes']):<8}")
print(json.dumps({"nodes": s, "ours": ours, "jax": peer}), file=sys.stderr)
PY
done
