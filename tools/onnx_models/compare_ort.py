#!/usr/bin/env python3
"""Run an ONNX model on ONNX Runtime (CPU, 1 thread) and on `hpf run`, and compare the outputs.

    compare_ort.py MODEL.onnx [--seed N] [--runs N] [--dim NAME=VALUE]... [--hpf PATH] [--keep DIR]
    compare_ort.py --all OUTDIR [same options]

For each input of the model: seeded values of its shape (float: standard normal; integer: uniform
in the range from the model's `hpf.range.<INPUT>` metadata, else from the row count of an
embedding Gather it feeds, else [0, 10); bool: coin flips), symbolic dimensions sized by --dim,
then the model's `hpf.dim.<SYMBOL>` metadata, then 2. Inputs are saved as .npy and given to
`hpf run MODEL --input NAME=FILE ... --dim SYM=V ... --output-dir DIR --json --formats none
--repeat 1`; hpf's output .npy files are compared with ONNX Runtime's outputs:

    rel      = max|hpf - ort| / max(max|ort|, 1e-6)      (pass: rel <= --tol, default 1e-4)
    elem_rel = max over elements of |hpf - ort| / max(|ort|, 1e-3 * max|ort|, 1e-6)  (reported)

Integer and bool outputs must match exactly. hpf's compile.fallbacks and fallback_nodes, and its
own device-vs-reference figures (`vs_reference`, first output), are reported. --runs N repeats
with seeds SEED, SEED+1, ..., SEED+N-1 (new inputs each time). --reference-only compares hpf's
reference interpreter instead of the device, which tells a backend bug (device wrong, reference
right) from an importer or op-semantics bug (both wrong). Exit status: 0 when
every output of every run (of every model with --all) passes, 1 on a mismatch or an hpf error,
2 on a usage error.
"""
import argparse
import glob
import json
import os
import re
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

DEFAULT_HPF = str(pathlib.Path(__file__).resolve().parents[2] / "build" / "apps" / "hpf" / "hpf")

ONNX_TO_NP = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.BOOL: np.bool_,
}


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def model_inputs(m):
    inits = {i.name for i in m.graph.initializer}
    return [i for i in m.graph.input if i.name not in inits]


def gather_rows(m, input_name):
    """Rows of the table an integer input indexes through Gather (embedding lookups)."""
    inits = {i.name: i for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Gather" and len(n.input) > 1 and n.input[1] == input_name and n.input[0] in inits:
            axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
            return inits[n.input[0]].dims[axis]
    return None


def make_inputs(m, seed, dims):
    meta = {p.key: p.value for p in m.metadata_props}
    rng = np.random.default_rng(seed)
    feeds, used_dims = {}, {}
    for vi in model_inputs(m):
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                sym = d.dim_param or "?"
                v = dims.get(sym) or int(meta.get(f"hpf.dim.{sym}", 2))
                used_dims[sym] = v
                shape.append(v)
        dt = ONNX_TO_NP.get(tt.elem_type)
        if dt is None:
            raise RuntimeError(f"input {vi.name}: element type {tt.elem_type} not handled")
        if np.issubdtype(dt, np.floating):
            x = rng.standard_normal(shape).astype(dt)
        elif dt == np.bool_:
            x = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            if f"hpf.range.{vi.name}" in meta:
                lo, hi = (int(v) for v in meta[f"hpf.range.{vi.name}"].split(":"))
            else:
                lo, hi = 0, gather_rows(m, vi.name) or 10
            x = rng.integers(lo, hi, shape).astype(dt)
        feeds[vi.name] = x
    return feeds, used_dims


def run_ort(path, feeds, opt_level):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.graph_optimization_level = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[opt_level]
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def first_error_line(text):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower() or "unsupported" in l.lower():
            return l
    return lines[-1] if lines else ""


def run_hpf(hpf, path, feeds, dims, workdir, timeout, reference_only=False):
    outdir = os.path.join(workdir, "hpf_out")
    os.makedirs(outdir, exist_ok=True)
    cmd = [hpf, "run", path]
    for name, x in feeds.items():
        f = os.path.join(workdir, f"in_{sanitize(name)}.npy")
        np.save(f, x)
        cmd += ["--input", f"{name}={f}"]
    for sym, v in dims.items():
        cmd += ["--dim", f"{sym}={v}"]
    cmd += ["--output-dir", outdir, "--json", "--formats", "none", "--repeat", "1"]
    if reference_only:
        cmd.append("--reference-only")
    # The binary may be relinked by a concurrent build: wait for it briefly.
    for _ in range(30):
        if os.access(hpf, os.X_OK):
            break
        time.sleep(2)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    info = {"cmd": cmd, "rc": p.returncode, "stderr": p.stderr.strip(), "json": None}
    if p.returncode == 0:
        try:
            info["json"] = json.loads(p.stdout)
        except json.JSONDecodeError as e:
            info["rc"] = -1
            info["stderr"] = f"hpf printed no JSON ({e}): {p.stdout[:300]}"
    else:
        info["stderr"] = (p.stderr.strip() + "\n" + p.stdout.strip()).strip()
    files = {}
    if info["json"]:
        for f in info["json"].get("output_files", []):
            files[f["output"]] = f["file"]
    info["files"] = files
    info["outdir"] = outdir
    return info


def compare(name, ref, got, tol):
    r = {"output": name, "shape": list(ref.shape), "pass": False}
    if got is None:
        r["why"] = "no hpf output file"
        return r
    if got.shape != ref.shape:
        r["why"] = f"shape {list(got.shape)} != ORT {list(ref.shape)}"
        return r
    if ref.dtype.kind in "iub" or got.dtype.kind in "iub":
        bad = int(np.count_nonzero(got.astype(np.int64) != ref.astype(np.int64)))
        r.update(rel=0.0 if bad == 0 else float("inf"), elem_rel=0.0 if bad == 0 else float("inf"),
                 max_abs_err=float(np.max(np.abs(got.astype(np.int64) - ref.astype(np.int64)), initial=0)))
        r["pass"] = bad == 0
        if bad:
            r["why"] = f"{bad} of {ref.size} integer elements differ"
        if got.dtype != ref.dtype:
            r["note"] = f"dtype {got.dtype} vs ORT {ref.dtype}"
        return r
    a = got.astype(np.float64)
    b = ref.astype(np.float64)
    if not (np.isfinite(a).all() == np.isfinite(b).all()) or (np.isnan(a) != np.isnan(b)).any():
        r["why"] = "non-finite values differ"
    both_nan = np.isnan(a) & np.isnan(b)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
    diff = np.where(both_nan, 0.0, np.where(np.isnan(diff), np.inf, diff))
    diff = np.where(np.isinf(a) & np.isinf(b) & (a == b), 0.0, diff)
    ref_max = float(np.max(np.abs(np.where(np.isfinite(b), b, 0.0)), initial=0.0))
    max_err = float(np.max(diff, initial=0.0))
    rel = max_err / max(ref_max, 1e-6)
    floor = max(1e-3 * ref_max, 1e-6)
    with np.errstate(invalid="ignore"):
        elem = np.nan_to_num(diff / np.maximum(np.abs(b), floor), nan=np.inf)
    worst = int(np.argmax(elem)) if elem.size else 0
    r.update(rel=rel, elem_rel=float(elem.flat[worst]) if elem.size else 0.0, max_abs_err=max_err,
             max_abs_ref=ref_max, worst_index=[int(i) for i in np.unravel_index(worst, b.shape)] if b.size else [],
             worst_hpf=float(a.flat[worst]) if a.size else 0.0, worst_ort=float(b.flat[worst]) if b.size else 0.0)
    if got.dtype != ref.dtype:
        r["note"] = f"dtype {got.dtype} vs ORT {ref.dtype}"
    r["pass"] = "why" not in r and rel <= tol
    if not r["pass"] and "why" not in r:
        r["why"] = (f"rel {rel:.3g} > {tol:g} (max|err| {max_err:.4g}, max|ref| {ref_max:.4g}; "
                    f"worst at {r['worst_index']}: hpf {r['worst_hpf']:.6g} vs ORT {r['worst_ort']:.6g})")
    return r


def check_model(path, a, quiet=False):
    """Returns a summary dict: model, status (pass/mismatch/hpf-error/ort-error), details."""
    m = onnx.load(path)
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
    cli_dims = dict(kv.split("=", 1) for kv in a.dim)
    cli_dims = {k: int(v) for k, v in cli_dims.items()}
    summary = {"model": os.path.basename(path), "opset": opset, "runs": [], "status": "pass"}
    for run in range(a.runs):
        seed = a.seed + run
        feeds, dims = make_inputs(m, seed, cli_dims)
        workdir = tempfile.mkdtemp(prefix="hpf_cmp_", dir=a.keep)
        try:
            try:
                ref = run_ort(path, feeds, a.ort_opt)
            except Exception as e:
                summary.update(status="ort-error", why=first_error_line(str(e)))
                break
            h = run_hpf(a.hpf, path, feeds, dims, workdir, a.timeout, a.reference_only)
            comp = (h["json"] or {}).get("compile", {})
            vs = (h["json"] or {}).get("vs_reference")
            if vs:   # hpf's own device-vs-reference figures (its first output)
                summary["vs_reference"] = vs
            summary["fallbacks"] = comp.get("fallbacks")
            summary["fallback_nodes"] = comp.get("fallback_nodes", [])
            summary["dims"] = dims
            if h["rc"] != 0:
                summary.update(status="hpf-error", why=first_error_line(h["stderr"]), stderr=h["stderr"])
                break
            results = []
            for name, r in ref.items():
                f = h["files"].get(name) or os.path.join(h["outdir"], sanitize(name) + ".npy")
                got = np.load(f) if os.path.exists(f) else None
                results.append(compare(name, r, got, a.tol))
            summary["runs"].append({"seed": seed, "outputs": results})
            if not all(r["pass"] for r in results):
                summary["status"] = "mismatch"
                summary["why"] = "; ".join(f"{r['output']}: {r['why']}" for r in results if not r["pass"])
        finally:
            if not a.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    rels = [o["rel"] for run in summary["runs"] for o in run["outputs"] if "rel" in o]
    summary["worst_rel"] = max(rels) if rels else None
    els = [o["elem_rel"] for run in summary["runs"] for o in run["outputs"] if "elem_rel" in o]
    summary["worst_elem_rel"] = max(els) if els else None
    if not quiet:
        print_model(summary)
    return summary


def fmt(x):
    return "-" if x is None else f"{x:.2e}"


def print_model(s):
    print(f"{s['model']} (opset {s['opset']}): {s['status'].upper()}")
    if s.get("dims"):
        print("  dims: " + ", ".join(f"{k}={v}" for k, v in s["dims"].items()))
    for run in s["runs"]:
        for o in run["outputs"]:
            extra = f"  {o['why']}" if not o["pass"] else ""
            print(f"  seed {run['seed']} {o['output']:12s} {str(o['shape']):18s} rel {fmt(o.get('rel'))}"
                  f"  elem_rel {fmt(o.get('elem_rel'))}  max|err| {fmt(o.get('max_abs_err'))}"
                  f"  {'ok' if o['pass'] else 'FAIL'}{extra}")
    if s.get("vs_reference"):
        v = s["vs_reference"]
        print(f"  hpf device vs its reference ({v.get('output')}): max|err| {fmt(v.get('max_abs_error'))}"
              f"  rel-L2 {fmt(v.get('rel_l2'))}")
    if s.get("fallbacks") is not None:
        print(f"  hpf fallbacks: {s['fallbacks']}" + (f" {s['fallback_nodes']}" if s["fallback_nodes"] else ""))
    if s["status"] in ("hpf-error", "ort-error"):
        print(f"  {s['status']}: " + (s.get("stderr") or s.get("why", "")).replace("\n", "\n    "))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help="an .onnx file")
    ap.add_argument("--all", metavar="OUTDIR", help="every .onnx file in OUTDIR, with a table")
    ap.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    ap.add_argument("--runs", type=int, default=1, help="input sets, seeds SEED..SEED+N-1 (default 1)")
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE", help="symbolic dimension size")
    ap.add_argument("--hpf", default=DEFAULT_HPF, help=f"the hpf binary (default {DEFAULT_HPF})")
    ap.add_argument("--tol", type=float, default=1e-4, help="relative tolerance (default 1e-4)")
    ap.add_argument("--ort-opt", choices=["none", "basic", "all"], default="none",
                    help="ONNX Runtime graph optimisation level (default none: plain op semantics)")
    ap.add_argument("--reference-only", action="store_true",
                    help="compare hpf's reference interpreter (hpf run --reference-only) instead of the device")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per hpf run")
    ap.add_argument("--keep", metavar="DIR", help="keep inputs and hpf outputs under DIR")
    ap.add_argument("--json", action="store_true", help="print the summaries as JSON")
    a = ap.parse_args()
    if bool(a.model) == bool(a.all):
        ap.error("give one MODEL.onnx or --all OUTDIR")
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    paths = sorted(glob.glob(os.path.join(a.all, "*.onnx"))) if a.all else [a.model]
    if not paths:
        ap.error(f"no .onnx files in {a.all}")
    summaries = [check_model(p, a, quiet=a.json) for p in paths]
    if a.json:
        print(json.dumps(summaries, indent=2, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    elif a.all:
        print()
        w = max(len(s["model"]) for s in summaries)
        print(f"{'model':{w}s}  {'status':9s}  {'worst rel':9s}  {'elem rel':9s}  {'fallbacks':9s}  {'dev-vs-ref':10s}  details")
        for s in summaries:
            fb = "-" if s.get("fallbacks") is None else str(s["fallbacks"])
            det = s.get("why", "")
            if s.get("fallback_nodes"):
                det = (det + "; " if det else "") + "fallback: " + ", ".join(map(str, s["fallback_nodes"]))
            vr = fmt((s.get("vs_reference") or {}).get("max_abs_error"))
            print(f"{s['model']:{w}s}  {s['status']:9s}  {fmt(s['worst_rel']):9s}  {fmt(s['worst_elem_rel']):9s}"
                  f"  {fb:9s}  {vr:10s}  {det}")
        n = sum(s["status"] == "pass" for s in summaries)
        print(f"\n{n} of {len(summaries)} models pass")
    return 0 if all(s["status"] == "pass" for s in summaries) else 1


if __name__ == "__main__":
    sys.exit(main())
