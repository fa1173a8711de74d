#!/usr/bin/env bash
# Parallel plans with their pipeline transfers and context-parallel key exchanges overlapping
# compute (the default) and waited for at once (MEGAGRAPH_SYNC_TRANSFERS=1), run alternately on
# this machine's logical devices; prints a Markdown table of median steps, and of transfer and
# exchange seconds per step with their hidden parts (each the device's that took longest).
# One profile (without the model overheads: only the plan's devices matter here) is taken
# first and every run plans on it.
#
#   scripts/overlap-check.sh                     # debug build, 4 logical devices
#   MEGAGRAPH=target/release/megagraph ROUNDS=3 scripts/overlap-check.sh
#   PLANS="dp1-pp2-cp1 dp1-pp4-cp1" BATCH=8 scripts/overlap-check.sh
#   EXTRA="--scope hops:2" PLANS="dp1-pp1-cp2 dp1-pp1-cp4" scripts/overlap-check.sh   # halos
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${MEGAGRAPH:-target/debug/megagraph}
DEVICES=${DEVICES:-4}
ROUNDS=${ROUNDS:-2}
BATCH=${BATCH:-4}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
PLANS=${PLANS:-"dp1-pp2-cp1 dp1-pp4-cp1 dp1-pp2-cp2 dp1-pp1-cp2 dp1-pp1-cp4"}
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
    """Median over rounds of the slowest device's step, and of the transfer and exchange
    seconds per step (with their hidden parts) of the device that spent the most on each."""
    steps, transfers, exchanges = [], [], []
    for r in range(1, rounds + 1):
        report = json.loads(open(f"{out}/{plan}.{mode}.{r}.json").read().strip().splitlines()[-1])
        devices = report["devices"]
        steps.append(max(d["step_seconds"] for d in devices))
        for kind, into in (("transfer", transfers), ("exchange", exchanges)):
            longest = max(devices, key=lambda d: d[f"{kind}_seconds_per_step"])
            into.append((longest[f"{kind}_seconds_per_step"],
                         longest[f"hidden_{kind}_seconds_per_step"]))
    median = statistics.median
    return (median(steps),
            median(t for t, _ in transfers), median(h for _, h in transfers),
            median(t for t, _ in exchanges), median(h for _, h in exchanges))
print("| plan | step, overlap (s) | step, sync (s) | overlap / sync | transfers (s) | hidden (s) | exchanges (s) | hidden (s) | transfers, sync (s) | exchanges, sync (s) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for plan in plans:
    step, took, hidden, exchanged, exchange_hidden = figures(plan, "overlap")
    sstep, stook, _, sexchanged, _ = figures(plan, "sync")
    print(f"| {plan} | {step:.3f} | {sstep:.3f} | {step / sstep:.2f} | {took:.4f} | {hidden:.4f} | "
          f"{exchanged:.4f} | {exchange_hidden:.4f} | {stook:.4f} | {sexchanged:.4f} |")
PY
