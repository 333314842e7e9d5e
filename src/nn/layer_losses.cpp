// Layer::add_loss / losses / apply_constraints and the regularizers and constraints behind
// them, as Keras 3's Layer: add_loss values live until the next outermost layer call starts
// (Layer::invoke calls clear_losses), weight penalties are computed when losses() is asked.
#include <algorithm>
#include <mutex>
#include <utility>

#include "eagerflow/nn/constraints.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/nn/regularizers.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {

struct Layer::LossState {
  std::vector<Tensor> losses;  // add_loss values of the latest outermost call
  std::vector<std::pair<Variable, Regularizer>> regularizers;
  std::vector<std::pair<Variable, Constraint>> constraints;
  Regularizer activity;
};

namespace {
bool contains(const std::vector<Variable>& vs, const Variable& v) {
  return std::any_of(vs.begin(), vs.end(), [&](const Variable& u) { return u.same_as(v); });
}

template <class T>
void set_for(std::vector<std::pair<Variable, T>>& entries, const Variable& v, const T& value) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first.same_as(v); });
  if (!value) {
    if (it != entries.end()) entries.erase(it);
  } else if (it != entries.end()) {
    it->second = value;
  } else {
    entries.emplace_back(v, value);
  }
}

// Every layer of the tree once, parents first (a layer shared by two parents is listed once).
void flatten(const Layer& layer, std::vector<const Layer*>& out) {
  if (std::find(out.begin(), out.end(), &layer) != out.end()) return;
  out.push_back(&layer);
  for (const Layer* c : layer.layers()) flatten(*c, out);
}
}  // namespace

Layer::LossState& Layer::loss_state() const {
  std::lock_guard lock(mutex_);
  if (!loss_state_) loss_state_ = std::make_shared<LossState>();
  return *loss_state_;
}

void Layer::add_loss(const Tensor& loss) {
  if (!loss.defined()) fail(name(), "add_loss: the loss is an undefined tensor");
  if (!is_floating(loss.dtype()))
    fail(kWrongType, name(), "add_loss: the loss must be a floating-point tensor, got " + loss.spec().str());
  LossState& state = loss_state();
  std::lock_guard lock(mutex_);
  state.losses.push_back(loss);
}

void Layer::clear_losses() {
  std::vector<Layer*> children;
  {
    std::lock_guard lock(mutex_);
    if (loss_state_) loss_state_->losses.clear();
    children = children_;
  }
  for (Layer* c : children) c->clear_losses();
}

void Layer::collect_losses(std::vector<Tensor>& out, std::vector<const Layer*>& seen) const {
  if (std::find(seen.begin(), seen.end(), this) != seen.end()) return;
  seen.push_back(this);
  std::vector<Layer*> children;
  {
    std::lock_guard lock(mutex_);
    if (loss_state_) out.insert(out.end(), loss_state_->losses.begin(), loss_state_->losses.end());
    children = children_;
  }
  for (const Layer* c : children) c->collect_losses(out, seen);
}

std::vector<Tensor> Layer::losses() const {
  std::vector<Tensor> out;
  std::vector<const Layer*> layers;
  collect_losses(out, layers);
  // Keras: then the penalty of each trainable weight that has a regularizer, in weight order.
  std::vector<std::pair<Variable, Regularizer>> regularized;
  for (const Layer* l : layers) {
    std::lock_guard lock(l->mutex_);
    if (l->loss_state_) regularized.insert(regularized.end(), l->loss_state_->regularizers.begin(), l->loss_state_->regularizers.end());
  }
  if (regularized.empty()) return out;
  for (const Variable& w : trainable_weights())
    for (const auto& [v, r] : regularized)
      if (v.same_as(w)) out.push_back(r(Tensor(v)));
  return out;
}

void Layer::apply_constraints() {
  std::vector<const Layer*> layers;
  flatten(*this, layers);
  std::vector<std::pair<Variable, Constraint>> constrained;
  for (const Layer* l : layers) {
    std::lock_guard lock(l->mutex_);
    if (l->loss_state_) constrained.insert(constrained.end(), l->loss_state_->constraints.begin(), l->loss_state_->constraints.end());
  }
  if (constrained.empty()) return;
  // As Keras' optimizer: the weights it updates, i.e. the trainable ones.
  std::vector<Variable> trainable = trainable_weights();
  for (const auto& [v, c] : constrained)
    if (contains(trainable, v)) v.assign(c(Tensor(v)));
}

void Layer::set_activity_regularizer(const Regularizer& r) {
  LossState& state = loss_state();
  std::lock_guard lock(mutex_);
  state.activity = r;
}

const Regularizer* Layer::activity_regularizer() const {
  std::lock_guard lock(mutex_);
  return loss_state_ && loss_state_->activity ? &loss_state_->activity : nullptr;
}

void Layer::add_activity_loss(const std::vector<Tensor>& outputs) {
  Regularizer r;
  {
    std::lock_guard lock(mutex_);
    if (!loss_state_ || !loss_state_->activity) return;
    r = loss_state_->activity;
  }
  for (const Tensor& out : outputs) {
    if (!out.defined() || !is_floating(out.dtype())) continue;
    Tensor loss = r(out);
    if (out.rank() > 0) {
      // Keras 3 divides by the batch size (divide_no_nan: an empty batch gives 0), so that the
      // weighting against the weight penalties does not change with the batch size.
      std::int64_t batch = out.shape()[0];
      if (batch == kDynamic) {
        Tensor b = cast(reshape(slice(ef::shape(out), {0}, {1}), Shape{}), loss.dtype());
        loss = where(equal(b, scalar_like(b, 0.0)), zeros_like(loss), loss / b);
      } else {
        loss = batch == 0 ? zeros_like(loss) : loss / static_cast<double>(batch);
      }
    }
    add_loss(loss);
  }
}

void Layer::set_weight_regularizer(const Variable& weight, const Regularizer& r) {
  if (!weight.defined()) fail(name(), "set_weight_regularizer: the weight is undefined");
  LossState& state = loss_state();
  std::lock_guard lock(mutex_);
  if (!contains(own_weights_, weight))
    fail(name(), "set_weight_regularizer: '" + weight.name() + "' is not a weight of this layer");
  set_for(state.regularizers, weight, r);
}

void Layer::set_weight_constraint(const Variable& weight, const Constraint& c) {
  if (!weight.defined()) fail(name(), "set_weight_constraint: the weight is undefined");
  LossState& state = loss_state();
  std::lock_guard lock(mutex_);
  if (!contains(own_weights_, weight))
    fail(name(), "set_weight_constraint: '" + weight.name() + "' is not a weight of this layer");
  set_for(state.constraints, weight, c);
}

}  // namespace ef::nn
