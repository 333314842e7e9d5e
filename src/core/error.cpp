#include "eagerflow/core/error.h"

#include <new>
#include <vector>

namespace ef {
namespace {
thread_local std::vector<std::string> scope_stack;
}

const char* name_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::cancelled: return "CANCELLED";
    case ErrorCode::unknown: return "UNKNOWN";
    case ErrorCode::invalid_argument: return "INVALID_ARGUMENT";
    case ErrorCode::deadline_exceeded: return "DEADLINE_EXCEEDED";
    case ErrorCode::not_found: return "NOT_FOUND";
    case ErrorCode::already_exists: return "ALREADY_EXISTS";
    case ErrorCode::permission_denied: return "PERMISSION_DENIED";
    case ErrorCode::resource_exhausted: return "RESOURCE_EXHAUSTED";
    case ErrorCode::failed_precondition: return "FAILED_PRECONDITION";
    case ErrorCode::aborted: return "ABORTED";
    case ErrorCode::out_of_range: return "OUT_OF_RANGE";
    case ErrorCode::unimplemented: return "UNIMPLEMENTED";
    case ErrorCode::internal: return "INTERNAL";
    case ErrorCode::unavailable: return "UNAVAILABLE";
    case ErrorCode::data_loss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

Error::Error(const std::string& message) : std::runtime_error(message) {}
Error::Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

ErrorKind kind_of(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) return error->kind();
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const std::length_error*>(&e))
    return ErrorCode::resource_exhausted;
  if (dynamic_cast<const std::out_of_range*>(&e)) return ErrorCode::out_of_range;
  if (dynamic_cast<const std::invalid_argument*>(&e) || dynamic_cast<const std::domain_error*>(&e))
    return ErrorCode::invalid_argument;
  return ErrorCode::unknown;
}

void fail(ErrorKind kind, const std::string& tag, const std::string& message) {
  std::string text = "[" + tag + "] " + message;
  std::string path = NameScope::current_path();
  if (!path.empty()) text += " (in layer " + path + ")";
  throw Error(kind, text);
}

void fail(const std::string& tag, const std::string& message) { fail(ErrorCode::invalid_argument, tag, message); }

NameScope::NameScope(std::string name) { scope_stack.push_back(std::move(name)); }
NameScope::~NameScope() { scope_stack.pop_back(); }

std::string NameScope::current_path() {
  std::string path;
  for (const auto& s : scope_stack) {
    if (!path.empty()) path += '/';
    path += s;
  }
  return path;
}

}  // namespace ef
