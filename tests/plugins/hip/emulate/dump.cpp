// GPU-dialect kernels checked against the C dialect on the CPU, without a GPU (opt-in, not in
// ctest: about 10 s per kernel on two cores). Writes, for every kernel of bert-tiny, cnn-small
// and mlp in f32/f16/bf16 plus hand-made specs of the other families, kN.c (the C kernel, renamed
// NAME_c; for INT8 MatMul, which the C dialect has no kernel for, a C oracle), kN.hip (the
// HIP-dialect kernel) and kN.txt (label, name, launch, operand formats and sizes) into the
// current directory; run.py then builds each pair with clang-19, runs the C one
// and the HIP one (shim.hpp: one std::thread per GPU thread, a barrier for __syncthreads,
// wave64 shuffles through shared memory, a 6-block grid so grid-stride loops are exercised) on
// the same random inputs, and compares the outputs within a tolerance per format.
//   clang++-19 -std=c++20 -I. -Ibuild/include ... dump.cpp -Lbuild -lhpf -o dump  (see run.py)
//   cd OUT && ./dump && python3 run.py [LABEL_REGEX [SKIP_REGEX]]
#include <fstream>
#include <tuple>
#include <iostream>
#include "hpf/models.hpp"
#include "jit/codegen/gpu_codegen.hpp"
#include "jit/codegen/lowering.hpp"
using namespace hpf; using namespace hpf::jit;
int n = 0;
std::vector<DType> storage_of(const Graph& g, DType format) {
  std::vector<DType> s(g.values().size());
  std::vector<bool> boundary(s.size(), false);
  for (ValueId v : g.inputs()) boundary[v] = true;
  for (ValueId v : g.outputs()) boundary[v] = true;
  for (size_t v = 0; v < s.size(); ++v) { DType t = g.value(v).dtype; s[v] = !boundary[v] && t == DType::F32 ? format : t; }
  auto order = g.topological_order(); for (int32_t id : *order) { const Node& nd = g.node(id); if (is_view_op(nd.op)) s[nd.outputs[0]] = s[nd.inputs[0]]; }
  return s;
}
// `c_oracle`: C source of `void NAME_c(void* const* args, long long b, long long e)` standing in
// for the C dialect's kernel where it has none (INT8 MatMul); its work range is [0, 1).
void dump(const KernelSpec& s, const std::string& label, const std::string& c_oracle = "") {
  auto c = c_oracle.empty() ? generate_c(s) : Expected<GeneratedKernel>(GeneratedKernel{"", "", 1, 1});
  auto h = generate_gpu(s, GpuDialect::hip);
  if (!c_oracle.empty() && h.ok()) { c->name = h->name; c->source = "void " + h->name + "(" + c_oracle; }
  if (!c.ok() || !h.ok()) { std::cerr << label << ": " << (c.ok() ? "" : c.status().message()) << " | " << (h.ok() ? "" : h.status().message()) << "\n"; return; }
  std::string cs = c->source; size_t at = cs.find("void " + c->name + "(");
  cs.replace(at + 5, c->name.size(), c->name + "_c");
  std::string p = "k" + std::to_string(n++);
  std::ofstream(p + ".c") << cs;
  std::ofstream(p + ".hip") << h->source;
  std::ofstream m(p + ".txt");
  m << label << "\n" << h->name << " " << c->work_items << " " << h->work_items << " " << h->grain << "\n";
  for (auto& t : s.inputs) m << "in " << dtype_name(t.dtype) << " " << numel(t.shape) << "\n";
  m << "out " << dtype_name(s.outputs[0].dtype) << " " << numel(s.outputs[0].shape) << "\n";
}
TensorDesc T(DType t, std::vector<int64_t> s) { return TensorDesc{t, s}; }
int main() {
  for (const char* model : {"bert-tiny", "cnn-small", "mlp"})
    for (DType f : {DType::F32, DType::F16, DType::BF16}) {
      auto g = models::builtin(model);
      for (ValueId id : g->inputs()) for (Dim& d : g->value(id).shape) if (!d.known()) d = Dim(1);
      (void)g->infer_shapes();
      auto steps = lower(*g, storage_of(*g, f), {}, kGpuLowering);
      for (auto& s : *steps) if (s.kind == LoweredStep::Kind::kernel) dump(s.spec, std::string(model) + "/" + std::string(dtype_name(f)) + "/" + s.spec.family + "/" + s.label);
    }
  for (DType f : {DType::F32, DType::BF16}) {
    const std::string F = "/" + std::string(dtype_name(f));
    KernelSpec r; r.family = "reduce"; r.inputs = {T(f, {3, 5, 7})}; r.outputs = {T(f, {3, 1, 7})}; r.attrs["reduce_kind"] = std::string("mean"); r.attrs["reduce_axes"] = std::vector<int64_t>{1}; dump(r, "reduce_mean_axis1" + F);
    r.outputs = {T(f, {1, 5, 1})}; r.attrs["reduce_kind"] = std::string("max"); r.attrs["reduce_axes"] = std::vector<int64_t>{0, 2}; dump(r, "reduce_max_02" + F);
    KernelSpec c; c.family = "concat"; c.inputs = {T(f, {2, 3, 4}), T(f, {2, 5, 4})}; c.outputs = {T(f, {2, 8, 4})}; c.attrs["axis"] = int64_t{1}; dump(c, "concat" + F);
    KernelSpec sl; sl.family = "slice"; sl.inputs = {T(f, {4, 10})}; sl.outputs = {T(f, {2, 4})}; sl.attrs["slice_starts"] = std::vector<int64_t>{1, 9}; sl.attrs["slice_ends"] = std::vector<int64_t>{3, 1}; sl.attrs["slice_axes"] = std::vector<int64_t>{0, 1}; sl.attrs["slice_steps"] = std::vector<int64_t>{1, -2}; dump(sl, "slice" + F);
    KernelSpec pd; pd.family = "pad"; pd.inputs = {T(f, {3, 4})}; pd.outputs = {T(f, {5, 7})}; pd.attrs["pad_pads"] = std::vector<int64_t>{1, 2, 1, 1}; pd.attrs["mode"] = std::string("reflect"); dump(pd, "pad_reflect" + F);
    pd.attrs["mode"] = std::string("constant"); pd.attrs["pad_value"] = 1.5f; dump(pd, "pad_const" + F);
    KernelSpec ex; ex.family = "expand"; ex.inputs = {T(f, {3, 1})}; ex.outputs = {T(f, {2, 3, 4})}; dump(ex, "expand" + F);
    KernelSpec ap; ap.family = "avgpool"; ap.inputs = {T(f, {1, 2, 7, 6})}; ap.outputs = {T(f, {1, 2, 4, 3})}; ap.attrs["kernel_shape"] = std::vector<int64_t>{3, 3}; ap.attrs["strides"] = std::vector<int64_t>{2, 2}; ap.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 0}; dump(ap, "avgpool" + F);
    ap.attrs["count_include_pad"] = int64_t{1}; dump(ap, "avgpool_incl" + F);
    KernelSpec gm; gm.family = "globalmaxpool"; gm.inputs = {T(f, {2, 3, 5, 5})}; gm.outputs = {T(f, {2, 3, 1, 1})}; dump(gm, "globalmax" + F);
    KernelSpec bn; bn.family = "batchnorm"; bn.inputs = {T(f, {2, 3, 4, 4}), T(f, {3}), T(f, {3}), T(f, {3}), T(f, {3})}; bn.outputs = {T(f, {2, 3, 4, 4})}; dump(bn, "batchnorm" + F);
    KernelSpec mm; mm.family = "matmul"; mm.inputs = {T(f, {2, 1, 70, 33}), T(f, {3, 33, 65})}; mm.outputs = {T(f, {2, 3, 70, 65})}; dump(mm, "matmul_bcast" + F);
    KernelSpec ge; ge.family = "matmul"; ge.inputs = {T(f, {33, 70}), T(f, {65, 33}), T(f, {65})}; ge.outputs = {T(f, {70, 65})}; ge.attrs["gemm"] = int64_t{1}; ge.attrs["transA"] = int64_t{1}; ge.attrs["transB"] = int64_t{1}; ge.attrs["alpha"] = 0.5f; ge.attrs["beta"] = 2.0f; dump(ge, "gemm_tt" + F);
    KernelSpec cv; cv.family = "conv"; cv.inputs = {T(f, {2, 4, 9, 8}), T(f, {6, 2, 3, 3}), T(f, {6})}; cv.outputs = {T(f, {2, 6, 5, 4})}; cv.attrs["group"] = int64_t{2}; cv.attrs["strides"] = std::vector<int64_t>{2, 2}; cv.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 0}; dump(cv, "conv_group" + F);
    KernelSpec ln; ln.family = "layernorm"; ln.inputs = {T(f, {3, 300}), T(f, {300}), T(f, {300})}; ln.outputs = {T(f, {3, 300})}; dump(ln, "layernorm300" + F);
    // LSTM: every optional input, both directions, Y; then a forward Y_h and a reverse Y_c with
    // more hidden units than a warp has lanes.
    KernelSpec ls; ls.family = "lstm"; ls.inputs = {T(f, {5, 2, 7}), T(f, {2, 20, 7}), T(f, {2, 20, 5}), T(f, {2, 40}), T(DType::I32, {2}), T(f, {2, 2, 5}), T(f, {2, 2, 5}), T(f, {2, 15})}; ls.outputs = {T(f, {5, 2, 2, 5})}; ls.attrs["direction"] = std::string("bidirectional"); ls.attrs["lstm_inputs"] = int64_t{0xf8}; ls.attrs["lstm_outputs"] = int64_t{1}; dump(ls, "lstm_bidir_all" + F);
    KernelSpec l2; l2.family = "lstm"; l2.inputs = {T(f, {4, 3, 40}), T(f, {1, 132, 40}), T(f, {1, 132, 33})}; l2.outputs = {T(f, {1, 3, 33})}; l2.attrs["lstm_outputs"] = int64_t{2}; dump(l2, "lstm_fwd_yh" + F);
    l2.attrs["direction"] = std::string("reverse"); l2.attrs["lstm_outputs"] = int64_t{4}; dump(l2, "lstm_rev_yc" + F);
    KernelSpec tr; tr.family = "transpose"; tr.inputs = {T(f, {2, 3, 4, 5})}; tr.outputs = {T(f, {4, 2, 5, 3})}; tr.attrs["perm"] = std::vector<int64_t>{2, 0, 3, 1}; dump(tr, "transpose" + F);
  }
  // Attention with a scale and a per-key mask as its epilogue, BF16 probabilities, O written
  // through a transpose ([B, Sq, H, Dv]).
  {
    KernelSpec at; at.family = "attention";
    at.inputs = {T(DType::F32, {2, 3, 5, 8}), T(DType::F32, {2, 3, 8, 7}), T(DType::F32, {2, 3, 7, 6}), T(DType::F32, {1}), T(DType::F32, {2, 1, 1, 7})};
    at.outputs = {T(DType::F32, {2, 5, 3, 6})};
    at.attrs["o_perm"] = std::vector<int64_t>{0, 2, 1, 3};
    at.attrs["score_format"] = std::string("f32"); at.attrs["prob_format"] = std::string("bf16");
    at.epilogue = {ElementwiseStep{"Mul", {kProducerResult, 3}, {}, DType::F32}, ElementwiseStep{"Add", {-1, 4}, {}, DType::F32}};
    at.epilogue_inputs = 2;
    dump(at, "attention_mask_operm");
  }
  // INT8 MatMul (v_dot4 words): signed, unsigned and mixed operands, odd K, batch broadcast.
  for (auto [a, b, y] : {std::tuple{DType::I8, DType::I8, DType::I32}, std::tuple{DType::U8, DType::U8, DType::F32},
                         std::tuple{DType::U8, DType::I8, DType::F32}}) {
    const std::string F = "/" + std::string(dtype_name(a)) + std::string(dtype_name(b));
    const char* at = a == DType::U8 ? "unsigned char" : "signed char";
    const char* bt = b == DType::U8 ? "unsigned char" : "signed char";
    const char* yt = y == DType::I32 ? "int" : "float";
    const std::string oracle = std::string("void* const* args, long long b0, long long e0) {\n") +
        "  const " + at + "* A = args[0]; const " + bt + "* B = args[1]; " + yt + "* Y = args[2];\n"
        "  for (int x = 0; x < 2; ++x) for (int z = 0; z < 3; ++z) for (int i = 0; i < 70; ++i) for (int j = 0; j < 65; ++j) {\n"
        "    long long acc = 0;\n"
        "    for (int k = 0; k < 37; ++k) acc += (long long)A[(x * 70 + i) * 37 + k] * B[(z * 37 + k) * 65 + j];\n"
        "    Y[((x * 3 + z) * 70 + i) * 65 + j] = (" + yt + ")acc;\n  }\n}\n";
    KernelSpec mi; mi.family = "matmul"; mi.inputs = {T(a, {2, 1, 70, 37}), T(b, {3, 37, 65})}; mi.outputs = {T(y, {2, 3, 70, 65})}; dump(mi, "matmul_int8" + F, oracle);
  }
  std::cerr << n << " kernels\n";
}
