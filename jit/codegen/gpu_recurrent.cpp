// LSTM in the GPU dialects ("lstm", the form lstm_form.hpp describes): one block of 256 threads
// per (direction, batch row), over a grid-stride loop of them: the recurrence is sequential in
// time, so directions and batch rows are the parallelism, and within a step the 4H gate rows.
// Per step, each warp takes gate rows j (the warps in lockstep over rows, so every lane of a
// warp reaches the same shuffles), its lanes striding over the row as stored (coalesced):
//   g[j] = W[j] . x_t + R[j] . h + Wb[j] + Rb[j]
// summed across the warp in FP32; then one thread per hidden unit
//   i = s(g_i + Pi c), f = s(g_f + Pf c), c~ = tanh(g_c), c = f c + i c~, o = s(g_o + Po c),
//   h = o tanh(c)
// with h, c and g in shared memory (FP32; so 4H + 2H floats <= 48 KiB: H <= 2048). Steps past a
// batch row's sequence length leave Y zero; Y_h/Y_c hold the state after its last step.
#include <sstream>

#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/gpu_generators.hpp"
#include "jit/codegen/lstm_form.hpp"

namespace hpf::jit {

Expected<GeneratedKernel> generate_gpu_lstm(const KernelSpec& spec, const std::string& name, GpuDialect d) {
  const std::string who = std::string(gpu_dialect_name(d)) + " codegen";
  HPF_ASSIGN_OR_RETURN(const LstmForm f, lstm_form(spec, who));
  if (f.H > 2048) return Status::unsupported(who + ": LSTM with more than 2048 hidden units (its state lives in shared memory)");
  auto in = [&](int k) { return spec.inputs[static_cast<size_t>(f.input(k))].dtype; };
  auto out = [&](int k) { return spec.outputs[static_cast<size_t>(f.output(k))].dtype; };
  static const char* kIn[8] = {"X", "W", "R", "Bias", "SL", "H0", "C0", "P"};
  static const char* kOut[3] = {"Y", "YH", "YC"};
  std::string params;
  for (int k = 0; k < 11; ++k) {
    const bool is_in = k < 8;
    if (is_in ? !f.has_in(k) : !f.has_out(k - 8)) continue;
    const DType dt = is_in ? in(k) : out(k - 8);
    const char* t = gpu_storage_type(d, dt);
    if (!t) return Status::unsupported(who + ": LSTM on " + std::string(dtype_name(dt)));
    params += std::string(params.empty() ? "" : ", ") + (is_in ? "const " : "") + t + "* __restrict__ " +
              (is_in ? kIn[k] : kOut[k - 8]);
  }
  const std::string B = L(f.B), H = L(f.H), G = L(f.G), I = L(f.I), T = L(f.T), D = L(f.D);
  auto ld = [&](int k, const std::string& at) { return gpu_load(d, in(k), std::string(kIn[k]) + "[" + at + "]"); };
  const std::string state = "(d * " + B + " + b) * " + H + " + j";
  std::ostringstream s;
  s << gpu_prelude(d) << "\n"
    << "static __device__ __forceinline__ float lstm_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
    << gpu_kernel_head(name, 256) << params << ") {\n"
    << "  __shared__ float h[" << f.H << "], c[" << f.H << "], g[" << f.G << "];\n"
    << "  const int lane = threadIdx.x % HPF_WARP, warp = threadIdx.x / HPF_WARP, warps = blockDim.x / HPF_WARP;\n"
    << "  for (i64 item = blockIdx.x; item < " << L(f.D * f.B) << "; item += gridDim.x) {\n"
    << "    const i64 d = item / " << B << ", b = item % " << B << ";\n"
    << "    const bool backward = "
    << (f.direction == "reverse" ? "true" : f.direction == "bidirectional" ? "d == 1" : "false") << ";\n"
    << "    for (i64 j = threadIdx.x; j < " << H << "; j += blockDim.x) {\n"
    << "      h[j] = " << (f.has_in(5) ? ld(5, state) : "0.0f") << ";\n"
    << "      c[j] = " << (f.has_in(6) ? ld(6, state) : "0.0f") << ";\n"
    << "    }\n";
  if (f.has_in(4))
    s << "    i64 len = SL[b];\n    len = len < 0 ? 0 : (len > " << T << " ? " << T << " : len);\n";
  else
    s << "    const i64 len = " << T << ";\n";
  if (f.has_out(0))
    s << "    for (i64 e = len * " << H << " + threadIdx.x; e < " << L(f.T * f.H) << "; e += blockDim.x)\n"
      << "      Y[((e / " << H << " * " << D << " + d) * " << B << " + b) * " << H << " + e % " << H
      << "] = " << gpu_store(d, out(0), "0.0f") << ";\n";
  s << "    __syncthreads();\n"
    << "    for (i64 q = 0; q < len; ++q) {\n"
    << "      const i64 t = backward ? len - 1 - q : q;\n"
    << "      for (i64 j0 = 0; j0 < " << G << "; j0 += warps) {\n"
    << "        const i64 j = j0 + warp;\n"
    << "        float acc = 0.0f;\n"
    << "        if (j < " << G << ") {\n"
    << "          for (i64 k = lane; k < " << I << "; k += HPF_WARP)\n"
    << "            acc += " << ld(1, "(d * " + G + " + j) * " + I + " + k") << " * "
    << ld(0, "(t * " + B + " + b) * " + I + " + k") << ";\n"
    << "          for (i64 k = lane; k < " << H << "; k += HPF_WARP)\n"
    << "            acc += " << ld(2, "(d * " + G + " + j) * " + H + " + k") << " * h[k];\n"
    << "        }\n"
    << "        acc = hpf_warp_sum(acc);\n"
    << "        if (lane == 0 && j < " << G << ") g[j] = acc";
  if (f.has_in(3)) s << " + " << ld(3, "d * " + L(2 * f.G) + " + j") << " + " << ld(3, "d * " + L(2 * f.G) + " + " + G + " + j");
  s << ";\n"
    << "      }\n"
    << "      __syncthreads();\n"
    << "      for (i64 j = threadIdx.x; j < " << H << "; j += blockDim.x) {\n";
  std::string pi = "0.0f", po = "0.0f", pf = "0.0f";
  if (f.has_in(7)) {
    pi = ld(7, "d * " + L(3 * f.H) + " + j");
    po = ld(7, "d * " + L(3 * f.H) + " + " + H + " + j");
    pf = ld(7, "d * " + L(3 * f.H) + " + " + L(2 * f.H) + " + j");
  }
  s << "        const float ig = lstm_sigmoid(g[j] + " << pi << " * c[j]);\n"
    << "        const float fg = lstm_sigmoid(g[" << L(2 * f.H) << " + j] + " << pf << " * c[j]);\n"
    << "        const float cg = tanhf(g[" << L(3 * f.H) << " + j]);\n"
    << "        const float cj = fg * c[j] + ig * cg;\n"
    << "        const float og = lstm_sigmoid(g[" << H << " + j] + " << po << " * cj);\n"
    << "        c[j] = cj;\n"
    << "        h[j] = og * tanhf(cj);\n";
  if (f.has_out(0))
    s << "        Y[((t * " << D << " + d) * " << B << " + b) * " << H << " + j] = " << gpu_store(d, out(0), "h[j]") << ";\n";
  s << "      }\n"
    << "      __syncthreads();\n"
    << "    }\n"
    << "    for (i64 j = threadIdx.x; j < " << H << "; j += blockDim.x) {\n";
  if (f.has_out(1)) s << "      YH[" << state << "] = " << gpu_store(d, out(1), "h[j]") << ";\n";
  if (f.has_out(2)) s << "      YC[" << state << "] = " << gpu_store(d, out(2), "c[j]") << ";\n";
  s << "    }\n"
    << "    __syncthreads();\n"
    << "  }\n"
    << "}\n";
  return GeneratedKernel{name, s.str(), f.D * f.B * 256, 256};
}

}  // namespace hpf::jit
