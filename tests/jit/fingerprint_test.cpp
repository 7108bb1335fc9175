// Fingerprints: stable for the same machine and toolchain, different when code generation could be.
#include "hpf/fingerprint.hpp"

#include <doctest/doctest.h>

using namespace hpf;

namespace {

CpuInfo sample_cpu() {
  CpuInfo c;
  c.isa = "x86-64";
  c.vendor = "GenuineIntel";
  c.brand = "Intel(R) Xeon(R) Platinum 8480+";
  c.family = 6;
  c.model = 143;
  c.cores = 112;
  c.clock_ghz = 3.8;
  c.flags = {"sse4_2", "avx", "avx2", "fma", "avx512f", "amx_tile"};
  c.l1d_bytes = 48 << 10;
  c.l2_bytes = 2 << 20;
  c.l3_bytes = 105 << 20;
  return c;
}

bool is_hex32(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

TEST_CASE("jit fingerprint: the same CPU gives the same digest, in any field order") {
  const Fingerprint a = cpu_fingerprint(sample_cpu());
  const Fingerprint b = cpu_fingerprint(sample_cpu());
  CHECK(is_hex32(a.digest()));
  CHECK(a.digest() == b.digest());
  Fingerprint reversed;
  for (auto it = a.fields.rbegin(); it != a.fields.rend(); ++it)
    reversed.set(it->first, it->second);
  CHECK(reversed.digest() == a.digest());
  // What varies between runs without changing generated code is not part of it.
  CpuInfo busy = sample_cpu();
  busy.cores = 8;
  busy.clock_ghz = 1.2;
  CHECK(cpu_fingerprint(busy).digest() == a.digest());
  // The running machine: stable from call to call.
  CHECK(cpu_fingerprint(detect_cpu()).digest() == host_cpu_fingerprint().digest());
}

TEST_CASE("jit fingerprint: an ISA flag, the brand, caches or the compiler change the digest") {
  const CpuInfo base = sample_cpu();
  const std::string d = cpu_fingerprint(base).digest();
  CpuInfo c = base;
  c.flags.erase("avx512f");
  CHECK(cpu_fingerprint(c).digest() != d);
  c = base;
  c.flags.insert("avx512_fp16");
  CHECK(cpu_fingerprint(c).digest() != d);
  c = base;
  c.brand = "Intel(R) Xeon(R) Platinum 8490H";
  CHECK(cpu_fingerprint(c).digest() != d);
  c = base;
  c.model = 207;
  CHECK(cpu_fingerprint(c).digest() != d);
  c = base;
  c.l2_bytes = 1 << 20;
  CHECK(cpu_fingerprint(c).digest() != d);
  c = base;
  c.vendor = "AuthenticAMD";
  CHECK(cpu_fingerprint(c).digest() != d);

  Fingerprint t19 = cpu_fingerprint(base);
  t19.add_toolchain("clang 19.1.7", "-O3 -march=native");
  Fingerprint t18 = cpu_fingerprint(base);
  t18.add_toolchain("clang 18.1.8", "-O3 -march=native");
  Fingerprint t19_o2 = cpu_fingerprint(base);
  t19_o2.add_toolchain("clang 19.1.7", "-O2 -march=native");
  CHECK(t19.digest() != d);
  CHECK(t19.digest() != t18.digest());
  CHECK(t19.digest() != t19_o2.digest());
}

TEST_CASE("jit fingerprint: plugin fields merge under a prefix and replace on the same key") {
  Fingerprint fp;
  fp.merge({{"sm", "90"}, {"driver", "550.54"}}, "device.");
  REQUIRE(fp.find("device.sm") != nullptr);
  CHECK(*fp.find("device.sm") == "90");
  CHECK(fp.find("sm") == nullptr);
  const std::string d = fp.digest();
  fp.set("device.driver", "555.42");
  CHECK(fp.fields.size() == 2);
  CHECK(fp.digest() != d);
  // Field boundaries are part of the hash: ("ab","c") is not ("a","bc").
  Fingerprint x, y;
  x.set("ab", "c");
  y.set("a", "bc");
  CHECK(x.digest() != y.digest());
}

TEST_CASE("jit fingerprint: describe() and parse() round-trip, escapes included") {
  Fingerprint fp = cpu_fingerprint(sample_cpu());
  fp.set("odd=key", "value with = and \\ and\nnewline");
  const std::string text = fp.describe();
  CHECK(text.find("cpu.brand=Intel(R) Xeon(R) Platinum 8480+\n") != std::string::npos);
  auto back = Fingerprint::parse(text);
  REQUIRE(back.ok());
  CHECK(back->digest() == fp.digest());
  REQUIRE(back->find("odd=key") != nullptr);
  CHECK(*back->find("odd=key") == "value with = and \\ and\nnewline");
  auto bad = Fingerprint::parse("cpu.vendor=x\nno equals sign\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "fingerprint description line 2 has no '=': 'no equals sign'");
}

TEST_CASE("jit fingerprint: hash128_hex is 32 hex digits and content-sensitive") {
  CHECK(is_hex32(hash128_hex("")));
  CHECK(hash128_hex("kernel a") == hash128_hex("kernel a"));
  CHECK(hash128_hex("kernel a") != hash128_hex("kernel b"));
}
