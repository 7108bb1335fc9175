// NumPy .npy files: files NumPy 1.24 wrote (tests/data/npy, made with np.save) read back with
// their values; what libhpf writes is byte-identical to NumPy's own file; errors name the problem.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "hpf/npy.hpp"

using namespace hpf;

namespace {

std::string data(const char* f) { return std::string(HPF_SOURCE_DIR) + "/tests/data/npy/" + f; }

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::vector<std::byte>(reinterpret_cast<std::byte*>(raw.data()), reinterpret_cast<std::byte*>(raw.data()) + raw.size());
}

}  // namespace

TEST_CASE("npy: NumPy's files read with their dtype, shape and values") {
  auto f32 = load_npy(data("f32_2x3.npy"));
  REQUIRE_MESSAGE(f32.ok(), f32.status().to_string());
  CHECK(f32->dtype() == DType::F32);
  CHECK(f32->shape() == std::vector<int64_t>{2, 3});
  CHECK(f32->to_f32() == std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f});

  auto f64 = load_npy(data("f64_be.npy"));  // big-endian doubles, held as F32
  REQUIRE_MESSAGE(f64.ok(), f64.status().to_string());
  CHECK(f64->dtype() == DType::F32);
  CHECK(f64->to_f32() == std::vector<float>{1.0f, -2.25f, 1e-3f});

  auto f16 = load_npy(data("f16_scalar.npy"));
  REQUIRE(f16.ok());
  CHECK(f16->dtype() == DType::F16);
  CHECK(f16->rank() == 0);
  CHECK(f16->to_f32() == std::vector<float>{1.5f});

  auto ids = load_npy(data("i64_ids.npy"));
  REQUIRE(ids.ok());
  CHECK(ids->dtype() == DType::I64);
  CHECK(ids->to_i64() == std::vector<int64_t>{1, int64_t{1} << 40, -3, 0});

  auto b = load_npy(data("bool_4.npy"));
  REQUIRE(b.ok());
  CHECK(b->dtype() == DType::BOOL);
  CHECK(b->to_i64() == std::vector<int64_t>{1, 0, 0, 1});

  auto empty = load_npy(data("u8_empty.npy"));
  REQUIRE(empty.ok());
  CHECK(empty->dtype() == DType::U8);
  CHECK(empty->shape() == std::vector<int64_t>{0, 3});

  auto v2 = load_npy(data("f32_v2.npy"));  // format version 2.0 (4-byte header length)
  REQUIRE(v2.ok());
  CHECK(v2->to_f32() == std::vector<float>{0, 1, 2, 3});
}

TEST_CASE("npy: what libhpf writes is what NumPy writes") {
  for (const char* f : {"f32_2x3.npy", "f16_scalar.npy", "i64_ids.npy", "bool_4.npy", "u8_empty.npy"}) {
    CAPTURE(f);
    auto t = load_npy(data(f));
    REQUIRE(t.ok());
    CHECK(encode_npy(*t) == file_bytes(data(f)));
  }
  // Formats NumPy lacks are written as float32 values.
  const Tensor bf = Tensor::from_f32({2}, std::vector<float>{1.0f, -3.0f}, DType::BF16).value();
  auto back = parse_npy(encode_npy(bf));
  REQUIRE(back.ok());
  CHECK(back->dtype() == DType::F32);
  CHECK(back->to_f32() == std::vector<float>{1.0f, -3.0f});
  // save_npy replaces the file in one step.
  const auto path = std::filesystem::temp_directory_path() / ("hpf-npy-" + std::to_string(::getpid()) + ".npy");
  REQUIRE(save_npy(path.string(), bf).ok());
  CHECK(load_npy(path.string())->to_f32() == std::vector<float>{1.0f, -3.0f});
  CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));
  std::filesystem::remove(path);
}

TEST_CASE("npy: bad files get errors naming the file and the problem") {
  auto fortran = load_npy(data("fortran.npy"));
  REQUIRE_FALSE(fortran.ok());
  CHECK(fortran.status().code() == StatusCode::unsupported);
  CHECK(fortran.status().message().find("Fortran-order") != std::string::npos);

  auto u16 = load_npy(data("u16.npy"));
  REQUIRE_FALSE(u16.ok());
  CHECK(u16.status().message().find("element type '<u2' is not supported") != std::string::npos);

  auto missing = load_npy(data("nope.npy"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::not_found);

  std::vector<std::byte> bytes = file_bytes(data("f32_2x3.npy"));
  bytes.resize(bytes.size() - 1);  // one byte of data short
  auto truncated = parse_npy(bytes, "short.npy");
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.status().message() ==
        "npy file 'short.npy': truncated data: shape (2, 3) of <f4 needs 24 bytes, the file has 23");
  bytes[0] = std::byte{'x'};
  CHECK(parse_npy(bytes, "x").status().message() == "npy file 'x': not a NumPy .npy file (bad magic)");
  // Every truncation of a valid file is an error, never a crash.
  const std::vector<std::byte> whole = file_bytes(data("i64_ids.npy"));
  for (size_t n = 0; n < whole.size(); ++n)
    CHECK_FALSE(parse_npy(std::span<const std::byte>(whole.data(), n)).ok());
}
