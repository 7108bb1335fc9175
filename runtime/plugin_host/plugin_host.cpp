// Finding, loading and versioning plugins; the C++ wrappers around their tables.
#include "hpf/plugin_host.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "hpf/log.hpp"

namespace hpf {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "libhpf-plugin-";
constexpr std::string_view kSuffix = ".so";

// One past the last byte of `field`: a struct whose struct_size reaches this has the field.
#define HPF_FIELD_END(type, field) (offsetof(type, field) + sizeof(static_cast<type*>(nullptr)->field))

// sizeof(hpf_plugin_api) as each minor of this major defined it. A new minor appends its size
// (from its HPF_PLUGIN_API_LAST_FIELD_1_<minor>) and its functions to required_functions().
constexpr size_t kApiSizeOfMinor[] = {
    HPF_FIELD_END(hpf_plugin_api, HPF_PLUGIN_API_LAST_FIELD_1_0),
};
static_assert(std::size(kApiSizeOfMinor) == HPF_PLUGIN_ABI_MINOR + 1,
              "a new ABI minor needs its table size in kApiSizeOfMinor");

// The smallest element sizes the host accepts in arrays and info structs: their ABI 1.0 sizes.
constexpr size_t kDeviceInfoSize10 = HPF_FIELD_END(hpf_device_info, compile_flags);
constexpr size_t kPrecisionSize10 = HPF_FIELD_END(hpf_precision_support, formats);
constexpr size_t kKvSize10 = HPF_FIELD_END(hpf_kv, value);
constexpr size_t kBlobSize10 = HPF_FIELD_END(hpf_blob, size);

struct FunctionEntry {
  const char* name;
  uint32_t minor;  // the minor that added it: required from plugins of that minor on
  bool present;
};

std::vector<FunctionEntry> required_functions(const hpf_plugin_api& a) {
#define HPF_FN(field, minor) FunctionEntry{#field, minor, a.field != nullptr}
  return {HPF_FN(plugin_init, 0),       HPF_FN(plugin_destroy, 0),  HPF_FN(plugin_info, 0),
          HPF_FN(error_code, 0),        HPF_FN(error_message, 0),   HPF_FN(error_destroy, 0),
          HPF_FN(device_count, 0),      HPF_FN(device_info, 0),     HPF_FN(device_synchronize, 0),
          HPF_FN(buffer_alloc, 0),      HPF_FN(buffer_free, 0),     HPF_FN(buffer_pointer, 0),
          HPF_FN(buffer_copy_in, 0),    HPF_FN(buffer_copy_out, 0), HPF_FN(program_compile, 0),
          HPF_FN(blob_free, 0),         HPF_FN(program_load, 0),    HPF_FN(program_unload, 0),
          HPF_FN(kernel_get, 0),        HPF_FN(kernel_launch, 0),   HPF_FN(timer_create, 0),
          HPF_FN(timer_destroy, 0),     HPF_FN(timer_start, 0),     HPF_FN(timer_stop, 0)};
#undef HPF_FN
}

// A copy of a plugin-written struct: the bytes it says it has (at most ours), the rest zero, so
// fields of a newer minor are ignored and fields an older minor lacks read as 0 / NULL.
template <typename T>
T read_struct(const void* p) {
  T out{};
  if (!p) return out;
  size_t size = 0;
  std::memcpy(&size, p, sizeof size);
  std::memcpy(static_cast<void*>(&out), p, std::min(size, sizeof(T)));
  out.struct_size = std::min(size, sizeof(T));
  return out;
}

// Elements of a plugin-written array, stepping by the plugin's struct_size (a newer minor may
// have appended fields to the element type). Empty when the first element is smaller than 1.0's.
template <typename T>
std::vector<T> read_array(const T* first, size_t count, size_t min_size) {
  std::vector<T> out;
  if (!first || count == 0 || first->struct_size < min_size) return out;
  const size_t stride = first->struct_size;
  const auto* bytes = reinterpret_cast<const unsigned char*>(first);
  for (size_t k = 0; k < count; ++k) out.push_back(read_struct<T>(bytes + k * stride));
  return out;
}

std::string str(const char* s) { return s ? s : ""; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find(sep, begin);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(begin, end - begin);
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    if (!part.empty()) parts.push_back(part);
    begin = end + 1;
  }
  return parts;
}

StatusCode status_code_of(hpf_error_code code) {
  switch (code) {
    case HPF_ERROR_INVALID_ARGUMENT: return StatusCode::invalid_argument;
    case HPF_ERROR_UNSUPPORTED: return StatusCode::unsupported;
    case HPF_ERROR_NOT_FOUND: return StatusCode::not_found;
    case HPF_ERROR_COMPILE: return StatusCode::invalid_argument;  // the source was rejected
    case HPF_ERROR_DEVICE:
    case HPF_ERROR_OUT_OF_MEMORY: return StatusCode::io_error;    // a resource outside libhpf failed
    case HPF_ERROR_INTERNAL: break;
  }
  return StatusCode::internal;
}

const char* error_code_name(hpf_error_code code) {
  switch (code) {
    case HPF_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case HPF_ERROR_UNSUPPORTED: return "unsupported";
    case HPF_ERROR_NOT_FOUND: return "not found";
    case HPF_ERROR_DEVICE: return "device error";
    case HPF_ERROR_COMPILE: return "compile error";
    case HPF_ERROR_OUT_OF_MEMORY: return "out of memory";
    case HPF_ERROR_INTERNAL: return "internal error";
  }
  return "unknown error";
}

std::string version_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

bool is_plugin_file_name(const std::string& n) {
  return n.size() > kPrefix.size() + kSuffix.size() && n.starts_with(kPrefix) && n.ends_with(kSuffix);
}

// Boost.DLL reports a failed dlopen as a bare errno and clears dlerror(); ask dlopen again for
// the loader's own words ("libcuda.so.1: cannot open shared object file ...").
std::string dlopen_failure(const std::string& path, const std::string& fallback) {
  dlerror();
  if (void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(h);
    return fallback;
  }
  const char* e = dlerror();
  return e ? e : fallback;
}

void log_record(const PluginRecord& r, LogLevel level) {
  log(level, r.path + ": " + r.reason);
}

}  // namespace

// ---- Plugin ----

Plugin::Plugin(const hpf_plugin_api& api, hpf_plugin* instance, std::string path)
    : api_(api), instance_(instance), path_(std::move(path)), abi_major_(api.abi_major), abi_minor_(api.abi_minor) {
  const auto info = read_struct<hpf_plugin_info>(api_.plugin_info(instance_));
  name_ = str(info.name);
  version_ = str(info.version);
  if (name_.empty()) {  // fall back to the <name> of libhpf-plugin-<name>.so
    std::string file = fs::path(path_).filename().string();
    name_ = file.substr(kPrefix.size(), file.size() - kPrefix.size() - kSuffix.size());
  }
  const int32_t count = std::max<int32_t>(0, api_.device_count(instance_));
  for (int32_t d = 0; d < count; ++d) {
    DeviceRecord rec;
    rec.index = d;
    const hpf_device_info* raw = api_.device_info(instance_, d);
    if (!raw || raw->struct_size < kDeviceInfoSize10) {
      rec.score_reason = raw ? "device_info is " + std::to_string(raw->struct_size) + " bytes, ABI 1.0 needs " +
                                   std::to_string(kDeviceInfoSize10)
                             : "device_info returned NULL";
      log(LogLevel::warn, path_ + ": device " + std::to_string(d) + ": " + rec.score_reason);
      devices_.push_back(std::move(rec));
      continue;
    }
    const auto di = read_struct<hpf_device_info>(raw);
    rec.name = str(di.name);
    rec.architecture = str(di.architecture);
    rec.dialect = str(di.dialect);
    rec.score = std::max<int32_t>(0, di.score);
    rec.score_reason = str(di.score_reason);
    rec.memory_bytes = di.memory_bytes;
    rec.compute_units = di.compute_units;
    for (const auto& p : read_array(di.precisions, di.precision_count, kPrecisionSize10))
      rec.precisions.push_back({str(p.op_class), split(str(p.formats), ',')});
    for (const auto& kv : read_array(di.fingerprint, di.fingerprint_count, kKvSize10))
      rec.fingerprint.emplace_back(str(kv.key), str(kv.value));
    rec.compiler = str(di.compiler);
    rec.compile_flags = str(di.compile_flags);
    devices_.push_back(std::move(rec));
  }
}

Plugin::~Plugin() {
  if (instance_) api_.plugin_destroy(instance_);
}

bool Plugin::usable() const {
  return std::any_of(devices_.begin(), devices_.end(), [](const DeviceRecord& d) { return d.score > 0; });
}

const DeviceRecord& Plugin::best_device() const {
  return *std::max_element(devices_.begin(), devices_.end(),
                           [](const DeviceRecord& a, const DeviceRecord& b) { return a.score < b.score; });
}

Status Plugin::consume_error(hpf_error* error, std::string_view function) const {
  if (!error) return {};
  const hpf_error_code code = api_.error_code(error);
  std::string message = "plugin '" + name_ + "': " + std::string(function) + ": " + error_code_name(code) + ": " +
                        str(api_.error_message(error));
  api_.error_destroy(error);
  return Status(status_code_of(code), std::move(message));
}

Status Plugin::check_device(int32_t device, std::string_view function) const {
  if (device >= 0 && static_cast<size_t>(device) < devices_.size()) return {};
  return Status::invalid("plugin '" + name_ + "': " + std::string(function) + ": no device " + std::to_string(device) +
                         " (the plugin has " + std::to_string(devices_.size()) + ")");
}

Status Plugin::synchronize(int32_t device) {
  HPF_RETURN_IF_ERROR(check_device(device, "device_synchronize"));
  return consume_error(api_.device_synchronize(instance_, device), "device_synchronize");
}

Expected<Buffer> Plugin::alloc(int32_t device, size_t bytes) {
  HPF_RETURN_IF_ERROR(check_device(device, "buffer_alloc"));
  hpf_buffer* out = nullptr;
  HPF_RETURN_IF_ERROR(consume_error(api_.buffer_alloc(instance_, device, bytes, &out), "buffer_alloc"));
  if (!out) return Status::internal("plugin '" + name_ + "': buffer_alloc succeeded but returned no buffer");
  return Buffer(this, out, bytes, device);
}

Expected<std::vector<std::byte>> Plugin::compile(int32_t device, std::string_view source) {
  HPF_RETURN_IF_ERROR(check_device(device, "program_compile"));
  const std::string text(source);  // NUL-terminated for plugins that need it; size passed too
  hpf_blob* blob = nullptr;
  HPF_RETURN_IF_ERROR(
      consume_error(api_.program_compile(instance_, device, text.c_str(), text.size(), &blob), "program_compile"));
  if (!blob) return Status::internal("plugin '" + name_ + "': program_compile succeeded but returned no blob");
  const auto b = read_struct<hpf_blob>(blob);
  std::vector<std::byte> bytes;
  const bool well_formed = b.struct_size >= kBlobSize10 && (b.data || b.size == 0);
  if (well_formed) {
    const auto* p = static_cast<const std::byte*>(b.data);
    bytes.assign(p, p + b.size);
  }
  api_.blob_free(instance_, blob);
  if (!well_formed) return Status::internal("plugin '" + name_ + "': program_compile returned a malformed blob");
  return bytes;
}

Expected<Program> Plugin::load(int32_t device, std::span<const std::byte> binary) {
  HPF_RETURN_IF_ERROR(check_device(device, "program_load"));
  hpf_program* out = nullptr;
  HPF_RETURN_IF_ERROR(
      consume_error(api_.program_load(instance_, device, binary.data(), binary.size(), &out), "program_load"));
  if (!out) return Status::internal("plugin '" + name_ + "': program_load succeeded but returned no program");
  return Program(this, out, device);
}

Expected<Timer> Plugin::create_timer(int32_t device) {
  HPF_RETURN_IF_ERROR(check_device(device, "timer_create"));
  hpf_timer* out = nullptr;
  HPF_RETURN_IF_ERROR(consume_error(api_.timer_create(instance_, device, &out), "timer_create"));
  if (!out) return Status::internal("plugin '" + name_ + "': timer_create succeeded but returned no timer");
  return Timer(this, out);
}

// ---- Buffer ----

Buffer::Buffer(Buffer&& o) noexcept
    : plugin_(std::exchange(o.plugin_, nullptr)), handle_(std::exchange(o.handle_, nullptr)),
      size_(std::exchange(o.size_, 0)), device_(o.device_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    plugin_ = std::exchange(o.plugin_, nullptr);
    handle_ = std::exchange(o.handle_, nullptr);
    size_ = std::exchange(o.size_, 0);
    device_ = o.device_;
  }
  return *this;
}

Buffer::~Buffer() { reset(); }

void Buffer::reset() {
  if (handle_) plugin_->api_.buffer_free(plugin_->instance_, handle_);
  handle_ = nullptr;
  size_ = 0;
}

void* Buffer::device_pointer() const {
  return handle_ ? plugin_->api_.buffer_pointer(plugin_->instance_, handle_) : nullptr;
}

namespace {
Status check_range(const Plugin* p, std::string_view function, bool valid, size_t offset, size_t bytes, size_t size) {
  const std::string where = "plugin '" + (p ? p->name() : std::string("?")) + "': " + std::string(function) + ": ";
  if (!valid) return Status::invalid(where + "empty buffer");
  if (offset > size || bytes > size - offset)
    return Status::invalid(where + "copy of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                           " exceeds the " + std::to_string(size) + "-byte buffer");
  return {};
}
}  // namespace

Status Buffer::copy_in(size_t offset, const void* src, size_t bytes) {
  HPF_RETURN_IF_ERROR(check_range(plugin_, "buffer_copy_in", valid(), offset, bytes, size_));
  return plugin_->consume_error(plugin_->api_.buffer_copy_in(plugin_->instance_, handle_, offset, src, bytes),
                                "buffer_copy_in");
}

Status Buffer::copy_out(size_t offset, void* dst, size_t bytes) const {
  HPF_RETURN_IF_ERROR(check_range(plugin_, "buffer_copy_out", valid(), offset, bytes, size_));
  return plugin_->consume_error(plugin_->api_.buffer_copy_out(plugin_->instance_, handle_, offset, dst, bytes),
                                "buffer_copy_out");
}

// ---- Program, Kernel ----

Program::Program(Program&& o) noexcept
    : plugin_(std::exchange(o.plugin_, nullptr)), handle_(std::exchange(o.handle_, nullptr)), device_(o.device_) {}

Program& Program::operator=(Program&& o) noexcept {
  if (this != &o) {
    reset();
    plugin_ = std::exchange(o.plugin_, nullptr);
    handle_ = std::exchange(o.handle_, nullptr);
    device_ = o.device_;
  }
  return *this;
}

Program::~Program() { reset(); }

void Program::reset() {
  if (handle_) plugin_->api_.program_unload(plugin_->instance_, handle_);
  handle_ = nullptr;
}

Expected<Kernel> Program::kernel(const std::string& name) {
  if (!handle_) return Status::invalid("kernel_get: '" + name + "' from an empty program");
  hpf_kernel* out = nullptr;
  HPF_RETURN_IF_ERROR(
      plugin_->consume_error(plugin_->api_.kernel_get(plugin_->instance_, handle_, name.c_str(), &out), "kernel_get"));
  if (!out)
    return Status::internal("plugin '" + plugin_->name() + "': kernel_get succeeded but returned no kernel '" + name + "'");
  return Kernel(plugin_, out, name);
}

Status Kernel::launch(const Launch& l) const {
  if (!handle_) return Status::invalid("kernel_launch: empty kernel");
  hpf_launch c{};
  c.struct_size = sizeof c;
  c.args = l.args.data();
  c.arg_count = l.args.size();
  c.work_items = l.work_items;
  c.grain = l.grain;
  for (int k = 0; k < 3; ++k) {
    c.grid[k] = l.grid[k];
    c.block[k] = l.block[k];
  }
  c.shared_bytes = l.shared_bytes;
  return plugin_->consume_error(plugin_->api_.kernel_launch(plugin_->instance_, handle_, &c),
                                "kernel_launch '" + name_ + "'");
}

// ---- Timer ----

Timer::Timer(Timer&& o) noexcept : plugin_(std::exchange(o.plugin_, nullptr)), handle_(std::exchange(o.handle_, nullptr)) {}

Timer& Timer::operator=(Timer&& o) noexcept {
  if (this != &o) {
    reset();
    plugin_ = std::exchange(o.plugin_, nullptr);
    handle_ = std::exchange(o.handle_, nullptr);
  }
  return *this;
}

Timer::~Timer() { reset(); }

void Timer::reset() {
  if (handle_) plugin_->api_.timer_destroy(plugin_->instance_, handle_);
  handle_ = nullptr;
}

Status Timer::start() {
  if (!handle_) return Status::invalid("timer_start: empty timer");
  return plugin_->consume_error(plugin_->api_.timer_start(plugin_->instance_, handle_), "timer_start");
}

Expected<uint64_t> Timer::stop() {
  if (!handle_) return Status::invalid("timer_stop: empty timer");
  uint64_t ns = 0;
  HPF_RETURN_IF_ERROR(plugin_->consume_error(plugin_->api_.timer_stop(plugin_->instance_, handle_, &ns), "timer_stop"));
  return ns;
}

// ---- PluginHost ----

struct PluginHost::Impl {
  // Kept for the host's lifetime; with RTLD_NODELETE their dlclose unmaps nothing.
  std::vector<boost::dll::shared_library> libraries;

  // Loads one file into `rec` (and `plugin` when initialised). Never throws.
  void load(PluginRecord& rec, std::unique_ptr<Plugin>& plugin);
};

void PluginHost::Impl::load(PluginRecord& rec, std::unique_ptr<Plugin>& plugin) {
  namespace dll = boost::dll;
  const auto mode = dll::load_mode::rtld_local | dll::load_mode::rtld_lazy |
                    static_cast<dll::load_mode::type>(RTLD_NODELETE);
  dll::shared_library lib;
  boost::dll::fs::error_code ec;
  lib.load(rec.path, mode, ec);
  if (ec) {
    rec.reason = "cannot load: " + dlopen_failure(rec.path, ec.message());
    return log_record(rec, LogLevel::warn);
  }
  if (!lib.has(HPF_PLUGIN_ENTRY_POINT)) {
    rec.reason = "not a libhpf plugin (no " HPF_PLUGIN_ENTRY_POINT ")";
    return log_record(rec, LogLevel::warn);
  }
  auto& entry = lib.get<const hpf_plugin_api*()>(HPF_PLUGIN_ENTRY_POINT);
  libraries.push_back(std::move(lib));  // from here on, code of this file may be running: keep it mapped
  const hpf_plugin_api* table = entry();
  if (!table) {
    rec.reason = HPF_PLUGIN_ENTRY_POINT " returned NULL: refused";
    return log_record(rec, LogLevel::warn);
  }
  rec.abi_major = table->abi_major;
  rec.abi_minor = table->abi_minor;
  const std::string theirs = version_string(table->abi_major, table->abi_minor);
  const std::string ours = version_string(HPF_PLUGIN_ABI_MAJOR, HPF_PLUGIN_ABI_MINOR);
  if (table->abi_major != HPF_PLUGIN_ABI_MAJOR) {
    rec.reason = "plugin ABI " + theirs + ", this libhpf speaks " + ours + ": refused";
    return log_record(rec, LogLevel::warn);
  }
  // The minor whose fields both sides know: the plugin's if older, ours if it is newer.
  const uint32_t common_minor = std::min<uint32_t>(table->abi_minor, HPF_PLUGIN_ABI_MINOR);
  const size_t needed = kApiSizeOfMinor[common_minor];
  if (table->struct_size < needed) {
    rec.reason = "plugin ABI " + theirs + " table is " + std::to_string(table->struct_size) + " bytes, ABI " +
                 version_string(HPF_PLUGIN_ABI_MAJOR, common_minor) + " needs " + std::to_string(needed) + ": refused";
    return log_record(rec, LogLevel::warn);
  }
  const auto api = read_struct<hpf_plugin_api>(table);
  for (const FunctionEntry& f : required_functions(api)) {
    if (f.minor <= common_minor && !f.present) {
      rec.reason = std::string("function '") + f.name + "' is NULL in the table: refused";
      return log_record(rec, LogLevel::warn);
    }
  }
  if (table->abi_minor > HPF_PLUGIN_ABI_MINOR)
    log(LogLevel::info, rec.path + ": plugin ABI " + theirs + " is newer than this libhpf's " + ours +
                            ": using the " + ours + " functions only");

  hpf_plugin* instance = nullptr;
  if (hpf_error* err = api.plugin_init(&instance)) {
    const hpf_error_code code = api.error_code(err);
    rec.reason = "plugin_init failed: " + str(api.error_message(err)) + " (" + error_code_name(code) + ")";
    api.error_destroy(err);
    return log_record(rec, LogLevel::warn);
  }
  if (!instance) {
    rec.reason = "plugin_init succeeded but returned no instance: refused";
    return log_record(rec, LogLevel::warn);
  }
  plugin.reset(new Plugin(api, instance, rec.path));
  rec.name = plugin->name();
  rec.version = plugin->version();
  rec.devices = plugin->devices();
  rec.usable = plugin->usable();
  if (rec.usable) {
    log(LogLevel::info, rec.path + ": loaded plugin '" + rec.name + "' " + rec.version + " (ABI " + theirs + ")");
    return;
  }
  std::string why;
  for (const DeviceRecord& d : rec.devices)
    why += (why.empty() ? "" : "; ") + d.name + ": " + (d.score_reason.empty() ? "score 0" : d.score_reason);
  rec.reason = rec.devices.empty() ? "no usable device (the plugin reports no devices)" : "no usable device (" + why + ")";
  log_record(rec, LogLevel::info);
}

PluginHost::PluginHost(PluginHostOptions options) : impl_(std::make_unique<Impl>()) {
  // Search directories, in order, each once.
  std::vector<std::string> wanted = options.dirs;
  if (options.use_env_path)
    if (const char* env = std::getenv("HPF_PLUGIN_PATH"))
      for (const std::string& d : split(env, ':')) wanted.push_back(d);
  const std::string installed = options.use_installed_dir ? installed_plugin_dir() : "";
  if (!installed.empty()) wanted.push_back(installed);
  auto normal = [](const std::string& d) {
    std::error_code ec;
    fs::path p = fs::absolute(d, ec);
    if (ec) p = d;
    fs::path canonical = fs::weakly_canonical(p, ec);
    return (ec ? p : canonical).lexically_normal().string();
  };
  std::set<std::string> seen_dirs;
  for (const std::string& d : wanted)
    if (std::string n = normal(d); seen_dirs.insert(n).second) search_dirs_.push_back(n);

  // Candidate files: sorted within each directory; a file reached twice is visited once; a file
  // name found before shadows later files of that name.
  std::set<std::string> seen_files;
  std::vector<std::pair<std::string, std::string>> first_of_name;  // file name -> path
  for (const std::string& dir : search_dirs_) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {  // expected for the installed one when no plugin is built
      const bool named_by_user = installed.empty() || dir != normal(installed);
      log(named_by_user ? LogLevel::warn : LogLevel::debug, "plugin directory '" + dir + "' does not exist");
      continue;
    }
    std::vector<std::string> names;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      std::error_code fe;
      if (is_plugin_file_name(n) && fs::is_regular_file(it->path(), fe)) names.push_back(n);
    }
    if (ec) log(LogLevel::warn, "plugin directory '" + dir + "': " + ec.message());
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      const fs::path path = fs::path(dir) / n;
      std::error_code ce;
      fs::path canonical = fs::canonical(path, ce);
      if (!seen_files.insert(ce ? path.string() : canonical.string()).second) continue;
      PluginRecord rec;
      rec.path = path.string();
      std::unique_ptr<Plugin> plugin;
      auto earlier = std::find_if(first_of_name.begin(), first_of_name.end(), [&](const auto& e) { return e.first == n; });
      if (earlier != first_of_name.end()) {
        rec.reason = "shadowed by " + earlier->second;
        log_record(rec, LogLevel::info);
      } else {
        first_of_name.emplace_back(n, rec.path);
        try {
          impl_->load(rec, plugin);
        } catch (const std::exception& e) {
          plugin.reset();
          rec.usable = false;
          rec.reason = std::string("cannot load: ") + e.what();
          log_record(rec, LogLevel::warn);
        } catch (...) {
          plugin.reset();
          rec.usable = false;
          rec.reason = "cannot load: unknown exception";
          log_record(rec, LogLevel::warn);
        }
      }
      records_.push_back(std::move(rec));
      plugins_.push_back(std::move(plugin));
    }
  }
}

PluginHost::~PluginHost() {
  while (!plugins_.empty()) plugins_.pop_back();  // plugin_destroy in reverse load order
}

PluginHost& PluginHost::shared() {
  static PluginHost* host = new PluginHost();  // never destroyed: see the header
  return *host;
}

std::string PluginHost::installed_plugin_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PluginHost::installed_plugin_dir), &info) == 0 || !info.dli_fname) return "";
  std::error_code ec;
  fs::path lib = fs::canonical(info.dli_fname, ec);
  if (ec) lib = info.dli_fname;
  return (lib.parent_path() / "hpf" / "plugins").string();
}

Plugin* PluginHost::plugin_at(size_t index) const { return index < plugins_.size() ? plugins_[index].get() : nullptr; }

Plugin* PluginHost::plugin(std::string_view name) const {
  for (const auto& p : plugins_)
    if (p && p->name() == name) return p.get();
  return nullptr;
}

Expected<DeviceChoice> PluginHost::best_device() const {
  DeviceChoice best;
  int32_t best_score = 0;
  for (const auto& p : plugins_) {
    if (!p) continue;
    for (const DeviceRecord& d : p->devices())
      if (d.score > best_score) {
        best = {p.get(), d.index};
        best_score = d.score;
      }
  }
  if (best.plugin) return best;
  if (records_.empty()) {
    std::string dirs;
    for (const std::string& d : search_dirs_) dirs += (dirs.empty() ? "" : ", ") + d;
    return Status::not_found("no libhpf plugins found (searched " + (dirs.empty() ? std::string("nothing") : dirs) +
                             "; set HPF_PLUGIN_PATH)");
  }
  std::string why;
  for (const PluginRecord& r : records_)
    why += (why.empty() ? "" : "; ") + fs::path(r.path).filename().string() + ": " + r.reason;
  return Status::not_found("no usable device: " + why);
}

}  // namespace hpf
