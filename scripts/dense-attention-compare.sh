#!/usr/bin/env bash
# Dense biased attention side by side in one session: MegaGraph's fused kernels on the wgpu
# adapter (lavapipe on a CPU-only machine; every kernel shape that fits, the chosen one first)
# against JAX's jit-compiled dense version on the CPU, forward + backward, same shapes.
#
# Usage: scripts/dense-attention-compare.sh [S ...]      (default: 1024 2048 4096)
# Env:   MEGAGRAPH=path/to/megagraph (default target/release/megagraph, built if missing)
#        HEADS (4), HEAD_DIM (32), VENV (a directory for JAX; default target/jax-venv,
#        created with `pip install jax[cpu]` when missing)
# Output: a table, then one JSON line per S (stderr) with both sides' figures.
set -euo pipefail
cd "$(dirname "$0")/.."

heads=${HEADS:-4}
head_dim=${HEAD_DIM:-32}
venv=${VENV:-target/jax-venv}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1024 2048 4096)

megagraph=${MEGAGRAPH:-target/release/megagraph}
if [ ! -x "$megagraph" ]; then
    cargo build --release -p megagraph-cli >&2
fi
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "jax[cpu]" >&2
fi
"$venv/bin/python" scripts/dense-attention-peer.py --self-test >&2

printf '%-7s %-24s %-10s %-12s %-10s %-16s\n' S 'chosen (fwd, bwd)' ours_s registers_s jax_s 'jax / ours'
for s in "${sizes[@]}"; do
    ours=$("$megagraph" bench attention --nodes "$s" --heads "$heads" --head-dim "$head_dim" \
        --fused-only --variants --json | tail -1)
    peer=$("$venv/bin/python" scripts/dense-attention-peer.py --nodes "$s" --heads "$heads" \
        --head-dim "$head_dim" | tail -1)
    python3 - "$s" "$ours" "$peer" <<'PY'
import json, sys
s, ours, peer = int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
ours_s = ours["fused_ms"] / 1e3
registers = next(v for v in ours["kernel_variants"] if v["kernel"] == "registers")
chosen = ", ".join(ours["chosen_kernels"])
print(f"{s:<7} {chosen:<24} {ours_s:<10.3f} {registers['forward_backward_ms'] / 1e3:<12.3f} "
      f"{peer['seconds']:<10.3f} {peer['seconds'] / ours_s:.2f}x")
print(json.dumps({"nodes": s, "ours": ours, "jax": peer}), file=sys.stderr)
PY
done
