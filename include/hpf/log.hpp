// Logging. libhpf logs through spdlog into its own logger named "hpf" (stderr). The level comes
// from the environment variable HPF_LOG_LEVEL = trace|debug|info|warn|error|off (default warn),
// read once on first use; set_log_level overrides it. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "hpf/status.hpp"

namespace hpf {

enum class LogLevel { trace, debug, info, warn, error, off };

// Parses "trace".."off"; an unknown name is invalid_argument naming the accepted values.
Expected<LogLevel> parse_log_level(std::string_view name);
void set_log_level(LogLevel level);
LogLevel log_level();

// Formatted logging without exposing spdlog in public headers.
void log(LogLevel level, const std::string& message);

}  // namespace hpf
