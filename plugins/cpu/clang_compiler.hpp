// C source -> relocatable object bytes for the host CPU, with clang 19 in this process.
#ifndef HPF_PLUGINS_CPU_CLANG_COMPILER_HPP_
#define HPF_PLUGINS_CPU_CLANG_COMPILER_HPP_

#include <string>
#include <string_view>
#include <vector>

namespace hpf::cpu {

// What the compiler targets: the machine this process runs on.
struct HostTarget {
  std::string triple;                 // "x86_64-pc-linux-gnu"
  std::string cpu;                    // LLVM's name for the host CPU: "znver3", "sapphirerapids"
  std::vector<std::string> features;  // "+avx2", "-xop", ... sorted; as passed to -target-feature
  std::string clang_version;          // "19.1.7"
  std::string clang_full_version;     // clang's own banner, with the vendor
};

// Compiles dialect-"c" kernels. The flags are fixed at construction (-O3, host CPU and
// features, PIC, no fast-math) and exposed verbatim so a kernel cache can key on them. Only
// clang's builtin headers are on the include path (<stdint.h>, <stddef.h>, <immintrin.h>...):
// kernels declare the libm functions they call.
// Thread-safety: compile may run on several threads at once.
class ClangCompiler {
 public:
  ClangCompiler();

  const HostTarget& target() const { return target_; }
  // The cc1 arguments used for every compile, joined by spaces.
  const std::string& flags() const { return flags_; }

  // On success fills `object` (an ELF relocatable for the host) and returns true; otherwise
  // returns false with clang's diagnostics in `log`. Never prints, never aborts on bad source.
  // Warnings of a successful compile are in `log` too.
  bool compile(std::string_view source, std::string* object, std::string* log) const;

 private:
  HostTarget target_;
  std::vector<std::string> args_;
  std::string flags_;
};

}  // namespace hpf::cpu

#endif  // HPF_PLUGINS_CPU_CLANG_COMPILER_HPP_
