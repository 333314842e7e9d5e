#pragma once
// The op ef::scan records inside a trace: one node holding the body's sub-graph.
#include <memory>
#include <optional>
#include <vector>

#include "eagerflow/ops/op_rules.h"
#include "function/control_flow_ops.h"

namespace ef {

class GraphFunction;

// Inputs: the carries, the sequences xs (stepped over their leading axis), then the body's
// captures. Outputs: the final carries, then the body's ys stacked over the steps. The body
// graph takes (carries, one row of each xs, captures) and returns (carries, ys).
class ScanOp : public PrimitiveBase<ScanOp> {
 public:
  // length: the number of steps when there are no xs, else -1.
  ScanOp(SubGraph body, std::size_t n_carry, std::size_t n_xs, std::int64_t length, bool reverse);
  const char* name() const override { return "scan"; }
  bool takes_bfloat16() const override { return true; }
  std::string attrs() const override;
  bool has_effect() const override { return effects_; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  // A reverse scan over the values the residual variant kept (src/function/scan_gradient.cpp);
  // an op recorded without them, or a gradient through those values (second order), runs
  // the forward scan once more, with residuals, first.
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
  bool accepts_missing_cotangents() const override { return true; }
  // The variant whose ys are followed by, stacked over the steps, the body's residuals and
  // the carries its backward graph reads; nullopt when the body has no gradient.
  std::optional<ScanOp> with_residuals() const;
  std::vector<SubGraphRef> subgraphs() const override;

  // ef::while_loop's gradient (src/function/while_gradient.cpp): a loop that kept, stacked over
  // its iterations, the residuals of `fn` (its body's gradient split) and the carries
  // `saved_carries` is this op's residual variant with no xs and no ys; its vjp (inputs:
  // carries, captures; outputs: carries, the stacks) is then the reverse scan over the stacks.
  static ScanOp over_kept_stacks(std::shared_ptr<const GraphFunction> fn, std::vector<std::size_t> saved_carries,
                                 std::size_t n_carry);

  const SubGraph& body() const { return body_; }
  std::size_t num_carries() const { return n_carry_; }
  std::size_t num_xs() const { return n_xs_; }
  std::size_t num_ys() const { return n_ys_; }
  std::int64_t length() const { return length_; }
  bool reverse() const { return reverse_; }
  bool has_residuals() const { return residuals_ != nullptr; }

 private:
  struct Residuals;
  std::int64_t steps(std::span<const Tensor> in) const;
  std::vector<Tensor> reverse_scan(const ScanOp& variant, std::span<const Tensor> in, std::span<const Tensor> out,
                                   std::span<const Tensor> cot, const std::vector<bool>& needed) const;
  SubGraph body_;
  std::size_t n_carry_, n_xs_, n_ys_;
  std::int64_t length_;
  bool reverse_;
  bool effects_;
  std::shared_ptr<const Residuals> residuals_;
};

namespace detail {
// ef::vmap's rule for a scan: one scan over the vmapped body (src/function/scan_batching.cpp).
std::vector<Batched> scan_batching_rule(const ScanOp& op, std::span<const Batched> in, std::int64_t batch);
}  // namespace detail

}  // namespace ef
