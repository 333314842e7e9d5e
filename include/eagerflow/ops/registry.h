#pragma once
// User-defined ops in saved models. A user's op is a Primitive subclass (shape rule, kernel,
// gradient rule; derive from ef::PrimitiveBase<MyOp>): it runs eagerly, traced and under tapes
// through ef::dispatch as it is. Its parameters() (typed, include/eagerflow/ops/op_params.h)
// are what graphs print and saved models store. To load graphs that use it, register how to
// rebuild it from them:
//
//   static const bool registered = ef::register_op<ClipByNorm>("clip_by_norm", [](const ef::OpParams& p) {
//     return std::make_shared<ClipByNorm>(p.real("clip_norm"));
//   });
//
// (A factory may also take the printed text itself, `const std::string& attrs`.) The name is
// what the op's name() returns; loading calls the factory with the parameters saved, and the
// op it returns must print the same name and attributes again. Saving a graph with an op that is neither built in nor registered,
// and loading one whose op is not registered, are ef::Errors naming the op to register.
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef {

using OpFactory = std::function<std::shared_ptr<Primitive>(const std::string& attrs)>;

// Registers `factory` under `name`. An ef::Error when the name is empty, built in, or
// registered already. Returns true, for `static const bool registered = ...`.
bool register_op(const std::string& name, OpFactory factory);

// The same, checking that the factory makes an `Op`.
template <class Op>
bool register_op(const std::string& name, std::function<std::shared_ptr<Op>(const std::string& attrs)> factory) {
  static_assert(std::is_base_of_v<Primitive, Op>, "ef::register_op<Op>: Op must derive from ef::Primitive");
  if (!factory) return register_op(name, OpFactory());
  return register_op(name, OpFactory([factory = std::move(factory)](const std::string& attrs) -> std::shared_ptr<Primitive> {
                       return factory(attrs);
                     }));
}
template <class Op, class F>
  requires std::is_invocable_r_v<std::shared_ptr<Op>, const F&, const std::string&>
bool register_op(const std::string& name, F factory) {
  return register_op<Op>(name, std::function<std::shared_ptr<Op>(const std::string&)>(std::move(factory)));
}

// A factory of the op's typed parameters (read back from the saved text).
template <class Op, class F>
  requires std::is_invocable_r_v<std::shared_ptr<Op>, const F&, const OpParams&>
bool register_op(const std::string& name, F factory) {
  return register_op(name, OpFactory([name, factory = std::move(factory)](const std::string& attrs) -> std::shared_ptr<Primitive> {
                       return factory(OpParams::parse(attrs, "op '" + name + "'"));
                     }));
}

// Removes a registration; false when `name` was not registered.
bool unregister_op(const std::string& name);
// The registered names, sorted.
std::vector<std::string> registered_ops();

}  // namespace ef
