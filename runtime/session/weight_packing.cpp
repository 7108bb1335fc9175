#include "runtime/session/weight_packing.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "hpf/calibration.hpp"
#include "hpf/log.hpp"
#include "jit/codegen/c_codegen.hpp"
#include "jit/codegen/c_helpers.hpp"
#include "jit/codegen/conv_packing.hpp"
#include "runtime/session/weight_cache.hpp"

namespace hpf {
namespace {

constexpr int64_t kPanel = 16;
// The deepest K the AMX kernel takes (its 32-row A block, 64 * K bytes, is on the stack).
constexpr int64_t kMaxAmxK = 4096;

// The signed integer of element i of quantised storage `q` (I8 bytes, I16 words or I4 nibbles).
int32_t stored_int(const std::vector<std::byte>& q, DType t, int64_t i) {
  if (t == DType::I8) return static_cast<int8_t>(std::to_integer<uint8_t>(q[static_cast<size_t>(i)]));
  if (t == DType::I16) {
    int16_t v;
    std::memcpy(&v, q.data() + 2 * i, 2);
    return v;
  }
  const uint32_t nib = (std::to_integer<uint32_t>(q[static_cast<size_t>(i / 2)]) >> (4 * (i % 2))) & 0xF;
  return static_cast<int32_t>((nib ^ 8u) - 8u);
}

// INT8 (or, `wide`, I16) values v(k, n) of a [K, N] weight in matmul_i8's order,
// [P][ceil(K/4)][16][4] (K and the columns past N padded with zeros); `sums` gets each column's
// sum (I32 [P*16]), `max_abs` the largest |value|.
Tensor pack_vnni(int64_t K, int64_t N, const std::function<int32_t(int64_t, int64_t)>& v, Tensor& sums, int32_t& max_abs,
                 bool wide = false) {
  const int64_t P = (N + kPanel - 1) / kPanel, KG = (K + 3) / 4, es = wide ? 2 : 1;
  Tensor data(DType::U8, {P * KG * kPanel * 4 * es});
  sums = Tensor(DType::I32, {P * kPanel});
  std::byte* d = data.bytes().data();
  auto* cs = reinterpret_cast<int32_t*>(sums.bytes().data());
  std::memset(d, 0, data.nbytes());
  max_abs = 0;
  for (int64_t n = 0; n < P * kPanel; ++n) {
    int32_t sum = 0;
    for (int64_t k = 0; n < N && k < K; ++k) {
      const int32_t x = v(k, n);
      const int64_t at = (((n / kPanel) * KG + k / 4) * kPanel + n % kPanel) * 4 + k % 4;
      if (wide) {
        const auto h = static_cast<int16_t>(x);
        std::memcpy(d + 2 * at, &h, 2);
      } else {
        d[at] = static_cast<std::byte>(static_cast<int8_t>(x));
      }
      sum += x;
      max_abs = std::max(max_abs, x < 0 ? -x : x);
    }
    cs[n] = sum;
  }
  return data;
}

// F32 scales as BF16 when every one is a BF16 value (the low 16 bits zero; as int4_weight_params
// chooses them), else as they are: the INT4 GEMV then reads 2 bytes per group and column instead
// of 4 (a fifth of its bytes with groups of 32).
Tensor bf16_if_exact(Tensor scales) {
  const auto* f = reinterpret_cast<const uint32_t*>(scales.bytes().data());
  const auto n = static_cast<size_t>(scales.numel());
  for (size_t i = 0; i < n; ++i)
    if ((f[i] & 0xFFFFu) != 0) return scales;
  Tensor b(DType::BF16, scales.shape());
  auto* d = reinterpret_cast<uint16_t*>(b.bytes().data());
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint16_t>(f[i] >> 16);
  return b;
}

}  // namespace

int64_t packed_unit(int64_t p, int64_t b, int64_t nb, int64_t panels) {
  const int64_t item = p / 4, npi = std::min<int64_t>(4, panels - 4 * item);
  return item * 4 * nb + b * npi + p % 4;
}

int int4_group_for(int64_t k, int wanted) {
  int g = std::max(wanted, 1);
  while (g > 1 && k % g != 0) g /= 2;
  return g < 8 ? static_cast<int>(k) : g;
}

Expected<PackedWeights> pack_weights(const Tensor& b, bool trans_b, const std::string& format, const QuantParams* q) {
  if (b.dtype() != DType::F32 || b.rank() != 2)
    return Status::invalid("pack_weights: expected a 2-D F32 weight, got " + std::string(dtype_name(b.dtype())) +
                           shape_string(b.shape()));
  PackedWeights pw;
  pw.format = format;
  pw.k = trans_b ? b.shape()[1] : b.shape()[0];
  pw.n = trans_b ? b.shape()[0] : b.shape()[1];
  const int64_t K = pw.k, N = pw.n, P = (N + kPanel - 1) / kPanel;
  const std::vector<float> x = b.to_f32();
  auto at = [&](int64_t k, int64_t n) { return trans_b ? n * K + k : k * N + n; };  // flat index in b
  if (format == "f32" || format == "bf16" || format == "f16") {
    const DType t = format == "f32" ? DType::F32 : format == "bf16" ? DType::BF16 : DType::F16;
    const Tensor c = b.cast(t);  // the rounding the emulation applies to the weight
    const size_t es = static_cast<size_t>(bit_width(t) / 8);
    pw.data = Tensor(DType::U8, {P * K * kPanel * static_cast<int64_t>(es)});
    std::byte* d = pw.data.bytes().data();
    const std::byte* s = c.bytes().data();
    for (int64_t p = 0; p < P; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < kPanel; ++j) {
          const int64_t n = p * kPanel + j;
          std::byte* o = d + ((p * K + k) * kPanel + j) * static_cast<int64_t>(es);
          if (n < N) std::memcpy(o, s + at(k, n) * static_cast<int64_t>(es), es);
          else std::memset(o, 0, es);
        }
    pw.scales = Tensor(DType::F32, {1});
    return pw;
  }
  if (format == "bf16t") {  // AMX tile pairs (c_matmul_amx.cpp): u16 [P2][Kt/2][16][2]
    const Tensor c = b.cast(DType::BF16);
    const auto* src = reinterpret_cast<const uint16_t*>(c.bytes().data());
    const int64_t Kt = jit::amx_bf16_padded_k(K), P2 = (P + 1) / 2 * 2;
    pw.data = Tensor(DType::U8, {P2 * Kt * kPanel * 2});
    auto* d = reinterpret_cast<uint16_t*>(pw.data.bytes().data());
    for (int64_t p = 0; p < P2; ++p)
      for (int64_t k = 0; k < Kt; ++k)
        for (int64_t j = 0; j < kPanel; ++j) {
          const int64_t n = p * kPanel + j;
          d[((p * Kt / 2 + k / 2) * kPanel + j) * 2 + k % 2] = n < N && k < K ? src[at(k, n)] : 0;
        }
    pw.scales = Tensor(DType::F32, {1});
    return pw;
  }
  if ((format != "i8" && format != "i4" && format != "i8vnni" && format != "i16vnni") || !q)
    return Status::invalid("pack_weights: format '" + format + "' needs quantisation parameters");
  const bool vnni = format == "i8vnni" || format == "i16vnni";
  const DType t = format == "i4" ? DType::I4 : format == "i16vnni" ? DType::I16 : DType::I8;
  if (q->type != t || !q->zero_points.empty() || q->scales.empty())
    return Status::unsupported("pack_weights: " + format + " weights need symmetric " + format + " parameters with scales");
  const int n_axis = trans_b ? 0 : 1, k_axis = trans_b ? 1 : 0;
  // Scale slot of element (k, n), following hpf::quantize's layouts.
  std::function<size_t(int64_t, int64_t)> slot;
  if (t != DType::I4) {
    if (q->group_size != 0) return Status::unsupported("pack_weights: i8 weights with groups");
    if (q->scales.size() == 1) slot = [](int64_t, int64_t) { return size_t{0}; };
    else if (q->axis == n_axis && static_cast<int64_t>(q->scales.size()) == N)
      slot = [](int64_t, int64_t n) { return static_cast<size_t>(n); };
    else return Status::unsupported("pack_weights: i8 scales must run along the output columns");
    pw.group = K;
  } else {
    if (q->group_size <= 0 || q->axis != k_axis || K % q->group_size != 0)
      return Status::unsupported("pack_weights: i4 weights need groups along K");
    pw.group = q->group_size;
    const int64_t G = pw.group, NG = K / G;
    if (trans_b) slot = [=](int64_t k, int64_t n) { return static_cast<size_t>(n * NG + k / G); };
    else slot = [=](int64_t k, int64_t n) { return static_cast<size_t>((k / G) * N + n); };
  }
  std::vector<std::byte> qs(storage_bytes(t, x.size()));
  HPF_RETURN_IF_ERROR(quantize(x, b.shape(), *q, qs));
  const int64_t NG = K / pw.group;
  if (vnni) {
    pw.data = pack_vnni(K, N, [&](int64_t k, int64_t n) { return stored_int(qs, t, at(k, n)); }, pw.column_sums,
                        pw.max_abs, t == DType::I16);
    // The kernel's 16-bit rows take int16_operand_qmax(K) levels: exact only with weights as narrow.
    if (t == DType::I16 && pw.max_abs > int16_operand_qmax(K))
      return Status::invalid("pack_weights: i16 weights reach " + std::to_string(pw.max_abs) + ", past " +
                             std::to_string(int16_operand_qmax(K)) + " (int16_operand_qmax of K " + std::to_string(K) + ")");
    pw.scales = Tensor(DType::F32, {P * kPanel});
    auto* sc = reinterpret_cast<float*>(pw.scales.bytes().data());
    for (int64_t n = 0; n < P * kPanel; ++n) sc[n] = n < N ? q->scales[slot(0, n)] : 0.0f;
    return pw;
  }
  // Blocks of B rows (K padded with rows of q = 0, like the columns past N): the u32 of column j
  // holds rows Bb..Bb+B-1, row Bb + r at bits (32 / B) r: i8 as its byte, i4 as q + 8. Items of
  // 4 panels interleaved (packed_unit; c_matmul_wq.cpp: one load gives B rows of 16 columns).
  const int64_t B = t == DType::I8 ? 4 : 8, KB = (K + B - 1) / B;
  pw.data = Tensor(DType::U8, {P * KB * kPanel * 4});
  pw.scales = Tensor(DType::F32, {t == DType::I8 ? P * kPanel : P * NG * kPanel});
  auto* d = reinterpret_cast<uint8_t*>(pw.data.bytes().data());
  auto* sc = reinterpret_cast<float*>(pw.scales.bytes().data());
  std::memset(sc, 0, pw.scales.nbytes());
  for (int64_t p = 0; p < P; ++p)
    for (int64_t k = 0; k < KB * B; ++k)
      for (int64_t j = 0; j < kPanel; ++j) {
        const int64_t n = p * kPanel + j;
        const int32_t v = n < N && k < K ? stored_int(qs, t, at(k, n)) : 0;
        const int64_t word = packed_unit(p, k / B, KB, P) * kPanel + j;
        if (t == DType::I8) {
          d[word * 4 + k % 4] = static_cast<uint8_t>(static_cast<int8_t>(v));
          if (n < N && k == 0) sc[p * kPanel + j] = q->scales[slot(k, n)];
        } else {
          uint8_t& byte = d[word * 4 + (k % 8) / 2];
          const auto u = static_cast<uint8_t>(v + 8);
          byte = k % 2 ? static_cast<uint8_t>((byte & 0x0F) | (u << 4)) : static_cast<uint8_t>((byte & 0xF0) | u);
          if (n < N && k < K && k % pw.group == 0)
            sc[packed_unit(p, k / pw.group, NG, P) * kPanel + j] = q->scales[slot(k, n)];
        }
      }
  if (t == DType::I4) pw.scales = bf16_if_exact(std::move(pw.scales));
  return pw;
}

Expected<PackedWeights> pack_int8_weights(const Tensor& b) {
  if (b.dtype() != DType::I8 || b.rank() != 2)
    return Status::invalid("pack_int8_weights: expected a 2-D INT8 weight, got " + std::string(dtype_name(b.dtype())) +
                           shape_string(b.shape()));
  PackedWeights pw;
  pw.format = "i8vnni";
  pw.k = b.shape()[0];
  pw.n = b.shape()[1];
  pw.group = pw.k;
  const auto* x = reinterpret_cast<const int8_t*>(b.bytes().data());
  const int64_t N = pw.n;
  pw.data = pack_vnni(pw.k, N, [&](int64_t k, int64_t n) { return int32_t{x[k * N + n]}; }, pw.column_sums, pw.max_abs);
  pw.scales = Tensor(DType::F32, {1});
  return pw;
}

namespace {

// `t` (packed bytes or scales) as an initializer of `g` under `name`, extending `storage` and
// `shapes`: the one added for an earlier node when it holds the same tensor, else a new one, named
// apart ("<base>#2<rest of name>") when the name is taken (e.g. by this node's own scales).
Expected<ValueId> add_packed(Graph& g, std::vector<DType>& storage, std::vector<std::vector<int64_t>>& shapes,
                             const std::string& base, const std::string& name, std::shared_ptr<const Tensor> t) {
  std::string unique = name;
  for (int k = 2;; ++k) {
    const std::optional<ValueId> old = g.find_value(unique);
    if (!old) break;
    if (g.value(*old).constant == t) return *old;
    unique = base + "#" + std::to_string(k) + name.substr(base.size());
  }
  HPF_ASSIGN_OR_RETURN(ValueId id, g.add_initializer(unique, t));
  storage.resize(g.values().size(), DType::F32);
  shapes.resize(g.values().size());
  storage[id] = t->dtype();
  shapes[id] = t->shape();
  return id;
}

// Parameters for `w` of node `n` under plan `p`: the plan's when it has scales, else the ones
// calibrate_plan would choose (weights need no calibration data).
// An int8 node's output is stored INT8 with one scale: its kernel fake-quantises the output with
// it (attr out_scale), as the emulation stores it.
void set_out_scale(const NodePlan* p, jit::KernelSpec& spec) {
  if (p && p->mode == Mode::int8 && p->activation_quant && p->activation_quant->type == DType::I8 &&
      p->activation_quant->scales.size() == 1 && p->activation_quant->zero_points.empty())
    spec.attrs["out_scale"] = p->activation_quant->scales[0];
}

// The epilogue of a rewritten step reads its operands `shift` inputs further on.
void shift_epilogue(jit::KernelSpec& spec, int shift) {
  for (jit::ElementwiseStep& e : spec.epilogue)
    for (int& o : e.operands)
      if (o >= 0) o += shift;
}

Expected<QuantParams> weight_params_of(const Node& n, const NodePlan& p, const Tensor& w, bool trans_b) {
  const QuantParams& q = *p.weight_quant;
  if (!q.scales.empty()) return q;
  HPF_ASSIGN_OR_RETURN(WeightAxes axes, weight_axes(n.op, 1, w.rank(), trans_b));
  if (q.type == DType::I8) return int8_weight_params(w, axes.output);
  if (q.type == DType::I16) return int16_weight_params(w, axes.output, int16_operand_qmax(w.shape()[axes.reduction]));
  const int wanted = q.group_size > 0 ? q.group_size : 32;
  return int4_weight_params(w, axes.reduction, int4_group_for(w.shape()[axes.reduction], wanted));
}

}  // namespace

Expected<WeightLoweringStats> lower_weight_quantised_matmuls(Graph& g, const Plan* plan, std::vector<DType>& storage,
                                                             std::vector<std::vector<int64_t>>& shapes,
                                                             std::vector<jit::LoweredStep>& steps,
                                                             WeightCache* cache, bool amx_bf16, bool amx_int8) {
  auto* packed_cache = dynamic_cast<SharedWeights*>(cache);
  std::map<std::string, std::shared_ptr<const PackedWeights>> packed_here;
  WeightLoweringStats stats;
  for (jit::LoweredStep& st : steps) {
    if (st.kind != jit::LoweredStep::Kind::kernel || st.spec.family != "matmul" || st.fused.empty()) continue;
    // The MatMul is the step's first node; consumers fused into its epilogue come after it.
    const Node n = g.node(st.fused.front());  // a copy: adding initializers may move the node table
    const size_t own_inputs = st.inputs.size() - static_cast<size_t>(st.spec.epilogue_inputs);
    const NodePlan* p = plan ? plan->find(n.name) : nullptr;
    if (n.inputs.size() < 2) continue;
    const Tensor* w = g.constant(n.inputs[1]);
    if (!w || w->dtype() != DType::F32 || w->rank() != 2 || n.flag("transA")) continue;
    const bool gemm = n.op == "Gemm", trans_b = gemm && n.flag("transB");
    std::string format;
    std::optional<QuantParams> q;
    float a_scale = 0;       // W8A8, static: the INT8 scale A is held in
    bool a_dynamic = false;  // W8A8, dynamic: A quantised per row by the kernel
    bool a_u7 = false;       // ... in asymmetric 7-bit rows
    bool a_s16 = false;      // ... in 16-bit rows (W8A16)
    if (p && p->weight_quant &&
        (p->weight_quant->type == DType::I8 || p->weight_quant->type == DType::I16 || p->weight_quant->type == DType::I4)) {
      auto params = weight_params_of(n, *p, *w, trans_b);
      if (!params.ok()) {
        log(LogLevel::warn, "node '" + n.name + "': " + params.status().message() + "; its weights stay f32");
        continue;
      }
      q = std::move(params).value();
      format = q->type == DType::I8 ? "i8" : q->type == DType::I16 ? "i16" : "i4";
      if (format != "i4") {
        const Int8Input in = int8_input(g, *plan, n);
        a_scale = in.static_scale;
        a_dynamic = in.dynamic;
        a_u7 = in.dynamic && in.rows == RowQuant::u7;
        a_s16 = in.dynamic && in.rows == RowQuant::s16;
        if (a_scale > 0 || a_dynamic) format += "vnni";
      }
      if (format == "i16") {  // 16-bit weights go with 16-bit rows only (int8_input: not a GEMV)
        log(LogLevel::warn, "node '" + n.name + "': i16 weights need rows quantised at run time; its weights stay f32");
        continue;
      }
    } else if (p && (p->weights == DType::BF16 || p->weights == DType::F16)) {
      format = p->weights == DType::BF16 ? "bf16" : "f16";
      // BF16 activations too, on a device with AMX: the tile kernel (its A block on the stack).
      const int64_t k = trans_b ? w->shape()[1] : w->shape()[0];
      if (format == "bf16" && amx_bf16 && st.spec.inputs[0].dtype == DType::BF16 &&
          jit::amx_bf16_padded_k(k) <= kMaxAmxK)
        format = "bf16t";
    } else if (storage[n.inputs[1]] == DType::F32 &&
               (!p || p->mode == Mode::fp32 || p->mode == Mode::auto_)) {
      format = "f32";  // FP32 weights packed once: the GEMM streams contiguous panels, the GEMV its own kernel
    } else {
      continue;
    }
    // The cache key: the initializer, how it is read, the format and the exact scales.
    std::string key = g.value(n.inputs[1]).name + "|" + shape_string(w->shape()) + "|" + (trans_b ? "t" : "n") + "|" + format;
    if (q) {
      key += "|" + std::to_string(static_cast<int>(q->type)) + "/" + std::to_string(q->axis) + "/" +
             std::to_string(q->group_size) + "/";
      key.append(reinterpret_cast<const char*>(q->scales.data()), q->scales.size() * sizeof(float));
    }
    // A weight read by several nodes the same way is packed once.
    std::shared_ptr<const PackedWeights>& packed = packed_here[key];
    if (!packed && packed_cache) packed = packed_cache->find_packed(key);
    if (!packed) {
      auto made = pack_weights(*w, trans_b, format, q ? &*q : nullptr);
      if (!made.ok()) {
        log(LogLevel::warn, "node '" + n.name + "': " + made.status().message() + "; its weights stay f32");
        continue;
      }
      packed = packed_cache ? packed_cache->put_packed(key, std::move(made).value())
                            : std::make_shared<const PackedWeights>(std::move(made).value());
    }
    const std::string base = g.value(n.inputs[1]).name + "/" + format;
    auto add = [&](const std::string& name, std::shared_ptr<const Tensor> t) {
      return add_packed(g, storage, shapes, base, name, std::move(t));
    };
    auto shared = [&](const Tensor& member) { return std::shared_ptr<const Tensor>(packed, &member); };
    std::shared_ptr<const Tensor> scales = shared(packed->scales);
    if (a_scale > 0) {  // s_a * s_w[n]: one multiply per output in the kernel
      Tensor s = packed->scales;
      for (float& x : std::span<float>(reinterpret_cast<float*>(s.bytes().data()), static_cast<size_t>(s.numel())))
        x *= a_scale;
      scales = std::make_shared<const Tensor>(std::move(s));
    }
    HPF_ASSIGN_OR_RETURN(ValueId wid, add(base + "/packed", shared(packed->data)));
    HPF_ASSIGN_OR_RETURN(ValueId sid, add(base + "/scales", scales));
    jit::KernelSpec spec;
    const bool w8a8 = a_scale > 0 || a_dynamic;
    spec.family = w8a8 ? "matmul_i8" : "matmul_wq";
    spec.inputs = {st.spec.inputs[0], {DType::U8, shapes[wid]}, {scales->dtype(), shapes[sid]}};
    std::vector<ValueId> ins = {st.inputs[0], wid, sid};
    if (w8a8) {
      HPF_ASSIGN_OR_RETURN(ValueId zid, add(base + "/colsums", shared(packed->column_sums)));
      spec.inputs.push_back({DType::I32, shapes[zid]});
      ins.push_back(zid);
      if (a_dynamic)
        spec.attrs["a_dynamic"] = int64_t{1};
      else
        spec.attrs["a_scale"] = a_scale;
      if (a_u7) spec.attrs["a_u7"] = int64_t{1};
      if (a_s16) spec.attrs["a_s16"] = int64_t{1};
      if (format == "i16vnni") spec.attrs["w16"] = int64_t{1};
      spec.attrs["w_max_abs"] = int64_t{packed->max_abs};
      if (amx_int8) spec.attrs["amx"] = int64_t{1};
    }
    if (gemm && own_inputs > 2) {
      spec.inputs.push_back(st.spec.inputs[2]);
      ins.push_back(st.inputs[2]);
      auto f = [&](const char* a, float d) {
        auto it = n.attrs.find(a);
        if (it == n.attrs.end()) return d;
        if (auto* v = std::get_if<float>(&it->second)) return *v;
        if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<float>(*v);
        return d;
      };
      spec.attrs["beta"] = f("beta", 1.0f);
    }
    if (gemm) {
      auto it = n.attrs.find("alpha");
      if (it != n.attrs.end()) spec.attrs["alpha"] = it->second;
    }
    // The epilogue and its inputs move along, after the new kernel's own inputs.
    const int shift = static_cast<int>(spec.inputs.size()) - static_cast<int>(own_inputs);
    for (size_t k = own_inputs; k < st.inputs.size(); ++k) {
      spec.inputs.push_back(st.spec.inputs[k]);
      ins.push_back(st.inputs[k]);
    }
    spec.epilogue = st.spec.epilogue;
    spec.epilogue_inputs = st.spec.epilogue_inputs;
    shift_epilogue(spec, shift);
    spec.outputs = st.spec.outputs;
    spec.attrs["wformat"] = format;
    spec.attrs["k"] = packed->k;
    spec.attrs["n"] = packed->n;
    spec.attrs["group"] = packed->group;
    set_out_scale(p, spec);
    st.spec = std::move(spec);
    st.inputs = std::move(ins);
    ++stats.kernels;
    stats.nodes.push_back(n.name);
    if (w8a8) stats.int8_nodes.push_back(n.name);
  }
  return stats;
}

Expected<std::vector<std::string>> lower_integer_matmuls(Graph& g, std::vector<DType>& storage,
                                                        std::vector<std::vector<int64_t>>& shapes,
                                                        std::vector<jit::LoweredStep>& steps, WeightCache* cache,
                                                        bool amx_int8) {
  auto* packed_cache = dynamic_cast<SharedWeights*>(cache);
  std::vector<std::string> rewritten;
  for (jit::LoweredStep& st : steps) {
    if (st.kind != jit::LoweredStep::Kind::kernel || st.spec.family != "matmul_integer" || st.fused.size() != 1 ||
        st.inputs.size() < 2)
      continue;
    const Node n = g.node(st.fused.front());  // a copy: adding initializers may move the node table
    const Tensor* w = g.constant(st.inputs[1]);
    const jit::TensorDesc& a = st.spec.inputs[0];
    const bool a_zp = st.inputs.size() > 2, b_zp = st.inputs.size() > 3;
    const Tensor* wz = b_zp ? g.constant(st.inputs[3]) : nullptr;
    auto zero = [](const Tensor* t) {
      if (!t) return false;
      const std::vector<float> v = t->to_f32();
      return std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; });
    };
    if (!w || w->dtype() != DType::I8 || w->rank() != 2 || (a.dtype != DType::U8 && a.dtype != DType::I8) ||
        a.shape.empty() || a.shape.back() != w->shape()[0] || st.spec.outputs[0].dtype != DType::I32 ||
        (a_zp && (st.spec.inputs[2].dtype != a.dtype || numel(st.spec.inputs[2].shape) != 1)) || (b_zp && !zero(wz))) {
      log(LogLevel::info, "node '" + n.name + "': MatMulInteger runs on the reference (the kernel takes a constant 2-D "
                          "INT8 weight with zero point 0 and a scalar zero point for A)");
      continue;
    }
    const std::string key = g.value(st.inputs[1]).name + "|" + shape_string(w->shape()) + "|matmul_integer";
    std::shared_ptr<const PackedWeights> packed = packed_cache ? packed_cache->find_packed(key) : nullptr;
    if (!packed) {
      HPF_ASSIGN_OR_RETURN(PackedWeights pw, pack_int8_weights(*w));
      packed = packed_cache ? packed_cache->put_packed(key, std::move(pw)) : std::make_shared<const PackedWeights>(std::move(pw));
    }
    const std::string base = g.value(st.inputs[1]).name + "/i8vnni";
    auto add = [&](const std::string& name, const Tensor& member) {
      return add_packed(g, storage, shapes, base, name, std::shared_ptr<const Tensor>(packed, &member));
    };
    HPF_ASSIGN_OR_RETURN(ValueId wid, add(base + "/packed", packed->data));
    HPF_ASSIGN_OR_RETURN(ValueId zid, add(base + "/colsums", packed->column_sums));
    jit::KernelSpec spec;
    spec.family = "matmul_i8";
    spec.inputs = {a, {DType::U8, shapes[wid]}, {DType::I32, shapes[zid]}};
    std::vector<ValueId> ins = {st.inputs[0], wid, zid};
    if (a_zp) {
      spec.inputs.push_back(st.spec.inputs[2]);
      ins.push_back(st.inputs[2]);
    }
    spec.outputs = st.spec.outputs;
    spec.attrs["k"] = packed->k;
    spec.attrs["n"] = packed->n;
    spec.attrs["w_max_abs"] = int64_t{packed->max_abs};
    if (amx_int8) spec.attrs["amx"] = int64_t{1};
    st.spec = std::move(spec);
    st.inputs = std::move(ins);
    rewritten.push_back(n.name);
  }
  return rewritten;
}

Expected<std::vector<std::string>> lower_int8_convs(Graph& g, const Plan* plan, std::vector<DType>& storage,
                                                    std::vector<std::vector<int64_t>>& shapes,
                                                    std::vector<jit::LoweredStep>& steps, WeightCache* cache) {
  auto* packed_cache = dynamic_cast<SharedWeights*>(cache);
  std::vector<std::string> rewritten;
  if (!plan) return rewritten;
  for (jit::LoweredStep& st : steps) {
    if (st.kind != jit::LoweredStep::Kind::kernel || st.spec.family != "conv" || st.fused.empty() ||
        st.inputs.size() < 2)
      continue;
    const Node n = g.node(st.fused.front());  // a copy: adding initializers may move the node table
    const NodePlan* p = plan->find(n.name);
    if (n.op != "Conv" || !p || p->mode != Mode::int8 || !p->input_quant || !p->weight_quant ||
        p->weight_quant->type != DType::I8)
      continue;
    const QuantParams& iq = *p->input_quant;
    const Tensor* w = g.constant(n.inputs[1]);
    if (iq.type != DType::I8 || iq.scales.size() != 1 || !(iq.scales[0] > 0) ||
        std::any_of(iq.zero_points.begin(), iq.zero_points.end(), [](int32_t z) { return z != 0; }) || !w ||
        !is_float(w->dtype()) || (w->rank() != 3 && w->rank() != 4))
      return Status::invalid("node '" + n.name + "': an int8 Conv needs a calibrated symmetric per-tensor input scale "
                             "and a constant 1-D or 2-D float weight");
    const int64_t group = jit::attr_i(st.spec.attrs, "group", 1), M = w->shape()[0];
    HPF_ASSIGN_OR_RETURN(QuantParams q, weight_params_of(n, *p, *w, false));
    if (q.type != DType::I8 || !q.zero_points.empty() || (q.scales.size() != 1 && static_cast<int64_t>(q.scales.size()) != M) ||
        (q.scales.size() != 1 && q.axis != 0))
      return Status::invalid("node '" + n.name + "': int8 Conv weights need symmetric scales per tensor or per output channel");
    const float a_scale = iq.scales[0];
    std::string key = g.value(n.inputs[1]).name + "|" + shape_string(w->shape()) + "|conv_i8|" + std::to_string(group) + "|";
    key.append(reinterpret_cast<const char*>(q.scales.data()), q.scales.size() * sizeof(float));
    key.append(reinterpret_cast<const char*>(&a_scale), sizeof a_scale);
    std::shared_ptr<const PackedWeights> packed = packed_cache ? packed_cache->find_packed(key) : nullptr;
    if (!packed) {
      const std::vector<float> x = w->to_f32();
      std::vector<std::byte> qs(x.size());
      HPF_RETURN_IF_ERROR(quantize(x, w->shape(), q, qs).with_context("node '" + n.name + "'"));
      PackedWeights pw;
      pw.format = "conv_i8";
      pw.data = Tensor(DType::U8, {jit::conv_i8_packed_bytes(w->shape(), group)});
      pw.scales = Tensor(DType::F32, {M});
      pw.column_sums = Tensor(DType::I32, {M});
      auto* sums = reinterpret_cast<int32_t*>(pw.column_sums.bytes().data());
      jit::pack_conv_weights_i8(w->shape(), group, reinterpret_cast<const int8_t*>(qs.data()),
                                reinterpret_cast<int8_t*>(pw.data.bytes().data()), sums);
      auto* sc = reinterpret_cast<float*>(pw.scales.bytes().data());
      for (int64_t m = 0; m < M; ++m) {
        sc[m] = a_scale * q.scales[q.scales.size() == 1 ? 0 : static_cast<size_t>(m)];  // s_a * s_w[m]
        sums[m] *= 128;  // the u8 zero point's share (the kernel ignores it where it stores q signed)
      }
      pw.max_abs = 0;
      for (std::byte b : qs) pw.max_abs = std::max(pw.max_abs, std::abs(int32_t{static_cast<int8_t>(b)}));
      packed = packed_cache ? packed_cache->put_packed(key, std::move(pw)) : std::make_shared<const PackedWeights>(std::move(pw));
    }
    const std::string base = g.value(n.inputs[1]).name + "/conv_i8";
    auto add = [&](const std::string& name, const Tensor& member) {
      return add_packed(g, storage, shapes, base, name, std::shared_ptr<const Tensor>(packed, &member));
    };
    HPF_ASSIGN_OR_RETURN(ValueId wid, add(base + "/packed", packed->data));
    HPF_ASSIGN_OR_RETURN(ValueId sid, add(base + "/scales", packed->scales));
    HPF_ASSIGN_OR_RETURN(ValueId zid, add(base + "/row_sums", packed->column_sums));
    jit::KernelSpec spec = st.spec;
    spec.family = "conv_i8";
    spec.inputs = {st.spec.inputs[0], {DType::U8, shapes[wid]}, {DType::F32, shapes[sid]}, {DType::I32, shapes[zid]}};
    std::vector<ValueId> ins = {st.inputs[0], wid, sid, zid};
    for (size_t k = 2; k < st.inputs.size(); ++k) {  // the bias, then the epilogue's operands
      spec.inputs.push_back(st.spec.inputs[k]);
      ins.push_back(st.inputs[k]);
    }
    shift_epilogue(spec, 2);  // W became W, S, Z
    spec.attrs["w_shape"] = w->shape();
    spec.attrs["a_scale"] = a_scale;
    spec.attrs["w_max_abs"] = int64_t{packed->max_abs};
    if (never_negative(g, n.inputs[0])) spec.attrs["a_nonneg"] = int64_t{1};
    set_out_scale(p, spec);
    st.spec = std::move(spec);
    st.inputs = std::move(ins);
    rewritten.push_back(n.name);
  }
  // An int8 Conv no kernel step holds alone (one left to the reference, say) computes in FP32:
  // its outputs then differ from the plan's emulation.
  for (const NodePlan& p : plan->nodes)
    if (p.op == "Conv" && p.mode == Mode::int8 && p.input_quant && g.find_node(p.name) &&
        std::find(rewritten.begin(), rewritten.end(), p.name) == rewritten.end())
      log(LogLevel::warn, "node '" + p.name + "': int8 Conv runs in FP32 here (it is not a Conv kernel of its own)");
  return rewritten;
}

Expected<std::vector<std::string>> lower_packed_convs(Graph& g, std::vector<DType>& storage, std::vector<std::vector<int64_t>>& shapes,
                                     std::vector<jit::LoweredStep>& steps, WeightCache* cache, bool amx_bf16) {
  auto* packed_cache = dynamic_cast<SharedWeights*>(cache);
  std::map<std::pair<ValueId, std::string>, ValueId> done;  // (weight, layout) -> its packed initializer
  std::vector<std::string> rewritten;
  for (jit::LoweredStep& st : steps) {
    if (st.kind != jit::LoweredStep::Kind::kernel || st.inputs.size() < 2 || st.fused.empty() ||
        !jit::conv_takes_packed_weights(st.spec))
      continue;
    const ValueId wv = st.inputs[1];
    const Tensor* w = g.constant(wv);
    const DType wt = st.spec.inputs[1].dtype;  // F32, or BF16 (the AMX kernel, else widened)
    if (!w || (w->dtype() != DType::F32 && w->dtype() != wt) || storage[wv] != wt) continue;
    // BF16 weights off AMX: the BF16 values widened to F32 (exact) for the FP32 kernels, which
    // convert a 16-bit input as they read it. (Unpacked, the generic kernel ran ResNet-50's BF16
    // plan at 59-67 ms against FP32's 45-48 on two Zen 3 cores.)
    const bool widened = jit::conv_bf16_as_f32(st.spec, amx_bf16);
    jit::KernelSpec as_f32 = st.spec;
    if (widened) as_f32.inputs[1].dtype = DType::F32;
    const jit::KernelSpec spec = jit::conv_spec_with_packed_weights(as_f32);
    const std::string layout = std::string(widened ? "bf16_f32_" : "") + jit::attr_s(spec.attrs, "w_layout");
    auto it = done.find({wv, layout});
    if (it == done.end()) {
      const std::string name = g.value(wv).name + "/conv_" + layout;
      const std::string key = name + "|" + shape_string(st.spec.inputs[1].shape) + "|" +
                              std::to_string(jit::attr_i(spec.attrs, "group", 1));
      std::shared_ptr<const PackedWeights> packed = packed_cache ? packed_cache->find_packed(key) : nullptr;
      if (!packed) {
        PackedWeights p;
        p.format = std::string(wt == DType::BF16 && !widened ? "conv_bf16_" : "conv_f32_") + layout;
        p.data = Tensor(spec.inputs[1].dtype, spec.inputs[1].shape);
        if (widened) {
          const Tensor c = w->cast(DType::BF16).cast(DType::F32);  // the storage rounding, widened
          jit::pack_conv_weights(spec, reinterpret_cast<const float*>(c.bytes().data()),
                                 reinterpret_cast<float*>(p.data.bytes().data()));
        } else if (wt == DType::BF16) {
          const Tensor c = w->cast(DType::BF16);  // the storage conversion's rounding
          jit::pack_conv_weights(spec, reinterpret_cast<const uint16_t*>(c.bytes().data()),
                                 reinterpret_cast<uint16_t*>(p.data.bytes().data()));
        } else {
          jit::pack_conv_weights(spec, reinterpret_cast<const float*>(w->bytes().data()),
                                 reinterpret_cast<float*>(p.data.bytes().data()));
        }
        packed = packed_cache ? packed_cache->put_packed(key, std::move(p))
                              : std::make_shared<const PackedWeights>(std::move(p));
      }
      HPF_ASSIGN_OR_RETURN(ValueId id, add_packed(g, storage, shapes, name, name,
                                                  std::shared_ptr<const Tensor>(packed, &packed->data)));
      it = done.emplace(std::make_pair(wv, layout), id).first;
    }
    st.spec = spec;
    st.inputs[1] = it->second;
    rewritten.push_back(g.node(st.fused.front()).name);
  }
  return rewritten;
}

Expected<std::vector<std::string>> lower_quantised_gathers(Graph& g, const Plan* plan, std::vector<DType>& storage,
                                                           std::vector<std::vector<int64_t>>& shapes,
                                                           std::vector<jit::LoweredStep>& steps, WeightCache* cache) {
  auto* packed_cache = dynamic_cast<SharedWeights*>(cache);
  std::vector<std::string> rewritten;
  if (!plan) return rewritten;
  for (jit::LoweredStep& st : steps) {
    if (st.kind != jit::LoweredStep::Kind::kernel || st.spec.family != "gather" || st.fused.size() != 1 ||
        st.inputs.size() != 2)
      continue;
    const Node n = g.node(st.fused.front());  // a copy: adding initializers may move the node table
    const NodePlan* p = plan->find(n.name);
    if (!p || !p->weight_quant || (p->weight_quant->type != DType::I8 && p->weight_quant->type != DType::I4)) continue;
    const Tensor* w = g.constant(st.inputs[0]);
    if (!w || w->dtype() != DType::F32 || w->rank() != 2 || jit::attr_i(st.spec.attrs, "axis", 0) != 0) continue;
    const QuantParams* given = &*p->weight_quant;
    QuantParams q = *given;
    if (q.scales.empty()) {  // as calibrate_plan chooses them: INT8 per row, INT4 groups along the width
      auto made = q.type == DType::I8 ? int8_weight_params(*w, 0)
                                      : int4_weight_params(*w, 1, int4_group_for(w->shape()[1], q.group_size > 0 ? q.group_size : 32));
      if (!made.ok()) {
        log(LogLevel::warn, "node '" + n.name + "': " + made.status().message() + "; its table stays f32");
        continue;
      }
      q = std::move(made).value();
    }
    // One scale per run of `group` consecutive elements (row-major): INT8 per row or per tensor,
    // INT4 in groups along the width.
    const int64_t rows = w->shape()[0], width = w->shape()[1], total = rows * width;
    const int64_t count = static_cast<int64_t>(q.scales.size());
    const int64_t group = count > 0 && total % count == 0 ? total / count : 0;
    const bool layout = q.zero_points.empty() && group > 0 &&
                        (count == 1 || (q.group_size == 0 && q.axis == 0 && count == rows) ||
                         (q.group_size > 0 && (q.axis == 1 || q.axis == -1) && q.group_size == group && width % group == 0));
    if (!layout) {
      log(LogLevel::warn, "node '" + n.name + "': " + std::string(dtype_name(q.type)) +
                              " table scales in a layout the gather kernel does not read; its table stays f32");
      continue;
    }
    const std::string format = q.type == DType::I8 ? "i8" : "i4";
    std::string key = g.value(st.inputs[0]).name + "|" + shape_string(w->shape()) + "|gather_" + format + "|";
    key.append(reinterpret_cast<const char*>(q.scales.data()), q.scales.size() * sizeof(float));
    std::shared_ptr<const PackedWeights> packed = packed_cache ? packed_cache->find_packed(key) : nullptr;
    if (!packed) {
      PackedWeights pw;
      pw.format = "gather_" + format;
      pw.k = width;
      pw.n = rows;
      pw.group = group;
      pw.data = Tensor(DType::U8, {static_cast<int64_t>(storage_bytes(q.type, static_cast<size_t>(total)))});
      const std::vector<float> x = w->to_f32();
      if (Status done = quantize(x, w->shape(), q, pw.data.bytes()); !done.ok()) {
        log(LogLevel::warn, "node '" + n.name + "': " + done.message() + "; its table stays f32");
        continue;
      }
      pw.scales = *Tensor::from_f32({count}, q.scales);
      packed = packed_cache ? packed_cache->put_packed(key, std::move(pw)) : std::make_shared<const PackedWeights>(std::move(pw));
    }
    const std::string base = g.value(st.inputs[0]).name + "/gather_" + format;
    auto add = [&](const std::string& name, const Tensor& member) {
      return add_packed(g, storage, shapes, base, name, std::shared_ptr<const Tensor>(packed, &member));
    };
    HPF_ASSIGN_OR_RETURN(ValueId qid, add(base, packed->data));
    HPF_ASSIGN_OR_RETURN(ValueId sid, add(base + "/scales", packed->scales));
    jit::KernelSpec spec;
    spec.family = "gather_q";
    spec.inputs = {{DType::U8, shapes[qid]}, {DType::F32, shapes[sid]}, st.spec.inputs[1]};
    spec.outputs = st.spec.outputs;
    spec.attrs["wformat"] = format;
    spec.attrs["rows"] = rows;
    spec.attrs["width"] = width;
    spec.attrs["group"] = group;
    st.spec = std::move(spec);
    st.inputs = {qid, sid, st.inputs[1]};
    rewritten.push_back(n.name);
  }
  return rewritten;
}

}  // namespace hpf
