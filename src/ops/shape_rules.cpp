#include "ops/shape_rules.h"

#include <algorithm>
#include <string>

#include "eagerflow/core/error.h"

namespace ef {

bool try_broadcast(std::span<const Shape> shapes, Shape& out) {
  int rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.rank());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank), 1);
  for (int o = 0; o < rank; ++o) {
    std::int64_t d = 1;
    bool dynamic = false;
    for (const auto& s : shapes) {
      int i = s.rank() - rank + o;
      if (i < 0) continue;
      std::int64_t di = s[i];
      if (di == kDynamic) { dynamic = true; continue; }
      if (di == 1) continue;
      if (d != 1 && d != di) return false;
      d = di;
    }
    dims[static_cast<std::size_t>(o)] = (dynamic && d == 1) ? kDynamic : d;
  }
  out = Shape(std::move(dims));
  return true;
}

Shape broadcast_shapes(const Primitive& op, std::span<const Tensor> inputs) {
  std::vector<Shape> shapes;
  for (const auto& t : inputs) shapes.push_back(t.shape());
  Shape out;
  if (!try_broadcast(shapes, out)) fail(op.name(), "shapes cannot broadcast: " + describe(inputs, " vs "));
  return out;
}

std::vector<bool> reduced_axes_mask(const std::vector<int>& axes, int rank, const char* op) {
  std::vector<bool> m(static_cast<std::size_t>(rank), axes.empty());
  for (int a : axes) {
    int n = normalize_axis(a, rank, op);
    if (m[static_cast<std::size_t>(n)] && !axes.empty()) fail(op, "axis " + std::to_string(a) + " is listed twice");
    m[static_cast<std::size_t>(n)] = true;
  }
  return m;
}

}  // namespace ef
