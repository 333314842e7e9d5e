#include "autodiff/custom_gradient_op.h"

#include "eagerflow/core/log.h"
#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "ops/op_factories.h"

namespace ef {
namespace {


std::string specs_of(std::span<const Tensor> ts) {
  std::string s = "(";
  for (std::size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + (ts[i].defined() ? ts[i].spec().str() : std::string("none"));
  return s + ")";
}

bool shapes_agree(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d)
    if (a[d] != b[d] && a[d] != kDynamic && b[d] != kDynamic) return false;
  return true;
}

}  // namespace

OpParams CustomGradientOp::parameters() const {
  return OpParams()
      .add("fn", function_)
      .add("inputs", static_cast<std::int64_t>(num_inputs_))
      .add("outputs", static_cast<std::int64_t>(num_outputs_))
      .add("residuals", static_cast<std::int64_t>(num_residuals_));
}

std::vector<TensorSpec> CustomGradientOp::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, num_inputs_ + num_outputs_ + num_residuals_);
  std::vector<TensorSpec> specs;
  for (std::size_t i = 0; i < num_outputs_; ++i) specs.push_back(in[num_inputs_ + i].spec());
  return specs;
}

void CustomGradientOp::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  // New handles: a tape tells the node's outputs from the forward pass's by identity.
  for (std::size_t i = 0; i < num_outputs_; ++i) out[i] = Tensor(new_tensor_impl(in[num_inputs_ + i].impl()));
}

std::vector<Tensor> CustomGradientOp::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                          const std::vector<bool>& needed) const {
  std::vector<Tensor> grads(in.size());
  if (!rule_) {
    // The rule stayed behind in the program that saved the model: differentiate the forward
    // ops, which is what the outputs pass through to.
    log(LogLevel::warning, "[custom_gradient] '" + function_ +
                               "' was loaded from a saved model without its gradient rule (a C++ function is not "
                               "saved); its gradient is that of its forward ops");
    for (std::size_t i = 0; i < num_outputs_; ++i) grads[num_inputs_ + i] = cot[i];
    return grads;
  }
  std::span<const Tensor> inputs = in.subspan(0, num_inputs_);
  std::vector<Tensor> residuals(in.begin() + static_cast<std::ptrdiff_t>(num_inputs_ + num_outputs_), in.end());
  std::vector<Tensor> cots(cot.begin(), cot.end());
  std::vector<Tensor> got;
  {
    detail::CustomVariablesScope variables(rule_->variables);
    got = rule_->bwd(residuals, cots);
  }
  std::string tag = "custom_gradient";
  std::string who = "'" + function_ + "'";
  if (got.size() != num_inputs_) {
    std::string vars;
    for (const auto& v : rule_->variables) vars += (vars.empty() ? "" : ", ") + v.name() + " " + v.state_ptr()->spec.str();
    fail(tag, "the gradient function of " + who + " returned " + std::to_string(got.size()) + " gradients " +
                  specs_of(got) + "; it must return one per input " + specs_of(inputs.subspan(0, rule_->num_args)) +
                  (rule_->variables.empty() ? std::string()
                                            : " followed by one per trainable variable it read (" + vars + ")") +
                  ", " + std::to_string(num_inputs_) + " in all (an undefined tensor for none)");
  }
  for (std::size_t i = 0; i < num_inputs_; ++i) {
    if (!got[i].defined()) continue;
    if (got[i].dtype() != inputs[i].dtype() || !shapes_agree(got[i].shape(), inputs[i].shape()))
      fail(tag, "the gradient function of " + who + " returned " + got[i].spec().str() + " as gradient " + std::to_string(i) +
                    ", for an input of " + inputs[i].spec().str() + " (gradients " + specs_of(got) + " for inputs " +
                    specs_of(inputs) + ")");
    if (needed[i]) grads[i] = got[i];
  }
  return grads;
}


// The rule of a custom gradient is a C++ function, which a file cannot hold: the loaded node
// passes gradients to its forward ops.
void detail::add_custom_gradient_factories(detail::OpFactories& f) {
  f["custom_gradient"] = [](const OpParams& p) {
    auto count = [&](const char* key) {
      std::int64_t n = p.integer(key);
      if (n < 0 || n > (1 << 20)) p.bad(std::string(key) + " out of range");
      return static_cast<std::size_t>(n);
    };
    std::size_t outputs = count("outputs");
    if (outputs == 0) p.bad("a custom gradient has at least one output");
    return std::make_shared<CustomGradientOp>(p.text("fn"), count("inputs"), outputs, count("residuals"), nullptr);
  };
}

namespace {
const bool custom_gradient_rules_registered = register_op_rules<CustomGradientOp>({
    .runs_per_example = true,
    // The rule matters for training only: for inference the node passes its outputs on.
    .onnx = [](const CustomGradientOp& op, onnx::Lowering& to) {
      for (std::size_t i = 0; i < to.num_outputs(); ++i) to.node("Identity", {to.input(op.num_inputs() + i)}, {to.output(i)});
    },
});
}  // namespace

}  // namespace ef
