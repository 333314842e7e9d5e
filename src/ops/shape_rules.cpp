#include "ops/shape_rules.h"

#include <algorithm>

namespace ef {

Shape broadcast_shapes(const Primitive& op, std::span<const Tensor> inputs) {
  int rank = 0;
  for (const auto& t : inputs) rank = std::max(rank, t.rank());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank), 1);
  for (int o = 0; o < rank; ++o) {
    std::int64_t d = 1;
    bool dynamic = false;
    for (const auto& t : inputs) {
      int i = t.rank() - rank + o;
      if (i < 0) continue;
      std::int64_t di = t.shape()[i];
      if (di == kDynamic) { dynamic = true; continue; }
      if (di == 1) continue;
      if (d != 1 && d != di)
        fail(op.name(), "shapes cannot broadcast: " + describe(inputs, " vs "));
      d = di;
    }
    dims[static_cast<std::size_t>(o)] = (dynamic && d == 1) ? kDynamic : d;
  }
  return Shape(std::move(dims));
}

}  // namespace ef
