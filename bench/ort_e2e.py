#!/usr/bin/env python3
"""End to end against ONNX Runtime: the same ONNX file, the same inputs, the same thread count,
one process each.

    bench/ort_e2e.py MODEL.onnx... [--threads 1,2] [--runs 10] [--warmup 2] [--rounds 3] [--kl-budget 1e-3]
                     [--hpf build/apps/hpf/hpf] [--plans fp32,auto] [--ort-opt all|basic|none]
                     [--seed 0] [--json] [--keep DIR]

For each model and thread count:
  * inputs: seeded values of the model's input shapes (tools/onnx_models/compare_ort.py's
    make_inputs: float standard normal, integer ids in the model's hpf.range.<INPUT> range),
    saved as .npy and given to both;
  * libhpf: `hpf bench MODEL --plans fp32,auto --threads N --runs R --warmup W --json
    --input NAME=FILE... --skip cold-start,consistency` in its own process (the plugin reads
    HPF_NUM_THREADS at start);
  * ONNX Runtime: a separate process of this script (--ort-worker) with intra_op_num_threads=N,
    inter_op_num_threads=1, ORT_SEQUENTIAL, CPU execution provider, graph optimisations `all`;
    W untimed runs, then the median, min and max of R timed runs, and the process's peak RSS;
  * --rounds K (default 3): ONNX Runtime, then K times libhpf and ONNX Runtime again; the first
    libhpf run makes the auto plan and saves it (`hpf bench --save-plan`), the later ones bench
    that file, so every round times the same plan. Each round's ratio is libhpf's median over
    the mean of the two ONNX Runtime medians around it, and a ratio printed is the median of the
    rounds' (on a shared machine the load drifts by 15-40% for minutes; the ONNX Runtime
    medians' spread is printed). --rounds 1 is the old once-before-and-after.

Prints per model and thread count the medians and the ratios hpf fp32 / ort fp32 and
hpf auto / ort fp32 (below 1: libhpf faster), the auto plan's divergence from the FP32 reference
(its KL budget is --kl-budget), and hpf's peak memory auto / fp32. Ratios compare figures measured
in the same run on the same machine; on a shared machine the absolute times are noisy.

Needs numpy, onnx and onnxruntime (pip install onnxruntime); it is not a build or test
dependency of libhpf. Exit status: 0 when every run finished, 1 when one failed.
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_HPF = str(ROOT / "build" / "apps" / "hpf" / "hpf")


def ort_worker(args):
    """One ONNX Runtime measurement in this process; prints a JSON line."""
    import numpy as np
    import onnxruntime as ort

    feeds = {name: np.load(path) for name, path in (kv.split("=", 1) for kv in args.feed)}
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[args.ort_opt]
    t0 = time.perf_counter()
    sess = ort.InferenceSession(args.ort_worker, so, providers=["CPUExecutionProvider"])
    sess.run(None, feeds)
    first_ms = (time.perf_counter() - t0) * 1000
    for _ in range(args.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
                      "first_output_ms": first_ms, "peak_rss_bytes": rss * 1024,
                      "peak_rss_over_start_bytes": (rss - base_rss) * 1024, "version": ort.__version__}))
    return 0


def run_json(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ...: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-2000:]}")
    return json.loads(r.stdout)


def measure(model, threads, a, workdir):
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, str(ROOT / "tools" / "onnx_models"))
    import numpy as np
    import onnx
    from compare_ort import make_inputs, sanitize

    m = onnx.load(model)
    feeds, dims = make_inputs(m, a.seed, {})
    del m
    files = []
    for name, x in feeds.items():
        path = os.path.join(workdir, sanitize(name) + ".npy")
        np.save(path, x)
        files.append((name, path))

    plan_file = os.path.join(workdir, f"{pathlib.Path(model).stem}_{threads}t_auto_plan.json")

    def hpf_cmd(first):
        # The first run plans auto and saves the plan; the later ones bench the saved file.
        plans = a.plans if first else ",".join(plan_file if p == "auto" else p for p in a.plans.split(","))
        cmd = [a.hpf, "bench", model, "--plans", plans, "--threads", str(threads), "--runs", str(a.runs),
               "--warmup", str(a.warmup), "--kl-budget", str(a.kl_budget), "--json", "--skip", "cold-start,consistency"]
        if first and "auto" in a.plans.split(","):
            cmd += ["--save-plan", plan_file]
        for name, path in files:
            cmd += ["--input", f"{name}={path}"]
        for sym, v in dims.items():
            cmd += ["--dim", f"{sym}={v}"]
        return cmd

    ort_cmd = [sys.executable, __file__, "--ort-worker", model, "--threads", str(threads), "--runs", str(a.runs),
               "--warmup", str(a.warmup), "--ort-opt", a.ort_opt]
    for name, path in files:
        ort_cmd += ["--feed", f"{name}={path}"]

    def run_ort():
        r = subprocess.run(ort_cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"onnxruntime: exit {r.returncode}: {r.stderr.strip()[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    # ONNX Runtime, then per round libhpf and ONNX Runtime again: each round's libhpf medians are
    # set against the mean of the ONNX Runtime medians just before and after them.
    orts = [run_ort()]
    rounds = []
    t0 = time.time()
    for k in range(max(1, a.rounds)):
        hpf = run_json(hpf_cmd(k == 0))
        orts.append(run_ort())
        plans = {p["plan"]: p for p in hpf["plans"]}
        for name, p in plans.items():
            if "error" in p:
                raise RuntimeError(f"hpf bench plan {name}: {p['error']}")
        if k > 0 and "auto" in a.plans.split(","):
            plans["auto"] = plans.pop(plan_file)
        rounds.append({"hpf": plans, "device": hpf["device"],
                       "ort_ms": (orts[-2]["median_ms"] + orts[-1]["median_ms"]) / 2})
    hpf_s = time.time() - t0
    ort = dict(orts[-1])
    ort["median_ms_each"] = [o["median_ms"] for o in orts]
    ort["median_ms"] = statistics.median(ort["median_ms_each"])
    ort["peak_rss_bytes"] = max(o["peak_rss_bytes"] for o in orts)
    row = {"model": model, "threads": threads, "rounds": len(rounds), "ort": ort, "hpf_seconds": hpf_s,
           "hpf_device": rounds[0]["device"]}
    for name, p in rounds[0]["hpf"].items():
        each = [r["hpf"][name]["latency_ms"]["median"] for r in rounds]
        row[f"hpf_{name}"] = {"median_ms": statistics.median(each), "median_ms_each": each,
                              "min_ms": min(r["hpf"][name]["latency_ms"]["min"] for r in rounds),
                              "max_ms": max(r["hpf"][name]["latency_ms"]["max"] for r in rounds),
                              "peak_bytes": p["memory"]["peak_bytes"], "weight_bytes": p["memory"]["weight_bytes"],
                              "kl": p["fidelity"]["kl"], "modes": p.get("modes", {}), "recompiles": len(p.get("recompiles", []))}
        row[f"ratio_{name}_vs_ort_each"] = [r["hpf"][name]["latency_ms"]["median"] / r["ort_ms"] for r in rounds]
        row[f"ratio_{name}_vs_ort"] = statistics.median(row[f"ratio_{name}_vs_ort_each"])
    if "hpf_auto" in row and "hpf_fp32" in row:
        row["peak_auto_vs_fp32"] = row["hpf_auto"]["peak_bytes"] / row["hpf_fp32"]["peak_bytes"]
    return row


def fmt(v, f):
    return "-" if v is None else format(v, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*")
    ap.add_argument("--hpf", default=DEFAULT_HPF)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--plans", default="fp32,auto")
    ap.add_argument("--kl-budget", type=float, default=1e-3)
    ap.add_argument("--ort-opt", choices=["none", "basic", "all"], default="all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="keep the input .npy files and the saved auto plan in this directory")
    ap.add_argument("--ort-worker", help=argparse.SUPPRESS)
    ap.add_argument("--feed", action="append", default=[], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ort_worker:
        a.threads = int(a.threads)
        return ort_worker(a)
    if not a.models:
        ap.error("give at least one ONNX model (tools/onnx_models/export_models.py OUTDIR --bench writes them)")
    rows, failed = [], False
    for model in a.models:
        for threads in (int(t) for t in a.threads.split(",")):
            workdir = a.keep or tempfile.mkdtemp(prefix="hpf-ort-e2e-")
            os.makedirs(workdir, exist_ok=True)
            try:
                rows.append(measure(model, threads, a, workdir))
            except Exception as e:  # report and go on with the next model
                failed = True
                rows.append({"model": model, "threads": threads, "error": str(e)})
            finally:
                if not a.keep:  # the inputs and the saved plan
                    shutil.rmtree(workdir, ignore_errors=True)
            if not a.json:
                print_row(rows[-1], header=len(rows) == 1)
                sys.stdout.flush()
    if a.json:
        print(json.dumps(rows, indent=2))
    return 1 if failed else 0


def print_row(r, header):
    if header:
        print(f"{'model':22} {'thr':>3} {'ort min/max':>17} {'ort fp32':>10} {'hpf fp32':>10} {'hpf auto':>10} {'fp32/ort':>9} "
              f"{'auto/ort':>9} {'auto KL':>10} {'peak auto/fp32':>15} {'ort RSS MiB':>12}  {'auto/ort each':>15}  auto modes")
    name = pathlib.Path(r["model"]).stem
    if "error" in r:
        print(f"{name:22} {r['threads']:3d} error: {r['error']}")
        return
    f32, auto = r.get("hpf_fp32", {}), r.get("hpf_auto", {})
    modes = " ".join(f"{k} {v}" for k, v in sorted(auto.get("modes", {}).items()))
    each = r["ort"]["median_ms_each"]
    spread = f"{min(each):.1f}/{max(each):.1f}"
    print(f"{name:22} {r['threads']:3d} {spread:>17} {r['ort']['median_ms']:10.2f} {fmt(f32.get('median_ms'), '10.2f')} "
          f"{fmt(auto.get('median_ms'), '10.2f')} {fmt(r.get('ratio_fp32_vs_ort'), '9.2f')} "
          f"{fmt(r.get('ratio_auto_vs_ort'), '9.2f')} {fmt(auto.get('kl'), '10.2e')} "
          f"{fmt(r.get('peak_auto_vs_fp32'), '15.2f')} {r['ort']['peak_rss_bytes'] / 2**20:12.0f}  "
          f"{'/'.join(format(x, '.2f') for x in r.get('ratio_auto_vs_ort_each', [])):>15}  {modes}")


if __name__ == "__main__":
    sys.exit(main())
