// Calibration inputs for the planner: seeded random batches, or .npy files named after inputs.
#include <algorithm>
#include <filesystem>

#include "hpf/models.hpp"
#include "hpf/npy.hpp"
#include "hpf/planner.hpp"

namespace hpf {
namespace fs = std::filesystem;
namespace {

std::string file_name(std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  std::replace(name.begin(), name.end(), ':', '_');
  return name + ".npy";
}

// One batch from a directory holding NAME.npy for every graph input.
Expected<std::vector<Tensor>> load_batch(const Graph& g, const fs::path& dir) {
  std::vector<Tensor> batch;
  for (ValueId id : g.inputs()) {
    const Value& v = g.value(id);
    const fs::path file = dir / file_name(v.name);
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      return Status::not_found("calibration directory '" + dir.string() + "' has no " +
                               file.filename().string() + " for input '" + v.name + "'");
    HPF_ASSIGN_OR_RETURN(Tensor t, load_npy(file.string()));
    if (t.dtype() != v.dtype)
      return Status::invalid("calibration file '" + file.string() + "' holds " +
                             std::string(dtype_name(t.dtype())) + " but input '" + v.name +
                             "' is " + std::string(dtype_name(v.dtype)));
    batch.push_back(std::move(t));
  }
  return batch;
}

}  // namespace

Expected<std::vector<std::vector<Tensor>>> random_calibration_inputs(const Graph& g, int count,
                                                                     uint64_t seed, int64_t batch) {
  if (count < 1) return Status::invalid("random calibration inputs: count must be >= 1");
  std::vector<std::vector<Tensor>> out;
  for (int k = 0; k < count; ++k) {
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> b, models::example_inputs(g, seed + k, batch));
    out.push_back(std::move(b));
  }
  return out;
}

Expected<std::vector<std::vector<Tensor>>> load_calibration_dir(const Graph& g,
                                                                const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::not_found("calibration directory '" + dir + "' does not exist");
  std::vector<std::vector<Tensor>> out;
  // One batch directly in DIR when its first input's file is there.
  if (!g.inputs().empty() &&
      fs::is_regular_file(fs::path(dir) / file_name(g.value(g.inputs()[0]).name), ec)) {
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> b, load_batch(g, dir));
    out.push_back(std::move(b));
    return out;
  }
  std::vector<fs::path> subs;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory()) subs.push_back(entry.path());
  std::sort(subs.begin(), subs.end());
  for (const fs::path& sub : subs) {
    HPF_ASSIGN_OR_RETURN(std::vector<Tensor> b, load_batch(g, sub));
    out.push_back(std::move(b));
  }
  if (out.empty())
    return Status::not_found(
        "calibration directory '" + dir + "' holds neither " +
        (g.inputs().empty() ? std::string("input files") : file_name(g.value(g.inputs()[0]).name)) +
        " nor sub-directories of batches");
  return out;
}

}  // namespace hpf
