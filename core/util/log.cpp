#include "hpf/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>

namespace hpf {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel l) {
  switch (l) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
    case LogLevel::off: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("hpf");
    l->set_pattern("[%H:%M:%S.%e] [hpf] [%^%l%$] %v");
    LogLevel level = LogLevel::warn;
    if (const char* env = std::getenv("HPF_LOG_LEVEL")) {
      auto parsed = parse_log_level(env);
      if (parsed.ok()) {
        level = *parsed;
      } else {
        l->warn("ignoring HPF_LOG_LEVEL: {}", parsed.status().message());
      }
    }
    l->set_level(to_spdlog(level));
    return l;
  }();
  return *instance;
}

}  // namespace

Expected<LogLevel> parse_log_level(std::string_view name) {
  if (name == "trace") return LogLevel::trace;
  if (name == "debug") return LogLevel::debug;
  if (name == "info") return LogLevel::info;
  if (name == "warn" || name == "warning") return LogLevel::warn;
  if (name == "error") return LogLevel::error;
  if (name == "off") return LogLevel::off;
  return Status::invalid("unknown log level '" + std::string(name) +
                         "' (expected trace, debug, info, warn, error or off)");
}

void set_log_level(LogLevel level) { logger().set_level(to_spdlog(level)); }

LogLevel log_level() {
  switch (logger().level()) {
    case spdlog::level::trace: return LogLevel::trace;
    case spdlog::level::debug: return LogLevel::debug;
    case spdlog::level::info: return LogLevel::info;
    case spdlog::level::warn: return LogLevel::warn;
    case spdlog::level::err: return LogLevel::error;
    default: return LogLevel::off;
  }
}

void log(LogLevel level, const std::string& message) { logger().log(to_spdlog(level), message); }

}  // namespace hpf
