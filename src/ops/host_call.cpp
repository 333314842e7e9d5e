// HostCall: the op behind ef::host_call (include/eagerflow/ops/host_call.h).
#include "eagerflow/ops/host_call.h"

#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/trace/context.h"
#include "ops/interpreters.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

class HostCall : public PrimitiveBase<HostCall> {
 public:
  explicit HostCall(std::shared_ptr<const HostFunction> f) : f_(std::move(f)) {}
  const char* name() const override { return f_->name.c_str(); }
  // It runs on every call of a traced graph and is never merged with another call: its
  // results depend on more than its inputs.
  bool is_stateful() const override { return true; }
  bool has_effect() const override { return true; }
  bool is_differentiable() const override { return static_cast<bool>(f_->vjp); }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }

  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    for (const Tensor& t : in)
      if (!t.defined()) fail(name(), "an input tensor is undefined");
    return f_->outputs;
  }

  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    std::vector<Tensor> results;
    {
      // The function runs as eager code of its own: its ops dispatch as user code does (its own
      // tapes record them: py_function's gradient), never into a trace or onto the caller's
      // tapes, which record this op and its vjp instead.
      detail::OutsideKernel outside;
      detail::SuspendTapes hide_tapes;
      trace::EagerScope eager;
      results = f_->fn(std::vector<Tensor>(in.begin(), in.end()));
    }
    if (results.size() != specs.size())
      fail(ErrorCode::invalid_argument, name(),
           "returned " + std::to_string(results.size()) + " values where " + std::to_string(specs.size()) +
               " were declared (Tout)");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Tensor& r = results[i];
      const TensorSpec& s = specs[i];
      bool fits = r.defined() && r.dtype() == s.dtype && r.rank() == s.shape.rank();
      for (int d = 0; fits && d < s.shape.rank(); ++d) fits = s.shape[d] == kDynamic || s.shape[d] == r.shape()[d];
      if (!fits)
        fail(ErrorCode::invalid_argument, name(),
             "result " + std::to_string(i) + " is " + (r.defined() ? r.spec().str() : std::string("undefined")) +
                 " where " + s.str() + " was declared");
      out[i] = r;
    }
  }

  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                          const std::vector<bool>&) const override {
    // The gradient is a host call too: it runs when the backward pass runs, traced or not.
    auto grad = std::make_shared<HostFunction>();
    grad->name = f_->name + "_grad";
    std::size_t n = in.size();
    std::vector<TensorSpec> specs;
    for (const Tensor& t : in) specs.push_back(t.spec());
    grad->outputs = specs;
    auto forward = f_;
    grad->fn = [forward, n, specs](const std::vector<Tensor>& all) {
      std::vector<Tensor> inputs(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<Tensor> cots(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
      std::vector<Tensor> g = forward->vjp(inputs, cots);
      g.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        if (!g[i].defined()) g[i] = zeros_like(inputs[i]);
      return g;
    };
    std::vector<Tensor> args(in.begin(), in.end());
    args.insert(args.end(), cot.begin(), cot.end());
    return dispatch(HostCall(grad), args);
  }

 private:
  std::shared_ptr<const HostFunction> f_;
};

}  // namespace

std::vector<Tensor> host_call(std::shared_ptr<const HostFunction> f, const std::vector<Tensor>& inputs) {
  if (!f || !f->fn) fail("host_call", "needs a function");
  return dispatch(HostCall(std::move(f)), inputs);
}

void detail::register_host_call_rules() {
  register_op_rules<HostCall>(
      {.runs_per_example = true, .onnx_unsupported = "a host call runs code of the program; exported graphs cannot hold it"});
}

}  // namespace ef
