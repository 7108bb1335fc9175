// KernelContext, Buf conversions and the helpers kernels share.
#include <algorithm>
#include <atomic>
#include <new>
#include <stdexcept>
#include <variant>

#include "core/ref/kernel.hpp"
#include "hpf/reference.hpp"

namespace hpf::ref {

namespace {
std::atomic<int64_t> g_max_elements{int64_t{1} << 32};
}  // namespace

void set_max_tensor_elements(int64_t elements) { g_max_elements = std::max<int64_t>(elements, 1); }
int64_t max_tensor_elements() { return g_max_elements; }

size_t Buf::checked_numel(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d < 0) throw std::length_error("negative dimension in shape " + shape_string(shape));
  const int64_t n = hpf::numel(shape);
  if (n > g_max_elements)
    throw std::length_error("a tensor of shape " + shape_string(shape) + " is over the interpreter's limit of " +
                            std::to_string(g_max_elements.load()) + " elements");
  return static_cast<size_t>(n);
}

Status invoke(const Kernel& k, KernelContext& ctx, const Node& n) {
  const std::string where = "node '" + n.name + "' (" + n.op + "): ";
  try {
    return k(ctx);
  } catch (const std::length_error& e) {
    return Status::invalid(where + e.what());
  } catch (const std::bad_alloc&) {
    return Status::invalid(where + "out of memory allocating its outputs");
  } catch (const std::exception& e) {
    return Status::internal(where + e.what());
  }
}

std::vector<int64_t> Buf::as_ints() const {
  if (!is_float()) return i;
  std::vector<int64_t> out(f.size());
  for (size_t k = 0; k < f.size(); ++k) out[k] = static_cast<int64_t>(f[k]);
  return out;
}

Buf to_buf(const Tensor& t) {
  Buf b;
  b.dtype = t.dtype();
  b.shape = t.shape();
  if (is_float(t.dtype())) b.f = t.to_f32();
  else b.i = t.to_i64();
  return b;
}

Tensor to_tensor(const Buf& b) {
  // Values are already representable in b.dtype; propagate keeps E5M2 infinities infinite.
  if (b.is_float()) return std::move(Tensor::from_f32(b.shape, b.f, b.dtype, Overflow::propagate)).value();
  return std::move(Tensor::from_i64(b.shape, b.i, b.dtype)).value();
}

std::optional<AttrValue> KernelContext::attr(const std::string& name) const {
  return ir::attr_or_default(node_, def_, name);
}

int64_t KernelContext::attr_int(const std::string& name) const {
  auto v = attr(name);
  if (v)
    if (auto* p = std::get_if<int64_t>(&*v)) return *p;
  return 0;
}
float KernelContext::attr_float(const std::string& name) const {
  auto v = attr(name);
  if (v) {
    if (auto* p = std::get_if<float>(&*v)) return *p;
    if (auto* p = std::get_if<int64_t>(&*v)) return static_cast<float>(*p);
  }
  return 0.0f;
}
std::string KernelContext::attr_string(const std::string& name) const {
  auto v = attr(name);
  if (v)
    if (auto* p = std::get_if<std::string>(&*v)) return *p;
  return {};
}
std::vector<int64_t> KernelContext::attr_ints(const std::string& name) const {
  auto v = attr(name);
  if (v)
    if (auto* p = std::get_if<std::vector<int64_t>>(&*v)) return *p;
  return {};
}
std::vector<float> KernelContext::attr_floats(const std::string& name) const {
  auto v = attr(name);
  if (v)
    if (auto* p = std::get_if<std::vector<float>>(&*v)) return *p;
  return {};
}
std::vector<std::string> KernelContext::attr_strings(const std::string& name) const {
  auto v = attr(name);
  if (v)
    if (auto* p = std::get_if<std::vector<std::string>>(&*v)) return *p;
  return {};
}
const Tensor* KernelContext::attr_tensor(const std::string& name) const {
  auto it = node_.attrs.find(name);
  if (it == node_.attrs.end()) return nullptr;
  return std::get_if<Tensor>(&it->second);
}

const Graph* KernelContext::attr_graph(const std::string& name) const {
  auto it = node_.attrs.find(name);
  if (it == node_.attrs.end()) return nullptr;
  const GraphAttr* g = std::get_if<GraphAttr>(&it->second);
  return g ? g->get() : nullptr;
}

Status KernelContext::error(const std::string& message) const {
  return Status::invalid("node '" + node_.name + "' (" + node_.op + "): " + message);
}
Status KernelContext::unsupported(const std::string& message) const {
  return Status::unsupported("node '" + node_.name + "' (" + node_.op + "): " + message);
}

std::vector<int64_t> strides_of(std::span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

Expected<std::vector<int64_t>> broadcast(std::span<const std::vector<int64_t>> shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[rank - s.size() + k];
      const int64_t d = s[k];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string msg = "shapes";
      for (const auto& x : shapes) msg += " " + shape_string(x);
      return Status::invalid(msg + " cannot be broadcast together");
    }
  }
  return out;
}

BroadcastIndexer::BroadcastIndexer(std::span<const int64_t> in_shape,
                                   std::span<const int64_t> out_shape)
    : out_shape_(out_shape.begin(), out_shape.end()), in_strides_(out_shape.size(), 0) {
  const auto in_strides = strides_of(in_shape);
  const size_t off = out_shape.size() - in_shape.size();
  for (size_t k = 0; k < in_shape.size(); ++k)
    in_strides_[off + k] = in_shape[k] == 1 ? 0 : in_strides[k];
  identity_ = std::equal(in_shape.begin(), in_shape.end(), out_shape.begin(), out_shape.end());
}

int64_t BroadcastIndexer::operator()(int64_t out_index) const {
  if (identity_) return out_index;
  int64_t in = 0;
  for (size_t k = out_shape_.size(); k-- > 0;) {
    const int64_t d = out_shape_[k];
    in += (out_index % d) * in_strides_[k];
    out_index /= d;
  }
  return in;
}

const KernelTable& kernels() {
  static const KernelTable table = [] {
    KernelTable t;
    add_elementwise_kernels(t);
    add_linalg_kernels(t);
    add_normalization_kernels(t);
    add_conv_kernels(t);
    add_resize_pad_kernels(t);
    add_shape_kernels(t);
    add_quantize_kernels(t);
    add_recurrent_kernels(t);
    add_integer_linalg_kernels(t);
    add_grid_sample_kernels(t);
    add_signal_kernels(t);
    add_control_kernels(t);
    add_select_kernels(t);
    add_scatter_gather_kernels(t);
    add_detection_kernels(t);
    add_einsum_kernels(t);
    add_text_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace hpf::ref
