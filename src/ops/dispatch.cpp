#include "eagerflow/core/tensor.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/trace/recorder.h"

namespace ef {

std::string describe(std::span<const Tensor> inputs, const char* separator) {
  std::string s;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += separator;
    s += inputs[i].spec().str();
  }
  return s;
}

void expect_inputs(const Primitive& op, std::span<const Tensor> inputs, std::size_t n) {
  if (inputs.size() != n)
    fail(op.name(), "expects " + std::to_string(n) + " inputs, got " + std::to_string(inputs.size()));
  for (const auto& t : inputs)
    if (!t.defined()) fail(op.name(), "an input tensor is undefined (default-constructed)");
}

void expect_same_dtype(const Primitive& op, std::span<const Tensor> inputs) {
  for (const auto& t : inputs)
    if (t.dtype() != inputs[0].dtype())
      fail(op.name(), "dtypes differ: " + describe(inputs, " vs ") +
                          " (binary ops need equal dtypes; use ef::cast)");
}

std::vector<Tensor> dispatch(const Primitive& op, std::span<const Tensor> inputs) {
  bool symbolic = false;
  for (const auto& t : inputs) {
    if (!t.defined()) fail(op.name(), "an input tensor is undefined (default-constructed)");
    symbolic |= t.is_symbolic();
  }
  trace::Recorder* recorder = trace::active_recorder();
  if (recorder && (symbolic || op.has_effect())) return recorder->record(op, inputs, op.infer(inputs));
  if (symbolic)
    fail(op.name(), "got a symbolic tensor outside of its trace; symbolic tensors exist only "
                    "while ef::function traces (do not keep them past the traced call)");
  std::vector<TensorSpec> specs = op.infer(inputs);
  std::vector<Tensor> outputs(specs.size());
  op.eval(inputs, specs, outputs);
  return outputs;
}

Tensor dispatch1(const Primitive& op, std::span<const Tensor> inputs) {
  bool symbolic = false;
  for (const auto& t : inputs) {
    if (!t.defined()) fail(op.name(), "an input tensor is undefined (default-constructed)");
    symbolic |= t.is_symbolic();
  }
  if (symbolic || op.has_effect() || trace::active_recorder()) return dispatch(op, inputs).at(0);
  // Eager fast path: one output, no vector of outputs.
  std::vector<TensorSpec> specs = op.infer(inputs);
  Tensor out;
  op.eval(inputs, specs, std::span<Tensor>(&out, 1));
  return out;
}

}  // namespace ef
