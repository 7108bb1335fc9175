// The CPU plugin through its C table only, as a host would use it.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <hpf/plugin.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

const hpf_plugin_api* api() {
  static const hpf_plugin_api* table = [] {
    void* handle = dlopen(HPF_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(handle != nullptr, dlerror());
    auto get = reinterpret_cast<hpf_get_plugin_api_fn>(dlsym(handle, HPF_PLUGIN_ENTRY_POINT));
    REQUIRE((get != nullptr));
    return get();
  }();
  return table;
}

// Takes an error: its code (0 for none) and message.
struct Err {
  int code = 0;
  std::string message;
};
Err take(hpf_error* e) {
  Err r;
  if (e != nullptr) {
    r.code = api()->error_code(e);
    r.message = api()->error_message(e);
    api()->error_destroy(e);
  }
  return r;
}
#define HPF_OK(call)                               \
  do {                                             \
    Err err_ = take(call);                         \
    REQUIRE_MESSAGE(err_.code == 0, err_.message); \
  } while (0)

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One plugin instance; HPF_NUM_THREADS is set (or cleared) around plugin_init.
struct Plugin {
  hpf_plugin* p = nullptr;
  explicit Plugin(const char* threads = nullptr) {
    if (threads)
      setenv("HPF_NUM_THREADS", threads, 1);
    else
      unsetenv("HPF_NUM_THREADS");
    Err e = take(api()->plugin_init(&p));
    unsetenv("HPF_NUM_THREADS");
    REQUIRE_MESSAGE(e.code == 0, e.message);
  }
  ~Plugin() { api()->plugin_destroy(p); }
  const hpf_device_info& device() const { return *api()->device_info(p, 0); }

  std::vector<char> compile(const std::string& source, const char* what) {
    hpf_blob* blob = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    HPF_OK(api()->program_compile(p, 0, source.data(), source.size(), &blob));
    MESSAGE("cold compile of " << std::string(what) << ": " << seconds_since(t0) * 1e3 << " ms, "
                               << blob->size << " bytes");
    REQUIRE(blob->struct_size == sizeof(hpf_blob));
    std::vector<char> bytes(static_cast<const char*>(blob->data),
                            static_cast<const char*>(blob->data) + blob->size);
    api()->blob_free(p, blob);
    return bytes;
  }
  bool loaded_before = false;
  hpf_program* load(const std::vector<char>& bytes) {
    hpf_program* prog = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    HPF_OK(api()->program_load(p, 0, bytes.data(), bytes.size(), &prog));
    MESSAGE(
        "blob load (" << bytes.size() << " bytes): " << seconds_since(t0) * 1e3 << " ms"
                      << std::string(loaded_before ? "" : ", with creating this instance's JIT"));
    loaded_before = true;
    return prog;
  }
  hpf_kernel* kernel(hpf_program* prog, const char* name) {
    hpf_kernel* k = nullptr;
    HPF_OK(api()->kernel_get(p, prog, name, &k));
    return k;
  }
  void launch(hpf_kernel* k, std::vector<void*> args, int64_t items, int64_t grain = 0) {
    hpf_launch l{};
    l.struct_size = sizeof(hpf_launch);
    l.args = args.data();
    l.arg_count = args.size();
    l.work_items = items;
    l.grain = grain;
    HPF_OK(api()->kernel_launch(p, k, &l));
  }
};

// A host buffer of n elements of T.
template <typename T>
struct Buffer {
  Plugin& plugin;
  hpf_buffer* b = nullptr;
  size_t n;
  Buffer(Plugin& pl, size_t count) : plugin(pl), n(count) {
    HPF_OK(api()->buffer_alloc(plugin.p, 0, n * sizeof(T), &b));
  }
  ~Buffer() { api()->buffer_free(plugin.p, b); }
  void* ptr() { return api()->buffer_pointer(plugin.p, b); }
  void put(const std::vector<T>& v) {
    HPF_OK(api()->buffer_copy_in(plugin.p, b, 0, v.data(), v.size() * sizeof(T)));
  }
  std::vector<T> get() {
    std::vector<T> v(n);
    HPF_OK(api()->buffer_copy_out(plugin.p, b, 0, v.data(), n * sizeof(T)));
    return v;
  }
};

const char* kVadd = R"(#include <stdint.h>
void vadd(void* const* a, int64_t b, int64_t e) {
  const float* x = (const float*)a[0];
  const float* y = (const float*)a[1];
  float* z = (float*)a[2];
  for (int64_t i = b; i < e; ++i) z[i] = x[i] + y[i];
}
void fill(void* const* a, int64_t b, int64_t e) {
  int64_t* out = (int64_t*)a[0];
  for (int64_t i = b; i < e; ++i) out[i] += i + 1;
}
)";

// expf from the runtime symbols; f16/bf16 conversions, from float (inline or helper) and from
// double (__truncdfhf2/__truncdfbf2 on x86-64).
const char* kMixed = R"(#include <stdint.h>
float expf(float);
void mixed(void* const* a, int64_t b, int64_t e) {
  const float* x = (const float*)a[0];
  float* out = (float*)a[1];
  uint16_t* h16 = (uint16_t*)a[2];
  uint16_t* b16 = (uint16_t*)a[3];
  for (int64_t i = b; i < e; ++i) {
    _Float16 h = (_Float16)expf(x[i]);
    __bf16 g = (__bf16)x[i];
    out[i] = (float)h + (float)g;
    _Float16 hd = (_Float16)(double)x[i];
    __bf16 gd = (__bf16)(double)x[i];
    __builtin_memcpy(&h16[i], &hd, 2);
    __builtin_memcpy(&b16[i], &gd, 2);
  }
}
)";

// Round-to-nearest-even to a format with `mantissa` bits and smallest normal exponent `emin`,
// computed in double (exact for these ranges): the reference for the kernels' conversions.
double round_to(double v, int mantissa, int emin) {
  if (v == 0) return v;
  int e = std::max(static_cast<int>(std::floor(std::log2(std::fabs(v)))), emin);
  double ulp = std::ldexp(1.0, e - mantissa);
  return std::nearbyint(v / ulp) * ulp;
}
float f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31  ? (m ? NAN : INFINITY)
             : e == 0 ? std::ldexp(m, -24)
                      : std::ldexp(1024 + m, e - 25);
  return static_cast<float>(h & 0x8000 ? -v : v);
}
float bf16_value(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The compiler-rt helpers the plugin provides, called by name so that every one runs whatever
// this CPU converts natively.
const char* kHelpers = R"(#include <stdint.h>
_Float16 __truncsfhf2(float);
_Float16 __truncdfhf2(double);
__bf16 __truncsfbf2(float);
__bf16 __truncdfbf2(double);
float __extendhfsf2(_Float16);
void narrow(void* const* a, int64_t b, int64_t e) {
  const float* x = (const float*)a[0];
  uint16_t* out = (uint16_t*)a[1];
  for (int64_t i = b; i < e; ++i) {
    _Float16 h = __truncsfhf2(x[i]), hd = __truncdfhf2(x[i]);
    __bf16 g = __truncsfbf2(x[i]), gd = __truncdfbf2(x[i]);
    __builtin_memcpy(&out[4 * i], &h, 2);
    __builtin_memcpy(&out[4 * i + 1], &hd, 2);
    __builtin_memcpy(&out[4 * i + 2], &g, 2);
    __builtin_memcpy(&out[4 * i + 3], &gd, 2);
  }
}
void widen(void* const* a, int64_t b, int64_t e) {
  const uint16_t* h = (const uint16_t*)a[0];
  float* out = (float*)a[1];
  for (int64_t i = b; i < e; ++i) {
    _Float16 v;
    __builtin_memcpy(&v, &h[i], 2);
    out[i] = __extendhfsf2(v);
  }
}
)";

constexpr int64_t kItems = 1000003;

std::vector<float> inputs(int64_t n, float scale, int phase) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + phase)) *
           (i % 7 == 0 ? 1e-5f : 1.0f);
  return v;
}

// vadd over kItems on `plugin`; checks the sums and returns them.
std::vector<float> run_vadd(Plugin& plugin, hpf_program* prog) {
  auto x = inputs(kItems, 3, 0), y = inputs(kItems, 5, 1);
  Buffer<float> bx(plugin, kItems), by(plugin, kItems), bz(plugin, kItems);
  bx.put(x);
  by.put(y);
  plugin.launch(plugin.kernel(prog, "vadd"), {bx.ptr(), by.ptr(), bz.ptr()}, kItems);
  auto z = bz.get();
  int64_t wrong = 0;
  for (int64_t i = 0; i < kItems; ++i) wrong += z[i] != x[i] + y[i];
  CHECK(wrong == 0);
  return z;
}

struct MixedOut {
  std::vector<float> out;
  std::vector<uint16_t> h16, b16;
};

MixedOut run_mixed(Plugin& plugin, hpf_program* prog) {
  auto x = inputs(kItems, 8, 2);
  Buffer<float> bx(plugin, kItems), bo(plugin, kItems);
  Buffer<uint16_t> bh(plugin, kItems), bb(plugin, kItems);
  bx.put(x);
  plugin.launch(plugin.kernel(prog, "mixed"), {bx.ptr(), bo.ptr(), bh.ptr(), bb.ptr()}, kItems);
  MixedOut r{bo.get(), bh.get(), bb.get()};
  int64_t wrong_out = 0, wrong_h = 0, wrong_b = 0;
  for (int64_t i = 0; i < kItems; ++i) {
    const float h = static_cast<float>(round_to(std::exp(x[i]), 10, -14));
    const float g = static_cast<float>(round_to(x[i], 7, -126));
    wrong_out += r.out[i] != h + g;
    wrong_h += f16_value(r.h16[i]) != static_cast<float>(round_to(x[i], 10, -14));
    wrong_b += bf16_value(r.b16[i]) != g;
  }
  CHECK(wrong_out == 0);
  CHECK(wrong_h == 0);
  CHECK(wrong_b == 0);
  return r;
}

}  // namespace

TEST_CASE("cpu plugin: ABI table and struct sizes") {
  const hpf_plugin_api* a = api();
  CHECK(a->struct_size == sizeof(hpf_plugin_api));
  CHECK(a->abi_major == HPF_PLUGIN_ABI_MAJOR);
  CHECK(a->abi_minor == HPF_PLUGIN_ABI_MINOR);
  CHECK((a->timer_stop != nullptr));
  Plugin plugin;
  const hpf_plugin_info* info = a->plugin_info(plugin.p);
  CHECK(info->struct_size == sizeof(hpf_plugin_info));
  CHECK(std::string(info->name) == "cpu");
  CHECK(std::string(info->version) != "");
}

TEST_CASE("cpu plugin: one device that describes this machine") {
  Plugin plugin;
  CHECK(api()->device_count(plugin.p) == 1);
  CHECK(api()->device_info(plugin.p, 1) == nullptr);
  const hpf_device_info& d = plugin.device();
  CHECK(d.struct_size == sizeof(hpf_device_info));
  CHECK(std::string(d.name) != "");
  CHECK(std::string(d.architecture) != "");
  CHECK(std::string(d.dialect) == "c");
  CHECK(d.score == 100);
  CHECK(d.memory_bytes > 0);
  CHECK(d.compute_units == static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  REQUIRE(d.precision_count > 0);
  // Claims match the kernels libhpf generates for it: float storage formats, FP32 compute;
  // MatMul/Gemm also INT8 and INT4 weights (matmul_wq, matmul_i8), and on AVX2 without VNNI the
  // hint for 7-bit INT8 weights (MatMul and Conv).
  std::string features;
  for (size_t i = 0; i < d.fingerprint_count; ++i)
    if (std::string(d.fingerprint[i].key) == "features") features = "," + std::string(d.fingerprint[i].value) + ",";
  REQUIRE(!features.empty());
  auto has = [&](const char* f) { return features.find("," + std::string(f) + ",") != std::string::npos; };
  const bool w7 = has("avx2") && !has("avx512vnni") && !has("avxvnni");
  INFO("7-bit INT8 weights wanted: " << w7);
  bool matmul_listed = false, conv_listed = false;
  for (size_t i = 0; i < d.precision_count; ++i) {
    const std::string formats = d.precisions[i].formats;
    CHECK(formats.find("f32") != std::string::npos);
    if (std::string(d.precisions[i].op_class) == "matmul")
      matmul_listed = formats == (w7 ? "f32,bf16,f16,i8,i4,i8w7" : "f32,bf16,f16,i8,i4");
    if (std::string(d.precisions[i].op_class) == "conv")
      conv_listed = formats == (w7 ? "f32,bf16,f16,i8,i8w7" : "f32,bf16,f16,i8");
    if (std::string(d.precisions[i].op_class) != "matmul" && std::string(d.precisions[i].op_class) != "conv")
      CHECK(formats.find("i8w7") == std::string::npos);
  }
  CHECK(matmul_listed);
  CHECK(conv_listed);
  std::vector<std::string> keys;
  for (size_t i = 0; i < d.fingerprint_count; ++i) {
    keys.push_back(d.fingerprint[i].key);
    CHECK(std::string(d.fingerprint[i].value) != "");
  }
  CHECK(keys == std::vector<std::string>{"cpu", "features", "clang", "triple"});
  CHECK(std::string(d.compiler).rfind("clang 19.", 0) == 0);
  const std::string flags = d.compile_flags;
  CHECK(flags.find("-O3") != std::string::npos);
  CHECK(flags.find(std::string("-target-cpu ") + d.architecture) != std::string::npos);
  CHECK(flags.find("-target-feature") != std::string::npos);
  CHECK(flags.find("fast-math") == std::string::npos);
  MESSAGE("device: " << std::string(d.name) << " [" << std::string(d.architecture) << "], "
                     << d.compute_units << " threads, " << d.memory_bytes / (1 << 20) << " MiB; "
                     << std::string(d.compiler)
                     << "; cpu features: " << std::string(d.fingerprint[1].value));
}

TEST_CASE("cpu plugin: buffers are 64-byte aligned host memory with bounds-checked copies") {
  Plugin plugin;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}}) {
    hpf_buffer* b = nullptr;
    HPF_OK(api()->buffer_alloc(plugin.p, 0, bytes, &b));
    void* ptr = api()->buffer_pointer(plugin.p, b);
    CHECK(ptr != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(ptr) % 64 == 0);
    char c = 0;
    CHECK(take(api()->buffer_copy_in(plugin.p, b, bytes, &c, 1)).code ==
          HPF_ERROR_INVALID_ARGUMENT);
    api()->buffer_free(plugin.p, b);
  }
  hpf_buffer* b = nullptr;
  CHECK(take(api()->buffer_alloc(plugin.p, 3, 16, &b)).code == HPF_ERROR_NOT_FOUND);
}

TEST_CASE("cpu plugin: compile, load and launch over 1000003 items, a cached blob runs again") {
  Plugin plugin;
  auto vadd = plugin.compile(kVadd, "vadd + fill");
  auto mixed = plugin.compile(kMixed, "mixed (expf, f16, bf16)");

  hpf_program* p1 = plugin.load(vadd);
  hpf_program* m1 = plugin.load(mixed);
  auto z1 = run_vadd(plugin, p1);
  auto r1 = run_mixed(plugin, m1);

  // The same kernel names from another program of the same instance.
  hpf_program* p1b = plugin.load(vadd);
  CHECK(run_vadd(plugin, p1b) == z1);
  api()->program_unload(plugin.p, p1b);

  // As from a cache: a second instance loads copies of the blob bytes.
  Plugin second("2");
  std::vector<char> vadd_copy(vadd), mixed_copy(mixed);
  hpf_program* p2 = second.load(vadd_copy);
  hpf_program* m2 = second.load(mixed_copy);
  CHECK(run_vadd(second, p2) == z1);
  auto r2 = run_mixed(second, m2);
  CHECK(std::memcmp(r1.out.data(), r2.out.data(), r1.out.size() * sizeof(float)) == 0);
  CHECK(r1.h16 == r2.h16);
  CHECK(r1.b16 == r2.b16);

  api()->program_unload(second.p, p2);
  api()->program_unload(second.p, m2);
  api()->program_unload(plugin.p, p1);
  api()->program_unload(plugin.p, m1);
}

TEST_CASE("cpu plugin: the f16/bf16 conversion helpers round to nearest even") {
  Plugin plugin;
  auto blob = plugin.compile(kHelpers, "conversion helpers");
  hpf_program* prog = plugin.load(blob);
  // Halfway cases, subnormals, overflow, specials, then random bit patterns near f16's range.
  std::vector<float> x = {
      0.0f,           -0.0f,          1.0f,         -1.0f,           65504.0f,
      65519.99f,      65520.0f,       1e30f,        -1e38f,          3.4e38f,
      INFINITY,       -INFINITY,      NAN,          1.0f + 0x1p-11f, 1.0f + 0x3p-11f,
      1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 0x1p-24f,     0x1p-25f,        0x1.8p-25f,
      0x1.8p-24f,     0x1p-14f,       0x1.ffcp-15f, 0x1p-126f,       0x1p-133f,
      0x1p-149f,      0x1.fffffep127f};
  uint32_t state = 12345;
  while (x.size() < 200000) {
    state = state * 1664525u + 1013904223u;
    uint32_t bits = (state & 0x807fffffu) | ((static_cast<uint32_t>(state >> 9) % 60 + 97) << 23);
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  Buffer<float> bx(plugin, n);
  Buffer<uint16_t> bo(plugin, 4 * n);
  bx.put(x);
  plugin.launch(plugin.kernel(prog, "narrow"), {bx.ptr(), bo.ptr()}, n);
  auto out = bo.get();
  auto same = [](float got, double want) {
    return std::isnan(want) ? std::isnan(got)
                            : got == want && std::signbit(got) == std::signbit(want);
  };
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    double h = std::isfinite(x[i]) ? round_to(x[i], 10, -14) : x[i];
    if (std::fabs(h) > 65504) h = std::copysign(INFINITY, h);
    double g = std::isfinite(x[i]) ? round_to(x[i], 7, -126) : x[i];
    if (std::fabs(g) > 0x1.fep127) g = std::copysign(INFINITY, g);
    const bool ok = same(f16_value(out[4 * i]), h) && same(f16_value(out[4 * i + 1]), h) &&
                    same(bf16_value(out[4 * i + 2]), g) && same(bf16_value(out[4 * i + 3]), g);
    if (!ok && wrong++ < 5)
      MESSAGE("x = " << x[i] << " (" << i << "): f16 " << out[4 * i] << "/" << out[4 * i + 1]
                     << ", bf16 " << out[4 * i + 2] << "/" << out[4 * i + 3]);
  }
  CHECK(wrong == 0);

  // Every half bit pattern widens exactly.
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  Buffer<uint16_t> bh(plugin, all.size());
  Buffer<float> bw(plugin, all.size());
  bh.put(all);
  plugin.launch(plugin.kernel(prog, "widen"), {bh.ptr(), bw.ptr()}, 65536);
  auto widened = bw.get();
  int64_t wrong_widen = 0;
  for (int i = 0; i < 65536; ++i) {
    const float want = f16_value(static_cast<uint16_t>(i));
    wrong_widen +=
        !(std::isnan(want) ? std::isnan(widened[i])
                           : widened[i] == want && std::signbit(widened[i]) == std::signbit(want));
  }
  CHECK(wrong_widen == 0);
  api()->program_unload(plugin.p, prog);
}

TEST_CASE("cpu plugin: every item is visited exactly once, whatever the grain") {
  Plugin plugin;
  auto blob = plugin.compile(kVadd, "vadd + fill");
  hpf_program* prog = plugin.load(blob);
  hpf_kernel* fill = plugin.kernel(prog, "fill");
  struct Case {
    int64_t items, grain;
  };
  for (Case c : {Case{0, 0}, Case{1, 0}, Case{7, 3}, Case{100, 1000}, Case{kItems, 0},
                 Case{kItems, 1}, Case{kItems, 100000}}) {
    CAPTURE(c.items);
    CAPTURE(c.grain);
    Buffer<int64_t> out(plugin, static_cast<size_t>(c.items) + 1);
    out.put(std::vector<int64_t>(c.items + 1, 0));
    plugin.launch(fill, {out.ptr()}, c.items, c.grain);
    auto v = out.get();
    int64_t wrong = 0;
    for (int64_t i = 0; i < c.items; ++i) wrong += v[i] != i + 1;
    CHECK(wrong == 0);
    CHECK(v[c.items] == 0);
  }
  // Two threads launching at once share the pool.
  auto run = [&] {
    Buffer<int64_t> out(plugin, kItems);
    out.put(std::vector<int64_t>(kItems, 0));
    for (int rep = 0; rep < 5; ++rep) plugin.launch(fill, {out.ptr()}, kItems);
    auto v = out.get();
    int64_t wrong = 0;
    for (int64_t i = 0; i < kItems; ++i) wrong += v[i] != 5 * (i + 1);
    return wrong;
  };
  int64_t wrong_a = -1;
  std::thread t([&] { wrong_a = run(); });
  int64_t wrong_b = run();
  t.join();
  CHECK(wrong_a == 0);
  CHECK(wrong_b == 0);
  hpf_launch bad{};
  bad.struct_size = sizeof(hpf_launch);
  bad.work_items = -1;
  CHECK(take(api()->kernel_launch(plugin.p, fill, &bad)).code == HPF_ERROR_INVALID_ARGUMENT);
  api()->program_unload(plugin.p, prog);
}

// hpf_scratch (plugins/cpu/runtime_symbols.hpp): per item, a buffer of 1 KiB .. 1.2 MiB (growing
// and shrinking) filled with the item's pattern and read back; a thread sharing another's buffer
// would read the other's pattern.
const char* kScratch = R"(#include <stdint.h>
void* hpf_scratch(int64_t bytes);
void scratch(void* const* a, int64_t b, int64_t e) {
  int64_t* out = (int64_t*)a[0];
  for (int64_t i = b; i < e; ++i) {
    const int64_t bytes = 1024 + (i % 5) * 300000, words = bytes / 8;
    int64_t* p = (int64_t*)hpf_scratch(bytes);
    out[4 * i] = p != 0;
    out[4 * i + 1] = ((uintptr_t)p & 63) == 0;
    int64_t ok = p != 0;
    for (int64_t k = 0; ok && k < words; ++k) p[k] = i * 7 + k;
    for (int64_t k = 0; ok && k < words; ++k) ok = p[k] == i * 7 + k;
    out[4 * i + 2] = ok;
    out[4 * i + 3] = hpf_scratch(0) == 0;  /* nothing asked, nothing given */
  }
}
)";

TEST_CASE("cpu plugin: hpf_scratch gives each thread its own 64-byte aligned buffer") {
  Plugin plugin;
  hpf_program* prog = plugin.load(plugin.compile(kScratch, "scratch"));
  const int64_t items = 2000;
  Buffer<int64_t> out(plugin, 4 * items);
  out.put(std::vector<int64_t>(4 * items, 0));
  plugin.launch(plugin.kernel(prog, "scratch"), {out.ptr()}, items, 1);
  auto v = out.get();
  int64_t got = 0, aligned = 0, kept = 0, none = 0;
  for (int64_t i = 0; i < items; ++i) {
    got += v[4 * i];
    aligned += v[4 * i + 1];
    kept += v[4 * i + 2];
    none += v[4 * i + 3];
  }
  CHECK(got == items);
  CHECK(aligned == items);
  CHECK(kept == items);
  CHECK(none == items);
  api()->program_unload(plugin.p, prog);
}

TEST_CASE("cpu plugin: threads compile, load and launch on one instance at once") {
  Plugin plugin;
  auto work = [&](int scale) {
    const std::string source =
        std::string(kVadd) + "void scaled(void* const* a, int64_t b, int64_t e) {\n" +
        "  float* z = (float*)a[0];\n  for (int64_t i = b; i < e; ++i) z[i] = " +
        std::to_string(scale) + ".0f * (float)i;\n}\n";
    hpf_blob* blob = nullptr;
    Err e = take(api()->program_compile(plugin.p, 0, source.data(), source.size(), &blob));
    if (e.code != 0) return int64_t{-1};
    hpf_program* prog = nullptr;
    e = take(api()->program_load(plugin.p, 0, blob->data, blob->size, &prog));
    api()->blob_free(plugin.p, blob);
    if (e.code != 0) return int64_t{-2};
    hpf_kernel* k = nullptr;
    if (take(api()->kernel_get(plugin.p, prog, "scaled", &k)).code != 0) return int64_t{-3};
    std::vector<float> z(10000);
    void* args[] = {z.data()};
    hpf_launch l{};
    l.struct_size = sizeof l;
    l.args = args;
    l.arg_count = 1;
    l.work_items = static_cast<int64_t>(z.size());
    if (take(api()->kernel_launch(plugin.p, k, &l)).code != 0) return int64_t{-4};
    api()->program_unload(plugin.p, prog);
    int64_t wrong = 0;
    for (size_t i = 0; i < z.size(); ++i)
      wrong += z[i] != static_cast<float>(scale) * static_cast<float>(i);
    return wrong;
  };
  std::vector<int64_t> results(4, -9);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { results[t] = work(t + 2); });
  for (auto& t : threads) t.join();
  CHECK(results == std::vector<int64_t>(4, 0));
}

TEST_CASE("cpu plugin: a syntax error is HPF_ERROR_COMPILE with clang's diagnostic") {
  Plugin plugin;
  const std::string bad =
      "#include <stdint.h>\nvoid broken(void* const* a, int64_t b, int64_t e) {\n  int x = ;\n}\n";
  hpf_blob* blob = nullptr;
  Err e = take(api()->program_compile(plugin.p, 0, bad.data(), bad.size(), &blob));
  CHECK(e.code == HPF_ERROR_COMPILE);
  CHECK(blob == nullptr);
  CHECK(e.message.find("kernel.c:3:11: error: expected expression") != std::string::npos);
  MESSAGE("compile error message: " << e.message);
  // The process and the plugin carry on.
  auto good = plugin.compile(kVadd, "vadd after an error");
  hpf_program* prog = plugin.load(good);
  run_vadd(plugin, prog);
  api()->program_unload(plugin.p, prog);
}

TEST_CASE("cpu plugin: missing kernels, undefined symbols and corrupt blobs are errors") {
  Plugin plugin;
  auto blob = plugin.compile(kVadd, "vadd + fill");
  hpf_program* prog = plugin.load(blob);
  hpf_kernel* k = nullptr;
  Err missing = take(api()->kernel_get(plugin.p, prog, "nope", &k));
  CHECK(missing.code == HPF_ERROR_NOT_FOUND);
  CHECK(missing.message.find("'nope'") != std::string::npos);
  CHECK(k == nullptr);
  // A symbol the program only uses (from the runtime) is not one of its kernels.
  CHECK(take(api()->kernel_get(plugin.p, prog, "memcpy", &k)).code == HPF_ERROR_NOT_FOUND);
  api()->program_unload(plugin.p, prog);

  auto undefined = plugin.compile(
      "void hpf_no_such_function(void);\n"
      "void k(void* const* a, long b, long e) { hpf_no_such_function(); }\n",
      "a kernel calling an undefined function");
  hpf_program* p = nullptr;
  Err link = take(api()->program_load(plugin.p, 0, undefined.data(), undefined.size(), &p));
  CHECK(link.code == HPF_ERROR_INVALID_ARGUMENT);
  CHECK(link.message.find("hpf_no_such_function") != std::string::npos);
  MESSAGE("undefined symbol: " << link.message);
  CHECK(p == nullptr);

  std::vector<char> junk(blob.begin(), blob.begin() + 40);
  CHECK(take(api()->program_load(plugin.p, 0, junk.data(), junk.size(), &p)).code ==
        HPF_ERROR_INVALID_ARGUMENT);
  const char text[] = "not an object";
  CHECK(take(api()->program_load(plugin.p, 0, text, sizeof text, &p)).code ==
        HPF_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("cpu plugin: HPF_NUM_THREADS sets the pool size") {
  for (const char* n : {"1", "2"}) {
    CAPTURE(std::string(n));
    Plugin plugin(n);
    CHECK(plugin.device().compute_units == std::atoi(n));
    auto blob = plugin.compile(kVadd, "vadd + fill");
    hpf_program* prog = plugin.load(blob);
    run_vadd(plugin, prog);
    api()->program_unload(plugin.p, prog);
  }
  setenv("HPF_NUM_THREADS", "lots", 1);
  hpf_plugin* p = nullptr;
  Err e = take(api()->plugin_init(&p));
  unsetenv("HPF_NUM_THREADS");
  CHECK(e.code == HPF_ERROR_INVALID_ARGUMENT);
  CHECK(e.message.find("HPF_NUM_THREADS='lots'") != std::string::npos);
  CHECK(p == nullptr);
}

TEST_CASE("cpu plugin: a timer measures a launch") {
  Plugin plugin;
  auto blob = plugin.compile(kVadd, "vadd + fill");
  hpf_program* prog = plugin.load(blob);
  hpf_timer* t = nullptr;
  HPF_OK(api()->timer_create(plugin.p, 0, &t));
  uint64_t ns = 0;
  CHECK(take(api()->timer_stop(plugin.p, t, &ns)).code == HPF_ERROR_INVALID_ARGUMENT);
  HPF_OK(api()->timer_start(plugin.p, t));
  run_vadd(plugin, prog);
  HPF_OK(api()->device_synchronize(plugin.p, 0));
  HPF_OK(api()->timer_stop(plugin.p, t, &ns));
  CHECK(ns > 0);
  MESSAGE("vadd over " << kItems << " items (with copies and checks): " << ns / 1e6 << " ms");
  api()->timer_destroy(plugin.p, t);
  api()->program_unload(plugin.p, prog);
}
