#!/usr/bin/env python3
"""Precision plans compared on one machine in one run: for each model, `hpf run` with the FP32
plan, the BF16 plan and the planner's `auto` plan; median latency, its ratio to FP32, peak
memory and its ratio, and the divergence of the device's output from the FP32 reference on the
run's own inputs (the planner calibrates on other, seeded inputs, so this is an independent
check of the budget), and of the auto plan on --held-out more inputs (seeds 1..N; the planner's
calibration seeds start at 1000): mean and worst divergence. Standard library only.

The auto plan is made once (its planning time is reported) and saved; then the three plans run
in turn, --rounds times, and each plan's latency is the median of its rounds' medians, so that a
co-tenant slowing the machine for a while weighs on every plan alike.

usage: bench/plans.py [--hpf build/apps/hpf/hpf] [--repeat 10] [--rounds 3] [--kl-budget 1e-3]
                      [--threads N] [--held-out 8] MODEL...
       (builtin:NAME or an ONNX file; default: bert-tiny bert-layer cnn-small lstm-lm)
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile


def run(hpf, model, plan, args, extra=(), repeat=None):
    cmd = [hpf, "run", model, "--plan", plan, "--json", "--formats", "none", "--repeat", str(repeat or args.repeat),
           *extra]
    if plan == "auto":
        cmd += ["--kl-budget", str(args.kl_budget)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    root = pathlib.Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*",
                    default=["builtin:bert-tiny", "builtin:bert-layer", "builtin:cnn-small", "builtin:lstm-lm"])
    ap.add_argument("--hpf", default=str(root / "build" / "apps" / "hpf" / "hpf"))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kl-budget", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--held-out", type=int, default=8)
    args = ap.parse_args()
    print(f"{'model':28} {'plan':5} {'median ms':>10} {'vs fp32':>8} {'peak MiB':>9} {'vs fp32':>8} "
          f"{'KL vs fp32':>11} {'plan s':>7}  nodes")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for m in args.models:
            saved = str(pathlib.Path(tmp) / "auto.json")
            first = run(args.hpf, m, "auto", args, ["--save-plan", saved])
            planner = first.get("planner", {})
            plans = {"fp32": "fp32", "bf16": "bf16", "auto": saved}
            results = {p: [] for p in plans}
            for _ in range(args.rounds):
                for p, arg in plans.items():
                    results[p].append(run(args.hpf, m, arg, args))
            base = None
            for p in plans:
                js = results[p]
                ms = statistics.median(j["latency_ms"]["median"] for j in js)
                mem = js[0]["peak_memory_bytes"]
                if base is None:
                    base = (ms, mem)
                kl = js[0].get("kl_vs_fp32", float("nan"))
                within = p != "auto" or kl <= args.kl_budget
                ok = ok and within
                modes = planner.get("modes", {}) if p == "auto" else {}
                secs = f"{planner.get('seconds', float('nan')):7.1f}" if p == "auto" else f"{'':7}"
                print(f"{pathlib.Path(m).name:28} {p:5} {ms:10.3f} {ms / base[0]:8.3f} {mem / 2**20:9.2f} "
                      f"{mem / base[1]:8.3f} {kl:11.3e} {secs}  "
                      f"{' '.join(f'{k} {v}' for k, v in sorted(modes.items()))}{'' if within else '  OVER BUDGET'}",
                      flush=True)
            if args.held_out > 0:
                kls = [run(args.hpf, m, saved, args, ["--random-inputs", str(seed)], repeat=1)
                       .get("kl_vs_fp32", float("nan")) for seed in range(1, args.held_out + 1)]
                over = sum(1 for k in kls if not k <= args.kl_budget)
                ok = ok and over == 0
                casts = results["auto"][0].get("standalone_casts", -1)
                print(f"{'':28} auto on {len(kls)} held-out inputs: KL mean {statistics.mean(kls):.3e}, "
                      f"max {max(kls):.3e}, {over} over budget; standalone casts {casts}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
