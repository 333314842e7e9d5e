#pragma once
// User-defined gradients for a function of tensors, in TF's style (custom_gradient: the
// function returns its outputs and a gradient function) and in JAX's (custom_vjp: a primal
// function, a forward pass that also returns residuals, and a backward pass of the
// residuals and the output cotangents).
//
//   auto log1pexp = ef::custom_gradient("log1pexp", [](const ef::Tensor& x) {
//     ef::Tensor e = ef::exp(x);
//     return ef::OutputAndGrad{ef::log(1.0f + e), [e](const ef::Tensor& dy) { return dy * (1.0f - 1.0f / (1.0f + e)); }};
//   });
//
//   auto clip = ef::custom_vjp("clip_gradient", [](const std::vector<ef::Tensor>& x) { return x; })
//                   .defvjp([](const std::vector<ef::Tensor>& x) { return ef::VjpForward{x, {}}; },
//                           [](const std::vector<ef::Tensor>&, const std::vector<ef::Tensor>& dy) {
//                             return std::vector<ef::Tensor>{ef::minimum(ef::maximum(dy[0], ef::scalar_like(dy[0], -1.0)), ef::scalar_like(dy[0], 1.0))};
//                           });
//
// Both work eagerly, under GradientTape and ef::grad, inside ef::function (one trace; the
// gradient of a traced train step uses the rule) and nested: the gradient function is written
// with ef ops, so an outer tape differentiates it (grad of grad), and the residuals it reads
// are differentiated through the forward pass that made them (as JAX does).
//
// Where the rule lives: the forward pass runs as ordinary ops, followed by one
// "custom_gradient" node whose inputs are the function's inputs, its outputs and the residuals
// and whose outputs are the function's outputs again; that node's gradient is the user's rule.
// So the rule survives in a traced graph that is differentiated later, node by node.
//
// Variables (TF's `variables=`): trainable variables that the forward function reads take
// part like extra inputs. The gradient function returns one gradient per input, then one per
// such variable in the order they were first read (custom_variables() lists them while the
// gradient function runs). A wrong count is an ef::Error naming the function and the
// variables. Tensors captured from outside (not passed as inputs) get no gradient through the
// function: pass them as inputs for one.
//
// Saving: a saved model keeps the forward ops and the node, but not the rule (a C++ callable
// cannot be written to a file). A loaded model differentiates the forward ops instead.
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"
#include "eagerflow/variable.h"

namespace ef {

// ---------------------------------------------------------------- TF style
// The gradient function: output cotangents -> input gradients (then variable gradients). An
// undefined tensor is "no gradient" (TF's None).
using GradFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& output_cotangents)>;

struct OutputsAndGrad {
  std::vector<Tensor> outputs;
  GradFn grad;
};
struct OutputAndGrad {
  Tensor output;
  std::function<Tensor(const Tensor& dy)> grad;
};

using CustomGradientBody = std::function<OutputsAndGrad(const std::vector<Tensor>& inputs)>;

// Calls `body` on `inputs` with its gradient rule in force. `name` names the function in
// graphs and errors.
std::vector<Tensor> call_with_custom_gradient(const std::string& name, const CustomGradientBody& body,
                                              const std::vector<Tensor>& inputs);

// The decorator form: returns a callable of the same shape as `f`. `f` is either
// Tensor -> OutputAndGrad, or std::vector<Tensor> -> OutputsAndGrad.
template <class F>
auto custom_gradient(std::string name, F f) {
  if constexpr (std::is_invocable_v<const F&, const Tensor&> && !std::is_invocable_v<const F&, const std::vector<Tensor>&>) {
    static_assert(std::is_convertible_v<std::invoke_result_t<const F&, const Tensor&>, OutputAndGrad>,
                  "ef::custom_gradient: a function of one tensor returns ef::OutputAndGrad{output, grad}");
    CustomGradientBody body = [f = std::move(f)](const std::vector<Tensor>& in) {
      OutputAndGrad r = f(in.at(0));
      GradFn grad;  // stays empty when r.grad is: that is an error reported by name
      if (r.grad) grad = [g = std::move(r.grad)](const std::vector<Tensor>& dy) { return std::vector<Tensor>{g(dy.at(0))}; };
      return OutputsAndGrad{{r.output}, std::move(grad)};
    };
    return [name = std::move(name), body = std::move(body)](const Tensor& x) -> Tensor {
      return call_with_custom_gradient(name, body, {x}).at(0);
    };
  } else {
    static_assert(std::is_convertible_v<std::invoke_result_t<const F&, const std::vector<Tensor>&>, OutputsAndGrad>,
                  "ef::custom_gradient: a function of std::vector<ef::Tensor> returns ef::OutputsAndGrad{outputs, grad}");
    return [name = std::move(name), body = CustomGradientBody(std::move(f))](const std::vector<Tensor>& xs) {
      return call_with_custom_gradient(name, body, xs);
    };
  }
}

// ---------------------------------------------------------------- JAX style
struct VjpForward {
  std::vector<Tensor> outputs;
  std::vector<Tensor> residuals;
};
using VjpPrimalFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
using VjpFwdFn = std::function<VjpForward(const std::vector<Tensor>& inputs)>;
using VjpBwdFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& residuals,
                                                   const std::vector<Tensor>& output_cotangents)>;

// jax.custom_vjp: the primal runs when nothing differentiates (eagerly, no tape recording);
// otherwise fwd runs and bwd gives the gradients. bwd must compute from its arguments only
// (not from tensors captured from a trace): it runs when the gradient is taken.
class CustomVjp {
 public:
  CustomVjp(std::string name, VjpPrimalFn primal);
  CustomVjp& defvjp(VjpFwdFn fwd, VjpBwdFn bwd);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  Tensor operator()(const Tensor& x) const;  // one input, one output
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  VjpPrimalFn primal_;
  VjpFwdFn fwd_;
  std::shared_ptr<const VjpBwdFn> bwd_;
};

inline CustomVjp custom_vjp(std::string name, VjpPrimalFn primal) { return CustomVjp(std::move(name), std::move(primal)); }

// While a gradient function runs: the trainable variables its forward function read, in the
// order their gradients follow the inputs' (empty when none, or outside a gradient function).
const std::vector<Variable>& custom_variables();

}  // namespace ef
