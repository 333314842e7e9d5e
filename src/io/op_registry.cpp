// The registry of user-defined ops (eagerflow/ops/registry.h): how the saved-model codec
// rebuilds an op it does not know itself.
#include <map>
#include <mutex>

#include "eagerflow/ops/registry.h"
#include "io/op_codec.h"

namespace ef {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, OpFactory>& registry() {
  static std::map<std::string, OpFactory> r;
  return r;
}

}  // namespace

bool register_op(const std::string& name, OpFactory factory) {
  if (name.empty()) fail("register_op", "the op name is empty");
  if (!factory) fail("register_op", "op '" + name + "': the factory is empty (a default std::function)");
  if (io::is_builtin_op(name))
    fail("register_op", "op '" + name + "' is a built-in op of the saved-model format; give your op another name()");
  std::lock_guard lock(registry_mutex());
  if (!registry().emplace(name, std::move(factory)).second)
    fail(ErrorCode::already_exists, "register_op",
         "op '" + name + "' is registered already (call ef::unregister_op first to replace it)");
  return true;
}

bool unregister_op(const std::string& name) {
  std::lock_guard lock(registry_mutex());
  return registry().erase(name) != 0;
}

std::vector<std::string> registered_ops() {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [name, f] : registry()) names.push_back(name);
  return names;
}

namespace io {
OpFactory registered_op_factory(const std::string& name) {
  std::lock_guard lock(registry_mutex());
  auto it = registry().find(name);
  return it == registry().end() ? OpFactory() : it->second;
}
}  // namespace io

}  // namespace ef
