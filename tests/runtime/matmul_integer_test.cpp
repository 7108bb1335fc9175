// ONNX MatMulInteger with a constant INT8 weight through the Session (the matmul_i8 kernel with an
// integer A) against the reference interpreter, integer for integer: u8 and s8 A, A's zero point
// absent, constant or a graph input, the weight's absent or zero, weights at -128 and 127 (the
// AVX2 vpmaddubsw form must step aside), ragged N and K, batched A, GEMV-like M; forms the
// kernel does not take run on the reference.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "hpf/reference.hpp"
#include "hpf/session.hpp"

using namespace hpf;

namespace {

// A tensor of `t` (U8 or I8) with bytes uniform in [lo, hi] (as that type's values).
Tensor bytes_tensor(DType t, std::vector<int64_t> shape, uint32_t seed, int lo, int hi) {
  Tensor x(t, shape);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (std::byte& b : x.bytes()) b = static_cast<std::byte>(static_cast<uint8_t>(d(gen)));
  return x;
}

Tensor scalar(DType t, int v) {
  Tensor x(t, {});
  x.bytes()[0] = static_cast<std::byte>(static_cast<uint8_t>(v));
  return x;
}

struct Case {
  int64_t m, k, n;
  DType a = DType::U8;
  enum Zp { none, constant, input } a_zp = none;
  bool b_zp = false;       // a zero b_zero_point of N values
  bool extreme = false;    // A at its type's extreme, weights at 127 and -128 (or -127)
  int64_t batch = 0;       // > 0: A is [batch, m, k]
};

}  // namespace

TEST_CASE("codegen: MatMulInteger with a constant INT8 weight runs u8/s8 x s8 -> s32 as the reference does") {
  using Z = Case::Zp;
  for (const Case& c : {Case{1, 37, 45}, Case{3, 64, 33, DType::I8, Z::constant}, Case{13, 40, 96, DType::U8, Z::input, true},
                        Case{50, 100, 130, DType::I8, Z::input}, Case{100, 64, 256, DType::U8, Z::constant, true},
                        Case{2, 40, 300, DType::U8, Z::constant}, Case{7, 1000, 20, DType::U8, Z::none, false, true},
                        Case{7, 1000, 20, DType::I8, Z::constant, false, true}, Case{5, 24, 40, DType::U8, Z::constant, false, false, 3},
                        // K of whole 16-byte rows: A read in place (u8 with VNNI, s8 with AVX2),
                        // the last partial tile of rows copied.
                        Case{13, 32, 50, DType::U8, Z::constant}, Case{9, 48, 70, DType::I8, Z::input},
                        Case{4, 64, 40, DType::U8, Z::none, false, false, 5}}) {
    CAPTURE(c.m);
    CAPTURE(c.k);
    CAPTURE(c.n);
    CAPTURE(dtype_name(c.a));
    CAPTURE(int(c.a_zp));
    const bool u8 = c.a == DType::U8;
    const std::vector<int64_t> as = c.batch ? std::vector<int64_t>{c.batch, c.m, c.k} : std::vector<int64_t>{c.m, c.k};
    // Extremes: every a at its largest magnitude against weights of 127 and -128 (-127), so that
    // the pairs of products are the largest the 16-bit and 32-bit sums meet.
    const Tensor x = c.extreme ? bytes_tensor(c.a, as, 4, u8 ? 255 : 128, u8 ? 255 : 128) : bytes_tensor(c.a, as, 4, 0, 255);
    // (s8 A: weights within +-127, which the AVX2 vpmaddubsw form takes; u8 A: some -128, which it
    // does not.)
    Tensor w = bytes_tensor(DType::I8, {c.k, c.n}, 5, 0, 255);
    if (c.extreme)
      for (std::byte& v : w.bytes())
        v = (std::to_integer<uint8_t>(v) & 7) ? std::byte{0x7f} : u8 ? std::byte{0x80} : std::byte{0x81};
    const Tensor za = scalar(c.a, u8 ? 131 : -3);
    GraphBuilder b("mmi");
    auto a = b.input("a", c.a, make_shape(as));
    std::vector<ValueId> ins{a, b.constant("w", w)};
    std::vector<Tensor> feeds{x};
    if (c.a_zp == Z::constant) ins.push_back(b.constant("a_zp", za));
    if (c.a_zp == Z::input) {
      ins.push_back(b.input("a_zp", c.a, make_shape(std::vector<int64_t>{})));
      feeds.push_back(za);
    }
    if (c.b_zp) {
      if (ins.size() == 2) ins.push_back(kNoValue);
      ins.push_back(b.constant("w_zp", Tensor(DType::I8, {c.n})));
    }
    b.output(b.op1("MatMulInteger", ins, {}, "mm"), "y");
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    auto want = ref::run(*g, feeds);
    REQUIRE_MESSAGE(want.ok(), want.status().to_string());
    SessionOptions o;
    o.use_cache = false;
    auto s = Session::create(o);
    REQUIRE(s.ok());
    auto exe = s->compile(*g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    // b_zp without a_zp leaves an absent input in the middle: that form stays on the reference.
    const bool kernel = !(c.b_zp && c.a_zp == Z::none);
    CHECK(exe->compile_stats().fallbacks == (kernel ? 0 : 1));
    CHECK(exe->compile_stats().int8_compute_nodes == (kernel ? std::vector<std::string>{"mm"} : std::vector<std::string>{}));
    auto got = exe->run(feeds);
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    REQUIRE((*got)[0].dtype() == DType::I32);
    REQUIRE((*got)[0].shape() == (*want)[0].shape());
    std::vector<int32_t> gv((*got)[0].numel()), wv((*want)[0].numel());
    std::memcpy(gv.data(), (*got)[0].bytes().data(), gv.size() * 4);
    std::memcpy(wv.data(), (*want)[0].bytes().data(), wv.size() * 4);
    int64_t diffs = 0;
    for (size_t i = 0; i < gv.size(); ++i) diffs += gv[i] != wv[i];
    CHECK_MESSAGE(diffs == 0, diffs << " of " << gv.size() << " differ; first " << gv[0] << " vs " << wv[0]);
    if (c.extreme) CHECK(std::abs(int64_t{wv[0]}) > 32767 * 2);  // the sums really are past 16 bits
  }
}

TEST_CASE("codegen: MatMulInteger forms the kernel does not take run on the reference") {
  // A non-zero weight zero point; a weight that is a graph input.
  for (int form = 0; form < 2; ++form) {
    CAPTURE(form);
    const Tensor x = bytes_tensor(DType::U8, {4, 16}, 1, 0, 255), w = bytes_tensor(DType::I8, {16, 8}, 2, 0, 255);
    GraphBuilder b("mmi");
    auto a = b.input("a", DType::U8, make_shape(std::vector<int64_t>{4, 16}));
    std::vector<Tensor> feeds{x};
    ValueId wv;
    if (form == 1) {
      wv = b.input("w", DType::I8, make_shape(std::vector<int64_t>{16, 8}));
      feeds.push_back(w);
    } else {
      wv = b.constant("w", w);
    }
    std::vector<ValueId> ins{a, wv, b.constant("a_zp", scalar(DType::U8, 7))};
    if (form == 0) ins.push_back(b.constant("w_zp", scalar(DType::I8, 2)));
    b.output(b.op1("MatMulInteger", ins, {}, "mm"), "y");
    auto g = b.build();
    REQUIRE(g.ok());
    auto want = ref::run(*g, feeds);
    REQUIRE(want.ok());
    SessionOptions o;
    o.use_cache = false;
    auto s = Session::create(o);
    REQUIRE(s.ok());
    auto exe = s->compile(*g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    CHECK(exe->compile_stats().fallbacks == 1);
    auto got = exe->run(feeds);
    REQUIRE(got.ok());
    CHECK(std::memcmp((*got)[0].bytes().data(), (*want)[0].bytes().data(), (*want)[0].nbytes()) == 0);
  }
}
