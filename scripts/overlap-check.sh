#!/usr/bin/env bash
# Pipeline plans with their stage transfers overlapping compute (the default) and waited for
# at once (MEGAGRAPH_SYNC_TRANSFERS=1), run alternately on this machine's logical devices;
# prints a Markdown table of median steps and transfer seconds per step (the slowest device's).
# One profile (without the model overheads: only the plan's devices matter here) is taken
# first and every run plans on it.
#
#   scripts/overlap-check.sh                     # debug build, 4 logical devices
#   MEGAGRAPH=target/release/megagraph ROUNDS=3 scripts/overlap-check.sh
#   PLANS="dp1-pp2-cp1 dp1-pp4-cp1" BATCH=8 scripts/overlap-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${MEGAGRAPH:-target/debug/megagraph}
DEVICES=${DEVICES:-4}
ROUNDS=${ROUNDS:-2}
BATCH=${BATCH:-4}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
PLANS=${PLANS:-"dp1-pp2-cp1 dp1-pp4-cp1 dp1-pp2-cp2"}
GRAPH=${GRAPH:-sbm:8192:8}
RUN=(--synthetic "$GRAPH" --seq-len 512 --layers 4 --hidden 64 --heads 4 --epochs 2 --patience 2
    --batch "$BATCH" --seed 0)
read -r -a EXTRA_ARGS <<<"${EXTRA:-}"
RUN+=("${EXTRA_ARGS[@]}")

[[ -x $BIN ]] || cargo build -p megagraph-cli
MEGAGRAPH_PROFILE_OVERHEADS=0 "$BIN" profile --devices "$DEVICES" --out "$OUT/cluster.json" \
    2>"$OUT/profile.log"
for round in $(seq "$ROUNDS"); do
    for degrees in $PLANS; do
        for mode in overlap sync; do
            sync=0
            [[ $mode == sync ]] && sync=1
            MEGAGRAPH_SYNC_TRANSFERS=$sync "$BIN" train "${RUN[@]}" --devices "$DEVICES" \
                --cluster "$OUT/cluster.json" --degrees "$degrees" --json >"$OUT/$degrees.$mode.$round.json" \
                2>"$OUT/$degrees.$mode.$round.log"
        done
    done
done
python3 - "$OUT" "$ROUNDS" $PLANS <<'PY'
import json, statistics, sys
out, rounds, plans = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def figures(plan, mode):
    steps, took, hidden = [], [], []
    for r in range(1, rounds + 1):
        report = json.loads(open(f"{out}/{plan}.{mode}.{r}.json").read().strip().splitlines()[-1])
        devices = report["devices"]
        steps.append(max(d["step_seconds"] for d in devices))
        slowest = max(devices, key=lambda d: d["transfer_seconds_per_step"])
        took.append(slowest["transfer_seconds_per_step"])
        hidden.append(slowest["hidden_transfer_seconds_per_step"])
    return statistics.median(steps), statistics.median(took), statistics.median(hidden)
print("| plan | step, overlap (s) | step, sync (s) | overlap / sync | transfers per step (s) | hidden (s) | transfers per step, sync (s) | hidden, sync (s) |")
print("|---|---|---|---|---|---|---|---|")
for plan in plans:
    step, took, hidden = figures(plan, "overlap")
    sstep, stook, shidden = figures(plan, "sync")
    print(f"| {plan} | {step:.3f} | {sstep:.3f} | {step / sstep:.2f} | {took:.4f} | {hidden:.4f} | {stook:.4f} | {shidden:.4f} |")
PY
