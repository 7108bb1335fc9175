// Reference interpreter: window functions, DFT, STFT and MelWeightMatrix on hand-computed cases.
#include <doctest/doctest.h>

#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

Tensor i32(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return std::move(Tensor::from_i64(std::move(shape), v, DType::I32)).value();
}

}  // namespace

TEST_CASE("ref signal: Hann, Hamming and Blackman windows, periodic and symmetric") {
  const Tensor four = i32({}, {4});
  check_close(run1("HannWindow", {in(four)}), {4}, {0, 0.5f, 1, 0.5f});
  check_close(run1("HannWindow", {in(four)}, {{"periodic", int64_t{0}}}), {4}, {0, 0.75f, 0.75f, 0});
  check_close(run1("HammingWindow", {in(four)}), {4}, {4.0f / 46, 25.0f / 46, 1, 25.0f / 46});
  check_close(run1("BlackmanWindow", {in(four)}), {4}, {0, 0.34f, 1, 0.34f}, 1e-6);
  // output_datatype picks the format (FLOAT16 = 10); the size may be a constant.
  auto h = run1("HannWindow", {cst(four)}, {{"output_datatype", int64_t{10}}});
  CHECK(h.dtype() == DType::F16);
  check_close(h, {4}, {0, 0.5f, 1, 0.5f});
  check_error(run_op("HannWindow", {in(i32({}, {-1}))}), {"size must be >= 0"});
}

TEST_CASE("ref signal: DFT of a real signal, onesided, dft_length and inverse") {
  // [1, 2, 3, 4] -> [10, -2+2i, -2, -2-2i].
  const Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  check_close(run1("DFT", {in(x)}), {1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
  check_close(run1("DFT", {in(x)}, {{"onesided", int64_t{1}}}), {1, 3, 2}, {10, 0, -2, 2, -2, 0}, 1e-5);
  // dft_length 2 truncates: [1 + 2, 1 - 2].
  check_close(run1("DFT", {in(x), cst(i64({}, {2}))}), {1, 2, 2}, {3, 0, -1, 0}, 1e-5);
  // The inverse of the spectrum is the signal again.
  const Tensor spec = f32({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  check_close(run1("DFT", {in(spec)}, {{"inverse", int64_t{1}}}), {1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}, 1e-5);
  // axis 2 of [1, 1, 2, 1]: [a, b] -> [a + b, a - b].
  check_close(run1("DFT", {in(f32({1, 1, 2, 1}, {5, 3}))}, {{"axis", int64_t{2}}}), {1, 1, 2, 2}, {8, 0, 2, 0}, 1e-5);
  check_error(run_op("DFT", {in(f32({1, 4, 3}, std::vector<float>(12, 0)))}), {"last dimension"});
}

TEST_CASE("ref signal: STFT frames, window and onesided bins") {
  // Frames of 4 every 2 samples: [1,2,3,4] and [3,4,5,6].
  const Tensor x = f32({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  check_close(run1("STFT", {in(x), cst(i64({}, {2})), none(), cst(i64({}, {4}))}), {1, 2, 3, 2},
              {10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0}, 1e-5);
  // Window [0, 1, 1, 0]: frame 0 becomes [0, 2, 3, 0] -> [5, -3-2i, 1].
  auto w = run1("STFT", {in(x), cst(i64({}, {2})), in(f32({4}, {0, 1, 1, 0}))});
  check_close(w, {1, 2, 3, 2}, {5, 0, -3, -2, 1, 0, 9, 0, -5, -4, 1, 0}, 1e-5);
}

TEST_CASE("ref signal: MelWeightMatrix triangles at the reference's FFT bins") {
  // 2 mel bins over 0-4000 Hz, 8-point FFT at 8 kHz: filter edges at FFT bins 0, 0, 1, 2.
  auto y = run1("MelWeightMatrix", {in(i32({}, {2})), in(i32({}, {8})), in(i32({}, {8000})), in(f32({}, {0})),
                                    in(f32({}, {4000}))});
  check_close(y, {5, 2}, {1, 0, 0, 1, 0, 0, 0, 0, 0, 0});
}

}  // namespace hpf::test
