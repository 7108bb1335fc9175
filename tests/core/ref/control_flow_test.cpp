// Reference interpreter: control flow (If, Loop, Scan) on graphs built in C++, with captured
// values passed explicitly (num_captures) and a subgraph nested in a subgraph.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

Tensor bools(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return std::move(Tensor::from_i64(std::move(shape), v, DType::BOOL)).value();
}
Tensor boolean(bool v) { return bools({}, {v ? 1 : 0}); }

GraphAttr built(GraphBuilder& b) {
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::make_shared<const Graph>(std::move(g).value());
}

// A branch returning op(inputs...) of its inputs (named `names`, all F32 of `shape`).
GraphAttr branch(const std::string& name, const std::string& op, std::vector<std::string> names,
                 Shape shape) {
  GraphBuilder b(name);
  std::vector<ValueId> ins;
  for (const auto& n : names) ins.push_back(b.input(n, DType::F32, shape));
  b.output(b.op1(op, ins));
  return built(b);
}

// Loop body: (i, cond, acc[2], w[2]) -> (cond, acc + step, acc + step), where
// step = If(i < 2, w * float(i), -w): a subgraph nested in the body, capturing the body's input w
// (itself a capture of the enclosing graph) and the body's value float(i).
GraphAttr loop_body() {
  GraphBuilder b("body");
  auto i = b.input("i", DType::I64, {});
  auto cond = b.input("cond", DType::BOOL, {});
  auto acc = b.input("acc", DType::F32, {2});
  auto w = b.input("w", DType::F32, {2});
  auto fi = b.op1("Cast", {i}, {{"to", int64_t{1}}});
  auto early = b.op1("Less", {i, b.constant("two", i64({}, {2}))});
  // Both branches take both captures, in the node's order (w, fi), whether they use them or not.
  GraphBuilder tb("then");
  auto tw = tb.input("w", DType::F32, {2});
  tb.output(tb.mul(tw, tb.input("fi", DType::F32, {})));
  GraphBuilder eb("else");
  auto ew = eb.input("w", DType::F32, {2});
  eb.input("fi", DType::F32, {});
  eb.output(eb.op1("Neg", {ew}));
  auto step =
      b.op1("If", {early, w, fi},
            {{"then_branch", built(tb)}, {"else_branch", built(eb)}, {"num_captures", int64_t{2}}});
  auto next = b.add(acc, step);
  b.output(b.op1("Identity", {cond}));
  b.output(next);
  b.output(b.op1("Identity", {next}));
  return built(b);
}

}  // namespace

TEST_CASE("control flow: If picks a branch; captured values; shapes the branches disagree on") {
  GraphBuilder b("if");
  auto c = b.input("c", DType::BOOL, {});
  auto x = b.input("x", DType::F32, {2});
  auto y = b.input("y", DType::F32, {3});
  // then: x + x (captures x; y unused), else: y (an Identity of the captured y).
  GraphBuilder tb("then");
  auto tx = tb.input("x", DType::F32, {2});
  tb.input("y", DType::F32, {3});
  tb.output(tb.add(tx, tx));
  GraphBuilder eb("else");
  eb.input("x", DType::F32, {2});
  eb.output(eb.op1("Identity", {eb.input("y", DType::F32, {3})}));
  auto out =
      b.op1("If", {c, x, y},
            {{"then_branch", built(tb)}, {"else_branch", built(eb)}, {"num_captures", int64_t{2}}});
  b.output(out);
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  // [2] or [3]: rank 1, size unknown.
  CHECK(g->value(g->outputs()[0]).shape == Shape{Dim()});

  auto run = [&](bool cond) {
    auto r = ref::run(*g, {boolean(cond), f32({2}, {1, 2}), f32({3}, {7, 8, 9})});
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    return (*r)[0];
  };
  CHECK(run(true).to_f32() == std::vector<float>{2, 4});
  CHECK(run(false).to_f32() == std::vector<float>{7, 8, 9});

  // A cond of two values is an error naming the node.
  GraphBuilder bad("bad");
  auto c2 = bad.input("c", DType::BOOL, {2});
  auto bx = bad.input("x", DType::F32, {2});
  bad.output(bad.op1("If", {c2, bx},
                     {{"then_branch", branch("t", "Identity", {"x"}, {2})},
                      {"else_branch", branch("e", "Neg", {"x"}, {2})},
                      {"num_captures", int64_t{1}}},
                     "pick"));
  auto bg = bad.build();
  REQUIRE_MESSAGE(bg.ok(), bg.status().to_string());
  CHECK(bg->value(bg->outputs()[0]).shape == Shape{2});  // both branches agree
  auto err = ref::run(*bg, {bools({2}, {1, 0}), f32({2}, {1, 2})});
  REQUIRE_FALSE(err.ok());
  CHECK(err.status().message() == "node 'pick' (If): cond must hold one value, has shape [2]");
}

TEST_CASE("control flow: If with a constant cond takes that branch's shape") {
  GraphBuilder b("if_const");
  auto x = b.input("x", DType::F32, {2});
  auto y = b.input("y", DType::F32, {3});
  GraphBuilder eb("else");
  eb.input("x", DType::F32, {2});
  eb.output(eb.op1("Identity", {eb.input("y", DType::F32, {3})}));
  GraphBuilder tb("then");
  auto tx = tb.input("x", DType::F32, {2});
  tb.input("y", DType::F32, {3});
  tb.output(tb.op1("Identity", {tx}));
  b.output(b.op1(
      "If", {b.constant("c", boolean(false)), x, y},
      {{"then_branch", built(tb)}, {"else_branch", built(eb)}, {"num_captures", int64_t{2}}}));
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(g->value(g->outputs()[0]).shape == Shape{3});
}

TEST_CASE("control flow: Loop with a trip count, a captured value and an If nested in the body") {
  GraphBuilder b("loop");
  auto x = b.input("x", DType::F32, {2});
  auto w = b.input("w", DType::F32, {2});
  auto outs = b.op("Loop", {b.constant("M", i64({}, {5})), kNoValue, x, w},
                   {{"body", loop_body()}, {"num_captures", int64_t{1}}}, 2, "loop");
  b.output(outs[0]);
  b.output(outs[1]);
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(g->value(outs[0]).shape == Shape{2});
  CHECK(g->value(outs[1]).shape == Shape{5, 2});  // constant M, no cond: 5 iterations

  auto r = ref::run(*g, {f32({2}, {10, 20}), f32({2}, {1, 2})});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  // acc: +0w, +1w, -w, -w, -w -> x - 2w; the scan output holds acc after each iteration.
  CHECK((*r)[0].to_f32() == std::vector<float>{8, 16});
  CHECK((*r)[1].shape() == std::vector<int64_t>{5, 2});
  CHECK((*r)[1].to_f32() == std::vector<float>{10, 20, 11, 22, 10, 20, 9, 18, 8, 16});
}

TEST_CASE("control flow: Loop stops on the body's cond; zero iterations keep the initial values") {
  // Body: (i, cond, acc) -> (i < 2, acc * 2, acc): a while loop that runs while its cond holds.
  GraphBuilder bb("body");
  auto i = bb.input("i", DType::I64, {});
  bb.input("cond", DType::BOOL, {});
  auto acc = bb.input("acc", DType::F32, {});
  bb.output(bb.op1("Less", {i, bb.constant("two", i64({}, {2}))}));
  bb.output(bb.mul(acc, bb.constant("k", f32({}, {2}))));
  bb.output(bb.op1("Identity", {acc}));
  auto body = built(bb);

  GraphBuilder b("while");
  auto m = b.input("M", DType::I64, {});
  auto c = b.input("cond", DType::BOOL, {});
  auto x = b.input("x", DType::F32, {});
  auto outs = b.op("Loop", {m, c, x}, {{"body", body}}, 2);
  b.output(outs[0]);
  b.output(outs[1]);
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(g->value(outs[1]).shape == Shape{Dim()});  // the trip count is not known

  auto run = [&](int64_t trips, bool cond) {
    auto r = ref::run(*g, {i64({}, {trips}), boolean(cond), f32({}, {1})});
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    return *r;
  };
  // Iterations 0, 1, 2 run (the cond computed in iteration 2 is false).
  auto r = run(10, true);
  CHECK(r[0].to_f32() == std::vector<float>{8});
  CHECK(r[1].to_f32() == std::vector<float>{1, 2, 4});
  r = run(2, true);  // M stops it first
  CHECK(r[1].to_f32() == std::vector<float>{1, 2});
  r = run(10, false);  // never enters
  CHECK(r[0].to_f32() == std::vector<float>{1});
  CHECK(r[1].shape() == std::vector<int64_t>{0});
}

TEST_CASE("control flow: Scan over axis 1, backwards, with a captured offset") {
  // Body: (s[2], col[2], off[2]) -> (s + col + off, s + col + off).
  GraphBuilder bb("body");
  auto s = bb.input("s", DType::F32, {2});
  auto col = bb.input("col", DType::F32, {2});
  auto off = bb.input("off", DType::F32, {2});
  auto next = bb.add(bb.add(s, col), off);
  bb.output(next);
  bb.output(bb.op1("Identity", {next}));
  auto body = built(bb);

  GraphBuilder b("scan");
  auto init = b.input("init", DType::F32, {2});
  auto x = b.input("x", DType::F32, {2, 3});
  auto off_outer = b.input("off", DType::F32, {2});
  auto outs = b.op("Scan", {init, x, off_outer},
                   {{"body", body},
                    {"num_scan_inputs", int64_t{1}},
                    {"scan_input_axes", std::vector<int64_t>{1}},
                    {"scan_input_directions", std::vector<int64_t>{1}},
                    {"scan_output_axes", std::vector<int64_t>{-1}},
                    {"num_captures", int64_t{1}}},
                   2);
  b.output(outs[0]);
  b.output(outs[1]);
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(g->value(outs[0]).shape == Shape{2});
  CHECK(g->value(outs[1]).shape == Shape{2, 3});

  auto r = ref::run(*g, {f32({2}, {0, 0}), f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {0, 100})});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  // Columns last to first: [3,6], [2,5], [1,4]; s = [3,106], [5,211], [6,315].
  CHECK((*r)[0].to_f32() == std::vector<float>{6, 315});
  // Stacked along the last axis: out[:, t] is the state after step t.
  CHECK((*r)[1].to_f32() == std::vector<float>{3, 5, 6, 106, 211, 315});
}

TEST_CASE("control flow: a graph attribute, its validation and its type name") {
  CHECK(std::string(attr_type_name(AttrValue(GraphAttr()))) == "graph");
  // A subgraph whose input count does not match the captures is reported by shape inference.
  GraphBuilder b("mismatch");
  auto c = b.input("c", DType::BOOL, {});
  auto x = b.input("x", DType::F32, {2});
  b.output(b.op1("If", {c, x},
                 {{"then_branch", branch("t", "Identity", {"x"}, {2})},
                  {"else_branch", branch("e", "Neg", {"x"}, {2})}},
                 "pick"));
  auto g = b.build();
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().message().find(
            "node 'pick' (If): If takes one input (cond) besides its captures") !=
        std::string::npos);
}

}  // namespace hpf::test
