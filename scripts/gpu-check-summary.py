#!/usr/bin/env python3
"""Folds the steps of scripts/gpu-check.sh (RESULTS.jsonl: one {"step", "seconds", "result"}
line each) into one JSON object on stdout and a short table on stderr.

Usage: gpu-check-summary.py RESULTS.jsonl [PEAK_FP32_TFLOPS]

Per dense S: ours (fused forward + backward) beside PyTorch's SDPA with the bias as a float
mask, as seconds, the peer's time over ours, TFLOP/s and its fraction of the GPU's FP32 peak,
and the fewest bytes the fused kernels must move (three passes over the S² bucket bytes, and
q, k, v, out, dout, dq, dk, dv once) over our time, in GB/s. Per plan: the largest relative gap
of its step losses from its baseline's (the one-device run for cp plans; the dp2 plan, which
takes the same two sequences per step, for dp2 and pp2 plans; 1e-4 is the bar the tests hold).
"""

import json
import pathlib
import sys

LOSS_BAR = 1e-4


def read_steps(path):
    """Each step's result by name; a line that does not parse is recorded as failed."""
    steps = {}
    for line in pathlib.Path(path).read_text().splitlines():
        try:
            entry = json.loads(line)
            steps[entry["step"]] = entry["result"]
        except (json.JSONDecodeError, KeyError) as error:
            name = line.split('"step": "')[-1].split('"')[0] if '"step": "' in line else line[:40]
            steps[name] = {"failed": f"unreadable output: {error}"}
    return steps


def load(results, name):
    return results.get(name)


def dense_rows(results, peak_tflops):
    peer = load(results, "peer-dense") or {}
    peer_cases = {c["nodes"]: c for c in peer.get("cases", [])}
    rows = []
    for name in sorted((n for n in results if n.startswith("dense-")), key=lambda n: int(n[6:])):
        ours = load(results, name)
        s = int(name[6:])
        row = {"nodes": s, "ours": ours, "peer": peer_cases.get(s)}
        if ours and "fused_ms" in ours:
            seconds = ours["fused_ms"] / 1e3
            h, d = ours["heads"], ours["head_dim"]
            row["ours_tflops"] = 14 * h * s * s * d / seconds / 1e12
            row["ours_fraction_of_fp32_peak"] = row["ours_tflops"] / peak_tflops
            row["ours_min_bytes_gbps"] = (3 * s * s + 8 * h * s * d * 4) / seconds / 1e9
            variants = {
                v["kernel"]: v["forward_backward_ms"] for v in ours.get("kernel_variants", [])
            }
            if "registers" in variants and len(variants) > 1:
                best = min((k for k in variants if k != "registers"), key=variants.get)
                row["registers_over_best_tiled"] = variants["registers"] / variants[best]
                row["best_tiled"] = best
            theirs = row["peer"] or {}
            if theirs.get("seconds"):
                row["peer_over_ours"] = theirs["seconds"] / seconds
        rows.append(row)
    return rows


def baseline_of(degrees):
    """The run whose steps a plan takes: one sequence per step under cp alone, two (the dp2
    plan's batch) where dp or pp is 2."""
    return "plan-one-device" if degrees.startswith("dp1-pp1-") else "plan-dp2-pp1-cp1"


def plan_rows(results):
    rows = []
    for name in sorted(n for n in results if n.startswith("plan-dp")):
        degrees = name[len("plan-"):]
        if name == baseline_of(degrees):
            continue
        baseline = (load(results, baseline_of(degrees)) or {}).get("step_losses")
        report = load(results, name) or {}
        losses = report.get("step_losses")
        row = {"degrees": degrees, "baseline": baseline_of(degrees)[len("plan-"):], "step_losses": losses}
        if baseline and losses and len(losses) == len(baseline):
            gap = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, baseline))
            row["max_relative_loss_gap"] = gap
            row["matches_baseline"] = gap <= LOSS_BAR
        else:
            row["matches_baseline"] = False
            row["why"] = report.get("failed", "no step losses to compare")
        rows.append(row)
    return {"plans": rows}


def main():
    results = read_steps(sys.argv[1])
    peak_tflops = float(sys.argv[2]) if len(sys.argv) > 2 else 67.0
    hops_name = next((n for n in results if n.startswith("hops-")), None)
    summary = {
        "devices": load(results, "devices"),
        "fp32_peak_tflops": peak_tflops,
        "dense": dense_rows(results, peak_tflops),
        "hops": {
            "ours": load(results, hops_name) if hops_name else None,
            "peer": load(results, "peer-hops"),
        },
        "cora": load(results, "cora"),
        "equivalence": plan_rows(results),
        "failed_steps": sorted(
            name for name, result in results.items()
            if isinstance(result, dict) and "failed" in result
        ),
    }
    print(json.dumps(summary))

    log = sys.stderr
    print("dense S | ours s | TFLOP/s | of FP32 peak | min-bytes GB/s | peer s | peer/ours | peer peak MiB | ours peak MiB | kernels (fwd, bwd) | registers/best tiled", file=log)
    for row in summary["dense"]:
        ours, peer = row["ours"] or {}, row["peer"] or {}
        cell = lambda x, f: "-" if x is None else f.format(x)
        print(" | ".join([
            str(row["nodes"]),
            cell(ours.get("fused_ms") and ours["fused_ms"] / 1e3, "{:.4f}"),
            cell(row.get("ours_tflops"), "{:.2f}"),
            cell(row.get("ours_fraction_of_fp32_peak"), "{:.1%}"),
            cell(row.get("ours_min_bytes_gbps"), "{:.0f}"),
            cell(peer.get("seconds"), "{:.4f}") if "skipped" not in peer else peer["skipped"][:40],
            cell(row.get("peer_over_ours"), "{:.2f}x"),
            cell(peer.get("peak_bytes") and peer["peak_bytes"] / 2**20, "{:.0f}"),
            cell(ours.get("fused_peak_bytes") and ours["fused_peak_bytes"] / 2**20, "{:.0f}"),
            ", ".join(ours.get("chosen_kernels", [])),
            cell(row.get("registers_over_best_tiled"), "{:.2f}x") + f" ({row.get('best_tiled')})",
        ]), file=log)
    hops = summary["hops"]
    print(f"hops: ours {json.dumps(hops['ours'])[:300]}", file=log)
    print(f"hops peer: {json.dumps(hops['peer'])[:300]}", file=log)
    cora = summary["cora"] or {}
    print(f"cora: test {cora.get('test_acc')} in {cora.get('seconds')} s, {cora.get('failed', '')}", file=log)
    for row in summary["equivalence"]["plans"]:
        print(f"plan {row['degrees']} vs {row['baseline']}: gap {row.get('max_relative_loss_gap')} matches {row['matches_baseline']}", file=log)
    print(f"failed steps: {summary['failed_steps']}", file=log)


if __name__ == "__main__":
    main()
