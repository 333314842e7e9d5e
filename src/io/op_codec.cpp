#include "io/op_codec.h"

#include "eagerflow/core/error.h"
#include "ops/op_factories.h"

namespace ef::io {

bool is_builtin_op(const std::string& name) { return detail::builtin_op_factories().count(name) != 0; }
bool can_decode(const std::string& name) { return is_builtin_op(name) || registered_op_factory(name); }

std::shared_ptr<const Primitive> decode_op(const std::string& name, const std::string& attrs, const std::string& where) {
  std::shared_ptr<const Primitive> op;
  const auto& builtin = detail::builtin_op_factories();
  auto it = builtin.find(name);
  if (it != builtin.end()) {
    // The factory beside the op reads its typed parameters back from their printed form.
    op = it->second(OpParams::parse(attrs, where + " (" + name + ")"));
  } else if (OpFactory user = registered_op_factory(name)) {
    try {
      op = user(attrs);
    } catch (const std::exception& e) {
      throw Error(kind_of(e), where + ": the factory registered for op '" + name + "' failed on attributes '" + attrs +
                                  "': " + e.what());
    }
    if (!op) throw Error(where + ": the factory registered for op '" + name + "' returned no op");
  } else {
    throw Error(ErrorKind(ErrorCode::not_found, PythonBuiltin::type_error),
                where + ": unknown op '" + name +
                    "'; if it is your own op, register it with ef::register_op<YourOp>(\"" + name +
                    "\", factory) before loading (otherwise the file was written by a newer eagerflow, or is damaged)");
  }
  if (op->name() != name || op->attrs() != attrs)
    throw Error(ErrorCode::internal, where + ": op '" + name + "' with attributes '" + attrs +
                                         "' does not read back exactly (got '" + op->name() + "' '" + op->attrs() +
                                         "')");
  return op;
}

}  // namespace ef::io
