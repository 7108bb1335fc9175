// Shared pieces of the hpf tool's commands.
#pragma once

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hpf/status.hpp"

namespace hpf::cli {

// Prints "hpf: <message>" to stderr and returns `code` (1: failure, 2: bad usage).
inline int fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "hpf: %s\n", message.c_str());
  return code;
}

// Command-line arguments of one command: `flags` take no value, `options` take one (given twice,
// the last counts; `lists` keeps every value in order), the rest are positional. Unknown options
// are an error naming the command.
struct Args {
  std::set<std::string> flags;
  std::map<std::string, std::string> options;
  std::map<std::string, std::vector<std::string>> lists;
  std::vector<std::string> positional;

  bool flag(const std::string& f) const { return flags.count(f) > 0; }
  std::string option(const std::string& o, const std::string& def = "") const {
    auto it = options.find(o);
    return it == options.end() ? def : it->second;
  }
};

inline Expected<Args> parse_args(const std::string& command, const std::vector<std::string>& argv,
                                 const std::set<std::string>& flags, const std::set<std::string>& options) {
  Args a;
  for (size_t k = 0; k < argv.size(); ++k) {
    const std::string& s = argv[k];
    if (s.size() > 1 && s[0] == '-') {
      if (flags.count(s)) {
        a.flags.insert(s);
      } else if (options.count(s)) {
        if (k + 1 >= argv.size()) return Status::invalid("option " + s + " needs a value");
        a.options[s] = argv[++k];
        a.lists[s].push_back(argv[k]);
      } else {
        return Status::invalid("unknown option '" + s + "' for " + command + " (see hpf --help)");
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

int cmd_run(const std::vector<std::string>& argv);
int cmd_bench(const std::vector<std::string>& argv);
int cmd_models();
int cmd_ops();
int cmd_hwdb(const std::vector<std::string>& argv);
int cmd_info(const std::vector<std::string>& argv);
int cmd_cache(const std::vector<std::string>& argv);
int cmd_onnx_test(const std::vector<std::string>& argv);
int cmd_plan(const std::vector<std::string>& argv);
int cmd_compile_check(const std::vector<std::string>& argv);
// hpf bench gemm ... (argv after "gemm"); cmd_bench_gemm.cpp.
int cmd_bench_gemm(const std::vector<std::string>& args);

}  // namespace hpf::cli
