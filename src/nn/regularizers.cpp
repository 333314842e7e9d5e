#include "eagerflow/nn/regularizers.h"

#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {
namespace {
void expect_factor(double v, const char* what) {
  if (!std::isfinite(v) || v < 0)
    fail("regularizer", std::string("the ") + what + " factor must be a non-negative number, got " + std::to_string(v));
}
}  // namespace

Regularizer::Regularizer(double l1, double l2) : l1_(l1), l2_(l2) {
  expect_factor(l1, "l1");
  expect_factor(l2, "l2");
  name_ = l1 != 0 && l2 != 0 ? "l1_l2" : l2 != 0 ? "l2" : l1 != 0 ? "l1" : "l1_l2";
  fn_ = [l1, l2](const Tensor& x) {
    Tensor penalty = scalar_like(x, 0.0);
    if (l1 != 0) penalty = penalty + l1 * sum(abs(x));
    if (l2 != 0) penalty = penalty + l2 * sum(square(x));
    return penalty;
  };
}

Regularizer::Regularizer(const char* name) : Regularizer(std::string(name)) {}

Regularizer::Regularizer(const std::string& name) {
  if (name == "l1") *this = ef::nn::l1();
  else if (name == "l2") *this = ef::nn::l2();
  else if (name == "l1_l2" || name == "l1l2") *this = l1_l2();
  else if (!name.empty()) fail("regularizer", "unknown regularizer '" + name + "' (known: l1, l2, l1_l2)");
}

Regularizer::Regularizer(std::function<Tensor(const Tensor&)> fn, std::string name) : fn_(std::move(fn)), name_(std::move(name)) {}

Tensor Regularizer::operator()(const Tensor& x) const {
  if (!fn_) fail("regularizer", "no regularizer is set");
  Tensor penalty = fn_(x);
  if (!penalty.defined() || penalty.rank() != 0)
    fail("regularizer", "'" + name_ + "' must return a scalar, got " +
                            (penalty.defined() ? penalty.spec().str() : std::string("an undefined tensor")) +
                            " for a weight " + x.spec().str());
  return penalty;
}

Regularizer l1(double l1) { return Regularizer(l1, 0.0); }
Regularizer l2(double l2) { return Regularizer(0.0, l2); }
Regularizer l1_l2(double l1, double l2) { return Regularizer(l1, l2); }

}  // namespace ef::nn
