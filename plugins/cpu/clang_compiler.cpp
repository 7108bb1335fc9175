#include "plugins/cpu/clang_compiler.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticIDs.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/Version.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendOptions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <memory>
#include <mutex>

#ifndef HPF_CLANG_RESOURCE_DIR
#error "HPF_CLANG_RESOURCE_DIR must name clang's resource directory (<LLVM lib dir>/clang/<major>)"
#endif

namespace hpf::cpu {

namespace {

void initialize_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// Linux hands a process AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM for
// XTILEDATA, process-wide); until then a tile instruction raises SIGILL. True when granted.
bool request_amx_tiles() {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) == 0;
#else
  return false;
#endif
}

HostTarget detect_host() {
  HostTarget t;
  t.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
  t.cpu = llvm::sys::getHostCPUName().str();
  const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  // Kernels may use AMX tiles only where the kernel lets this process have them: otherwise the
  // features go off, so that no generated source takes its AMX path.
  const bool amx = host.lookup("amx-tile") && request_amx_tiles();
  for (const auto& f : host) {
    const bool on = f.second && (amx || !f.first().starts_with("amx"));
    t.features.push_back((on ? "+" : "-") + f.first().str());
  }
  std::sort(t.features.begin(), t.features.end(),
            [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  // HPF_CPU_TARGET=NAME (an LLVM CPU name such as znver3 or haswell): kernels for that CPU's
  // default features instead of the host's, to run another machine's code paths here (its
  // features must be a subset of the host's).
  if (const char* cpu = std::getenv("HPF_CPU_TARGET"); cpu && *cpu) {
    t.cpu = cpu;
    t.features.clear();
  }
  t.clang_version = CLANG_VERSION_STRING;
  t.clang_full_version = clang::getClangFullVersion();
  return t;
}

}  // namespace

ClangCompiler::ClangCompiler() : target_(detect_host()) {
  initialize_llvm_targets();
  const std::string resource_dir = HPF_CLANG_RESOURCE_DIR;
  // What `clang -O3 -march=native -c` hands cc1 on Linux, less debug/coverage paths and the
  // system include directories (kernels are self-contained). cc1 leaves -fmath-errno off: libm
  // calls do not set errno, which kernels never read.
  args_ = {"-triple", target_.triple, "-emit-obj", "-O3", "-vectorize-loops", "-vectorize-slp",
           "-mrelocation-model", "pic", "-pic-level", "2", "-pic-is-pie", "-mframe-pointer=none",
           "-ffp-contract=on", "-fno-rounding-math", "-funwind-tables=2", "-fgnuc-version=4.2.1",
           "-discard-value-names", "-clear-ast-before-backend", "-ferror-limit", "19",
           // LLVM's host detection reports avx10.1-256 beside evex512, which clang promotes to
           // avx10.1-512 with a warning on every compile, as `clang -march=native` does.
           "-Wno-invalid-feature-combination", "-target-cpu", target_.cpu};
  for (const auto& f : target_.features) {
    args_.push_back("-target-feature");
    args_.push_back(f);
  }
  for (const char* a : {"-resource-dir", resource_dir.c_str(), "-internal-isystem"})
    args_.push_back(a);
  args_.push_back(resource_dir + "/include");
  args_.push_back("-x");
  args_.push_back("c");
  for (const auto& a : args_) {
    if (!flags_.empty()) flags_ += ' ';
    flags_ += a;
  }
}

bool ClangCompiler::compile(std::string_view source, std::string* object, std::string* log) const {
  log->clear();
  llvm::raw_string_ostream log_stream(*log);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_options = new clang::DiagnosticOptions();
  diag_options->ShowColors = false;

  std::vector<const char*> argv;
  argv.reserve(args_.size());
  for (const auto& a : args_) argv.push_back(a.c_str());

  auto ci = std::make_unique<clang::CompilerInstance>();
  {
    clang::TextDiagnosticPrinter arg_printer(log_stream, diag_options.get());
    clang::DiagnosticsEngine arg_diags(new clang::DiagnosticIDs(), diag_options, &arg_printer,
                                       false);
    if (!clang::CompilerInvocation::CreateFromArgs(ci->getInvocation(), argv, arg_diags)) {
      log_stream << "error: clang rejected the compile flags\n";
      return false;
    }
  }
  ci->createDiagnostics(new clang::TextDiagnosticPrinter(log_stream, &ci->getDiagnosticOpts()),
                        /*ShouldOwnClient=*/true);
  ci->getDiagnosticOpts().ShowColors = false;
  ci->setVerboseOutputStream(log_stream);  // "1 error generated." goes to the log, not stderr

  std::unique_ptr<llvm::MemoryBuffer> input = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(source.data(), source.size()), "kernel.c");
  auto& frontend = ci->getFrontendOpts();
  frontend.Inputs.clear();
  frontend.Inputs.emplace_back(input->getMemBufferRef(), clang::InputKind(clang::Language::C));
  frontend.OutputFile = "-";

  llvm::SmallVector<char, 0> bytes;
  ci->setOutputStream(std::make_unique<llvm::raw_svector_ostream>(bytes));
  clang::EmitObjAction action;
  const bool ok = ci->ExecuteAction(action) && !ci->getDiagnostics().hasErrorOccurred();
  log_stream.flush();
  if (!ok) return false;
  if (bytes.empty()) {
    log_stream << "error: clang produced no object code\n";
    return false;
  }
  object->assign(bytes.data(), bytes.size());
  return true;
}

}  // namespace hpf::cpu
