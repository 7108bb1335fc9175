// Helpers for reference-interpreter tests: build a one-node graph, run it, compare.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/reference.hpp"

namespace hpf::test {

inline Tensor f32(std::vector<int64_t> shape, std::vector<float> v) {
  return std::move(Tensor::from_f32(std::move(shape), v)).value();
}
inline Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return std::move(Tensor::from_i64(std::move(shape), v)).value();
}

// An input to run_op: either a runtime input (fed at run) or a constant initializer.
struct Arg {
  Tensor t;
  bool constant = false;
  bool absent = false;  // an omitted optional input
};
inline Arg in(Tensor t) { return {std::move(t), false}; }
inline Arg cst(Tensor t) { return {std::move(t), true}; }
inline Arg none() { return {Tensor(), false, true}; }

// Builds a graph with one `op` node and runs it on the reference interpreter. Runtime inputs get
// their concrete shapes. Returns the outputs or the first error (build or run).
inline Expected<std::vector<Tensor>> run_op(const std::string& op, std::vector<Arg> args,
                                            Attributes attrs = {}, int num_outputs = 1) {
  GraphBuilder b("test_" + op);
  std::vector<ValueId> ids;
  std::vector<Tensor> feeds;
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k].absent) {
      ids.push_back(kNoValue);
    } else if (args[k].constant) {
      ids.push_back(b.constant("c" + std::to_string(k), args[k].t));
    } else {
      ids.push_back(b.input("x" + std::to_string(k), args[k].t.dtype(), make_shape(args[k].t.shape())));
      feeds.push_back(args[k].t);
    }
  }
  auto outs = b.op(op, ids, std::move(attrs), num_outputs, "node");
  for (ValueId o : outs) b.output(o);
  auto g = b.build();
  if (!g.ok()) return g.status();
  return ref::run(*g, feeds);
}

// Runs a single-output op and returns its output; fails the test case if the run fails.
inline Tensor run1(const std::string& op, std::vector<Arg> args, Attributes attrs = {}) {
  auto r = run_op(op, std::move(args), std::move(attrs));
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  REQUIRE(r->size() == 1);
  return (*r)[0];
}

// Expects the run to fail with a message containing every fragment.
inline void check_error(const Expected<std::vector<Tensor>>& r, std::vector<std::string> fragments) {
  REQUIRE_FALSE(r.ok());
  const std::string& m = r.status().message();
  for (const auto& f : fragments)
    CHECK_MESSAGE(m.find(f) != std::string::npos, "'" << f << "' not in: " << m);
}

// Checks shape and values (|got - want| <= atol + rtol * |want|; NaN matches NaN).
inline void check_close(const Tensor& got, std::vector<int64_t> shape, const std::vector<float>& want,
                        double atol = 1e-5, double rtol = 1e-5) {
  CHECK(got.shape() == shape);
  auto g = got.to_f32();
  REQUIRE(g.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    if (std::isnan(want[k])) {
      CHECK_MESSAGE(std::isnan(g[k]), "element " << k);
      continue;
    }
    CHECK_MESSAGE(std::abs(double(g[k]) - want[k]) <= atol + rtol * std::abs(double(want[k])),
                  "element " << k << ": got " << g[k] << ", want " << want[k]);
  }
}

inline void check_ints(const Tensor& got, std::vector<int64_t> shape, const std::vector<int64_t>& want) {
  CHECK(got.shape() == shape);
  CHECK(got.to_i64() == want);
}

}  // namespace hpf::test
