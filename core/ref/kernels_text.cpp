// TfIdfVectorizer over integer token ids (libhpf has no string tensors).
//
// The pool lists n-grams grouped by length: ngram_counts[i] is where the (i+1)-grams start in
// pool_int64s, and ngram_indexes maps the j-th n-gram of the pool to its output column. An
// n-gram with skip s takes every (s+1)-th token; every n from min_gram_length to
// max_gram_length is counted for every skip 0..max_skip_count, except that 1-grams are counted
// once (skips do not apply to them).
#include <map>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

Status tfidf_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (x.is_float() || x.dtype == DType::BOOL)
    return c.error("X must be integers (string inputs are not supported)");
  if (x.rank() != 1 && x.rank() != 2)
    return c.error("X must be [C] or [N, C], got " + shape_string(x.shape));
  if (c.has_attr("pool_strings"))
    return c.unsupported("pool_strings (string n-grams) are not supported");
  const int64_t min_n = c.attr_int("min_gram_length"), max_n = c.attr_int("max_gram_length");
  const int64_t max_skip = c.attr_int("max_skip_count");
  if (min_n < 1 || max_n < min_n || max_skip < 0)
    return c.error("need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  const std::string mode = c.attr_string("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return c.error("mode must be TF, IDF or TFIDF, is '" + mode + "'");
  const auto pool = c.attr_ints("pool_int64s"), starts = c.attr_ints("ngram_counts"),
             index = c.attr_ints("ngram_indexes");
  const auto weights = c.attr_floats("weights");

  // Each pooled n-gram -> its output column.
  std::map<std::vector<int64_t>, int64_t> column;
  int64_t width = 0;
  size_t j = 0;  // n-gram number within the pool
  for (size_t g = 0; g < starts.size(); ++g) {
    const auto n = static_cast<int64_t>(g + 1);
    const int64_t begin = starts[g],
                  end = g + 1 < starts.size() ? starts[g + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) ||
        (end - begin) % n != 0)
      return c.error("ngram_counts " + std::to_string(begin) + ".." + std::to_string(end) +
                     " do not split pool_int64s into " + std::to_string(n) + "-grams");
    for (int64_t p = begin; p < end; p += n, ++j) {
      if (j >= index.size())
        return c.error("ngram_indexes has fewer entries than the pool has n-grams");
      column.emplace(std::vector<int64_t>(pool.begin() + p, pool.begin() + p + n), index[j]);
    }
  }
  for (int64_t v : index) width = std::max(width, v + 1);
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < width)
    return c.error("weights has " + std::to_string(weights.size()) + " entries for " +
                   std::to_string(width) + " columns");

  const int64_t rows = x.rank() == 2 ? x.shape[0] : 1, len = x.shape.back();
  Buf y =
      Buf::floats(x.rank() == 2 ? std::vector<int64_t>{rows, width} : std::vector<int64_t>{width});
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* tok = x.i.data() + r * len;
    std::vector<double> count(width, 0);
    for (int64_t skip = 0; skip <= max_skip; ++skip)
      for (int64_t n = std::max<int64_t>(min_n, skip > 0 ? 2 : 1); n <= max_n; ++n)
        for (int64_t s = 0; s + (n - 1) * (skip + 1) < len; ++s) {
          gram.clear();
          for (int64_t q = 0; q < n; ++q) gram.push_back(tok[s + q * (skip + 1)]);
          if (auto it = column.find(gram); it != column.end()) count[it->second] += 1;
        }
    for (int64_t k = 0; k < width; ++k) {
      const double wgt = weights.empty() ? 1.0 : weights[k];
      const double v = mode == "TF"    ? count[k]
                       : mode == "IDF" ? (count[k] > 0 ? wgt : 0.0)
                                       : count[k] * wgt;
      y.f[r * width + k] = static_cast<float>(v);
    }
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_text_kernels(KernelTable& t) { t["TfIdfVectorizer"] = tfidf_kernel; }

}  // namespace hpf::ref
