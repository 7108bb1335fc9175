// LSTM in C ("lstm"), of the form lstm_form.hpp describes (other forms are declined: the session
// runs the node on the reference).
//
// One work item per (direction, batch row): the recurrence is sequential in time, so directions
// and batch rows are the parallelism. Steps go in chunks: first the input projections W . x_t of
// the chunk's steps (each W row read once per chunk), then per step the gate pre-activations
//   g[j] = W[j] . x_t + R[j] . h + Wb[j] + Rb[j]   (j < 4H, gates in ONNX order i, o, f, c)
// are dot products in 16 FP32 lanes, four rows at a time, over the weight rows as stored (FP32,
// BF16 or F16, converted in registers: BF16/F16 weights halve the bytes the memory-bound
// recurrence streams), then
//   i = s(g_i + Pi c), f = s(g_f + Pf c), c~ = tanh(g_c), c = f c + i c~, o = s(g_o + Po c),
//   h = o tanh(c)
// with gates and states in FP32 (hpf_vexp-based sigmoid and tanh, a few ulps). Steps past a
// batch row's sequence length leave Y zero; Y_h/Y_c hold the state after its last step.
#include <algorithm>
#include <sstream>

#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/c_prelude.hpp"
#include "jit/codegen/lstm_form.hpp"

namespace hpf::jit {

namespace {

bool vector_loadable(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

// 16 values of storage type `t` at `p` as an hpf_f32x16 (a statement expression).
std::string load16(DType t, const std::string& p) {
  if (t == DType::F32) return "({ hpf_f32x16 v_; __builtin_memcpy(&v_, " + p + ", 64); v_; })";
  if (t == DType::BF16)
    return "({ hpf_u16x16 u_; __builtin_memcpy(&u_, " + p + ", 32); (hpf_f32x16)(__builtin_convertvector(u_, hpf_u32x16) << 16); })";
  return "({ lstm_h16 u_; __builtin_memcpy(&u_, " + p + ", 32); __builtin_convertvector(u_, hpf_f32x16); })";
}

// `static inline void NAME(const T* w, const float* x, float* out)`: out[r] = the dot product of
// weight row r (rows n apart, r < 4) and n FP32 values: four rows at once (each x vector loaded
// once for all four), in 16 lanes, the lanes added pairwise, then an ordered tail.
std::string dot4_fn(const std::string& name, DType t, int64_t n) {
  const char* ct = c_storage_type(t);
  std::ostringstream s;
  s << "static inline void " << name << "(const " << ct << "* restrict w, const float* restrict x, float* restrict out) {\n"
    << "  hpf_f32x16 a0 = {}, a1 = {}, a2 = {}, a3 = {};\n"
    << "  i64 q = 0;\n"
    << "  for (; q + 16 <= " << L(n) << "; q += 16) {\n"
    << "    hpf_f32x16 xv; __builtin_memcpy(&xv, x + q, 64);\n"
    << "    a0 += " << load16(t, "w + q") << " * xv;\n"
    << "    a1 += " << load16(t, "w + " + L(n) + " + q") << " * xv;\n"
    << "    a2 += " << load16(t, "w + " + L(2 * n) + " + q") << " * xv;\n"
    << "    a3 += " << load16(t, "w + " + L(3 * n) + " + q") << " * xv;\n"
    << "  }\n"
    << "  out[0] = lstm_hsum(a0); out[1] = lstm_hsum(a1); out[2] = lstm_hsum(a2); out[3] = lstm_hsum(a3);\n"
    << "  for (; q < " << L(n) << "; ++q) {\n"
    << "    const float xq = x[q];\n"
    << "    for (int r = 0; r < 4; ++r) out[r] += " << c_load_operand(t, "w[r * " + L(n) + " + q]") << " * xq;\n"
    << "  }\n"
    << "}\n";
  return s.str();
}

}  // namespace

Expected<GeneratedKernel> generate_c_lstm(const KernelSpec& spec, const std::string& name) {
  HPF_ASSIGN_OR_RETURN(const LstmForm f, lstm_form(spec, "C codegen"));
  const TensorDesc &X = spec.inputs[0], &W = spec.inputs[1], &R = spec.inputs[2];
  const int64_t T = f.T, B = f.B, I = f.I, D = f.D, G = f.G, H = f.H;
  const std::string& direction = f.direction;
  auto in = [&](int k) { return spec.inputs[static_cast<size_t>(f.input(k))].dtype; };  // ONNX input k's format
  for (const TensorDesc* t : {&X, &W, &R})
    if (!vector_loadable(t->dtype)) return Status::unsupported("C codegen: LSTM on " + std::string(dtype_name(t->dtype)));
  if (H > 4096 || I > 16384) return Status::unsupported("C codegen: LSTM wider than its stack buffers (H <= 4096, I <= 16384)");

  std::ostringstream s;
  s << c_prelude() << "typedef _Float16 lstm_h16 __attribute__((vector_size(32)));\n"
    << "static inline float lstm_sigmoid(float x) { return 1.0f / (1.0f + hpf_vexp(-x)); }\n"
    << "static inline float lstm_tanh(float x) {\n"
    << "  const float e = hpf_vexp(-2.0f * __builtin_fabsf(x)), r = (1.0f - e) / (1.0f + e);\n"
    << "  return x != x ? x : (x < 0.0f ? -r : r);\n"
    << "}\n"
    << "typedef float lstm_f8 __attribute__((vector_size(32)));\n"
    << "typedef float lstm_f4 __attribute__((vector_size(16)));\n"
    << "static inline float lstm_hsum(hpf_f32x16 v) {\n"
    << "  lstm_f8 h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);\n"
    << "  lstm_f4 q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);\n"
    << "  return (q[0] + q[2]) + (q[1] + q[3]);\n"
    << "}\n"
    << dot4_fn("lstm_dot_w", W.dtype, I) << dot4_fn("lstm_dot_r", R.dtype, H);
  auto arg = [&](int k) {  // "args[p]" of ONNX input k
    return "args[" + std::to_string(f.input(k)) + "]";
  };
  auto ptr = [&](int k, const char* var) {
    const char* ct = c_storage_type(in(k));
    return std::string("  const ") + ct + "* restrict " + var + " = (const " + ct + "*)" + arg(k) + ";\n";
  };
  s << "\nvoid " << name << "(void* const* args, i64 begin, i64 end) {\n"
    << ptr(0, "X") << ptr(1, "W") << ptr(2, "R");
  if (f.has_in(3)) s << ptr(3, "Bias");
  if (f.has_in(4)) s << "  const i32* restrict SL = (const i32*)" << arg(4) << ";\n";
  if (f.has_in(5)) s << ptr(5, "H0");
  if (f.has_in(6)) s << ptr(6, "C0");
  if (f.has_in(7)) s << ptr(7, "P");
  auto out_dtype = [&](int k) { return spec.outputs[static_cast<size_t>(f.output(k))].dtype; };
  const char* ynames[3] = {"Y", "YH", "YC"};
  for (int k = 0; k < 3; ++k) {
    if (!f.has_out(k)) continue;
    const char* ct = c_storage_type(out_dtype(k));
    s << "  " << ct << "* restrict " << ynames[k] << " = (" << ct << "*)args[" << spec.inputs.size() + f.output(k) << "];\n";
  }
  const std::string G_ = L(G), H_ = L(H), I_ = L(I);
  // Steps per chunk: its projections (TC x 4H) and inputs (TC x I) in at most 128 + 64 KiB.
  const int64_t TC = std::max<int64_t>(1, std::min({T, 32768 / G, 16384 / I}));
  s << "  float h[" << H << "] __attribute__((aligned(64))), c[" << H << "], g[" << G << "];\n"
    << "  float gx[" << TC * G << "], xs[" << TC * I << "] __attribute__((aligned(64)));\n"
    << "  for (i64 item = begin; item < end; ++item) {\n"
    << "    const i64 d = item / " << L(B) << ", b = item % " << L(B) << ";\n"
    << "    const int backward = " << (direction == "reverse" ? "1" : direction == "bidirectional" ? "d == 1" : "0") << ";\n"
    << "    const " << c_storage_type(W.dtype) << "* restrict Wd = W + d * " << L(G * I) << ";\n"
    << "    const " << c_storage_type(R.dtype) << "* restrict Rd = R + d * " << L(G * H) << ";\n"
    << "    for (i64 j = 0; j < " << H_ << "; ++j) {\n"
    << "      h[j] = " << (f.has_in(5) ? c_load(in(5), "H0[(d * " + L(B) + " + b) * " + H_ + " + j]") : "0.0f") << ";\n"
    << "      c[j] = " << (f.has_in(6) ? c_load(in(6), "C0[(d * " + L(B) + " + b) * " + H_ + " + j]") : "0.0f") << ";\n"
    << "    }\n";
  if (f.has_in(4))
    s << "    i64 len = SL[b];\n    len = len < 0 ? 0 : (len > " << L(T) << " ? " << L(T) << " : len);\n";
  else
    s << "    const i64 len = " << L(T) << ";\n";
  if (f.has_out(0))  // Y past the sequence: zero
    s << "    for (i64 t = len; t < " << L(T) << "; ++t)\n"
      << "      for (i64 j = 0; j < " << H_ << "; ++j) Y[((t * " << L(D) << " + d) * " << L(B) << " + b) * " << H_
      << " + j] = " << c_store(out_dtype(0), "0.0f") << ";\n";
  // Steps in chunks of TC: the input projections of a chunk first (each W row read once per
  // chunk, reused over its steps), then the recurrence, which streams only R.
  s << "    for (i64 s0 = 0; s0 < len; s0 += " << L(TC) << ") {\n"
    << "      const i64 sn = len - s0 < " << L(TC) << " ? len - s0 : " << L(TC) << ";\n"
    << "      for (i64 q = 0; q < sn; ++q) {\n"
    << "        const i64 t = backward ? len - 1 - (s0 + q) : s0 + q;\n"
    << "        for (i64 k = 0; k < " << I_ << "; ++k) xs[q * " << I_ << " + k] = "
    << c_load_operand(X.dtype, "X[(t * " + L(B) + " + b) * " + I_ + " + k]") << ";\n"
    << "      }\n"
    << "      for (i64 j = 0; j < " << G_ << "; j += 4)\n"
    << "        for (i64 q = 0; q < sn; ++q) lstm_dot_w(Wd + j * " << I_ << ", xs + q * " << I_ << ", gx + q * " << G_ << " + j);\n"
    << "      for (i64 q = 0; q < sn; ++q) {\n"
    << "      const i64 t = backward ? len - 1 - (s0 + q) : s0 + q;\n"
    << "      for (i64 j = 0; j < " << G_ << "; j += 4) lstm_dot_r(Rd + j * " << H_ << ", h, g + j);\n"
    << "      for (i64 j = 0; j < " << G_ << "; ++j)\n"
    << "        g[j] += gx[q * " << G_ << " + j]";
  if (f.has_in(3)) {
    const DType bt = in(3);
    s << " + " << c_load(bt, "Bias[d * " + L(2 * G) + " + j]") << " + " << c_load(bt, "Bias[d * " + L(2 * G) + " + " + G_ + " + j]");
  }
  s << ";\n"
    << "      for (i64 j = 0; j < " << H_ << "; ++j) {\n";
  std::string pi = "0.0f", po = "0.0f", pf = "0.0f";
  if (f.has_in(7)) {
    const DType pt = in(7);
    pi = c_load(pt, "P[d * " + L(3 * H) + " + j]");
    po = c_load(pt, "P[d * " + L(3 * H) + " + " + H_ + " + j]");
    pf = c_load(pt, "P[d * " + L(3 * H) + " + " + L(2 * H) + " + j]");
  }
  s << "        const float ig = lstm_sigmoid(g[j] + " << pi << " * c[j]);\n"
    << "        const float fg = lstm_sigmoid(g[" << L(2 * H) << " + j] + " << pf << " * c[j]);\n"
    << "        const float cg = lstm_tanh(g[" << L(3 * H) << " + j]);\n"
    << "        c[j] = fg * c[j] + ig * cg;\n"
    << "        const float og = lstm_sigmoid(g[" << H_ << " + j] + " << po << " * c[j]);\n"
    << "        h[j] = og * lstm_tanh(c[j]);\n"
    << "      }\n";
  if (f.has_out(0))
    s << "      for (i64 j = 0; j < " << H_ << "; ++j) Y[((t * " << L(D) << " + d) * " << L(B) << " + b) * " << H_
      << " + j] = " << c_store(out_dtype(0), "h[j]") << ";\n";
  s << "      }\n    }\n";
  if (f.has_out(1))
    s << "    for (i64 j = 0; j < " << H_ << "; ++j) YH[(d * " << L(B) << " + b) * " << H_ << " + j] = " << c_store(out_dtype(1), "h[j]") << ";\n";
  if (f.has_out(2))
    s << "    for (i64 j = 0; j < " << H_ << "; ++j) YC[(d * " << L(B) << " + b) * " << H_ << " + j] = " << c_store(out_dtype(2), "c[j]") << ";\n";
  s << "  }\n}\n";
  return GeneratedKernel{name, s.str(), D * B, 1};
}

}  // namespace hpf::jit
