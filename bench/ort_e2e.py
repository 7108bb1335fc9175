#!/usr/bin/env python3
"""End to end against ONNX Runtime: the same ONNX file, the same inputs, the same thread count,
one process each.

    bench/ort_e2e.py MODEL.onnx... [--threads 1,2] [--runs 10] [--warmup 2] [--kl-budget 1e-3]
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
    once before libhpf and once after (the ratios use the mean of the two medians, and both are
    printed: on a shared machine their spread is the noise).

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

    hpf_cmd = [a.hpf, "bench", model, "--plans", a.plans, "--threads", str(threads), "--runs", str(a.runs),
               "--warmup", str(a.warmup), "--kl-budget", str(a.kl_budget), "--json", "--skip", "cold-start,consistency"]
    for name, path in files:
        hpf_cmd += ["--input", f"{name}={path}"]
    for sym, v in dims.items():
        hpf_cmd += ["--dim", f"{sym}={v}"]
    ort_cmd = [sys.executable, __file__, "--ort-worker", model, "--threads", str(threads), "--runs", str(a.runs),
               "--warmup", str(a.warmup), "--ort-opt", a.ort_opt]
    for name, path in files:
        ort_cmd += ["--feed", f"{name}={path}"]

    def run_ort():
        r = subprocess.run(ort_cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"onnxruntime: exit {r.returncode}: {r.stderr.strip()[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    # ONNX Runtime before and after libhpf: on a shared machine the load drifts, and the two
    # medians show by how much; the ratios use their mean.
    ort_before = run_ort()
    t0 = time.time()
    hpf = run_json(hpf_cmd)
    hpf_s = time.time() - t0
    ort = run_ort()
    ort["median_ms_before"] = ort_before["median_ms"]
    ort["median_ms_after"] = ort["median_ms"]
    ort["median_ms"] = (ort_before["median_ms"] + ort["median_ms"]) / 2
    ort["peak_rss_bytes"] = max(ort_before["peak_rss_bytes"], ort["peak_rss_bytes"])
    plans = {p["plan"]: p for p in hpf["plans"]}
    for name, p in plans.items():
        if "error" in p:
            raise RuntimeError(f"hpf bench plan {name}: {p['error']}")
    row = {"model": model, "threads": threads, "ort": ort, "hpf_seconds": hpf_s, "hpf_device": hpf["device"]}
    for name, p in plans.items():
        row[f"hpf_{name}"] = {"median_ms": p["latency_ms"]["median"], "min_ms": p["latency_ms"]["min"],
                              "max_ms": p["latency_ms"]["max"], "peak_bytes": p["memory"]["peak_bytes"],
                              "weight_bytes": p["memory"]["weight_bytes"], "kl": p["fidelity"]["kl"],
                              "modes": p.get("modes", {}), "recompiles": len(p.get("recompiles", []))}
    if "hpf_fp32" in row:
        row["ratio_fp32_vs_ort"] = row["hpf_fp32"]["median_ms"] / ort["median_ms"]
    if "hpf_auto" in row:
        row["ratio_auto_vs_ort"] = row["hpf_auto"]["median_ms"] / ort["median_ms"]
        if "hpf_fp32" in row:
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
    ap.add_argument("--plans", default="fp32,auto")
    ap.add_argument("--kl-budget", type=float, default=1e-3)
    ap.add_argument("--ort-opt", choices=["none", "basic", "all"], default="all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="keep the input .npy files in this directory")
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
            if not a.json:
                print_row(rows[-1], header=len(rows) == 1)
                sys.stdout.flush()
    if a.json:
        print(json.dumps(rows, indent=2))
    return 1 if failed else 0


def print_row(r, header):
    if header:
        print(f"{'model':22} {'thr':>3} {'ort before/after':>17} {'ort fp32':>10} {'hpf fp32':>10} {'hpf auto':>10} {'fp32/ort':>9} "
              f"{'auto/ort':>9} {'auto KL':>10} {'peak auto/fp32':>15} {'ort RSS MiB':>12}  auto modes")
    name = pathlib.Path(r["model"]).stem
    if "error" in r:
        print(f"{name:22} {r['threads']:3d} error: {r['error']}")
        return
    f32, auto = r.get("hpf_fp32", {}), r.get("hpf_auto", {})
    modes = " ".join(f"{k} {v}" for k, v in sorted(auto.get("modes", {}).items()))
    spread = f"{r['ort']['median_ms_before']:.1f}/{r['ort']['median_ms_after']:.1f}"
    print(f"{name:22} {r['threads']:3d} {spread:>17} {r['ort']['median_ms']:10.2f} {fmt(f32.get('median_ms'), '10.2f')} "
          f"{fmt(auto.get('median_ms'), '10.2f')} {fmt(r.get('ratio_fp32_vs_ort'), '9.2f')} "
          f"{fmt(r.get('ratio_auto_vs_ort'), '9.2f')} {fmt(auto.get('kl'), '10.2e')} "
          f"{fmt(r.get('peak_auto_vs_fp32'), '15.2f')} {r['ort']['peak_rss_bytes'] / 2**20:12.0f}  {modes}")


if __name__ == "__main__":
    sys.exit(main())
