#!/usr/bin/env bash
# Measured step time and peak device memory of several plans on this machine's logical
# devices, beside the planner's predictions; prints a Markdown table.
#
#   scripts/cost-model-check.sh                 # debug build, 4 logical devices on adapter 0
#   MEGAGRAPH=target/release/megagraph DEVICES=4 ROUNDS=3 scripts/cost-model-check.sh
#   EXTRA="--scope hops:2" scripts/cost-model-check.sh   # more train options (here the hops scope)
#   GRAPH=sbm:512:4 PLANS="dp1-pp1-cp1 dp1-pp1-cp2" scripts/cost-model-check.sh   # one sequence
#   scripts/cost-model-check.sh --json          # the table, then one JSON object as the last line:
#       {"plans": [{"plan", "measured_step_seconds", "predicted_step_seconds",
#                   "measured_peak_in_use_bytes", "predicted_peak_bytes"}, ...]}
#       (per plan, the maxima over its devices)
#
# The check runs in ROUNDS rounds (default 3). Each round measures a profile at the runs'
# sequence length, then trains every plan on it (`train --cluster --degrees`), so predictions
# and measurements come from the same binary, devices and minutes; round r starts its plans at
# the r-th, so no plan always runs first or last. A plan's figures are the medians over the
# rounds (the measured and the predicted step each, and the peaks), so load that comes and goes
# on a shared machine falls on every plan alike; the table also shows the rounds' spread of
# measured / predicted.
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
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
PLANS=${PLANS:-"dp1-pp1-cp1 dp1-pp1-cp2 dp1-pp1-cp4 dp1-pp2-cp1 dp2-pp1-cp1 dp2-pp1-cp2 dp1-pp2-cp2"}
GRAPH=${GRAPH:-sbm:2048:4}
SEQ_LEN=512
RUN=(--synthetic "$GRAPH" --seq-len "$SEQ_LEN" --layers 2 --hidden 64 --heads 4 --epochs 3 --patience 3 --seed 0)
read -r -a EXTRA_ARGS <<<"${EXTRA:-}"
RUN+=("${EXTRA_ARGS[@]}")

[[ -x $BIN ]] || cargo build -p megagraph-cli
read -r -a PLAN_LIST <<<"$PLANS"
count=${#PLAN_LIST[@]}
for round in $(seq "$ROUNDS"); do
    "$BIN" profile --devices "$DEVICES" --seq-len "$SEQ_LEN" --out "$OUT/cluster.$round.json" \
        2>"$OUT/profile.$round.log"
    for index in $(seq 0 $((count - 1))); do
        degrees=${PLAN_LIST[$(((index + round - 1) % count))]}
        "$BIN" train "${RUN[@]}" --devices "$DEVICES" --cluster "$OUT/cluster.$round.json" \
            --degrees "$degrees" --json >"$OUT/$degrees.$round.json" 2>"$OUT/$degrees.$round.log"
    done
done
python3 - "$OUT" "$JSON" "$ROUNDS" $PLANS <<'PY'
import json, statistics, sys
out, as_json, rounds, plans = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4:]
rows = []
print("| plan | measured step (s) | predicted step (s) | measured / predicted | rounds' measured / predicted | peak in use (MiB) | pool reserved (MiB) | predicted peak (MiB) | in use / predicted | sent per step (KiB) | predicted sent (KiB) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
def reports(plan):
    """The plan's report (its output's last line) of every round, in round order."""
    return [json.loads(open(f"{out}/{plan}.{r}.json").read().strip().splitlines()[-1])
            for r in range(1, rounds + 1)]
for plan in plans:
    plan_reports = reports(plan)
    def slowest(key):
        """Per round, the maximum of `key` over the plan's devices (0 where a report lacks it)."""
        return [max(d.get(key, 0) for d in report["devices"]) for report in plan_reports]
    measured, predicted = slowest("step_seconds"), slowest("predicted_step_seconds")
    step, predicted_step = statistics.median(measured), statistics.median(predicted)
    spread = sorted(m / p for m, p in zip(measured, predicted))
    in_use_bytes = statistics.median(slowest("peak_in_use_bytes"))
    predicted_bytes = statistics.median(slowest("predicted_peak_bytes"))
    in_use, predicted_peak = in_use_bytes / 2**20, predicted_bytes / 2**20
    reserved = statistics.median(slowest("peak_bytes")) / 2**20
    sent = statistics.median(slowest("step_sent_bytes")) / 2**10
    predicted_sent = statistics.median(slowest("predicted_sent_bytes")) / 2**10
    rounds_text = ", ".join(f"{x:.2f}" for x in spread)
    print(f"| {plan} | {step:.2f} | {predicted_step:.2f} | {step / predicted_step:.2f} | {rounds_text} | {in_use:.1f} | {reserved:.1f} | {predicted_peak:.1f} | {in_use / predicted_peak:.2f} | {sent:.0f} | {predicted_sent:.0f} |")
    rows.append({
        "plan": plan,
        "measured_step_seconds": step,
        "predicted_step_seconds": predicted_step,
        "measured_peak_in_use_bytes": in_use_bytes,
        "predicted_peak_bytes": predicted_bytes,
    })
if as_json:
    print(json.dumps({"plans": rows}))
PY
