// The table of op records (eagerflow/ops/op_rules.h). Read when vmap meets an op and when a graph
// is exported, written at static initialization and when a user registers an op.
#include "eagerflow/ops/op_rules.h"

#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "eagerflow/core/error.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

struct Entry {
  std::string type_name;
  std::unique_ptr<const OpRules> rules;  // never removed: op_rules() hands out the pointer
};

class RulesTable {
 public:
  void add(std::type_index op, const std::string& name, OpRules rules) {
    std::unique_lock lock(mutex_);
    auto [it, added] = entries_.try_emplace(op);
    if (!added)
      fail(ErrorCode::already_exists, "register_op_rules", "op class " + name + " has its rules registered already");
    it->second = {name, std::make_unique<const OpRules>(std::move(rules))};
  }
  const OpRules* find(std::type_index op) const {
    std::shared_lock lock(mutex_);
    auto it = entries_.find(op);
    return it == entries_.end() ? nullptr : it->second.rules.get();
  }
  std::vector<std::pair<std::string, const OpRules*>> all() const {
    std::shared_lock lock(mutex_);
    std::map<std::string, const OpRules*> sorted;
    for (const auto& [type, e] : entries_) sorted[e.type_name] = e.rules.get();
    return {sorted.begin(), sorted.end()};
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::type_index, Entry> entries_;
};

RulesTable& table() {
  static auto* t = new RulesTable;  // never destroyed: exports may run from static destructors
  return *t;
}

// The records of the ops in src/ops are registered on first use of the table (a static
// library drops object files that nothing references, so static registrars there would be
// lost); ops of the modules above register theirs statically, beside their classes.
thread_local bool registering_builtins = false;
void ensure_builtin_rules() {
  if (registering_builtins) return;
  static std::once_flag once;
  std::call_once(once, [] {
    registering_builtins = true;
    try {
      detail::register_builtin_op_rules();
    } catch (...) {
      registering_builtins = false;
      throw;
    }
    registering_builtins = false;
  });
}

}  // namespace

bool register_op_rules(std::type_index op_class, const std::string& type_name, OpRules rules) {
  if (!rules.batching && !rules.runs_per_example && !rules.onnx && rules.onnx_unsupported.empty())
    fail("register_op_rules", "op class " + type_name + ": the record is empty");
  if (rules.batching && rules.runs_per_example)
    fail("register_op_rules", "op class " + type_name + ": a batching rule and runs_per_example both given");
  if (rules.onnx && !rules.onnx_unsupported.empty())
    fail("register_op_rules", "op class " + type_name + ": an ONNX lowering and onnx_unsupported both given");
  ensure_builtin_rules();
  table().add(op_class, type_name, std::move(rules));
  return true;
}

const OpRules* op_rules(const Primitive& op) {
  ensure_builtin_rules();
  return table().find(std::type_index(typeid(op)));
}

std::vector<std::pair<std::string, const OpRules*>> registered_op_rules() {
  ensure_builtin_rules();
  return table().all();
}

}  // namespace ef
