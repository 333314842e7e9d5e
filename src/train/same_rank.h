#pragma once
// Keras' squeeze_or_expand_to_same_rank for losses and metrics: labels [batch] and predictions
// [batch, 1] (or the reverse) compare element by element, instead of failing (losses) or
// broadcasting to [batch, batch] (a silently wrong metric).
#include <utility>

#include "eagerflow/ops/ops.h"

namespace ef::train {

inline std::pair<Tensor, Tensor> same_rank(const Tensor& y_true, const Tensor& y_pred) {
  auto last_is_one = [](const Tensor& t) { return t.rank() > 0 && t.shape()[t.rank() - 1] == 1; };
  if (y_true.rank() == y_pred.rank() + 1 && last_is_one(y_true)) return {squeeze(y_true, {-1}), y_pred};
  if (y_pred.rank() == y_true.rank() + 1 && last_is_one(y_pred)) return {y_true, squeeze(y_pred, {-1})};
  return {y_true, y_pred};
}

}  // namespace ef::train
