#!/usr/bin/env bash
# Measured step time and peak device memory of several plans on this machine's logical
# devices, beside the planner's predictions; prints a Markdown table.
#
#   scripts/cost-model-check.sh                 # debug build, 4 logical devices on adapter 0
#   MEGAGRAPH=target/release/megagraph DEVICES=4 scripts/cost-model-check.sh
#   EXTRA="--scope hops:2" scripts/cost-model-check.sh   # more train options (here the hops scope)
#   GRAPH=sbm:512:4 PLANS="dp1-pp1-cp1 dp1-pp1-cp2" scripts/cost-model-check.sh   # one sequence
#   scripts/cost-model-check.sh --json          # the table, then one JSON object as the last line:
#       {"plans": [{"plan", "measured_step_seconds", "predicted_step_seconds",
#                   "measured_peak_in_use_bytes", "predicted_peak_bytes"}, ...]}
#       (per plan, the maxima over its devices)
#
# One profile is measured first, at the runs' sequence length, and every plan is made on it
# (`train --cluster --degrees`), so predictions and measurements come from the same binary and
# devices.
set -euo pipefail
JSON=0
for arg in "$@"; do
    case $arg in
    --json) JSON=1 ;;
    *) echo "usage: $0 [--json]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.."
BIN=${MEGAGRAPH:-target/debug/megagraph}
DEVICES=${DEVICES:-4}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
PLANS=${PLANS:-"dp1-pp1-cp1 dp1-pp1-cp2 dp1-pp1-cp4 dp1-pp2-cp1 dp2-pp1-cp1 dp2-pp1-cp2 dp1-pp2-cp2"}
GRAPH=${GRAPH:-sbm:2048:4}
SEQ_LEN=512
RUN=(--synthetic "$GRAPH" --seq-len "$SEQ_LEN" --layers 2 --hidden 64 --heads 4 --epochs 3 --patience 3 --seed 0)
read -r -a EXTRA_ARGS <<<"${EXTRA:-}"
RUN+=("${EXTRA_ARGS[@]}")

[[ -x $BIN ]] || cargo build -p megagraph-cli
"$BIN" profile --devices "$DEVICES" --seq-len "$SEQ_LEN" --out "$OUT/cluster.json" 2>"$OUT/profile.log"
for degrees in $PLANS; do
    "$BIN" train "${RUN[@]}" --devices "$DEVICES" --cluster "$OUT/cluster.json" \
        --degrees "$degrees" --json >"$OUT/$degrees.json" 2>"$OUT/$degrees.log"
done
python3 - "$OUT" "$JSON" $PLANS <<'PY'
import json, sys
out, as_json, plans = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
rows = []
print("| plan | measured step (s) | predicted step (s) | measured / predicted | peak in use (MiB) | pool reserved (MiB) | predicted peak (MiB) | in use / predicted | sent per step (KiB) | predicted sent (KiB) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for plan in plans:
    report = json.loads(open(f"{out}/{plan}.json").read().strip().splitlines()[-1])
    devices = report["devices"]
    step = max(d["step_seconds"] for d in devices)
    predicted_step = max(d["predicted_step_seconds"] for d in devices)
    in_use = max(d["peak_in_use_bytes"] for d in devices) / 2**20
    reserved = max(d["peak_bytes"] for d in devices) / 2**20
    predicted_peak = max(d["predicted_peak_bytes"] for d in devices) / 2**20
    sent = max(d.get("step_sent_bytes", 0) for d in devices) / 2**10
    predicted_sent = max(d.get("predicted_sent_bytes", 0) for d in devices) / 2**10
    print(f"| {plan} | {step:.2f} | {predicted_step:.2f} | {step / predicted_step:.2f} | {in_use:.1f} | {reserved:.1f} | {predicted_peak:.1f} | {in_use / predicted_peak:.2f} | {sent:.0f} | {predicted_sent:.0f} |")
    rows.append({
        "plan": plan,
        "measured_step_seconds": step,
        "predicted_step_seconds": predicted_step,
        "measured_peak_in_use_bytes": max(d["peak_in_use_bytes"] for d in devices),
        "predicted_peak_bytes": max(d["predicted_peak_bytes"] for d in devices),
    })
if as_json:
    print(json.dumps({"plans": rows}))
PY
