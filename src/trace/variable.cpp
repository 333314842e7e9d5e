#include "eagerflow/variable.h"

#include <cstring>

#include "eagerflow/core/log.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/trace/context.h"
#include "core/autocast.h"
#include "ops/interpreters.h"
#include "ops/primitives.h"

namespace ef {
namespace {

Tensor copy_of(const Tensor& t) {
  Tensor c = Tensor::empty(t.dtype(), t.shape());
  if (t.nbytes()) std::memcpy(c.raw_mutable_data(), t.raw_data(), t.nbytes());
  c.impl().storage->string_owners = t.impl().storage->string_owners;  // string views point there
  return c;
}

}  // namespace

OpParams ReadVariable::parameters() const { return OpParams().add("var", Word{var_->name}); }
std::vector<TensorSpec> ReadVariable::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 0);
  return {var_->spec};
}
void ReadVariable::eval(std::span<const Tensor>, std::span<const TensorSpec>, std::span<Tensor> out) const {
  out[0] = var_->read();
}

const char* AssignVariable::name() const {
  return mode_ == AssignMode::set ? "assign" : mode_ == AssignMode::add ? "assign_add" : "assign_sub";
}
OpParams AssignVariable::parameters() const { return OpParams().add("var", Word{var_->name}); }

std::vector<TensorSpec> AssignVariable::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() != var_->spec.dtype || !in[0].shape().accepts(var_->spec.shape) ||
      (in[0].shape().is_static() && in[0].shape() != var_->spec.shape))
    fail(name(), "value " + in[0].spec().str() + " does not fit variable '" + var_->name + "' " + var_->spec.str());
  return {};
}

void AssignVariable::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor>) const {
  if (in[0].shape() != var_->spec.shape)
    fail(name(), "value " + in[0].spec().str() + " does not fit variable '" + var_->name + "' " + var_->spec.str());
  // Variables hold immutable tensors: an assignment swaps in a new one, so values read
  // earlier (eagerly or by a graph) keep the numbers they were read with.
  switch (mode_) {
    case AssignMode::set: var_->write(in[0]); break;
    case AssignMode::add: var_->update([&](const Tensor& v) { return add(v, in[0]); }); break;
    case AssignMode::sub: var_->update([&](const Tensor& v) { return sub(v, in[0]); }); break;
  }
}

void VariableState::check(const Tensor& t) const {
  if (!t.defined()) fail("variable", "cannot write an undefined tensor to '" + name + "'");
  if (t.is_symbolic()) fail("variable", "cannot write a symbolic tensor to '" + name + "' (assign inside the function instead)");
  if (t.dtype() != spec.dtype || t.shape() != spec.shape)
    fail("variable", "value " + t.spec().str() + " does not fit variable '" + name + "' " + spec.str());
}

namespace {

void assign_with(const std::shared_ptr<VariableState>& var, const Tensor& v, AssignMode mode) {
  dispatch(AssignVariable(var, mode), std::span<const Tensor>(&v, 1));
  if (auto* ctx = trace::current()) ctx->variable_assigned(var.get());
}

}  // namespace

Variable::Variable(const Tensor& initial, std::string name, bool trainable) {
  if (!initial.defined()) fail("variable", "initial value of '" + name + "' is undefined");
  if (auto* ctx = trace::current()) {
    trace::TraceContext& root = ctx->root();
    std::string tag = "function " + root.function_name();
    if (initial.is_symbolic())
      fail(tag, "the initial value of variable '" + name + "' is computed from a symbolic input " +
                    initial.spec().str() + "; create it from a shape or an eager value instead (for a layer: "
                    "in build(input_shape))");
    if (!root.allow_variable_creation())
      fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error), tag,
           "variable '" + name + "' was created on a later trace of '" + root.function_name() +
               "'; a function may create variables only on its first trace (create them outside, or build "
               "the layer before tracing new signatures)");
    root.note_variable_created(name + " " + initial.spec().str());
  } else if (initial.is_symbolic()) {
    fail(ErrorCode::failed_precondition, "variable",
         "the initial value of '" + name + "' is a symbolic tensor outside of its trace");
  }
  state_ = std::make_shared<VariableState>();
  state_->name = std::move(name);
  state_->trainable = trainable;
  state_->spec = initial.spec();
  state_->write(copy_of(initial));
}

VariableState& Variable::state() const {
  if (!state_)
    throw Error(ErrorCode::failed_precondition, "[variable] use of an undefined (default-constructed) Variable");
  return *state_;
}

Tensor Variable::value() const {
  state();
  Tensor t = trace::current() ? trace::current()->read_variable(state_) : state_->read();
  if (detail::innermost_tape()) detail::note_variable_read(state_, t);
  // Inside the call of a layer with a mixed dtype policy, trainable float32 variables read as
  // the compute dtype (Keras' autocast); the tape sees the float32 read, then the cast.
  if (detail::autocast_dtype && state_->trainable && t.dtype() == DType::float32 && *detail::autocast_dtype != t.dtype())
    return cast(t, *detail::autocast_dtype);
  return t;
}

void Variable::assign(const Tensor& v) const { state(); assign_with(state_, v, AssignMode::set); }
void Variable::assign_add(const Tensor& v) const { state(); assign_with(state_, v, AssignMode::add); }
void Variable::assign_sub(const Tensor& v) const { state(); assign_with(state_, v, AssignMode::sub); }

}  // namespace ef
