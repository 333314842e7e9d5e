// ef::scan under ef::vmap: one scan whose body is the body vmapped (JAX's scan batching rule),
// instead of one scan per example. Batched xs [B, T, ...] are stepped as [T, B, ...]; every
// carry is batched (an unbatched initial carry is repeated: the body may mix it with batched
// values), and the ys come back as [B, T, ...].
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/autodiff/vmap.h"
#include "eagerflow/function/scan.h"
#include "eagerflow/ops/ops.h"
#include "exec/interpret.h"
#include "function/scan_op.h"

namespace ef::detail {
namespace {

std::vector<int> swap01(int rank) {
  std::vector<int> perm{1, 0};
  for (int d = 2; d < rank; ++d) perm.push_back(d);
  return perm;
}

}  // namespace

std::vector<Batched> scan_batching_rule(const ScanOp& op, std::span<const Batched> in, std::int64_t batch) {
  const std::size_t nc = op.num_carries(), nx = op.num_xs();
  std::vector<Tensor> init, xs, caps;
  std::vector<std::optional<int>> axes;  // the body's inputs: carries, x rows, captures
  for (std::size_t c = 0; c < nc; ++c) {
    const Batched& b = in[c];
    if (b.batched) {
      init.push_back(b.t);
    } else {
      if (batch == kDynamic)
        fail("vmap", "ef::scan with an unbatched initial carry " + b.t.spec().str() +
                         " needs a static batch size (the carry is repeated per example)");
      std::vector<std::int64_t> dims{batch};
      dims.insert(dims.end(), b.t.shape().begin(), b.t.shape().end());
      init.push_back(broadcast_to(expand_dims(b.t, 0), Shape(dims)));
    }
    axes.push_back(0);
  }
  for (std::size_t j = 0; j < nx; ++j) {
    const Batched& b = in[nc + j];
    xs.push_back(b.batched ? transpose(b.t, swap01(b.t.rank())) : b.t);
    axes.push_back(b.batched ? std::optional<int>(0) : std::nullopt);
  }
  for (std::size_t k = nc + nx; k < in.size(); ++k) {
    caps.push_back(in[k].t);
    axes.push_back(in[k].batched ? std::optional<int>(0) : std::nullopt);
  }
  const ir::Graph& graph = *op.body().traced;
  ScanBody body = [&](const std::vector<Tensor>& carry, const std::vector<Tensor>& x) {
    std::vector<Tensor> args = carry;
    args.insert(args.end(), x.begin(), x.end());
    args.insert(args.end(), caps.begin(), caps.end());
    std::vector<Tensor> outs = vmap_call([&](const std::vector<Tensor>& a) { return exec::replay(graph, a); }, args,
                                         InAxes(axes), OutAxes(0));
    return std::pair{std::vector<Tensor>(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(nc)),
                     std::vector<Tensor>(outs.begin() + static_cast<std::ptrdiff_t>(nc), outs.end())};
  };
  ScanOptions options{.reverse = op.reverse(), .length = op.length() >= 0 ? std::optional(op.length()) : std::nullopt};
  auto [carry, ys] = scan(body, init, xs, options);
  std::vector<Batched> out;
  for (auto& c : carry) out.push_back({c, true});
  for (auto& y : ys) out.push_back({transpose(y, swap01(y.rank())), true});
  return out;
}

}  // namespace ef::detail
