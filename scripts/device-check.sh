#!/usr/bin/env bash
# The GPU check in one prepared script: the CUDA device suite (tests/device: kernels and whole
# models through the Session), the GEMM benchmark against cuBLAS (bench/gpu_gemm_bench.cpp) and
# BERT-base's latency per plan (`hpf bench --device cuda`), results under $OUT. Two steps, because
# a build directory is far over what can be carried to a GPU machine (64 MiB):
#
#   here (build machine):  scripts/device-check.sh pack build build/device-kit
#       copies the three binaries, the CUDA plugin, libhpf (debug info stripped) and the shared
#       libraries they need that are not glibc into build/device-kit/ (~13 MiB; build/ is
#       ignored by git, so the device tool carries it) and prints its size;
#   there (GPU machine):   scripts/device-check.sh run build/device-kit   (the device tool's
#                          run with carry=["build/device-kit"]; $OUT is where results go)
#       writes to $OUT (default ./device-check-out): env.txt (GPU, driver, NVRTC, what ran),
#       device-tests.txt and device-tests.junit.xml, gemm-bench.txt and gemm-bench.jsonl,
#       wgmma-tests.txt and wgmma-bench.txt (the GEMM cases and the f16/bf16 benchmark again
#       with HPF_CUDA_WGMMA=1: sm_90a kernels, warpgroup MMA, on CC 9.0 GPUs),
#       model-bench-MODEL.json per built-in model, summary.txt. Stays inside ~11 minutes on an
#       H200: the suite has a 300 s limit, the GEMM benchmark 90 s, the wgmma pass 90 s, the model
#       benchmarks 220 s; each prints its command first. Exit status: the device suite's (the wgmma pass is reported, opt-in as it is).
#
# `run` also accepts a build directory (on a GPU machine that built libhpf itself).
# Environment: CUDA_HOME (default /usr/local/cuda) must hold include/cuda_fp16.h for NVRTC;
# DEVICE_CHECK_SIZES (default 4096,2048), DEVICE_CHECK_REPS (default 20); time limits in seconds:
# DEVICE_CHECK_SUITE_S (300), DEVICE_CHECK_BENCH_S (90), DEVICE_CHECK_MODEL_S (25 a model, 5x for BERT-base);
# DEVICE_CHECK_WGMMA=0 leaves out the wgmma pass.
# Without NVRTC or cuda_fp16.h under CUDA_HOME (CUDA from pip wheels) it looks under /usr/local and /opt.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)

usage() { echo "usage: $0 pack BUILD_DIR KIT_DIR | run KIT_OR_BUILD_DIR" >&2; exit 2; }

pack() {
  local build=$1 kit=$2
  for f in tests/device/test_device_cuda bench/hpf-gpu-gemm-bench apps/hpf/hpf hpf/plugins/libhpf-plugin-cuda.so; do
    [ -e "$build/$f" ] || { echo "device-check: $build/$f is missing; build it: cmake --build $build -j2 --target test_device_cuda hpf-gpu-gemm-bench hpf_cli hpf-plugin-cuda" >&2; exit 2; }
  done
  rm -rf "$kit" && mkdir -p "$kit/bin" "$kit/lib" "$kit/plugins"
  cp "$build/tests/device/test_device_cuda" "$build/bench/hpf-gpu-gemm-bench" "$build/apps/hpf/hpf" "$kit/bin/"
  cp "$build/hpf/plugins/libhpf-plugin-cuda.so" "$kit/plugins/"
  cp "$build/hpf/hwdb.sqlite" "$kit/" 2>/dev/null || echo "device-check: no $build/hpf/hwdb.sqlite: plans on the GPU will lack its roofline" >&2
  # Shared libraries outside glibc (libhpf, spdlog, fmt, sqlite, protobuf, onnx, libstdc++ ...).
  for bin in "$kit/bin/"* "$kit/plugins/"*; do
    ldd "$bin" | awk '/=> \//{print $3}'
  done | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
      *) cp -L "$lib" "$kit/lib/" ;;
    esac
  done
  strip --strip-debug "$kit/bin/"* "$kit/plugins/"* "$kit/lib/"* 2>/dev/null
  echo "device-check: packed $(du -sh "$kit" | cut -f1) into $kit (carry it; then: $0 run $kit)"
}

run() {
  local kit=$1 out=${OUT:-$PWD/device-check-out}
  mkdir -p "$out"
  local tests bench hpf plugins libs
  if [ -d "$kit/bin" ]; then
    tests=$kit/bin/test_device_cuda bench=$kit/bin/hpf-gpu-gemm-bench hpf=$kit/bin/hpf plugins=$kit/plugins libs=$kit/lib
    [ -f "$kit/hwdb.sqlite" ] && export HPF_HWDB="$(cd "$kit" && pwd)/hwdb.sqlite"
  else
    tests=$kit/tests/device/test_device_cuda bench=$kit/bench/hpf-gpu-gemm-bench hpf=$kit/apps/hpf/hpf plugins=$kit/hpf/plugins libs=$kit
    [ -f "$kit/hpf/hwdb.sqlite" ] && export HPF_HWDB="$(cd "$kit/hpf" && pwd)/hwdb.sqlite"
  fi
  # A kit's libstdc++ (GCC 12) would shadow a newer system one that NVRTC may need: where the
  # system's has every symbol version the kit's binaries ask for, the kit's copy is left out.
  if [ -f "$libs/libstdc++.so.6" ]; then
    local sys need
    sys=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')
    need=$(objdump -T "$kit"/bin/* "$kit"/plugins/* "$libs"/*.so* 2>/dev/null | grep -o 'GLIBCXX_3\.4\.[0-9]*' | sort -t. -k3 -n -u | tail -1)
    if [ -n "$sys" ] && [ -n "$need" ] && grep -q "$need" "$sys"; then
      local trimmed; trimmed=$(mktemp -d)
      for f in "$libs"/*; do
        case $(basename "$f") in libstdc++.so*|libgcc_s.so*) ;; *) ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$trimmed/" ;; esac
      done
      libs=$trimmed
    fi
  fi
  export LD_LIBRARY_PATH="$(cd "$libs" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export HPF_DEVICE_PLUGIN_DIR="$(cd "$plugins" && pwd)" HPF_CACHE_DIR="$(mktemp -d)/hpf-cache"
  export HPF_PLUGIN_PATH="$HPF_DEVICE_PLUGIN_DIR"
  export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  # No NVRTC or no CUDA headers under CUDA_HOME (an image with CUDA from pip wheels): look for them.
  if ! ls "$CUDA_HOME"/lib64/libnvrtc.so.1[23]* >/dev/null 2>&1 && [ -z "${HPF_NVRTC_LIBRARY:-}" ]; then
    local found
    found=$(find /usr/local /opt /usr/lib -maxdepth 9 -name 'libnvrtc.so.1[23]' 2>/dev/null | head -1)
    [ -n "$found" ] && export HPF_NVRTC_LIBRARY=$found
  fi
  if [ ! -f "$CUDA_HOME/include/cuda_fp16.h" ]; then
    local hdr
    hdr=$(find /usr/local /opt /usr/include -maxdepth 9 -name cuda_fp16.h 2>/dev/null | head -1)
    [ -n "$hdr" ] && export CUDA_HOME=$(dirname "$(dirname "$hdr")")
  fi
  unset HPF_CUDA_TARGETS
  local sizes=${DEVICE_CHECK_SIZES:-4096,2048} reps=${DEVICE_CHECK_REPS:-20}
  local suite_s=${DEVICE_CHECK_SUITE_S:-300} bench_s=${DEVICE_CHECK_BENCH_S:-90} model_s=${DEVICE_CHECK_MODEL_S:-25}
  {
    echo "device-check $(date -u +%FT%TZ) kit=$kit out=$out"
    echo "git: $(git -C "$here" log -1 --oneline 2>/dev/null || echo unknown)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,power.draw --format=csv
    echo "CUDA_HOME=$CUDA_HOME HPF_NVRTC_LIBRARY=${HPF_NVRTC_LIBRARY:-}"
    ls "$CUDA_HOME"/lib64/libnvrtc.so* 2>/dev/null || echo "no NVRTC under $CUDA_HOME/lib64"
    [ -f "$CUDA_HOME/include/cuda_fp16.h" ] || echo "no $CUDA_HOME/include/cuda_fp16.h: NVRTC compiles will fail"
  } 2>&1 | tee "$out/env.txt"

  # Line-buffered, so a suite stopped at its limit still shows where it was.
  local cmd=(stdbuf -oL -eL "$tests" --reporters=console --duration=true)
  echo "+ timeout $suite_s ${cmd[*]}" | tee -a "$out/env.txt"
  timeout -k 10 "$suite_s" "${cmd[@]}" >"$out/device-tests.txt" 2>&1
  local rc=$?
  tail -5 "$out/device-tests.txt"
  timeout -k 5 60 "$tests" --reporters=junit --test-case="device cuda: plugin memory*" \
    >"$out/device-tests.junit.xml" 2>/dev/null

  local bcmd=("$bench" --size "$sizes" --reps "$reps" --plugins "$HPF_DEVICE_PLUGIN_DIR" --json "$out/gemm-bench.jsonl")
  echo "+ timeout $bench_s ${bcmd[*]}" | tee -a "$out/env.txt"
  timeout -k 5 "$bench_s" "${bcmd[@]}" >"$out/gemm-bench.txt" 2>&1
  local brc=$?
  cat "$out/gemm-bench.txt"

  local wrc="not run (DEVICE_CHECK_WGMMA=0)"
  if [ "${DEVICE_CHECK_WGMMA:-1}" = 1 ]; then
    local wcmd=("$tests" --test-case="device cuda: MatMul/Gemm in every format*")
    echo "+ HPF_CUDA_WGMMA=1 timeout 60 ${wcmd[*]}" | tee -a "$out/env.txt"
    HPF_CUDA_WGMMA=1 timeout -k 5 60 "${wcmd[@]}" >"$out/wgmma-tests.txt" 2>&1
    wrc=$?
    local wbcmd=("$bench" --size "$sizes" --reps "$reps" --formats f16,bf16 --plugins "$HPF_DEVICE_PLUGIN_DIR")
    echo "+ HPF_CUDA_WGMMA=1 timeout 30 ${wbcmd[*]}" | tee -a "$out/env.txt"
    HPF_CUDA_WGMMA=1 timeout -k 5 30 "${wbcmd[@]}" >"$out/wgmma-bench.txt" 2>&1
    cat "$out/wgmma-bench.txt"
  fi

  # The built-in models' latency per plan on the GPU: BERT-base in every float plan, the others
  # in fp32, bf16 and auto; one JSON per model.
  local mrc=0 model plans limit
  for model in bert-base bert-tiny cnn-small lstm-lm mlp; do
    plans=fp32,bf16,auto limit=$model_s
    [ "$model" = bert-base ] && plans=fp32,tf32,bf16,fp16,auto limit=$((model_s * 5))
    local mcmd=("$hpf" bench "builtin:$model" --device cuda --plans "$plans" --runs 20 --skip cold-start,consistency --json)
    echo "+ timeout $limit ${mcmd[*]}" | tee -a "$out/env.txt"
    timeout -k 5 "$limit" "${mcmd[@]}" >"$out/model-bench-$model.json" 2>>"$out/model-bench.log" || mrc=$?
  done
  tail -3 "$out/model-bench.log"

  {
    echo "device suite: exit $rc$([ $rc = 124 ] && echo ' (timed out)')"
    grep -E "test cases:|assertions:|skipped: " "$out/device-tests.txt" | head -5
    grep -E "ERROR|max error .* > " "$out/device-tests.txt" | head -20
    echo "gemm bench: exit $brc$([ $brc = 124 ] && echo ' (timed out)')"
    echo "wgmma GEMM cases (HPF_CUDA_WGMMA=1): exit $wrc; $(grep -E "test cases:" "$out/wgmma-tests.txt" 2>/dev/null | head -1)"
    echo "model bench: exit $mrc$([ $mrc = 124 ] && echo ' (timed out)')"
    grep -E " fp32 on | auto on the GPU: " "$out/device-tests.txt" | head -12
  } | tee "$out/summary.txt"
  return $rc
}

case ${1:-} in
  pack) [ $# = 3 ] || usage; pack "$2" "$3" ;;
  run) [ $# = 2 ] || usage; run "$2" ;;
  *) usage ;;
esac
