// hpf::Status and hpf::Expected<T>: the one error type of libhpf.
//
// A Status is either ok or carries a code and a message. Messages name what failed and where
// (file, node, op, input, shape), e.g.
//   "node 'attn/qk' (MatMul): input 1 'k' has shape [2,64,7], expected inner dimension 64".
// Status and Expected are plain values: copyable, movable, no shared state, safe to pass
// between threads. They never throw; `value()` on an Expected holding an error aborts with the
// message (call `ok()` first), which makes a forgotten check loud instead of silent.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace hpf {

enum class StatusCode {
  ok = 0,
  invalid_argument,  // bad input from the caller: malformed graph, wrong shape, bad attribute
  unsupported,       // valid but not implemented here (op, dtype, attribute value)
  not_found,         // a named thing (file, value, op) does not exist
  io_error,          // reading or writing a file failed
  internal,          // a bug in libhpf: please report it
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status invalid(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::unsupported, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::not_found, std::move(m)}; }
  static Status io_error(std::string m) { return {StatusCode::io_error, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::internal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: node 'x' (Add): ..." or "ok".
  std::string to_string() const;

  // Returns a copy whose message is "<context>: <message>", for adding where an error happened
  // as it travels up (e.g. the node name around a shape error).
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

// Either a T or an error Status (never an ok Status).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status error) : v_(std::move(error)) {
    if (std::get<Status>(v_).ok()) v_ = Status::internal("Expected constructed from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }

  T& value() & { check(); return std::get<T>(v_); }
  const T& value() const& { check(); return std::get<T>(v_); }
  T&& value() && { check(); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check() const {
    if (!ok()) {
      std::fprintf(stderr, "hpf: value() on an error: %s\n", status().to_string().c_str());
      std::abort();
    }
  }
  std::variant<T, Status> v_;
};

}  // namespace hpf

// Propagate an error Status from an expression returning Status.
#define HPF_RETURN_IF_ERROR(expr)            \
  do {                                       \
    ::hpf::Status hpf_status_ = (expr);      \
    if (!hpf_status_.ok()) return hpf_status_; \
  } while (0)

#define HPF_CONCAT_INNER_(a, b) a##b
#define HPF_CONCAT_(a, b) HPF_CONCAT_INNER_(a, b)
// `HPF_ASSIGN_OR_RETURN(auto x, f());` unwraps an Expected or returns its error.
#define HPF_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto HPF_CONCAT_(hpf_expected_, __LINE__) = (expr);                   \
  if (!HPF_CONCAT_(hpf_expected_, __LINE__).ok())                       \
    return HPF_CONCAT_(hpf_expected_, __LINE__).status();               \
  lhs = std::move(HPF_CONCAT_(hpf_expected_, __LINE__)).value()
