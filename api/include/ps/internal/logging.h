// Logging and check macros with the names ps-lite programs use (LOG(INFO),
// CHECK_EQ, CHECK_NOTNULL, LL). A failed CHECK or LOG(FATAL) throws
// ps::Error after printing, as dmlc-core's logging does by default.
#ifndef PS_INTERNAL_LOGGING_H_
#define PS_INTERNAL_LOGGING_H_

// dmlc-core's logging.h, which ps-lite's headers include, brings in
// <iostream>: ps-lite programs print with std::cout through ps/ps.h alone.
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ps {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace internal {

// Writes one line to stderr (defined in libcaravan).
void WriteLogLine(const char* level, const char* file, int line, const std::string& message);

class LogMessage {
 public:
  LogMessage(const char* level, const char* file, int line) : level_(level), file_(file), line_(line) {}
  ~LogMessage() { WriteLogLine(level_, file_, line_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  const char* level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

class LogMessageFatal {
 public:
  LogMessageFatal(const char* file, int line) : file_(file), line_(line) {}
  ~LogMessageFatal() noexcept(false) {
    WriteLogLine("FATAL", file_, line_, stream_.str());
    throw Error(stream_.str());
  }
  std::ostringstream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Swallows the stream of a disabled log statement.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

template <typename T>
T* CheckNotNull(const char* file, int line, const char* expr, T* p) {
  if (p == nullptr) LogMessageFatal(file, line).stream() << "Check notnull: " << expr;
  return p;
}

// A CHECK_xx operand in the failure message: printed where it can be,
// else named unprintable, so the macros take any comparable operands
// (iterators, say), as ps-lite's do.
template <typename T>
auto PrintOperand(std::ostream& os, const T& v, int) -> decltype(os << v, void()) {
  os << v;
}
template <typename T>
void PrintOperand(std::ostream& os, const T&, long) {
  os << "(unprintable)";
}
template <typename T>
struct Operand {
  const T* value;
};
template <typename T>
Operand<T> MakeOperand(const T& v) {
  return Operand<T>{&v};
}
template <typename T>
std::ostream& operator<<(std::ostream& os, const Operand<T>& o) {
  PrintOperand(os, *o.value, 0);
  return os;
}

}  // namespace internal
}  // namespace ps

#define PS_LOG_INFO ::ps::internal::LogMessage("INFO", __FILE__, __LINE__)
#define PS_LOG_WARNING ::ps::internal::LogMessage("WARNING", __FILE__, __LINE__)
#define PS_LOG_ERROR ::ps::internal::LogMessage("ERROR", __FILE__, __LINE__)
#define PS_LOG_FATAL ::ps::internal::LogMessageFatal(__FILE__, __LINE__)

#ifndef LOG
#define LOG(severity) PS_LOG_##severity.stream()
#endif
#ifndef LL
#define LL LOG(ERROR)
#endif
#ifndef LOG_IF
#define LOG_IF(severity, condition) \
  !(condition) ? (void)0 : ::ps::internal::LogVoidify() & LOG(severity)
#endif

#ifndef CHECK
// The ternary form, not if/else, so `if (c) CHECK(x);` needs no braces.
#define CHECK(x) \
  (x) ? (void)0 : ::ps::internal::LogVoidify() & PS_LOG_FATAL.stream() << "Check failed: " #x << ' '
#define PS_CHECK_OP(a, b, op)                                                             \
  ((a)op(b)) ? (void)0                                                                    \
             : ::ps::internal::LogVoidify() & PS_LOG_FATAL.stream()                       \
                                                  << "Check failed: " #a " " #op " " #b " (" \
                                                  << ::ps::internal::MakeOperand(a) << " vs. " \
                                                  << ::ps::internal::MakeOperand(b) << ") "
#define CHECK_EQ(a, b) PS_CHECK_OP(a, b, ==)
#define CHECK_NE(a, b) PS_CHECK_OP(a, b, !=)
#define CHECK_LT(a, b) PS_CHECK_OP(a, b, <)
#define CHECK_LE(a, b) PS_CHECK_OP(a, b, <=)
#define CHECK_GT(a, b) PS_CHECK_OP(a, b, >)
#define CHECK_GE(a, b) PS_CHECK_OP(a, b, >=)
#define CHECK_NOTNULL(x) ::ps::internal::CheckNotNull(__FILE__, __LINE__, #x, (x))
#endif

#endif  // PS_INTERNAL_LOGGING_H_
