// The plugin host: finds, loads, versions and scores hardware backends, and wraps the C table of
// include/hpf/plugin.h in RAII C++ types that speak hpf::Status.
//
// Discovery. A plugin is a file named libhpf-plugin-<name>.so. The host looks, in this order, in
//   1. PluginHostOptions::dirs (empty by default),
//   2. each directory of the environment variable HPF_PLUGIN_PATH (colon-separated, read when the
//      host is constructed; empty entries are ignored, relative ones are taken from the current
//      directory),
//   3. the installed plugin directory, installed_plugin_dir() = <directory of libhpf.so>/hpf/plugins
//      (in a build tree: <build>/hpf/plugins).
// Within a directory, files are taken in byte order of their names. A directory named twice and a
// file reached twice (through a symlink) are visited once. A file name already found in an earlier
// directory is not loaded again: the later file is listed as shadowed, so HPF_PLUGIN_PATH can
// override an installed backend with a development build of it.
//
// Loading. Each file is opened RTLD_LOCAL | RTLD_LAZY and never unloaded (RTLD_NODELETE: plugins
// that link LLVM or a driver cannot be unloaded safely anyway). The host then checks, in order:
//   - the entry point hpf_get_plugin_api exists           "not a libhpf plugin (no hpf_get_plugin_api)"
//   - the table's major is this libhpf's major           "plugin ABI 2.0, this libhpf speaks 1.0: refused"
//   - its struct_size covers its minor (capped at ours)   "plugin ABI 1.0 table is N bytes, ABI 1.0 needs M: refused"
//   - no function of that minor is NULL                   "function 'buffer_alloc' is NULL in the table: refused"
//   - plugin_init succeeds                                "plugin_init failed: <the plugin's message>"
//   - at least one device scores above 0                  "no usable device (<device>: <score_reason>; ...)"
// A plugin of an older minor is accepted and only the functions its minor had are called; one of a
// newer minor is accepted and only the functions this libhpf knows are called. Every refusal is a
// PluginRecord with usable == false and the reason, and a log line (warn; score 0 and shadowing are
// info, since a machine without a GPU is normal). Nothing here throws or stops the other plugins.
//
// Ownership and lifetime.
//   - PluginHost owns every Plugin (one initialised instance per loaded file) and the loaded
//     libraries. Plugin* pointers it hands out stay valid until the host is destroyed.
//   - Buffer, Program and Timer own one plugin object each and release it (buffer_free,
//     program_unload, timer_destroy) in their destructor; they are move-only and must be destroyed
//     before the Plugin (hence the host) that made them.
//   - A Kernel is a non-owning view: it is valid while the Program it came from is loaded.
//   - Plugin::compile returns a copy of the binary; the plugin's blob is freed before it returns.
//   - Errors from the plugin become Status values whose message is
//       "plugin '<name>': <function>: <message>"
//     and the plugin's error object is always released with error_destroy.
//   - PluginHost::shared() is created on first use and deliberately never destroyed, so that no
//     plugin_destroy runs during static destruction.
//
// Thread safety. Constructing a host loads everything; afterwards all const members of PluginHost
// and Plugin read immutable data and may be called from any thread. Plugin's calls follow
// plugin.h: one Plugin may be used from several threads for different buffers, programs, kernels
// and timers; calls on the same Buffer/Program/Kernel/Timer must be serialised by the caller.
// shared() is safe to call from several threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hpf/plugin.h"
#include "hpf/status.hpp"

namespace hpf {

// Formats ("f32", "bf16", ...) a device runs for one op class ("matmul", "elementwise", ...).
struct PrecisionSupport {
  std::string op_class;
  std::vector<std::string> formats;
};

// A copy of one hpf_device_info, taken when the plugin was loaded. Fields the plugin's ABI minor
// does not have are empty / 0.
struct DeviceRecord {
  int32_t index = 0;
  std::string name;
  std::string architecture;
  std::string dialect;
  int32_t score = 0;  // 0 = cannot run here
  std::string score_reason;
  uint64_t memory_bytes = 0;
  int32_t compute_units = 0;
  std::vector<PrecisionSupport> precisions;
  std::vector<std::pair<std::string, std::string>> fingerprint;
  std::string compiler;
  std::string compile_flags;

  // Whether the device's compile flags turn on `feature`, an LLVM target feature such as
  // "+amx-int8" (the CPU plugin compiles for those of the host that Linux grants this process).
  bool compiles_for(std::string_view feature) const {
    return compile_flags.find(feature) != std::string::npos;
  }
};

// What the host found in one file: a plain, copyable value (for `hpf info` and for logs).
struct PluginRecord {
  std::string path;     // absolute path of the .so
  std::string name;     // plugin_info()->name; empty when the plugin was not initialised
  std::string version;  // plugin_info()->version
  uint32_t abi_major = 0;  // as the table says; 0.0 when no table was found
  uint32_t abi_minor = 0;
  bool usable = false;  // initialised and at least one device scores above 0
  std::string reason;   // why not usable ("" when usable); the file name is not repeated in it
  std::vector<DeviceRecord> devices;
};

class Plugin;

// Device memory of one plugin. Move-only; frees itself (buffer_free).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  bool valid() const { return handle_ != nullptr; }
  size_t size() const { return size_; }
  int32_t device() const { return device_; }
  // The device address to put in Launch::args (buffer_pointer). Not dereferenceable on the host
  // unless the device shares host memory.
  void* device_pointer() const;
  // Copies between host memory and [offset, offset + bytes) of the buffer. A range outside the
  // buffer is invalid_argument (checked here, before the plugin is called).
  Status copy_in(size_t offset, const void* src, size_t bytes);
  Status copy_out(size_t offset, void* dst, size_t bytes) const;
  hpf_buffer* raw() const { return handle_; }
  void reset();  // frees now

 private:
  friend class Plugin;
  Buffer(Plugin* plugin, hpf_buffer* handle, size_t size, int32_t device)
      : plugin_(plugin), handle_(handle), size_(size), device_(device) {}
  Plugin* plugin_ = nullptr;
  hpf_buffer* handle_ = nullptr;
  size_t size_ = 0;
  int32_t device_ = 0;
};

// One kernel launch. `args` is borrowed for the duration of Kernel::launch only.
struct Launch {
  std::span<void* const> args;  // device pointers (Buffer::device_pointer) and scalars
  int64_t work_items = 0;       // dialect "c": the range [0, work_items) cut into parallel ranges
  int64_t grain = 0;            // smallest range worth a thread; 0 = the plugin's choice
  // GPU dialects: the caller's grid and block, or, left at zero, the GPU launch rule (grain
  // threads a block over ceil(work_items / grain) blocks), which generated kernels expect.
  std::array<uint32_t, 3> grid{0, 0, 0};
  std::array<uint32_t, 3> block{0, 0, 0};
  uint32_t shared_bytes = 0;
};

// An entry point of a loaded Program: a non-owning view, valid while the Program is loaded.
// Copyable.
class Kernel {
 public:
  Kernel() = default;
  bool valid() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }
  Status launch(const Launch& launch) const;
  hpf_kernel* raw() const { return handle_; }

 private:
  friend class Program;
  Kernel(Plugin* plugin, hpf_kernel* handle, std::string name)
      : plugin_(plugin), handle_(handle), name_(std::move(name)) {}
  Plugin* plugin_ = nullptr;
  hpf_kernel* handle_ = nullptr;
  std::string name_;
};

// A loaded binary. Move-only; unloads itself (program_unload), which invalidates its Kernels.
class Program {
 public:
  Program() = default;
  Program(Program&& other) noexcept;
  Program& operator=(Program&& other) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();

  bool valid() const { return handle_ != nullptr; }
  int32_t device() const { return device_; }
  // kernel_get: not_found (from the plugin) when the program has no such entry point.
  Expected<Kernel> kernel(const std::string& name);
  hpf_program* raw() const { return handle_; }
  void reset();  // unloads now

 private:
  friend class Plugin;
  Program(Plugin* plugin, hpf_program* handle, int32_t device) : plugin_(plugin), handle_(handle), device_(device) {}
  Plugin* plugin_ = nullptr;
  hpf_program* handle_ = nullptr;
  int32_t device_ = 0;
};

// Measures device time between start() and stop(). Move-only; destroys itself (timer_destroy).
class Timer {
 public:
  Timer() = default;
  Timer(Timer&& other) noexcept;
  Timer& operator=(Timer&& other) noexcept;
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  ~Timer();

  bool valid() const { return handle_ != nullptr; }
  Status start();
  // Stops, waits for the device, and returns the nanoseconds since start().
  Expected<uint64_t> stop();
  void reset();

 private:
  friend class Plugin;
  Timer(Plugin* plugin, hpf_timer* handle) : plugin_(plugin), handle_(handle) {}
  Plugin* plugin_ = nullptr;
  hpf_timer* handle_ = nullptr;
};

// One initialised instance of a plugin: the table plus the hpf_plugin*, destroyed
// (plugin_destroy) with the host. Not copyable, not movable (handles point to it).
class Plugin {
 public:
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;
  ~Plugin();

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::string& path() const { return path_; }
  uint32_t abi_major() const { return abi_major_; }
  uint32_t abi_minor() const { return abi_minor_; }  // as the plugin reports it
  // Snapshot of the devices taken at load (index == position).
  const std::vector<DeviceRecord>& devices() const { return devices_; }
  bool usable() const;  // some device scores above 0
  // The highest-scoring device (ties: the lower index); devices() must not be empty.
  const DeviceRecord& best_device() const;

  // device_synchronize: waits until all work queued on `device` is done.
  Status synchronize(int32_t device);
  Expected<Buffer> alloc(int32_t device, size_t bytes);
  // program_compile: `source` in the device's dialect -> a binary for `device` (a copy; the
  // plugin's blob is already freed). A compiler error is invalid_argument with the log.
  Expected<std::vector<std::byte>> compile(int32_t device, std::string_view source);
  // program_load: a binary from compile(), possibly from another process (the cache).
  Expected<Program> load(int32_t device, std::span<const std::byte> binary);
  Expected<Timer> create_timer(int32_t device);

  // The raw table (a host-side copy: functions the plugin's minor lacks are NULL) and instance,
  // for code that needs the C ABI directly (the conformance tests).
  const hpf_plugin_api& api() const { return api_; }
  hpf_plugin* handle() const { return instance_; }

  // Turns an hpf_error* from this plugin into a Status "plugin '<name>': <function>: <message>"
  // and destroys the error. nullptr -> ok.
  Status consume_error(hpf_error* error, std::string_view function) const;

 private:
  friend class PluginHost;
  friend class Buffer;
  friend class Program;
  friend class Kernel;
  friend class Timer;
  Plugin(const hpf_plugin_api& api, hpf_plugin* instance, std::string path);
  Status check_device(int32_t device, std::string_view function) const;

  hpf_plugin_api api_{};
  hpf_plugin* instance_ = nullptr;
  std::string name_, version_, path_;
  uint32_t abi_major_ = 0, abi_minor_ = 0;
  std::vector<DeviceRecord> devices_;
};

// The device a session should use.
struct DeviceChoice {
  Plugin* plugin = nullptr;
  int32_t device = 0;
  const DeviceRecord& info() const { return plugin->devices()[static_cast<size_t>(device)]; }
};

struct PluginHostOptions {
  std::vector<std::string> dirs;   // searched first, in order
  bool use_env_path = true;        // then HPF_PLUGIN_PATH
  bool use_installed_dir = true;   // then installed_plugin_dir()
};

class PluginHost {
 public:
  // Finds and loads every plugin (see the top of this file). Never throws; problems are records.
  explicit PluginHost(PluginHostOptions options = {});
  ~PluginHost();  // plugin_destroy for every Plugin, in reverse load order
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // One process-wide host with default options, created on first call (thread-safe), never
  // destroyed. HPF_PLUGIN_PATH is read at that first call.
  static PluginHost& shared();

  // <directory of libhpf.so>/hpf/plugins, or "" if libhpf's own path cannot be found.
  static std::string installed_plugin_dir();

  // The directories searched, in order, after de-duplication (existing or not).
  const std::vector<std::string>& search_dirs() const { return search_dirs_; }
  // One record per candidate file, in discovery order.
  const std::vector<PluginRecord>& records() const { return records_; }
  // The initialised plugin of records()[index], or nullptr (refused, init failed, shadowed).
  Plugin* plugin_at(size_t index) const;
  // The first initialised plugin called `name` (usable or not: the null plugin scores 0 but
  // still works through its table), or nullptr.
  Plugin* plugin(std::string_view name) const;

  // The highest-scoring device of all usable plugins; ties go to the earlier plugin, then the
  // lower device index. not_found, listing why each plugin is unusable, when there is none.
  Expected<DeviceChoice> best_device() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;  // the loaded libraries (Boost.DLL stays out of this header)
  std::vector<std::string> search_dirs_;
  std::vector<PluginRecord> records_;
  std::vector<std::unique_ptr<Plugin>> plugins_;  // parallel to records_; null where none
};

}  // namespace hpf
