#include "jit/codegen/attention_form.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {
namespace {

using Strided = AttentionForm::Strided;

Expected<Strided> strided(const TensorDesc& t, const std::vector<int64_t>& perm, const char* what) {
  const size_t r = t.shape.size();
  std::vector<int64_t> st(r, 1);
  for (size_t d = r; d-- > 1;) st[d - 1] = st[d] * t.shape[d];
  if (perm.empty()) return Strided{t.shape, st};
  std::vector<int64_t> seen(r, 0);
  Strided s;
  for (int64_t p : perm) {
    if (perm.size() != r || p < 0 || p >= static_cast<int64_t>(r) || seen[p]++)
      return Status::invalid(std::string("attention: ") + what + " perm is not a permutation of " + shape_string(t.shape));
    s.shape.push_back(t.shape[p]);
    s.stride.push_back(st[p]);
  }
  return s;
}

// The output written through o_perm: O's axis d is the output's axis i where perm[i] = d, so O
// is the output read through the inverse permutation (strided checks it is one).
Expected<Strided> strided_output(const TensorDesc& y, const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size(), -1);
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] >= 0 && perm[i] < static_cast<int64_t>(perm.size())) inverse[perm[i]] = static_cast<int64_t>(i);
  return strided(y, inverse, "o");
}

Expected<DType> format_attr(const KernelSpec& spec, const char* name) {
  const std::string v = attr_s(spec.attrs, name);
  if (v.empty()) return Status::invalid(std::string("attention: no ") + name);
  return parse_dtype(v);
}

}  // namespace

TensorDesc AttentionForm::scores() const {
  std::vector<int64_t> s = batch;
  s.push_back(SQ);
  s.push_back(SK);
  return TensorDesc{score_format, s};
}

std::string attention_batch_offset(const Strided& x) {
  std::string e = "0";
  int64_t div = 1;
  for (size_t d = x.shape.size() - 2; d-- > 0;) {
    if (x.shape[d] != 1) e += " + ((t / " + L(div) + ") % " + L(x.shape[d]) + ") * " + L(x.stride[d]);
    div *= x.shape[d];
  }
  return e;
}

Expected<AttentionForm> attention_form(const KernelSpec& spec, const std::string& who) {
  if (spec.inputs.size() < 3 || spec.outputs.size() != 1 || spec.epilogue_inputs < 0 ||
      static_cast<size_t>(spec.epilogue_inputs) > spec.inputs.size() - 3)
    return Status::invalid("attention: needs Q, K, V, the epilogue's inputs and one output");
  for (const TensorDesc& t : {spec.inputs[0], spec.inputs[1], spec.inputs[2], spec.outputs[0]})
    if (!is_float(t.dtype)) return Status::unsupported(who + ": attention on " + std::string(dtype_name(t.dtype)));
  AttentionForm f;
  HPF_ASSIGN_OR_RETURN(f.q, strided(spec.inputs[0], attr_ints(spec.attrs, "q_perm"), "q"));
  HPF_ASSIGN_OR_RETURN(f.k, strided(spec.inputs[1], attr_ints(spec.attrs, "k_perm"), "k"));
  HPF_ASSIGN_OR_RETURN(f.v, strided(spec.inputs[2], attr_ints(spec.attrs, "v_perm"), "v"));
  HPF_ASSIGN_OR_RETURN(f.o, strided_output(spec.outputs[0], attr_ints(spec.attrs, "o_perm")));
  HPF_ASSIGN_OR_RETURN(f.score_format, format_attr(spec, "score_format"));
  HPF_ASSIGN_OR_RETURN(f.prob_format, format_attr(spec, "prob_format"));
  const size_t r = f.q.shape.size();
  if (r < 2 || f.k.shape.size() != r || f.v.shape.size() != r || f.o.shape.size() != r)
    return Status::invalid("attention: Q, K, V and O need one rank of at least 2");
  f.batch.assign(f.q.shape.begin(), f.q.shape.end() - 2);
  for (const Strided* x : {&f.k, &f.v, &f.o})
    if (!std::equal(f.batch.begin(), f.batch.end(), x->shape.begin()))
      return Status::invalid("attention: Q, K, V and O have different batch axes");
  f.SQ = f.q.shape[r - 2], f.D = f.q.shape[r - 1], f.SK = f.k.shape[r - 1], f.DV = f.v.shape[r - 1];
  if (f.k.shape[r - 2] != f.D || f.v.shape[r - 2] != f.SK || f.o.shape[r - 2] != f.SQ || f.o.shape[r - 1] != f.DV)
    return Status::invalid("attention: Q" + shape_string(f.q.shape) + " K" + shape_string(f.k.shape) + " V" +
                           shape_string(f.v.shape) + " O" + shape_string(f.o.shape) + " do not chain");
  f.batches = std::accumulate(f.batch.begin(), f.batch.end(), int64_t{1}, std::multiplies<>());
  // Operands broadcast to the scores by numpy's rules: the offset of score (t, qi, j) in each,
  // over its non-broadcast axes.
  const std::vector<int64_t> sshape = f.scores().shape;
  f.epilogue_index.assign(spec.inputs.size(), "");
  for (size_t in = 3; in < spec.inputs.size(); ++in) {
    const TensorDesc& e = spec.inputs[in];
    if (!is_float(e.dtype) || e.shape.size() > r)
      return Status::invalid("attention: epilogue input " + std::to_string(in) + shape_string(e.shape) +
                             " does not broadcast to the scores " + shape_string(sshape));
    std::string idx = "0";
    int64_t stride = 1, div = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t at = static_cast<int64_t>(d) - static_cast<int64_t>(r - e.shape.size());
      const int64_t size = at >= 0 ? e.shape[at] : 1;
      if (size != 1 && size != sshape[d])
        return Status::invalid("attention: epilogue input " + std::to_string(in) + shape_string(e.shape) +
                               " does not broadcast to the scores " + shape_string(sshape));
      const std::string pos = d == r - 1 ? "j" : d == r - 2 ? "qi" : "((t / " + L(div) + ") % " + L(sshape[d]) + ")";
      if (size != 1) idx += " + " + pos + " * " + L(stride);
      stride *= size;
      if (d < r - 2) div *= sshape[d];
    }
    f.epilogue_index[in] = idx;
  }
  return f;
}

}  // namespace hpf::jit
