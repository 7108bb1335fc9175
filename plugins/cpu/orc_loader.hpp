// Loads relocatable objects from ClangCompiler into this process with LLVM ORC (LLJIT).
#ifndef HPF_PLUGINS_CPU_ORC_LOADER_HPP_
#define HPF_PLUGINS_CPU_ORC_LOADER_HPP_

#include <cstddef>
#include <memory>
#include <string>

namespace hpf::cpu {

// One loaded object: its own JITDylib, so two programs may define the same names.
struct JitProgram;

// Outcome of a lookup; `message` explains a failure.
enum class LookupStatus { ok, not_found, failed };

// One LLJIT per plugin instance. The runtime symbols (runtime_symbols.hpp) are defined once and
// every program links against them before the process scope.
// Thread-safety: all functions may be called from several threads at once, except that a
// program is not used after (or while) it is unloaded.
class OrcLoader {
 public:
  // Returns null with `error` set when the JIT cannot be created on this host.
  static std::unique_ptr<OrcLoader> create(std::string* error);
  ~OrcLoader();
  OrcLoader(const OrcLoader&) = delete;
  OrcLoader& operator=(const OrcLoader&) = delete;

  // Copies the object bytes, links them eagerly (every undefined symbol must resolve now) and
  // returns the program, or null with `error` set (not an object for this host, or an undefined
  // symbol). The caller releases it with unload.
  JitProgram* load(const void* data, size_t size, std::string* error);
  void unload(JitProgram* program);

  // The address of a symbol defined by `program` (not one it merely uses).
  LookupStatus lookup(JitProgram* program, const char* name, void** address, std::string* message);

 private:
  struct Impl;
  explicit OrcLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpf::cpu

#endif  // HPF_PLUGINS_CPU_ORC_LOADER_HPP_
