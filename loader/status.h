// Status and Result<T>: leveldb-style error values for the I/O layers (no exceptions on the hot path).
// An OK Status holds no string, so passing success around never allocates.
#pragma once

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace feedrate {

class [[nodiscard]] Status {
 public:
  enum class Code : unsigned char { kOk, kIoError, kCorruption, kNotFound, kInvalidArgument, kUnsupported, kStopped };

  Status() = default;
  static Status Ok() { return {}; }
  static Status IoError(std::string msg) { return {Code::kIoError, std::move(msg)}; }
  // An errno-carrying I/O error: "<what>: <strerror(err)>".
  static Status Errno(const std::string& what, int err) {
    return {Code::kIoError, what + ": " + std::strerror(err)};
  }
  static Status Corruption(std::string msg) { return {Code::kCorruption, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) { return {Code::kInvalidArgument, std::move(msg)}; }
  static Status Unsupported(std::string msg) { return {Code::kUnsupported, std::move(msg)}; }
  // Not a failure: the caller asked the operation to stop (an interrupt) before it finished.
  static Status Stopped(std::string msg) { return {Code::kStopped, std::move(msg)}; }
  bool stopped() const { return code_ == Code::kStopped; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const {
    static const std::string kEmpty;
    return msg_ ? *msg_ : kEmpty;
  }
  std::string ToString() const { return ok() ? "OK" : message(); }
  // Prefixes context ("<path>: ") to an error; a no-op on success.
  Status WithContext(const std::string& ctx) const {
    return ok() ? *this : Status(code_, ctx + ": " + message());
  }
  // The same error with every `from` in its message said as `to` (a temporary copy's path as the object it copies).
  Status Renamed(const std::string& from, const std::string& to) const {
    if (ok() || from.empty()) return *this;
    std::string m = message();
    for (size_t at = m.find(from); at != std::string::npos; at = m.find(from, at + to.size())) m.replace(at, from.size(), to);
    return Status(code_, std::move(m));
  }

 private:
  Status(Code c, std::string msg) : code_(c), msg_(std::make_shared<const std::string>(std::move(msg))) {}
  Code code_ = Code::kOk;
  std::shared_ptr<const std::string> msg_;
};

// A value or an error Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}   // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace feedrate

#define FEEDRATE_RETURN_IF_ERROR(expr)            \
  do {                                            \
    ::feedrate::Status _fr_st = (expr);           \
    if (!_fr_st.ok()) return _fr_st;              \
  } while (0)

#define FEEDRATE_CONCAT_IMPL(a, b) a##b
#define FEEDRATE_CONCAT(a, b) FEEDRATE_CONCAT_IMPL(a, b)

// FEEDRATE_ASSIGN_OR_RETURN(lhs, expr): evaluates expr (a Result<T>); on error, returns its Status from the
// enclosing function (which returns Status or a Result); otherwise moves the value into lhs, a declaration
// (`auto x`, `const auto x`) or an existing variable. One statement per line: the temporary is named by __LINE__.
#define FEEDRATE_ASSIGN_OR_RETURN(lhs, ...) \
  FEEDRATE_ASSIGN_OR_RETURN_IMPL(FEEDRATE_CONCAT(_fr_result_, __LINE__), lhs, __VA_ARGS__)
#define FEEDRATE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, ...) \
  auto tmp = (__VA_ARGS__);                           \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(*tmp)
