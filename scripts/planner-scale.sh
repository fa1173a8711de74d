#!/usr/bin/env bash
# Times the whole `megagraph plan` process on the planner bench's clusters: NODES nodes of
# eight GPUs (NVLink inside a node, 400 Gb/s InfiniBand between nodes), a 48-layer model with
# one sequence of 32,768 nodes per device. KINDS=2: the first half H100, the second A100;
# KINDS=4: H100, A100, RTX 4090 and MI250X in turn.
#
#   scripts/planner-scale.sh 8 2      # 64 devices, two kinds (issue 14: under 1 s)
#   scripts/planner-scale.sh 128 4    # 1,024 devices, four kinds (issue 14: under 10 s)
#   MEGAGRAPH=target/release/megagraph RUNS=3 scripts/planner-scale.sh 128 4
set -euo pipefail
NODES=${1:?usage: $0 NODES KINDS}
KINDS=${2:?usage: $0 NODES KINDS}
cd "$(dirname "$0")/.."
BIN=${MEGAGRAPH:-target/release/megagraph}
RUNS=${RUNS:-3}
OUT=${OUT:-$(mktemp -d)}
[[ -x $BIN ]] || cargo build --release -p megagraph-cli
python3 - "$NODES" "$KINDS" "$OUT" <<'PY'
import json, sys
nodes, kinds, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
# (name, memory bytes, FLOP/s, memory bandwidth, intra-node link bandwidth), as the bench's.
KINDS = [
    ("h100-sxm", 85.9e9, 6.7e13, 3.35e12, 4.5e11),
    ("a100-sxm", 85.9e9, 1.95e13, 2.04e12, 3.0e11),
    ("rtx-4090", 25.8e9, 8.26e13, 1.0e12, 3.2e10),
    ("mi250x", 137.4e9, 4.79e13, 3.28e12, 2.0e11),
]
devices, links = [], []
for node in range(nodes):
    kind = int(node >= nodes // 2) if kinds == 2 else node % kinds
    name, memory, flops, bandwidth, nvlink = KINDS[kind]
    devices += [{"name": name, "memory_bytes": memory, "flops": flops, "mem_bandwidth": bandwidth}] * 8
    links += [{"a": node * 8 + a, "b": node * 8 + b, "bandwidth": nvlink, "latency": 3e-6}
              for a in range(8) for b in range(a + 1, 8)]
cluster = {"schema_version": 1, "devices": devices,
           "link": {"bandwidth": 5e10, "latency": 1e-5}, "links": links}
model = {"schema_version": 1, "layers": 48, "hidden": 1024, "heads": 16, "ffn_hidden": 4096,
         "features": 128, "classes": 64, "seq_len": 32768, "num_sequences": nodes * 8,
         "max_distance": 16, "bytes_per_element": 4}
json.dump(cluster, open(f"{out}/cluster.json", "w"))
json.dump(model, open(f"{out}/model.json", "w"))
PY
for run in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    "$BIN" plan --cluster "$OUT/cluster.json" --model "$OUT/model.json" --out "$OUT/plan.json" >/dev/null
    end=$(date +%s.%N)
    python3 - "$run" "$((NODES * 8))" "$start" "$end" "$OUT/plan.json" <<'PY'
import json, sys
run, devices, start, end, path = sys.argv[1:]
plan = json.load(open(path))
print(f"run {run}: {devices} devices, {float(end) - float(start):.2f} s wall, "
      f"{plan['config_text']}, predicted step {plan['predicted_step_seconds']:.3f} s")
PY
done
