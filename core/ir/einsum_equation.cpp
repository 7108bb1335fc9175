#include "core/ir/einsum_equation.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace hpf::ir {
namespace {

// One side of a term: its letters in order, and where the ellipsis sits (-1: none).
struct Term {
  std::string letters;
  int ellipsis_at = -1;
};

Expected<Term> parse_term(std::string_view s, const std::string& what) {
  Term t;
  for (size_t k = 0; k < s.size(); ++k) {
    const char ch = s[k];
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      t.letters += ch;
    } else if (ch == '.') {
      if (s.substr(k, 3) != "..." || t.ellipsis_at >= 0)
        return Status::invalid(what + " '" + std::string(s) +
                               "' has a stray '.' or more than one ellipsis");
      t.ellipsis_at = static_cast<int>(t.letters.size());
      k += 2;
    } else {
      return Status::invalid(what + " '" + std::string(s) + "' has the character '" +
                             std::string(1, ch) + "' (letters and '...' only)");
    }
  }
  return t;
}

}  // namespace

Expected<EinsumEquation> parse_einsum(std::string_view equation, std::span<const int64_t> ranks) {
  std::string eq;
  for (char ch : equation)
    if (!std::isspace(static_cast<unsigned char>(ch))) eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    HPF_ASSIGN_OR_RETURN(Term t, parse_term(std::string_view(lhs).substr(start, comma - start),
                                            "operand " + std::to_string(terms.size())));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return Status::invalid("equation '" + std::string(equation) + "' names " +
                           std::to_string(terms.size()) + " operands, the node has " +
                           std::to_string(ranks.size()));

  EinsumEquation out;
  std::vector<int64_t> ell_dims(terms.size(), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const auto letters = static_cast<int64_t>(terms[k].letters.size());
    const int64_t extra = ranks[k] - letters;
    if (extra < 0 || (terms[k].ellipsis_at < 0 && extra != 0))
      return Status::invalid("operand " + std::to_string(k) + " has rank " +
                             std::to_string(ranks[k]) + ", its term '" + terms[k].letters +
                             "' names " + std::to_string(letters) + " dimensions");
    ell_dims[k] = extra;
    out.ellipsis_rank = std::max<int>(out.ellipsis_rank, static_cast<int>(extra));
  }
  // Letter ids in order of first appearance, after the ellipsis ids.
  std::array<int, 128> id{};
  id.fill(-1);
  std::array<int, 128> uses{};
  out.num_labels = out.ellipsis_rank;
  for (size_t k = 0; k < terms.size(); ++k) {
    const Term& t = terms[k];
    std::vector<int> dims;
    for (size_t p = 0; p <= t.letters.size(); ++p) {
      if (static_cast<int>(p) == t.ellipsis_at)
        for (int64_t j = 0; j < ell_dims[k]; ++j)
          dims.push_back(static_cast<int>(out.ellipsis_rank - ell_dims[k] + j));
      if (p == t.letters.size()) break;
      const auto ch = static_cast<unsigned char>(t.letters[p]);
      if (id[ch] < 0) id[ch] = out.num_labels++;
      ++uses[ch];
      dims.push_back(id[ch]);
    }
    out.inputs.push_back(std::move(dims));
  }

  if (arrow == std::string::npos) {
    for (int j = 0; j < out.ellipsis_rank; ++j) out.output.push_back(j);
    for (int ch = 0; ch < 128; ++ch)
      if (uses[ch] == 1) out.output.push_back(id[ch]);
    return out;
  }
  HPF_ASSIGN_OR_RETURN(Term o, parse_term(std::string_view(eq).substr(arrow + 2), "output"));
  std::array<bool, 128> seen{};
  for (size_t p = 0; p <= o.letters.size(); ++p) {
    if (static_cast<int>(p) == o.ellipsis_at)
      for (int j = 0; j < out.ellipsis_rank; ++j) out.output.push_back(j);
    if (p == o.letters.size()) break;
    const auto ch = static_cast<unsigned char>(o.letters[p]);
    if (id[ch] < 0)
      return Status::invalid("output label '" + std::string(1, char(ch)) + "' is in no operand");
    if (seen[ch])
      return Status::invalid("output label '" + std::string(1, char(ch)) + "' appears twice");
    seen[ch] = true;
    out.output.push_back(id[ch]);
  }
  return out;
}

Expected<std::vector<int64_t>> einsum_label_sizes(const EinsumEquation& eq,
                                                  std::span<const std::vector<int64_t>> shapes) {
  constexpr int64_t kUnseen = -2;
  std::vector<int64_t> size(eq.num_labels, kUnseen);
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    for (size_t d = 0; d < eq.inputs[k].size(); ++d) {
      const int label = eq.inputs[k][d];
      const bool ellipsis = label < eq.ellipsis_rank;  // only these broadcast a size of 1
      const int64_t got = shapes[k][d];
      int64_t& s = size[label];
      if (s == kUnseen || s == got) {
        s = got;
      } else if (s < 0) {
        if (!(ellipsis && got == 1)) s = got;
      } else if (got < 0) {
        if (ellipsis && s == 1) s = -1;
      } else if (ellipsis && (got == 1 || s == 1)) {
        s = std::max(s, got);
      } else {
        return Status::invalid("operand " + std::to_string(k) + " dimension " + std::to_string(d) +
                               " has size " + std::to_string(got) +
                               ", another use of the same label has " + std::to_string(s));
      }
    }
  }
  for (int64_t& s : size)
    if (s == kUnseen) s = -1;
  return size;
}

}  // namespace hpf::ir
