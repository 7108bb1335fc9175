// Reference interpreter: RNN, GRU and LSTM against hand-written one-unit recurrences (hidden
// size 1, so every gate is a scalar formula), plus layout, direction, sequence_lens and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Tensor i32(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return std::move(Tensor::from_i64(std::move(shape), v, DType::I32)).value();
}

}  // namespace

TEST_CASE("ref recurrent: RNN forward and reverse, one unit") {
  // h_t = tanh(0.5 x_t + 0.25 h_{t-1} + 0.1 + 0.2), X = [1, 2] (seq 2, batch 1, input 1).
  const Tensor x = f32({2, 1, 1}, {1, 2}), w = f32({1, 1, 1}, {0.5f}), r = f32({1, 1, 1}, {0.25f});
  const Tensor b = f32({1, 2}, {0.1f, 0.2f});
  auto fwd = run_op("RNN", {in(x), in(w), in(r), in(b)}, {{"hidden_size", int64_t{1}}}, 2);
  REQUIRE_MESSAGE(fwd.ok(), fwd.status().to_string());
  const double h1 = std::tanh(0.8), h2 = std::tanh(1.0 + 0.25 * h1 + 0.3);
  check_close((*fwd)[0], {2, 1, 1, 1}, {float(h1), float(h2)});
  check_close((*fwd)[1], {1, 1, 1}, {float(h2)});

  // Reverse: t = 1 first; Y stays indexed by time.
  auto rev = run_op("RNN", {in(x), in(w), in(r), in(b)}, {{"direction", std::string("reverse")}}, 2);
  REQUIRE(rev.ok());
  const double g1 = std::tanh(1.3), g2 = std::tanh(0.5 + 0.25 * g1 + 0.3);
  check_close((*rev)[0], {2, 1, 1, 1}, {float(g2), float(g1)});
  check_close((*rev)[1], {1, 1, 1}, {float(g2)});
}

TEST_CASE("ref recurrent: RNN activations with alpha/beta, clip and initial_h") {
  const Tensor x = f32({2, 1, 1}, {1, 2}), w = f32({1, 1, 1}, {0.5f}), r = f32({1, 1, 1}, {0.25f});
  // Affine(alpha 2, beta 1): h1 = 2 * 0.5 + 1 = 2, h2 = 2 * (1 + 0.5) + 1 = 4.
  auto y = run_op("RNN", {in(x), in(w), in(r)},
                  {{"activations", std::vector<std::string>{"Affine"}},
                   {"activation_alpha", std::vector<float>{2}},
                   {"activation_beta", std::vector<float>{1}}},
                  2);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_close((*y)[0], {2, 1, 1, 1}, {2, 4});
  // clip bounds the activation's input: tanh(clip(0.5 + 0.25 * 4)) with initial_h 4 -> tanh(0.6).
  auto c = run_op("RNN", {in(f32({1, 1, 1}, {1})), in(w), in(r), none(), none(), in(f32({1, 1, 1}, {4}))},
                  {{"clip", 0.6f}}, 2);
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  check_close((*c)[1], {1, 1, 1}, {float(std::tanh(0.6))});
}

TEST_CASE("ref recurrent: bidirectional RNN with sequence_lens, layout 0 and 1") {
  // Batch 2: entry 0 runs 2 steps, entry 1 only 1; Y past a sequence's end is 0.
  const Tensor x = f32({2, 2, 1}, {1, 3, 2, 99});  // [seq][batch][input]; 99 is never read
  const Tensor w = f32({2, 1, 1}, {0.5f, -0.5f}), r = f32({2, 1, 1}, {0.25f, 0.5f});
  const Tensor lens = i32({2}, {2, 1});
  auto y = run_op("RNN", {in(x), in(w), in(r), none(), in(lens)}, {{"direction", std::string("bidirectional")}}, 2);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  const double f0 = std::tanh(0.5), f1 = std::tanh(1.0 + 0.25 * f0);   // batch 0 forward
  const double b1 = std::tanh(-1.0), b0 = std::tanh(-0.5 + 0.5 * b1);  // batch 0 reverse: t=1 then t=0
  const double f3 = std::tanh(1.5), b3 = std::tanh(-1.5);              // batch 1: one step
  // Y [seq, dirs, batch, hidden].
  check_close((*y)[0], {2, 2, 2, 1}, {float(f0), float(f3), float(b0), float(b3), float(f1), 0, float(b1), 0});
  check_close((*y)[1], {2, 2, 1}, {float(f1), float(f3), float(b0), float(b3)});

  // layout 1: X [batch][seq][input], Y [batch][seq][dirs][hidden], Y_h [batch][dirs][hidden].
  const Tensor xb = f32({2, 2, 1}, {1, 2, 3, 99});
  auto yb = run_op("RNN", {in(xb), in(w), in(r), none(), in(lens)},
                   {{"direction", std::string("bidirectional")}, {"layout", int64_t{1}}}, 2);
  REQUIRE_MESSAGE(yb.ok(), yb.status().to_string());
  check_close((*yb)[0], {2, 2, 2, 1}, {float(f0), float(b0), float(f1), float(b1), float(f3), float(b3), 0, 0});
  check_close((*yb)[1], {2, 2, 1}, {float(f1), float(b0), float(f3), float(b3)});
}

TEST_CASE("ref recurrent: GRU with and without linear_before_reset") {
  // W = [z, r, h] = [0.3, -0.2, 0.7], R = [0.1, 0.4, -0.6], Wb = [0.05, 0, 0.1], Rb = [0, 0.2, 0.4].
  const Tensor x = f32({1, 1, 1}, {1}), w = f32({1, 3, 1}, {0.3f, -0.2f, 0.7f}), r = f32({1, 3, 1}, {0.1f, 0.4f, -0.6f});
  const Tensor b = f32({1, 6}, {0.05f, 0, 0.1f, 0, 0.2f, 0.4f}), h0 = f32({1, 1, 1}, {0.5f});
  const double z = sig(0.3 + 0.05 + 0.1 * 0.5), rg = sig(-0.2 + 0.4 * 0.5 + 0.2);
  for (int64_t lbr : {0, 1}) {
    CAPTURE(lbr);
    auto y = run_op("GRU", {in(x), in(w), in(r), in(b), none(), in(h0)}, {{"linear_before_reset", lbr}}, 2);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    const double hh = lbr ? std::tanh(0.7 + 0.1 + rg * (-0.6 * 0.5 + 0.4)) : std::tanh(0.7 + 0.1 + -0.6 * (rg * 0.5) + 0.4);
    const double h = (1 - z) * hh + z * 0.5;
    check_close((*y)[1], {1, 1, 1}, {float(h)});
  }
}

TEST_CASE("ref recurrent: LSTM with peepholes, initial_c, input_forget and Y_c") {
  // Gate order i, o, f, c; P = [pi, po, pf].
  const Tensor x = f32({1, 1, 1}, {1}), w = f32({1, 4, 1}, {0.3f, -0.2f, 0.7f, 0.5f});
  const Tensor r = f32({1, 4, 1}, {0.1f, 0.4f, -0.6f, 0.2f}), h0 = f32({1, 1, 1}, {0.5f}), c0 = f32({1, 1, 1}, {-1});
  const Tensor p = f32({1, 3}, {0.25f, -0.5f, 0.75f});
  for (int64_t coupled : {0, 1}) {
    CAPTURE(coupled);
    auto y = run_op("LSTM", {in(x), in(w), in(r), none(), none(), in(h0), in(c0), in(p)}, {{"input_forget", coupled}}, 3);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    const double i = sig(0.3 + 0.1 * 0.5 + 0.25 * -1);
    const double f = coupled ? 1 - i : sig(0.7 - 0.6 * 0.5 + 0.75 * -1);
    const double g = std::tanh(0.5 + 0.2 * 0.5);
    const double c = f * -1 + i * g;
    const double o = sig(-0.2 + 0.4 * 0.5 - 0.5 * c);  // the output peephole sees the new cell
    const double h = o * std::tanh(c);
    check_close((*y)[0], {1, 1, 1, 1}, {float(h)});
    check_close((*y)[1], {1, 1, 1}, {float(h)});
    check_close((*y)[2], {1, 1, 1}, {float(c)});
  }
}

TEST_CASE("ref recurrent: errors name what is wrong") {
  const Tensor x = f32({1, 1, 1}, {1}), w = f32({1, 1, 1}, {1}), r = f32({1, 1, 1}, {1});
  check_error(run_op("RNN", {in(x), in(w), in(r)}, {{"direction", std::string("sideways")}}, 2), {"direction", "sideways"});
  check_error(run_op("RNN", {in(x), in(w), in(r)}, {{"activations", std::vector<std::string>{"Tanh", "Tanh"}}}, 2),
              {"activations has 2 entries, expected 1"});
  check_error(run_op("RNN", {in(x), in(w), in(r), none(), in(i32({1}, {5}))}, {}, 2), {"sequence_lens"});
  // W for two directions with direction forward.
  check_error(run_op("RNN", {in(x), in(f32({2, 1, 1}, {1, 1})), in(r)}, {}, 2), {"directions"});
}

}  // namespace hpf::test
