#pragma once
// The collective op classes (ef::dist, include/eagerflow/dist/dist.h), declared where passes
// and tests can name them. Every one is an effect: never merged, dropped or reordered.
// Their kernels first exchange a small header (op, parameter, dtype, shape) among the ranks,
// so a disagreement is an ef::Error on every rank instead of a hang.
#include <memory>

#include "eagerflow/dist/dist.h"
#include "eagerflow/ops/primitive.h"

namespace ef::dist {

class Collective : public Primitive {
 public:
  bool has_effect() const override { return true; }
};

template <class Derived>
class CollectiveBase : public Collective {
 public:
  std::shared_ptr<Primitive> clone() const override {
    (void)registered_;
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }

 private:
  static inline const bool registered_ = ef::detail::register_primitive_type(typeid(Derived).name());
};

#define EF_COLLECTIVE_RULES                                                                          \
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;                          \
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out)    \
      const override;                                                                                \
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out,                   \
                          std::span<const Tensor> cot, const std::vector<bool>& needed) const override;

class AllReduce : public CollectiveBase<AllReduce> {
 public:
  explicit AllReduce(ReduceOp op) : op_(op) {}
  const char* name() const override { return "all_reduce"; }
  OpParams parameters() const override;
  ReduceOp op() const { return op_; }
  EF_COLLECTIVE_RULES
 private:
  ReduceOp op_;
};

// root's tensor on every rank.
class Broadcast : public CollectiveBase<Broadcast> {
 public:
  explicit Broadcast(int root) : root_(root) {}
  const char* name() const override { return "broadcast_from"; }
  OpParams parameters() const override { return OpParams().add("root", root_); }
  int root() const { return root_; }
  EF_COLLECTIVE_RULES
 private:
  int root_;
};

// The sum over ranks on root, zeros elsewhere: broadcast's gradient.
class ReduceToRoot : public CollectiveBase<ReduceToRoot> {
 public:
  explicit ReduceToRoot(int root) : root_(root) {}
  const char* name() const override { return "reduce_to_root"; }
  OpParams parameters() const override { return OpParams().add("root", root_); }
  int root() const { return root_; }
  EF_COLLECTIVE_RULES
 private:
  int root_;
};

// rows: along axis 0 with a count per rank that may differ (its output dim is dynamic).
class AllGather : public CollectiveBase<AllGather> {
 public:
  AllGather(int axis, bool rows) : axis_(axis), rows_(rows) {}
  const char* name() const override { return rows_ ? "all_gather_rows" : "all_gather"; }
  OpParams parameters() const override { return rows_ ? OpParams() : OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  bool rows() const { return rows_; }
  EF_COLLECTIVE_RULES
 private:
  int axis_;
  bool rows_;
};

// rows: inputs (x, like): x holds every rank's rows; each rank keeps its like.dim(0) rows of
// the sum over ranks (all_gather_rows' gradient).
class ReduceScatter : public CollectiveBase<ReduceScatter> {
 public:
  ReduceScatter(int axis, bool rows) : axis_(axis), rows_(rows) {}
  const char* name() const override { return rows_ ? "reduce_scatter_rows" : "reduce_scatter"; }
  OpParams parameters() const override { return rows_ ? OpParams() : OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  bool rows() const { return rows_; }
  EF_COLLECTIVE_RULES
 private:
  int axis_;
  bool rows_;
};

// DDP's bucket: inputs g_0..g_{k-1} (one floating dtype) and a float64 scalar n (this rank's
// example count); outputs sum_r(n_r * g_i) / sum_r(n_r) for each i, packed into one buffer for
// one all-reduce (a rank with n = 0 adds zeros, whatever its g). The data-parallel train step
// applies it to its gradients after the backward pass; not differentiable.
class BucketAllReduce : public CollectiveBase<BucketAllReduce> {
 public:
  const char* name() const override { return "bucket_all_reduce"; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
};

class Barrier : public CollectiveBase<Barrier> {
 public:
  const char* name() const override { return "barrier"; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
};

#undef EF_COLLECTIVE_RULES

}  // namespace ef::dist
