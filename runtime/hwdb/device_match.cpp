// Mapping an accelerator's driver name to the database: by its model token, then unit count,
// words in common and memory size.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "hpf/hwdb.hpp"

namespace hpf::hwdb {
namespace {

// Lower-case words of a name, split at anything that is not a letter or digit.
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      out.push_back(w);
      w.clear();
    }
  }
  return out;
}

bool has_digit(const std::string& w) {
  return std::any_of(w.begin(), w.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

Expected<Product> Database::match_device(const DeviceQuery& device) const {
  if (auto exact = product(device.name); exact.ok()) return exact;
  const std::vector<std::string> name_words = words(device.name);
  const auto model = std::find_if(name_words.begin(), name_words.end(), has_digit);
  if (model == name_words.end())
    return Status::not_found("hwdb: no product '" + device.name + "', and the name has no model number to match by");

  std::string arch;
  if (!device.architecture.empty())
    if (auto a = architecture(device.architecture); a.ok()) arch = a->name;

  struct Candidate {
    Product product;
    bool same_units = false;
    int common = 0;
    double memory_gap = 0;
  };
  std::vector<Candidate> candidates;
  const std::set<std::string> mine(name_words.begin(), name_words.end());
  for (Product& p : products()) {
    if (!arch.empty() && p.arch.name != arch) continue;
    const std::vector<std::string> theirs = words(p.name);
    if (std::find(theirs.begin(), theirs.end(), *model) == theirs.end()) continue;
    Candidate c;
    c.same_units = device.units > 0 && p.units && *p.units == device.units;
    for (const std::string& w : std::set<std::string>(theirs.begin(), theirs.end())) c.common += mine.count(w) ? 1 : 0;
    c.memory_gap = device.memory_bytes > 0 && p.memory_gib
                       ? std::abs(*p.memory_gib - static_cast<double>(device.memory_bytes) / (1ull << 30))
                       : 0;
    c.product = std::move(p);
    candidates.push_back(std::move(c));
  }
  if (candidates.empty())
    return Status::not_found("hwdb: no product '" + device.name + "' and none named with '" + *model + "'" +
                             (arch.empty() ? "" : " of architecture " + arch) + " (see hpf hwdb list)");

  auto key = [](const Candidate& c) { return std::make_tuple(!c.same_units, -c.common, c.memory_gap); };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  Product p = std::move(candidates.front().product);
  p.note = "matched '" + device.name + "' by its model '" + *model + "'";
  if (candidates.front().same_units) p.note += " and unit count (" + std::to_string(device.units) + ")";
  std::string tied;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (key(candidates[i]) == key(candidates[0])) tied += (tied.empty() ? "" : ", ") + candidates[i].product.name;
  if (!tied.empty()) p.note += "; as good a match: " + tied;
  return p;
}

}  // namespace hpf::hwdb
