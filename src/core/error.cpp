#include "eagerflow/core/error.h"

#include <vector>

namespace ef {
namespace {
thread_local std::vector<std::string> scope_stack;
}

Error::Error(const std::string& message) : std::runtime_error(message) {}

void fail(const std::string& tag, const std::string& message) {
  std::string text = "[" + tag + "] " + message;
  std::string path = NameScope::current_path();
  if (!path.empty()) text += " (in layer " + path + ")";
  throw Error(text);
}

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
