// The plugin host: discovery, ABI checks, refusal messages, best device, and the null plugin
// through the C++ wrappers.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <string>
#include <vector>

#include "hpf/plugin_host.hpp"

namespace fs = std::filesystem;
using namespace hpf;

namespace {

const std::string kPluginDir = HPF_TEST_PLUGIN_DIR;
const std::string kShadowDir = HPF_TEST_SHADOW_DIR;

std::string file_of(const PluginRecord& r) { return fs::path(r.path).filename().string(); }

// The one record of a file name; fails the test when there is not exactly one.
const PluginRecord& record(const PluginHost& host, const std::string& file) {
  const PluginRecord* found = nullptr;
  int count = 0;
  for (const PluginRecord& r : host.records())
    if (file_of(r) == file) {
      found = &r;
      ++count;
    }
  REQUIRE_MESSAGE(count == 1, file << " found " << count << " times");
  return *found;
}

PluginHostOptions only(std::vector<std::string> dirs) {
  PluginHostOptions o;
  o.dirs = std::move(dirs);
  o.use_env_path = false;
  o.use_installed_dir = false;
  return o;
}

// A fresh directory holding copies of some test plugins.
std::string dir_with(const std::string& name, const std::vector<std::string>& files) {
  fs::path dir = fs::temp_directory_path() / ("hpf-plugin-host-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string& f : files) fs::copy_file(fs::path(kPluginDir) / f, dir / f);
  return dir.string();
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

}  // namespace

TEST_CASE("plugin host: each bad plugin is refused with its reason, the others still load") {
  // The directory twice and a missing one: each file is still visited once.
  const std::string path = kPluginDir + ":" + kPluginDir + "/../plugin-dir::/nonexistent/hpf-plugins";
  REQUIRE(setenv("HPF_PLUGIN_PATH", path.c_str(), 1) == 0);
  PluginHost host;
  unsetenv("HPF_PLUGIN_PATH");

  const auto& dirs = host.search_dirs();
  REQUIRE(dirs.size() == 3);
  CHECK(dirs[0] == fs::weakly_canonical(kPluginDir).string());
  CHECK(dirs[1] == "/nonexistent/hpf-plugins");
  CHECK(dirs[2] == fs::weakly_canonical(PluginHost::installed_plugin_dir()).string());

  SUBCASE("another major") {
    const auto& r = record(host, "libhpf-plugin-test_bad_major.so");
    CHECK_FALSE(r.usable);
    CHECK(r.abi_major == 2);
    CHECK(r.reason == "plugin ABI 2.0, this libhpf speaks 1.0: refused");
    CHECK(r.name.empty());
  }
  SUBCASE("a table smaller than its minor") {
    const auto& r = record(host, "libhpf-plugin-test_truncated.so");
    CHECK_FALSE(r.usable);
    CHECK(r.reason == "plugin ABI 1.0 table is " + std::to_string(offsetof(hpf_plugin_api, timer_create)) +
                          " bytes, ABI 1.0 needs " + std::to_string(sizeof(hpf_plugin_api)) + ": refused");
  }
  SUBCASE("a NULL function") {
    const auto& r = record(host, "libhpf-plugin-test_null_function.so");
    CHECK_FALSE(r.usable);
    CHECK(r.reason == "function 'timer_stop' is NULL in the table: refused");
  }
  SUBCASE("no entry point") {
    const auto& r = record(host, "libhpf-plugin-test_not_a_plugin.so");
    CHECK_FALSE(r.usable);
    CHECK(r.reason == "not a libhpf plugin (no hpf_get_plugin_api)");
    CHECK(r.abi_major == 0);
  }
  SUBCASE("plugin_init fails") {
    const auto& r = record(host, "libhpf-plugin-test_init_fails.so");
    CHECK_FALSE(r.usable);
    CHECK(r.reason == "plugin_init failed: no test device attached (device error)");
    CHECK(r.devices.empty());
  }
  SUBCASE("every device scores 0") {
    const auto& r = record(host, "libhpf-plugin-test_score_zero.so");
    CHECK_FALSE(r.usable);
    CHECK(r.reason == "no usable device (test-a: no test hardware; test-b: test device disabled)");
    REQUIRE(r.devices.size() == 2);
    CHECK(r.devices[1].score_reason == "test device disabled");
    // Initialised, so still reachable (for tests and `hpf info`), but never the best device.
    CHECK(host.plugin("test_score_zero") != nullptr);
  }
  SUBCASE("a newer minor loads, its extra fields ignored") {
    const auto& r = record(host, "libhpf-plugin-test_newer_minor.so");
    CHECK(r.usable);
    CHECK(r.reason.empty());
    CHECK(r.name == "test_newer_minor");
    CHECK(r.version == "0.0.1");
    CHECK(r.abi_major == HPF_PLUGIN_ABI_MAJOR);
    CHECK(r.abi_minor == HPF_PLUGIN_ABI_MINOR + 1);
    REQUIRE(r.devices.size() == 2);
    const DeviceRecord& d = r.devices[1];
    CHECK(d.index == 1);
    CHECK(d.name == "test-b");
    CHECK(d.architecture == "testarch");
    CHECK(d.dialect == "c");
    CHECK(d.score == 3);
    CHECK(d.memory_bytes == (2u << 20));
    CHECK(d.compute_units == 4);
    // The precision array's elements are wider than 1.0's: stepped by their struct_size.
    REQUIRE(d.precisions.size() == 2);
    CHECK(d.precisions[0].op_class == "matmul");
    CHECK(d.precisions[0].formats == std::vector<std::string>{"f32", "bf16"});
    CHECK(d.precisions[1].op_class == "elementwise");
    CHECK(d.precisions[1].formats == std::vector<std::string>{"f32", "f16"});
    REQUIRE(d.fingerprint.size() == 2);
    CHECK(d.fingerprint[1] == std::pair<std::string, std::string>{"driver", "none"});
    CHECK(d.compiler == "testcc 1");
    CHECK(d.compile_flags == "-O2");
  }
  SUBCASE("the null plugin from the installed directory") {
    const auto& r = record(host, "libhpf-plugin-null.so");
    CHECK(fs::path(r.path).parent_path() == fs::path(dirs[2]));
    CHECK(r.name == "null");
    CHECK(r.abi_major == 1);
    CHECK(r.abi_minor == 0);
    CHECK_FALSE(r.usable);
    CHECK(r.reason == "no usable device (null: the null plugin runs nothing)");
    REQUIRE(r.devices.size() == 1);
    CHECK(r.devices[0].dialect == "null");
    CHECK(r.devices[0].score == 0);
    CHECK(r.devices[0].fingerprint.size() == 1);
  }
}

TEST_CASE("plugin host: an earlier directory shadows a file of the same name") {
  PluginHost host(only({kPluginDir, kShadowDir}));
  const PluginRecord& shadowed = host.records().back();
  CHECK(fs::path(shadowed.path).parent_path() == fs::weakly_canonical(kShadowDir));
  CHECK_FALSE(shadowed.usable);
  CHECK(shadowed.reason == "shadowed by " + (fs::weakly_canonical(kPluginDir) / "libhpf-plugin-test_newer_minor.so").string());
  CHECK(host.plugin_at(host.records().size() - 1) == nullptr);
  // The first one is the one in use.
  Plugin* p = host.plugin("test_newer_minor");
  REQUIRE(p != nullptr);
  CHECK(fs::path(p->path()).parent_path() == fs::weakly_canonical(kPluginDir));
}

TEST_CASE("plugin host: best_device") {
  SUBCASE("the highest score of the usable plugins") {
    PluginHost host(only({kPluginDir}));
    auto best = host.best_device();
    REQUIRE(best.ok());
    CHECK(best->plugin->name() == "test_newer_minor");
    CHECK(best->device == 1);
    CHECK(best->info().score == 3);
  }
  SUBCASE("none usable: says why for each plugin") {
    const std::string dir = dir_with("unusable", {"libhpf-plugin-test_init_fails.so", "libhpf-plugin-test_score_zero.so"});
    PluginHost host(only({dir}));
    auto best = host.best_device();
    REQUIRE_FALSE(best.ok());
    CHECK(best.status().code() == StatusCode::not_found);
    CHECK(best.status().message() ==
          "no usable device: libhpf-plugin-test_init_fails.so: plugin_init failed: no test device attached (device "
          "error); libhpf-plugin-test_score_zero.so: no usable device (test-a: no test hardware; test-b: test device "
          "disabled)");
    fs::remove_all(dir);
  }
  SUBCASE("no plugins at all") {
    PluginHost host(only({}));
    CHECK(host.records().empty());
    auto best = host.best_device();
    REQUIRE_FALSE(best.ok());
    CHECK(best.status().message() == "no libhpf plugins found (searched nothing; set HPF_PLUGIN_PATH)");
  }
}

TEST_CASE("plugin host: errors of a plugin become Status values naming it") {
  PluginHost host(only({kPluginDir}));
  Plugin* p = host.plugin("test_newer_minor");
  REQUIRE(p != nullptr);
  auto buffer = p->alloc(0, 16);
  REQUIRE_FALSE(buffer.ok());
  CHECK(buffer.status().code() == StatusCode::unsupported);
  CHECK(buffer.status().message() ==
        "plugin 'test_newer_minor': buffer_alloc: unsupported: the test plugin has no memory or programs");
  CHECK(p->synchronize(1).ok());
  Status bad = p->synchronize(2);
  CHECK(bad.code() == StatusCode::invalid_argument);
  CHECK(bad.message() == "plugin 'test_newer_minor': device_synchronize: no device 2 (the plugin has 2)");
}

TEST_CASE("plugin host: the null plugin works through the Plugin wrapper") {
  PluginHost host(only({PluginHost::installed_plugin_dir()}));
  Plugin* p = host.plugin("null");
  REQUIRE_MESSAGE(p != nullptr, "libhpf-plugin-null.so not found in " << PluginHost::installed_plugin_dir());
  CHECK(p->version() == "1.0.0");
  CHECK_FALSE(p->usable());
  REQUIRE(p->devices().size() == 1);
  CHECK(p->synchronize(0).ok());

  SUBCASE("memory round trip") {
    auto buffer = p->alloc(0, 64);
    REQUIRE(buffer.ok());
    CHECK(buffer->size() == 64);
    CHECK(buffer->device_pointer() != nullptr);
    std::vector<float> in(16), out(16, -1.0f);
    for (int k = 0; k < 16; ++k) in[k] = 0.5f * k;
    REQUIRE(buffer->copy_in(0, in.data(), 64).ok());
    REQUIRE(buffer->copy_out(0, out.data(), 64).ok());
    CHECK(out == in);
    float mid[2] = {};
    REQUIRE(buffer->copy_out(8 * sizeof(float), mid, sizeof mid).ok());
    CHECK(mid[0] == 4.0f);
    CHECK(mid[1] == 4.5f);

    Status outside = buffer->copy_in(60, in.data(), 8);
    CHECK(outside.code() == StatusCode::invalid_argument);
    CHECK(outside.message() == "plugin 'null': buffer_copy_in: copy of 8 bytes at offset 60 exceeds the 64-byte buffer");
    // Raw, past the wrapper's check: the plugin's own check answers.
    hpf_error* e = p->api().buffer_copy_out(p->handle(), buffer->raw(), 64, out.data(), 1);
    Status raw = p->consume_error(e, "buffer_copy_out");
    CHECK(raw.message() ==
          "plugin 'null': buffer_copy_out: invalid argument: copy of 1 bytes at offset 64 exceeds the 64-byte buffer");

    Buffer moved = std::move(*buffer);
    CHECK_FALSE(buffer->valid());
    CHECK(moved.valid());
    auto empty = p->alloc(0, 0);
    CHECK(empty.ok());
  }
  SUBCASE("a device that does not exist") {
    auto buffer = p->alloc(3, 64);
    REQUIRE_FALSE(buffer.ok());
    CHECK(buffer.status().message() == "plugin 'null': buffer_alloc: no device 3 (the plugin has 1)");
    hpf_buffer* raw = nullptr;
    Status s = p->consume_error(p->api().buffer_alloc(p->handle(), 3, 64, &raw), "buffer_alloc");
    CHECK(s.message() == "plugin 'null': buffer_alloc: invalid argument: no device 3 (the null plugin has one device, 0)");
    CHECK(raw == nullptr);
  }
  SUBCASE("compile, load, kernel, launch") {
    const std::string source = "void scale(void* const* args, int64_t begin, int64_t end) {}";
    auto binary = p->compile(0, source);
    REQUIRE(binary.ok());
    CHECK(binary->size() > source.size());
    auto program = p->load(0, *binary);
    REQUIRE(program.ok());
    auto kernel = program->kernel("scale");
    REQUIRE(kernel.ok());
    CHECK(kernel->name() == "scale");
    auto missing = program->kernel("nope");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().code() == StatusCode::not_found);
    CHECK(missing.status().message() == "plugin 'null': kernel_get: not found: no kernel 'nope' in the program");

    auto buffer = p->alloc(0, 16);
    REQUIRE(buffer.ok());
    void* args[] = {buffer->device_pointer()};
    Launch launch;
    launch.args = args;
    launch.work_items = 4;
    CHECK(kernel->launch(launch).ok());
    launch.work_items = -1;
    Status negative = kernel->launch(launch);
    CHECK(negative.message() == "plugin 'null': kernel_launch 'scale': invalid argument: negative work_items or grain");

    const std::vector<std::byte> elf = bytes_of("\x7f" "ELF not a null program");
    auto garbage = p->load(0, elf);
    REQUIRE_FALSE(garbage.ok());
    CHECK(garbage.status().code() == StatusCode::invalid_argument);
    CHECK(garbage.status().message() ==
          "plugin 'null': program_load: invalid argument: not a null-plugin binary (" + std::to_string(elf.size()) +
              " bytes without its header)");
  }
  SUBCASE("timer") {
    auto timer = p->create_timer(0);
    REQUIRE(timer.ok());
    auto early = timer->stop();
    REQUIRE_FALSE(early.ok());
    CHECK(early.status().message() == "plugin 'null': timer_stop: invalid argument: timer_stop before timer_start");
    REQUIRE(timer->start().ok());
    auto ns = timer->stop();
    REQUIRE(ns.ok());
    CHECK(*ns < 10'000'000'000ull);
  }
}
