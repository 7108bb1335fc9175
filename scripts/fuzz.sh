#!/usr/bin/env bash
# Runs the ONNX importer's fuzz target (built by `cmake --preset fuzz && cmake --build build-fuzz`)
# for SECONDS (default 60) over the committed corpus. New interesting inputs go to a temporary
# folder (add them to fuzz/corpus/onnx_import with `-merge=1` when they are worth keeping); a
# crash, sanitizer report, timeout or out-of-memory stops it with a non-zero status and the
# input that caused it saved in fuzz-artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
fuzzer=build-fuzz/fuzz/hpf_fuzz_onnx_import
[ -x "$fuzzer" ] || { echo "fuzz.sh: $fuzzer is missing; run: cmake --preset fuzz && cmake --build build-fuzz -j2" >&2; exit 2; }
new=$(mktemp -d)
trap 'rm -rf "$new"' EXIT
mkdir -p fuzz-artifacts
"$fuzzer" -max_total_time="$seconds" -seed=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix=fuzz-artifacts/ "$new" fuzz/corpus/onnx_import
