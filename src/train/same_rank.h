#pragma once
// Keras 3's squeeze_or_expand_to_same_rank for losses and metrics: labels [batch] and
// predictions [batch, 1] (or the reverse) compare element by element, instead of failing
// (losses) or broadcasting to [batch, batch] (a silently wrong metric). As Keras, a rank-1
// side gets a last axis (so [B] vs [B, 1] is [B, 1] vs [B, 1], one value per example after a
// loss reduces its last axis); with expand_rank_1 false, or a higher rank, the other side
// loses its last axis of size 1 instead.
#include <utility>

#include "eagerflow/ops/ops.h"

namespace ef::train {

inline std::pair<Tensor, Tensor> same_rank(const Tensor& x1, const Tensor& x2, bool expand_rank_1 = true) {
  auto last_is_one = [](const Tensor& t) { return t.rank() > 0 && t.shape()[t.rank() - 1] == 1; };
  if (x1.rank() == x2.rank() + 1 && last_is_one(x1)) {
    if (x2.rank() == 1 && expand_rank_1) return {x1, expand_dims(x2, -1)};
    return {squeeze(x1, {-1}), x2};
  }
  if (x2.rank() == x1.rank() + 1 && last_is_one(x2)) {
    if (x1.rank() == 1 && expand_rank_1) return {expand_dims(x1, -1), x2};
    return {x1, squeeze(x2, {-1})};
  }
  return {x1, x2};
}

}  // namespace ef::train
