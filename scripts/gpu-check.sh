#!/usr/bin/env bash
# The GPU check: MegaGraph's wgpu kernels on a real GPU, with a CUDA peer (PyTorch's
# scaled_dot_product_attention with the same per-head bucket bias as a float mask) beside them
# on the same GPU, in one run. Every figure lands in one JSON file.
#
#   scripts/gpu-check.sh pack        # here: stripped release binary, Cora and the Vulkan/EGL
#                                    # loaders (.deb) into .gpu/ and .gl/ (both git-excluded)
#   scripts/gpu-check.sh run         # there (no Rust, no internet): writes $OUT/gpu-check.json
#   scripts/gpu-check.sh self-test   # here: pack, then `run` on small shapes over lavapipe,
#                                    # the peer on the CPU (needs torch: TORCH_PYTHON=...)
#
# With the device tool, after `pack`: run `bash scripts/gpu-check.sh run` with carry
# [".gpu", ".gl"]. The run takes about 5 minutes on an H100 and stops each step at its own
# timeout, so one slow step costs that step, not the check.
#
# Output: $OUT/results.jsonl (one line per step), $OUT/steps.log (every step's output),
# $OUT/gpu-check.json (everything folded by scripts/gpu-check-summary.py), $OUT/summary.txt.
# Env (run): OUT (output folder, default ./gpu-check-out), SIZES (dense S, default
# "4096 16384 65536"), HOPS_NODES (default 1048576), CORA_EPOCHS (20), PYTHON (python3 with
# torch; default python3), GPU_PEAK_FP32_TFLOPS (67, an H100/H200 SXM's FP32 peak by the
# datasheet), STEP_TIMEOUT (seconds per step, 150), PLAN_GRAPH / PLAN_SEQ_LEN (the equivalence
# runs' graph, sbm:2048:4 / 512).
set -euo pipefail
cd "$(dirname "$0")/.."

pack() {
    local binary=${MEGAGRAPH:-target/release/megagraph}
    if [ -z "${MEGAGRAPH:-}" ]; then
        cargo build --release -p megagraph-cli --bin megagraph >&2
    fi
    mkdir -p .gpu .gl
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
    grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo '/.gl/' >>.git/info/exclude
    strip -o .gpu/megagraph "$binary"
    local cora=${CORA:-../shared/data/cora.npz}
    if [ -f "$cora" ]; then cp "$cora" .gpu/cora.npz; fi
    if ! ls .gl/libvulkan1_*.deb >/dev/null 2>&1; then
        local lists=/tmp/gpu-check-apt
        mkdir -p "$lists/partial"
        local o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
        apt-get "${o[@]}" update >&2
        (cd .gl && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >&2)
    fi
    local bytes
    bytes=$(du -cb .gpu .gl | tail -1 | cut -f1)
    echo "packed $((bytes >> 20)) MiB: $(stat -c %s .gpu/megagraph) bytes of binary" >&2
    if [ "$bytes" -gt $((60 << 20)) ]; then
        echo "error: .gpu and .gl hold $((bytes >> 20)) MiB; the device machine takes 64 MiB per call" >&2
        exit 1
    fi
}

# Runs one step under its timeout: its stdout's last line (or {"failed": ...}) is appended to
# $OUT/results.jsonl as {"step": NAME, "result": ...}, its whole output to $OUT/steps.log.
step() {
    local name=$1
    shift
    local started=$SECONDS result
    echo "== $name: $*" | tee -a "$OUT/steps.log" >&2
    if timeout "$STEP_TIMEOUT" "$@" >"$WORK/step.log" 2>&1; then
        result=$(tail -1 "$WORK/step.log")
        case $result in
        \{*) ;;
        *) result=$(python3 -c 'import json, sys; print(json.dumps({"output": sys.argv[1]}))' "$result") ;;
        esac
    else
        result="{\"failed\": \"exit $? after $((SECONDS - started)) s\"}"
        tail -5 "$WORK/step.log" >&2
    fi
    cat "$WORK/step.log" >>"$OUT/steps.log"
    printf '{"step": "%s", "seconds": %d, "result": %s}\n' "$name" $((SECONDS - started)) "$result" >>"$OUT/results.jsonl"
    echo "   $((SECONDS - started)) s" | tee -a "$OUT/steps.log" >&2
}

run_check() {
    OUT=${OUT:-$PWD/gpu-check-out}
    STEP_TIMEOUT=${STEP_TIMEOUT:-150}
    local bin=${MEGAGRAPH:-.gpu/megagraph}
    local python=${PYTHON:-python3}
    local sizes=(${SIZES:-4096 16384 65536})
    local hops_nodes=${HOPS_NODES:-1048576}
    local epochs=${CORA_EPOCHS:-20}
    local peer_device=${PEER_DEVICE:-cuda}
    WORK=$(mktemp -d)
    mkdir -p "$OUT"
    : >"$OUT/results.jsonl"
    if ls .gl/*.deb >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
        for f in .gl/*.deb; do dpkg -x "$f" /; done
        ldconfig
    fi
    if [ -d /usr/local/nvidia ] && ! "$bin" devices --json 2>/dev/null | grep -q '"device_type":"DiscreteGpu"'; then
        export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
        export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    fi
    step devices "$bin" devices --json
    (nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 || true) >>"$OUT/steps.log"

    for s in "${sizes[@]}"; do
        local reference=()
        [ "$s" -le 16384 ] || reference=(--fused-only)
        step "dense-$s" "$bin" bench attention --nodes "$s" --heads 4 --head-dim 32 "${reference[@]}" --variants --json
    done
    step "hops-$hops_nodes" "$bin" bench attention --scope hops:1 --nodes "$hops_nodes" --heads 4 \
        --head-dim 16 --fused-only --dense-up-to 0 --variants --export-pairs "$WORK/pairs.npz" --json
    if [ -f .gpu/cora.npz ]; then
        step cora "$bin" train --data .gpu/cora.npz --epochs "$epochs" --patience "$epochs" --json
    fi
    local run=(--synthetic "${PLAN_GRAPH:-sbm:2048:4}" --seq-len "${PLAN_SEQ_LEN:-512}" --layers 2 --hidden 64 --heads 4 --epochs 3 --patience 3 --seed 0 --json)
    step "plan-one-device" "$bin" train "${run[@]}"
    # cp plans take the one-device run's steps; dp2 and pp2 plans take two sequences per step,
    # so they are held against the dp2 plan (the summary says which baseline each one has).
    for degrees in dp1-pp1-cp2 dp1-pp1-cp4 dp2-pp1-cp1 dp1-pp2-cp1 dp1-pp2-cp2 dp2-pp1-cp2; do
        step "plan-$degrees" "$bin" train "${run[@]}" --devices 4 --degrees "$degrees"
    done

    local peer_sizes
    peer_sizes=$(IFS=,; echo "${sizes[*]}")
    step peer-self-test "$python" scripts/gpu-attention-peer.py --self-test --device "$peer_device"
    step peer-dense "$python" scripts/gpu-attention-peer.py --sizes "$peer_sizes" --heads 4 --head-dim 32 --device "$peer_device"
    if [ -f "$WORK/pairs.npz" ]; then
        XLA_PYTHON_CLIENT_PREALLOCATE=false step peer-hops "$python" scripts/sparse-attention-peer.py \
            "$WORK/pairs.npz" --heads 4 --head-dim 16
    fi
    rm -rf "$WORK"
    python3 scripts/gpu-check-summary.py "$OUT/results.jsonl" "${GPU_PEAK_FP32_TFLOPS:-67}" \
        >"$OUT/gpu-check.json" 2>"$OUT/summary.txt" || true
    cat "$OUT/summary.txt"
}

case "${1:-}" in
pack) pack ;;
run) run_check ;;
self-test)
    pack
    SIZES="${SIZES:-256 1024}" HOPS_NODES=${HOPS_NODES:-4096} CORA_EPOCHS=${CORA_EPOCHS:-2} \
        PLAN_GRAPH=${PLAN_GRAPH:-sbm:256:4} PLAN_SEQ_LEN=${PLAN_SEQ_LEN:-128} \
        PEER_DEVICE=cpu PYTHON=${TORCH_PYTHON:-python3} run_check
    ;;
*)
    echo "usage: scripts/gpu-check.sh pack|run|self-test" >&2
    exit 2
    ;;
esac
