#include <doctest/doctest.h>

#include <cmath>

#include "hpf/tensor.hpp"

using namespace hpf;

TEST_CASE("Tensor: storage follows the dtype") {
  Tensor a(DType::F16, {2, 3});
  CHECK(a.nbytes() == 12);
  CHECK(a.numel() == 6);
  CHECK(Tensor(DType::I4, {3}).nbytes() == 2);
  CHECK(Tensor(DType::I64, {0, 5}).nbytes() == 0);
  CHECK(Tensor().describe() == "f32[]");
  CHECK(a.describe() == "f16[2,3]");
}

TEST_CASE("Tensor: from_f32 encodes, to_f32 decodes, cast converts") {
  auto t = Tensor::from_f32({4}, std::vector<float>{1.0f, 1.0f + 1.0f / 1024, 65520.0f, -0.0f}, DType::F16);
  REQUIRE(t.ok());
  auto v = t->to_f32();
  CHECK(v[0] == 1.0f);
  CHECK(v[1] == 1.0f + 1.0f / 1024);
  CHECK(std::isinf(v[2]));  // 65520 rounds past F16's max (65504): IEEE overflow
  CHECK(std::signbit(v[3]));
  CHECK(t->data<uint16_t>()[0] == 0x3C00);
  Tensor b = t->cast(DType::BF16);
  CHECK(b.to_f32()[1] == 1.0f);  // 1 + 2^-10 is below BF16's resolution
  Tensor i = t->cast(DType::I64);
  CHECK(i.to_i64()[0] == 1);
  auto bad = Tensor::from_f32({2, 2}, std::vector<float>{1, 2, 3});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "Tensor::from_f32: 3 values for shape [2,2] (4 elements)");
}

TEST_CASE("Tensor: integers, bytes, reshape") {
  auto i = Tensor::from_i64({3}, std::vector<int64_t>{-200, 5, 300}, DType::I8);
  REQUIRE(i.ok());
  CHECK(i->to_i64() == std::vector<int64_t>{-128, 5, 127});  // clamped to the type's range
  auto r = i->reshaped({3, 1});
  REQUIRE(r.ok());
  CHECK(r->shape() == std::vector<int64_t>{3, 1});
  CHECK_FALSE(i->reshaped({2}).ok());
  auto raw = Tensor::from_bytes(DType::F32, {2}, std::vector<std::byte>(7));
  REQUIRE_FALSE(raw.ok());
  CHECK(raw.status().message() == "Tensor::from_bytes: f32[2] needs 8 bytes, got 7");
}
