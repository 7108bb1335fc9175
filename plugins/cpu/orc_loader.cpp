#include "plugins/cpu/orc_loader.hpp"

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectFileInterface.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>

#include <atomic>
#include <mutex>

#include "plugins/cpu/runtime_symbols.hpp"

namespace hpf::cpu {

namespace orc = llvm::orc;

struct JitProgram {
  orc::JITDylib* dylib;
};

struct OrcLoader::Impl {
  std::unique_ptr<orc::LLJIT> jit;
  orc::JITDylibSearchOrder link_order;  // runtime symbols, then platform and process
  std::atomic<uint64_t> next_id{0};
};

namespace {

// Link failures (an undefined symbol) reach the session's error reporter, while the lookup that
// triggered the link only says "Failed to materialize". Materialisation runs on the thread that
// looks up (in-place dispatch), so the reporter keeps the cause per thread for load() to read.
thread_local std::string reported_errors;

void initialize_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

}  // namespace

OrcLoader::OrcLoader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OrcLoader::~OrcLoader() = default;

std::unique_ptr<OrcLoader> OrcLoader::create(std::string* error) {
  initialize_llvm_targets();
  auto jit = orc::LLJITBuilder().create();
  if (!jit) {
    *error = "cannot create the LLVM ORC JIT: " + llvm::toString(jit.takeError());
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->jit = std::move(*jit);
  auto& es = impl->jit->getExecutionSession();
  // Failures come back to the caller through load/lookup; the session must not print them.
  es.setErrorReporter([](llvm::Error e) {
    if (!reported_errors.empty()) reported_errors += "; ";
    reported_errors += llvm::toString(std::move(e));
  });

  orc::SymbolMap symbols;
  for (const auto& s : runtime_symbols())
    symbols[impl->jit->mangleAndIntern(s.name)] = {
        orc::ExecutorAddr::fromPtr(s.address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  auto& runtime = impl->jit->getMainJITDylib();
  if (auto err = runtime.define(orc::absoluteSymbols(std::move(symbols)))) {
    *error = "cannot define the JIT runtime symbols: " + llvm::toString(std::move(err));
    return nullptr;
  }
  impl->link_order.push_back({&runtime, orc::JITDylibLookupFlags::MatchExportedSymbolsOnly});
  if (auto platform = impl->jit->getPlatformJITDylib())
    impl->link_order.push_back(
        {platform.get(), orc::JITDylibLookupFlags::MatchExportedSymbolsOnly});
  if (auto process = impl->jit->getProcessSymbolsJITDylib())
    impl->link_order.push_back({process.get(), orc::JITDylibLookupFlags::MatchExportedSymbolsOnly});
  return std::unique_ptr<OrcLoader>(new OrcLoader(std::move(impl)));
}

JitProgram* OrcLoader::load(const void* data, size_t size, std::string* error) {
  auto& jit = *impl_->jit;
  auto& es = jit.getExecutionSession();
  const std::string name = "hpf-program-" + std::to_string(impl_->next_id.fetch_add(1));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(static_cast<const char*>(data), size), name);

  // The symbols the object defines: parsing them also rejects bytes that are not an object.
  auto interface = orc::getObjectFileInterface(es, buffer->getMemBufferRef());
  if (!interface) {
    *error = "not a loadable object for this host: " + llvm::toString(interface.takeError());
    return nullptr;
  }
  auto dylib = es.createJITDylib(name);
  if (!dylib) {
    *error = llvm::toString(dylib.takeError());
    return nullptr;
  }
  dylib->setLinkOrder(impl_->link_order, /*LinkAgainstThisJITDylibFirst=*/true);
  reported_errors.clear();
  auto fail = [&](llvm::Error err) -> JitProgram* {
    *error = llvm::toString(std::move(err));
    if (!reported_errors.empty()) *error = reported_errors + " (" + *error + ")";
    reported_errors.clear();
    llvm::consumeError(es.removeJITDylib(*dylib));
    return nullptr;
  };
  if (auto err = jit.addObjectFile(*dylib, std::move(buffer))) return fail(std::move(err));

  // Link now, so that an unresolved symbol is a load error rather than a failed kernel lookup.
  orc::SymbolLookupSet defined;
  for (const auto& [symbol, flags] : interface->SymbolFlags) defined.add(symbol);
  if (!defined.empty()) {
    auto linked =
        es.lookup(orc::makeJITDylibSearchOrder(&*dylib, orc::JITDylibLookupFlags::MatchAllSymbols),
                  std::move(defined));
    if (!linked) return fail(linked.takeError());
  }
  return new JitProgram{&*dylib};
}

void OrcLoader::unload(JitProgram* program) {
  if (!program) return;
  llvm::consumeError(impl_->jit->getExecutionSession().removeJITDylib(*program->dylib));
  delete program;
}

LookupStatus OrcLoader::lookup(JitProgram* program, const char* name, void** address,
                               std::string* message) {
  auto found = impl_->jit->lookup(*program->dylib, name);
  if (found) {
    *address = found->toPtr<void*>();
    return LookupStatus::ok;
  }
  LookupStatus status = LookupStatus::failed;
  llvm::handleAllErrors(
      found.takeError(),
      [&](const orc::SymbolsNotFound& e) {
        status = LookupStatus::not_found;
        *message = e.message();
      },
      [&](const llvm::ErrorInfoBase& e) { *message = e.message(); });
  return status;
}

}  // namespace hpf::cpu
