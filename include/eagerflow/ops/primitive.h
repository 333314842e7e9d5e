#pragma once
// A Primitive is one op, defined once: its shape/dtype rule (infer), its kernel (eval) and
// its attributes. Eager calls run eval at once; a trace records the primitive in a graph and
// the executor runs the same eval on replay.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

class Primitive {
 public:
  virtual ~Primitive() = default;
  virtual const char* name() const = 0;
  // Output specs from the inputs' dtypes and shapes (dims may be dynamic while tracing).
  // Throws ef::Error naming the op and the shapes.
  virtual std::vector<TensorSpec> infer(std::span<const Tensor> inputs) const = 0;
  // Fills `outputs` (sized like `specs`, whose shapes are concrete). Most kernels allocate
  // with Tensor::empty; view ops may alias their input instead.
  virtual void eval(std::span<const Tensor> inputs, std::span<const TensorSpec> specs,
                    std::span<Tensor> outputs) const = 0;
  // Attributes as printed in graphs ("axes=(1,) keepdims=True"); also the identity used by
  // common-subexpression elimination.
  virtual std::string attrs() const { return {}; }
  // Effects (printing, assignment) are never removed, merged or reordered.
  virtual bool has_effect() const { return false; }
  virtual std::shared_ptr<Primitive> clone() const = 0;
};

// CRTP helper that supplies clone().
template <class Derived>
class PrimitiveBase : public Primitive {
 public:
  std::shared_ptr<Primitive> clone() const override {
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }
};

// The one dispatch point: runs `op` now, or records it when a trace is active on this thread
// and an input is symbolic (or the op has an effect).
std::vector<Tensor> dispatch(const Primitive& op, std::span<const Tensor> inputs);
Tensor dispatch1(const Primitive& op, std::span<const Tensor> inputs);
inline Tensor dispatch1(const Primitive& op, std::initializer_list<Tensor> inputs) {
  return dispatch1(op, std::span<const Tensor>(inputs.begin(), inputs.size()));
}

// Helpers for shape rules.
std::string describe(std::span<const Tensor> inputs, const char* separator = ", ");  // "float32[2,3], float32[3]"
void expect_inputs(const Primitive& op, std::span<const Tensor> inputs, std::size_t n);
void expect_same_dtype(const Primitive& op, std::span<const Tensor> inputs);

}  // namespace ef
