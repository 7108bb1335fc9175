// hpf: the libhpf command-line tool.
#include <cstdio>
#include <string>
#include <vector>

#include "apps/hpf/cli.hpp"
#include "hpf/version.hpp"

namespace {

const char* kUsage =
    "usage: hpf [COMMAND] [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  run [MODEL]   run MODEL on the best device (the CPU JIT plugin) and on the reference\n"
    "                interpreter, compare, and show how each numeric format changes the output\n"
    "                (default MODEL: builtin:bert-tiny)\n"
    "      --input NAME=FILE  input NAME from a .npy or ONNX TensorProto .pb file (repeatable)\n"
    "      --random-inputs SEED  seed of the random values of inputs not given (default 7;\n"
    "                       --seed is the same option)\n"
    "      --dim NAME=VALUE size of a symbolic dimension (repeatable)\n"
    "      --output-dir DIR write each output to DIR/NAME.npy\n"
    "      --batch N        size of an input's first unbound symbolic dimension (default 1)\n"
    "      --threads N      device threads (default: all cores)\n"
    "      --repeat N       timed runs (default 10); the median, min and max are reported\n"
    "      --precision F    storage format of weights and activations on the device (default f32)\n"
    "      --plan P         precision plan: a mode every node gets (fp32, bf16, fp16, fp8, int8,\n"
    "                       int4-weights) or a plan file (hpf plan show FILE prints one)\n"
    "      --save-plan FILE write the plan used (with its measured divergence) to FILE\n"
    "      --kl-budget K    divergence budget of an auto plan (default 1e-3)\n"
    "      --kl-margin M    the planner stays within M * K on its calibration inputs (default 0.5)\n"
    "      --calib DIR      calibration inputs (NAME.npy, or DIR/<batch>/NAME.npy; default seeded)\n"
    "      --device PLUGIN  run on that plugin's best device (cpu, cuda, hip, ...; default: the best\n"
    "                       device of all loaded plugins, as hpf info lists them)\n"
    "      --profile        per-step times\n"
    "      --json           machine-readable results only\n"
    "      --reference-only skip the device\n"
    "      --autotune       kernels with tile choices (Conv with packed weights) run the one measured fastest\n"
    "                       here, measured once and kept in the kernel cache\n"
    "      --formats LIST   formats to emulate on the reference, comma-separated\n"
    "                       (default f32,tf32,bf16,f16,f8e4m3,f8e5m2; 'none' for no table)\n"
    "  bench MODEL   benchmark MODEL (an ONNX file or builtin:NAME) per precision plan: divergence\n"
    "                from the FP32 reference (KL, top-1, max relative error), latency (median, min,\n"
    "                max), inferences/s, GFLOP/s, peak and weight memory, TOPS/W (estimated from the\n"
    "                hwdb TDP), cold start with an empty and a warm kernel cache; and the FP32 plan on\n"
    "                every loaded backend and the reference, compared pairwise\n"
    "      --plans LIST     plans, comma-separated: modes (fp32, bf16, fp16, fp8, int8, int4-weights),\n"
    "                       auto, or plan files (default fp32,bf16,auto)\n"
    "      --threads N      device threads (HPF_NUM_THREADS; default: all cores)\n"
    "      --runs N         timed runs per plan (default 10)   --warmup N  untimed runs first (default 2)\n"
    "      --report FILE.md markdown report, with an SVG chart written to FILE.svg\n"
    "      --save-plan FILE the first plan the planner makes (auto, or a policy file) to FILE, to\n"
    "                       bench again as a plan file without planning\n"
    "      --skip LIST      leave out cold-start and/or consistency\n"
    "      --autotune       as for run (the cold start then includes the measuring)\n"
    "      --json           machine-readable results only\n"
    "      (also --input, --dim, --batch, --random-inputs, --kl-budget, --kl-margin, --calib, --device\n"
    "       as for run)\n"
    "  models        list the built-in models (MODEL = builtin:NAME)\n"
    "  ops           list the op table: class, formats, what stays wide\n"
    "  info [--json]          this machine: CPU, hardware-database match, plugins and devices\n"
    "  cache stats|ls|clear|explain KEY|export FILE|import FILE [--json]\n"
    "                         the kernel cache\n"
    "  hwdb list [--json]     products in the hardware database\n"
    "  hwdb show NAME [--json]\n"
    "                a product (full or short name) or an architecture (name, family, gfx target,\n"
    "                sm_NN): peaks per format, memory, power, support matrix, sources\n"
    "  hwdb recommend --scenario large-training|realtime-inference|edge [--json]\n"
    "                the hardware decision tree: hardware and precision combination, with reasons\n"
    "  onnx-test DIR [--filter REGEX] [--device PLUGIN|reference] [--json]\n"
    "                ONNX backend tests (DIR: one test folder with model.onnx and\n"
    "                test_data_set_*/, or a folder of them, e.g. /usr/share/libonnx-testdata/data/node)\n"
    "                through the plugin's kernels (default cpu; ops without a generator run on the\n"
    "                reference, counted) or the interpreter alone: passed / failed / unsupported\n"
    "  plan show PLAN.json [--json]\n"
    "                a saved precision plan: per node class, mode, formats, predicted and measured\n"
    "                time, bytes and sensitivity, with totals (--json: the plan file's JSON)\n"
    "  compile-check MODEL --target sm_80,sm_90[,gfx90a] [--plan fp32|tf32|bf16|fp16] [--json]\n"
    "                generate each kernel of MODEL in the GPU dialect and compile it for each\n"
    "                target without a GPU (sm_NN: NVRTC, gfxNNN: hipRTC): compiled, failed with\n"
    "                logs, unsupported families\n"
    "  bench gemm --m M --n N --k K [--dtype f32|int8|bf16w|fp16w|int8w|int4w|u8s8s32] [--threads N]\n"
    "             [--runs N] [--json]\n"
    "                one MatMul with the weights in that format: median/min/max ms, GFLOP/s\n"
    "  --version     print the version\n"
    "  --help        print this help\n"
    "\n"
    "environment: HPF_LOG_LEVEL=trace|debug|info|warn|error|off, HPF_HWDB (hwdb.sqlite),\n"
    "             HPF_PLUGIN_PATH (plugin directories), HPF_NUM_THREADS, HPF_CACHE_DIR, HPF_CACHE=0,\n"
    "             HPF_CACHE_MAX_BYTES\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace hpf::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return cmd_run({});
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("hpf %s\n", hpf::version());
    return 0;
  }
  if (cmd == "run") return cmd_run(rest);
  if (cmd == "bench" && !rest.empty() && rest[0] == "gemm") return cmd_bench_gemm({rest.begin() + 1, rest.end()});
  if (cmd == "bench") return cmd_bench(rest);
  if (cmd == "models") return cmd_models();
  if (cmd == "ops") return cmd_ops();
  if (cmd == "hwdb") return cmd_hwdb(rest);
  if (cmd == "info") return cmd_info(rest);
  if (cmd == "cache") return cmd_cache(rest);
  if (cmd == "onnx-test") return cmd_onnx_test(rest);
  if (cmd == "plan") return cmd_plan(rest);
  if (cmd == "compile-check") return cmd_compile_check(rest);
  return fail("unknown command '" + cmd + "'\n" + kUsage, 2);
}
