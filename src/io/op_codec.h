#pragma once
// Ops to and from their saved form: the op's name and its attribute text (what the graph
// printer shows, e.g. "axes=(1,) keepdims=True"), which every saveable op prints completely
// and exactly. Variables and print ops are saved by the graph codec itself.
#include <memory>
#include <string>

#include "eagerflow/ops/primitive.h"
#include "eagerflow/ops/registry.h"

namespace ef::io {

// The op named `name` with attributes `attrs`; an ef::Error naming `where` when the name is
// unknown (a user's op that is not registered, a newer format, or a typo) or the attributes
// do not parse. The result prints exactly `attrs` again (checked).
std::shared_ptr<const Primitive> decode_op(const std::string& name, const std::string& attrs, const std::string& where);
// True when decode_op knows the op's name, built in or registered with ef::register_op (used
// to refuse saving what cannot be loaded).
bool can_decode(const std::string& name);
// True for the ops the codec knows itself (their names cannot be registered).
bool is_builtin_op(const std::string& name);
// The factory ef::register_op registered for `name`, or an empty function (op_registry.cpp).
OpFactory registered_op_factory(const std::string& name);

}  // namespace ef::io
