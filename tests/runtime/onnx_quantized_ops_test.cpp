// ONNX's quantised ops through the Session's kernels against the reference interpreter, integer
// for integer. MatMulInteger with a constant INT8 weight (the matmul_i8 kernel with an integer
// A): u8 and s8 A, A's zero point absent, constant or a graph input, the weight's absent or
// zero, weights at -128 and 127 (the AVX2 vpmaddubsw form must step aside), ragged N and K,
// batched A, GEMV-like M; forms the kernel does not take run on the reference.
// DynamicQuantizeLinear (dynamic_quantize): sizes off the vector width, one-signed, all-zero
// and NaN-holding tensors; and the pattern ONNX Runtime's quantize_dynamic writes (x ->
// DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by the scales) as one graph.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

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

// `g` compiled by a Session (no kernel cache) and run on `feeds`; and on the reference.
struct Ran {
  CompileStats stats;
  std::vector<Tensor> out;
};

Ran on_kernels(const Graph& g, const std::vector<Tensor>& feeds) {
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::create(o);
  REQUIRE(s.ok());
  auto exe = s->compile(g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  auto got = exe->run(feeds);
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  return {exe->compile_stats(), std::move(got).value()};
}

std::vector<Tensor> on_reference(const Graph& g, const std::vector<Tensor>& feeds) {
  auto want = ref::run(g, feeds);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  return std::move(want).value();
}

std::vector<uint8_t> u8s(const Tensor& t) {
  std::vector<uint8_t> v(static_cast<size_t>(t.nbytes()));
  std::memcpy(v.data(), t.bytes().data(), v.size());
  return v;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.bytes().data(), b.bytes().data(), a.nbytes()) == 0;
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
                        // K of whole 16-byte rows (A was once read in place there), a last
                        // partial tile of rows.
                        Case{13, 32, 50, DType::U8, Z::constant}, Case{9, 48, 70, DType::I8, Z::input},
                        Case{4, 64, 40, DType::U8, Z::none, false, false, 5},
                        // K a multiple of 64 and at least 16 rows: AMX-INT8 tiles where the host
                        // has them (blocks of 32 rows and 32 columns: ragged rows, a lone panel).
                        Case{16, 64, 40, DType::U8, Z::constant}, Case{37, 128, 50, DType::I8, Z::input},
                        Case{70, 192, 96, DType::U8, Z::constant, true}, Case{30, 64, 33, DType::U8, Z::none, false, false, 3}}) {
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
    const std::vector<Tensor> want = on_reference(*g, feeds);
    const Ran got = on_kernels(*g, feeds);
    // b_zp without a_zp leaves an absent input in the middle: that form stays on the reference.
    const bool kernel = !(c.b_zp && c.a_zp == Z::none);
    CHECK(got.stats.fallbacks == (kernel ? 0 : 1));
    CHECK(got.stats.int8_compute_nodes == (kernel ? std::vector<std::string>{"mm"} : std::vector<std::string>{}));
    REQUIRE(got.out[0].dtype() == DType::I32);
    REQUIRE(got.out[0].shape() == want[0].shape());
    std::vector<int32_t> gv(got.out[0].numel()), wv(want[0].numel());
    std::memcpy(gv.data(), got.out[0].bytes().data(), gv.size() * 4);
    std::memcpy(wv.data(), want[0].bytes().data(), wv.size() * 4);
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
    const std::vector<Tensor> want = on_reference(*g, feeds);
    const Ran got = on_kernels(*g, feeds);
    CHECK(got.stats.fallbacks == 1);
    CHECK(same_bytes(got.out[0], want[0]));
  }
}

TEST_CASE("codegen: DynamicQuantizeLinear chooses the reference's scale and zero point and quantises as it does") {
  struct Q {
    int64_t n;
    float lo, hi;
    bool nan = false;
  };
  for (const Q& q : {Q{5, -1, 1}, Q{16, 0.5f, 3}, Q{37, -3, -0.25f}, Q{1000, -2, 7}, Q{128 * 768 + 3, -4, 1.5f},
                     Q{33, 0, 0}, Q{300, -1, 2, true}}) {
    CAPTURE(q.n);
    CAPTURE(q.lo);
    Tensor x(DType::F32, {q.n});
    std::mt19937 gen(11);
    std::uniform_real_distribution<float> d(q.lo, q.hi);
    auto* xv = reinterpret_cast<float*>(x.bytes().data());
    for (int64_t i = 0; i < q.n; ++i) xv[i] = q.lo == q.hi ? q.lo : d(gen);
    // NaN, which the reference refuses, quantises as 0 does; its range leaves NaN out (0 is in it
    // anyway): the reference's results for the tensor with 0 in its place.
    Tensor x0 = x;
    if (q.nan)
      for (int64_t i = 0; i < q.n; i += 7) xv[i] = std::numeric_limits<float>::quiet_NaN();
    if (q.nan)
      for (int64_t i = 0; i < q.n; i += 7) reinterpret_cast<float*>(x0.bytes().data())[i] = 0.0f;
    GraphBuilder b("dql");
    auto in = b.input("x", DType::F32, make_shape(std::vector<int64_t>{q.n}));
    auto outs = b.op("DynamicQuantizeLinear", {in}, {}, 3, "dq");
    b.output(outs[0], "y");
    b.output(outs[1], "scale");
    b.output(outs[2], "zp");
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    const std::vector<Tensor> want = on_reference(*g, {x0});
    const Ran got = on_kernels(*g, {x});
    CHECK(got.stats.fallbacks == 0);
    CHECK(got.out[1].to_f32() == want[1].to_f32());
    CHECK(same_bytes(got.out[2], want[2]));
    const std::vector<uint8_t> gv = u8s(got.out[0]), wv = u8s(want[0]);
    int64_t diffs = 0;
    for (size_t i = 0; i < gv.size(); ++i) diffs += gv[i] != wv[i];
    CHECK_MESSAGE(diffs == 0, diffs << " of " << gv.size() << " differ");
    if (q.lo != q.hi)  // really spread over the range
      CHECK(std::set<uint8_t>(gv.begin(), gv.end()).size() + 1 >= std::min<size_t>(gv.size(), 9));
  }
}

TEST_CASE("codegen: ONNX Runtime's dynamic quantisation pattern runs on kernels, integers as the reference's") {
  // x -> DynamicQuantizeLinear -> MatMulInteger(xq, W, x_zp, 0) -> Cast -> Mul(x_scale * w_scale).
  for (int64_t m : {1, 20, 128}) {
    CAPTURE(m);
    const int64_t k = 96, nn = 72;
    GraphBuilder b("qdyn");
    auto x = b.input("x", DType::F32, make_shape(std::vector<int64_t>{m, k}));
    auto dq = b.op("DynamicQuantizeLinear", {x}, {}, 3, "dq");
    auto mm = b.op1("MatMulInteger", {dq[0], b.constant("w", bytes_tensor(DType::I8, {k, nn}, 3, 0, 255)), dq[2],
                                      b.constant("w_zp", Tensor(DType::I8, {}))},
                    {}, "mm");
    auto f = b.op1("Cast", {mm}, {{"to", int64_t{1}}}, "cast");
    Tensor ws(DType::F32, {});
    reinterpret_cast<float*>(ws.bytes().data())[0] = 0.0123f;
    auto scale = b.op1("Mul", {dq[1], b.constant("w_scale", ws)}, {}, "scales");
    b.output(b.op1("Mul", {f, scale}, {}, "deq"), "y");
    b.output(mm, "acc");
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    Tensor xt(DType::F32, {m, k});
    std::mt19937 gen(5);
    std::normal_distribution<float> d(0.3f, 1.0f);
    for (int64_t i = 0; i < m * k; ++i) reinterpret_cast<float*>(xt.bytes().data())[i] = d(gen);
    const std::vector<Tensor> want = on_reference(*g, {xt});
    const Ran got = on_kernels(*g, {xt});
    CHECK(got.stats.fallbacks == 0);
    CHECK(got.stats.int8_compute_nodes == std::vector<std::string>{"mm"});
    CHECK(same_bytes(got.out[1], want[1]));
    const std::vector<float> gy = got.out[0].to_f32(), wy = want[0].to_f32();
    for (size_t i = 0; i < gy.size(); ++i)
      REQUIRE_MESSAGE(std::abs(gy[i] - wy[i]) <= 1e-6f * std::abs(wy[i]), i << ": " << gy[i] << " vs " << wy[i]);
  }
}

TEST_CASE("codegen: DequantizeLinear of 8-bit integers per tensor runs in an elementwise kernel, bit for bit") {
  // u8 and s8, zero point absent or a scalar; then a per-axis one, which stays on the reference.
  for (int form = 0; form < 5; ++form) {
    CAPTURE(form);
    const DType t = form % 2 ? DType::I8 : DType::U8;
    const bool zp = form >= 2, per_axis = form == 4;
    const Tensor x = bytes_tensor(t, {7, 37}, 9, 0, 255);
    GraphBuilder b("deq");
    auto in = b.input("x", t, make_shape(std::vector<int64_t>{7, 37}));
    Tensor sc(DType::F32, per_axis ? std::vector<int64_t>{37} : std::vector<int64_t>{});
    for (int64_t i = 0; i < sc.numel(); ++i) reinterpret_cast<float*>(sc.bytes().data())[i] = 0.0371f + 0.001f * i;
    std::vector<ValueId> ins{in, b.constant("scale", sc)};
    if (zp) {
      Tensor z(t, per_axis ? std::vector<int64_t>{37} : std::vector<int64_t>{});
      for (std::byte& v : z.bytes()) v = std::byte{t == DType::U8 ? uint8_t{129} : uint8_t{0xfd}};
      ins.push_back(b.constant("zp", z));
    }
    // Relu after it: the chain goes on in FP32.
    b.output(b.op1("Relu", {b.op1("DequantizeLinear", ins, {}, "dq")}, {}, "relu"), "y");
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    const std::vector<Tensor> want = on_reference(*g, {x});
    const Ran got = on_kernels(*g, {x});
    CHECK(got.stats.fallbacks == (per_axis ? 1 : 0));
    CHECK(got.out[0].to_f32() == want[0].to_f32());
  }
}

TEST_CASE("codegen: QuantizeLinear onto 8 bits per tensor runs in an elementwise kernel, bit for bit") {
  // s8 and u8 zero points, none (u8), NaN, infinities, ties and values past the range; a
  // QuantizeLinear -> DequantizeLinear pair (QDQ); then a per-axis scale, on the reference.
  for (int form = 0; form < 5; ++form) {
    CAPTURE(form);
    const bool per_axis = form == 4, qdq = form == 3;
    const DType t = form == 1 ? DType::I8 : DType::U8;
    const int64_t n = 7 * 37;
    Tensor x(DType::F32, {7, 37});
    auto* xv = reinterpret_cast<float*>(x.bytes().data());
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> d(-6, 6);
    for (int64_t i = 0; i < n; ++i) xv[i] = d(gen);
    xv[0] = std::numeric_limits<float>::quiet_NaN();
    xv[1] = std::numeric_limits<float>::infinity();
    xv[2] = -std::numeric_limits<float>::infinity();
    xv[3] = 0.025f * 2.5f;  // a tie at scale 0.025 (as exactly as floats give it)
    xv[4] = 1e30f;
    GraphBuilder b("q");
    auto in = b.input("x", DType::F32, make_shape(std::vector<int64_t>{7, 37}));
    Tensor sc(DType::F32, per_axis ? std::vector<int64_t>{37} : std::vector<int64_t>{});
    for (int64_t i = 0; i < sc.numel(); ++i) reinterpret_cast<float*>(sc.bytes().data())[i] = 0.025f + 0.001f * i;
    std::vector<ValueId> ins{in, b.constant("scale", sc)};
    if (form != 2) {
      Tensor z(t, per_axis ? std::vector<int64_t>{37} : std::vector<int64_t>{});
      for (std::byte& v : z.bytes()) v = std::byte{t == DType::U8 ? uint8_t{131} : uint8_t{0xfb}};
      ins.push_back(b.constant("zp", z));
    }
    ValueId y = b.op1("QuantizeLinear", ins, {}, "q");
    if (qdq) y = b.op1("DequantizeLinear", {y, ins[1], ins[2]}, {}, "dq");
    b.output(y, "y");
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    const std::vector<Tensor> want = on_reference(*g, {x});
    const Ran got = on_kernels(*g, {x});
    CHECK(got.stats.fallbacks == (per_axis ? 1 : 0));
    CHECK(same_bytes(got.out[0], want[0]));
    if (!qdq) {
      const std::vector<uint8_t> q = u8s(got.out[0]);
      CHECK(std::set<uint8_t>(q.begin(), q.end()).size() > 60);  // spread over the range
    }
  }
}
