#pragma once
// ef::Error: every user-facing failure. Messages start with a tag naming the API
// (`[matmul] ...`) and, when raised inside a layer call, end with the layer path.
#include <stdexcept>
#include <string>

namespace ef {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
};

// Builds "[tag] message" and appends the active layer/name-scope path, if any.
[[noreturn]] void fail(const std::string& tag, const std::string& message);

// Name scopes (the layer path) live in core so that op errors can name the layer they
// came from without ops depending on nn.
class NameScope {
 public:
  explicit NameScope(std::string name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
  // "outer/inner" for the scopes active on this thread; empty when none.
  static std::string current_path();
};

}  // namespace ef
