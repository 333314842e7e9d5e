#pragma once
// The collectives' op table (tests/op_table.h's form), run under mpirun by ef_dist_tests:
// each entry traced vs eager and its gradient against central differences of the whole job.
#include <functional>
#include <string>
#include <vector>

#include <eagerflow/dist/dist.h>
#include <eagerflow/eagerflow.h>

namespace ef::testing {

struct DistOpInfo {
  std::string name;
  std::function<Shape(int world)> shape;  // each rank's input shape
  std::function<Tensor(const Tensor&)> fn;
  double tolerance = 1e-6;
};

inline std::vector<DistOpInfo> dist_op_table() {
  using dist::ReduceOp;
  std::vector<DistOpInfo> t;
  auto fixed = [](Shape s) { return [s](int) { return s; }; };
  t.push_back({"all_reduce_sum", fixed({2, 3}), [](const Tensor& x) { return dist::all_reduce(x, ReduceOp::sum); }});
  t.push_back({"all_reduce_mean", fixed({2, 3}), [](const Tensor& x) { return dist::all_reduce(x, ReduceOp::mean); }});
  t.push_back({"all_reduce_max", fixed({2, 3}), [](const Tensor& x) { return dist::all_reduce(x, ReduceOp::max); }});
  t.push_back({"all_reduce_min", fixed({2, 3}), [](const Tensor& x) { return dist::all_reduce(x, ReduceOp::min); }});
  t.push_back({"broadcast_root0", fixed({2, 2}), [](const Tensor& x) { return dist::broadcast(x, 0); }});
  t.push_back({"broadcast_last_root", fixed({3}), [](const Tensor& x) { return dist::broadcast(x, dist::world_size() - 1); }});
  t.push_back({"all_gather_axis0", fixed({2, 2}), [](const Tensor& x) { return dist::all_gather(x, 0); }});
  t.push_back({"all_gather_axis1", fixed({2, 2}), [](const Tensor& x) { return dist::all_gather(x, 1); }});
  t.push_back({"reduce_scatter_axis0", [](int w) { return Shape{2 * w, 2}; }, [](const Tensor& x) { return dist::reduce_scatter(x, 0); }});
  t.push_back({"reduce_scatter_axis1", [](int w) { return Shape{2, w}; }, [](const Tensor& x) { return dist::reduce_scatter(x, 1); }});
  t.push_back({"all_gather_rows", fixed({2, 2}), [](const Tensor& x) { return dist::all_gather_rows(x); }});
  // Through a nonlinearity, so the cotangents differ per element.
  t.push_back({"all_reduce_then_tanh", fixed({3}), [](const Tensor& x) { return tanh(dist::all_reduce(x * x)); }});
  return t;
}

}  // namespace ef::testing
