#pragma once
// ef::Variable: a named, mutable tensor. Traced graphs capture variables by reference: a
// replay reads the current value, and assignments are ordered effects in the graph.
#include <memory>
#include <mutex>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef {

struct VariableState {
  std::string name;
  bool trainable = true;
  TensorSpec spec;
  Tensor read() const {
    std::lock_guard lock(mutex);
    return value;
  }
  // Replaces the value; it must have the variable's dtype and shape (an ef::Error otherwise).
  void write(Tensor t) {
    check(t);
    std::lock_guard lock(mutex);
    value = std::move(t);
  }
  // Read-modify-write under one lock: concurrent assign_add calls lose no update.
  template <class F>
  void update(F&& next_from_current) {
    std::lock_guard lock(mutex);
    Tensor next = next_from_current(value);
    check(next);
    value = std::move(next);
  }

 private:
  void check(const Tensor& t) const;
  mutable std::mutex mutex;
  Tensor value;
};

class Variable {
 public:
  Variable() = default;
  // The initial value must be concrete. Inside ef::function, variables may only be created on
  // a function's first trace (their initializers run eagerly, like TF's init_scope).
  Variable(const Tensor& initial_value, std::string name = "Variable", bool trainable = true);

  bool defined() const { return state_ != nullptr; }
  const std::string& name() const { return state().name; }
  DType dtype() const { return state().spec.dtype; }
  const Shape& shape() const { return state().spec.shape; }
  bool trainable() const { return state().trainable; }

  // The current value; inside a trace, a symbolic read of the variable.
  Tensor value() const;
  operator Tensor() const { return value(); }  // NOLINT: variables are used where tensors are

  // Assignments keep dtype and shape; inside a trace they are recorded as ordered effects.
  // A Variable is a handle (like a shared_ptr): a const handle still assigns.
  void assign(const Tensor& v) const;
  void assign_add(const Tensor& v) const;
  void assign_sub(const Tensor& v) const;

  const std::shared_ptr<VariableState>& state_ptr() const { return state_; }
  // A handle on an existing variable's state.
  static Variable from_state(std::shared_ptr<VariableState> state) {
    Variable v;
    v.state_ = std::move(state);
    return v;
  }
  bool same_as(const Variable& o) const { return state_ == o.state_; }

 private:
  VariableState& state() const;
  std::shared_ptr<VariableState> state_;
};

}  // namespace ef
