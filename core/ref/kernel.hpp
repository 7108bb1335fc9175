// What a reference kernel sees. Internal to core/ref.
//
// Data layout inside the interpreter: every float format is held as FP32 values (exactly the
// values its format can represent), every integer format and BOOL as int64. `dtype` is the
// logical format. Kernels compute in FP32/FP64 and write FP32 results; the interpreter rounds
// outputs to their format afterwards, so a kernel never rounds to F16/BF16/FP8 itself (except
// Cast and QuantizeLinear, whose rounding is the point).
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ir/op_table.hpp"
#include "hpf/graph.hpp"

namespace hpf::ref {

struct Buf {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> f;    // float formats
  std::vector<int64_t> i;  // integer formats and BOOL

  bool is_float() const { return hpf::is_float(dtype); }
  int64_t numel() const { return hpf::numel(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }

  static Buf floats(std::vector<int64_t> shape, DType t = DType::F32) {
    Buf b;
    b.dtype = t;
    b.shape = std::move(shape);
    b.f.assign(checked_numel(b.shape), 0.0f);
    return b;
  }
  static Buf ints(std::vector<int64_t> shape, DType t = DType::I64) {
    Buf b;
    b.dtype = t;
    b.shape = std::move(shape);
    b.i.assign(checked_numel(b.shape), 0);
    return b;
  }
  // numel, or std::length_error past max_tensor_elements() (the interpreter reports it).
  static size_t checked_numel(const std::vector<int64_t>& shape);
  // Same shape and dtype as `like`, zero-filled.
  static Buf like(const Buf& like) {
    return like.is_float() ? floats(like.shape, like.dtype) : ints(like.shape, like.dtype);
  }
  // Values as int64 whatever the storage (floats truncated toward zero; for shape-like inputs).
  std::vector<int64_t> as_ints() const;
  // Values as double whatever the storage.
  double get(int64_t k) const { return is_float() ? double(f[k]) : double(i[k]); }
};

Buf to_buf(const Tensor& t);
Tensor to_tensor(const Buf& b);

// Accumulation: nullopt = FP64 (ground truth); otherwise every partial sum is rounded to the
// format (F32 exactly, BF16/F16/... through round_to).
using Accumulation = std::optional<DType>;

class KernelContext {
 public:
  KernelContext(const Node& node, const ir::OpDef& def, std::vector<const Buf*> inputs,
                Accumulation acc)
      : node_(node), def_(def), in_(std::move(inputs)), acc_(acc) {
    out.resize(node.outputs.size());
  }

  const Node& node() const { return node_; }
  size_t num_inputs() const { return in_.size(); }
  bool has(size_t k) const { return k < in_.size() && in_[k] != nullptr; }
  const Buf& in(size_t k) const { return *in_.at(k); }
  Accumulation accumulation() const { return acc_; }

  bool has_attr(const std::string& name) const { return node_.attrs.count(name) > 0; }
  int64_t attr_int(const std::string& name) const;
  float attr_float(const std::string& name) const;
  std::string attr_string(const std::string& name) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<float> attr_floats(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  const Tensor* attr_tensor(const std::string& name) const;
  // A graph attribute (If branches, Loop/Scan body); nullptr when absent.
  const Graph* attr_graph(const std::string& name) const;

  // invalid_argument / unsupported naming this node and op.
  Status error(const std::string& message) const;
  Status unsupported(const std::string& message) const;

  std::vector<Buf> out;  // one per node output, filled by the kernel

 private:
  std::optional<AttrValue> attr(const std::string& name) const;
  const Node& node_;
  const ir::OpDef& def_;
  std::vector<const Buf*> in_;
  Accumulation acc_;
};

using Kernel = std::function<Status(KernelContext&)>;
using KernelTable = std::map<std::string, Kernel, std::less<>>;
// Runs `k` on `ctx`; an exception becomes an error naming node `n` (a shape over the size limit
// or an allocation failure: invalid_argument; anything else: internal).
Status invoke(const Kernel& k, KernelContext& ctx, const Node& n);

// Each kernels_*.cpp adds its ops.
void add_elementwise_kernels(KernelTable& t);
void add_linalg_kernels(KernelTable& t);
void add_normalization_kernels(KernelTable& t);
void add_conv_kernels(KernelTable& t);        // Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool
void add_resize_pad_kernels(KernelTable& t);  // Resize, Pad
void add_shape_kernels(KernelTable& t);
void add_quantize_kernels(KernelTable& t);
void add_recurrent_kernels(KernelTable& t);       // RNN, GRU, LSTM
void add_integer_linalg_kernels(KernelTable& t);  // MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
void add_grid_sample_kernels(KernelTable& t);
void add_signal_kernels(KernelTable& t);          // windows, DFT, STFT, MelWeightMatrix
void add_control_kernels(KernelTable& t);    // If, Loop, Scan
void add_select_kernels(KernelTable& t);          // TopK, Unique, Compress, NonZero
void add_scatter_gather_kernels(KernelTable& t);  // ScatterElements, ScatterND, GatherND
void add_detection_kernels(KernelTable& t);       // NonMaxSuppression, RoiAlign
void add_einsum_kernels(KernelTable& t);
void add_text_kernels(KernelTable& t);  // TfIdfVectorizer

const KernelTable& kernels();

// The interpreter on internal buffers (ref::run without the Tensor conversions): what the
// control-flow kernels run their subgraphs with. Inputs are checked as ref::run checks them.
struct RunOptions;
Expected<std::vector<Buf>> run_bufs(const Graph& graph, std::vector<Buf> inputs, const RunOptions& options);

// ---- helpers shared by kernels ----

// Row-major strides of a shape.
std::vector<int64_t> strides_of(std::span<const int64_t> shape);
// Broadcast shape of several shapes (numpy rules); error message names the shapes.
Expected<std::vector<int64_t>> broadcast(std::span<const std::vector<int64_t>> shapes);
// For output index `out_index` in `out_shape`, the flat index into an input of `in_shape`
// broadcast to it. Use BroadcastIndexer for loops.
class BroadcastIndexer {
 public:
  BroadcastIndexer(std::span<const int64_t> in_shape, std::span<const int64_t> out_shape);
  int64_t operator()(int64_t out_index) const;
  bool identity() const { return identity_; }

 private:
  std::vector<int64_t> out_shape_, in_strides_;  // in_strides_ 0 on broadcast axes
  bool identity_ = false;
};

// Calls f(zero, round) with the accumulator type for `acc`: zero is a double for FP64 and a
// float otherwise; round is the identity for FP64/FP32 and round_to(format) for narrower
// formats, applied to every partial sum. Write a kernel's inner loop once as a generic lambda.
// An integer accumulation format (I32 for int8 plans) means exact accumulation: FP64, which
// sums products of fake-quantised INT8 values without error (see reference.hpp).
template <typename F>
auto with_accumulation(Accumulation acc, F&& f) {
  if (!acc || is_integer(*acc)) return f(0.0, [](double x) { return x; });
  if (*acc == DType::F32) return f(0.0f, [](float x) { return x; });
  const DType t = *acc;
  return f(0.0f, [t](float x) { return round_to(t, x); });
}

}  // namespace hpf::ref
