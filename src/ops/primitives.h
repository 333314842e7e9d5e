#pragma once
// The op classes, declared where passes, transforms, printers and a future loader can name
// them: typed identity (dynamic_cast) and typed parameters (accessors), never name strings.
// Their shape rules, kernels and gradient rules live in the .cpp file of their family.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/ops/op_params.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/ops/random.h"
#include "ops/elementwise_math.h"

namespace ef {

struct VariableState;

#define EF_OP_RULES                                                                                  \
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;                          \
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out)    \
      const override;
#define EF_OP_VJP                                                                                    \
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out,                   \
                          std::span<const Tensor> cot, const std::vector<bool>& needed) const override;

// ---------------------------------------------------------------- elementwise
class Unary : public MergeablePrimitive<Unary> {
 public:
  explicit Unary(UnaryKind k) : kind_(k) {}
  const char* name() const override { return unary_name(kind_); }
  bool is_differentiable() const override { return kind_ != UnaryKind::logical_not; }
  // bfloat16 in float32 a block at a time: the cast path's bits in one pass.
  bool computes_bfloat16() const override { return kind_ != UnaryKind::logical_not; }
  UnaryKind kind() const { return kind_; }
  EF_OP_RULES EF_OP_VJP
 private:
  UnaryKind kind_;
};

class Binary : public MergeablePrimitive<Binary> {
 public:
  explicit Binary(BinaryKind k) : kind_(k) {}
  const char* name() const override { return binary_name(kind_); }
  bool is_differentiable() const override { return !is_comparison(kind_) && !is_logical(kind_); }
  // The arithmetic kinds take bfloat16 as Unary does (comparisons go through float32).
  bool computes_bfloat16() const override { return !is_comparison(kind_) && !is_logical(kind_); }
  BinaryKind kind() const { return kind_; }
  EF_OP_RULES EF_OP_VJP
 private:
  BinaryKind kind_;
};

class Where : public MergeablePrimitive<Where> {
 public:
  const char* name() const override { return "where"; }
  EF_OP_RULES EF_OP_VJP
};

class Cast : public MergeablePrimitive<Cast> {
 public:
  explicit Cast(DType to) : to_(to) {}
  const char* name() const override { return "cast"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_complex() const override { return true; }  // (to its own dtype: ef::cast converts by parts)
  OpParams parameters() const override;
  DType to() const { return to_; }
  EF_OP_RULES EF_OP_VJP
 private:
  DType to_;
};

// The identity: a new handle on the same values (so that one tensor passed as two arguments
// gets two gradients in ef::grad). Eagerly a view; never merged.
class Identity : public PrimitiveBase<Identity> {
 public:
  // stop: stop_gradient, the identity that gradients do not pass.
  explicit Identity(bool stop = false) : stop_(stop) {}
  const char* name() const override { return stop_ ? "stop_gradient" : "identity"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return !stop_; }
  EF_OP_RULES EF_OP_VJP
 private:
  bool stop_;
};

// ---------------------------------------------------------------- reductions
enum class ReduceKind { sum, mean, max, min };

class Reduce : public MergeablePrimitive<Reduce> {
 public:
  Reduce(ReduceKind k, std::vector<int> axes, bool keepdims) : kind_(k), axes_(std::move(axes)), keepdims_(keepdims) {}
  const char* name() const override;
  OpParams parameters() const override;
  ReduceKind kind() const { return kind_; }
  // Which axes of a rank-`rank` input are reduced (all when axes is empty).
  std::vector<bool> reduced_mask(int rank) const;
  EF_OP_RULES EF_OP_VJP
 private:
  void reduce_f32(const float* p, float* o, std::int64_t rows, std::int64_t cols, bool trailing) const;
  ReduceKind kind_;
  std::vector<int> axes_;
  bool keepdims_;
};

class ArgMax : public MergeablePrimitive<ArgMax> {
 public:
  ArgMax(int axis, bool keepdims) : axis_(axis), keepdims_(keepdims) {}
  const char* name() const override { return "argmax"; }
  bool output_follows_inputs(std::size_t, DType, DType) const override { return false; }  // indices
  OpParams parameters() const override;
  bool is_differentiable() const override { return false; }
  int axis() const { return axis_; }
  bool keepdims() const { return keepdims_; }
  EF_OP_RULES
 private:
  int axis_;
  bool keepdims_;
};

class Softmax : public MergeablePrimitive<Softmax> {
 public:
  Softmax(int axis, bool log) : axis_(axis), log_(log) {}
  const char* name() const override { return log_ ? "log_softmax" : "softmax"; }
  OpParams parameters() const override { return OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  bool log() const { return log_; }
  EF_OP_RULES EF_OP_VJP
 private:
  void softmax_rows_f32(const float* p, float* o, std::int64_t rows, std::int64_t n) const;
  int axis_;
  bool log_;
};

// ---------------------------------------------------------------- linear algebra
// op(a) @ op(b), where op transposes the last two axes when asked (TF's transpose_a/b): the
// kernel reads the operand transposed, no copy is made.
class MatMul : public MergeablePrimitive<MatMul> {
 public:
  explicit MatMul(bool transpose_a = false, bool transpose_b = false) : ta_(transpose_a), tb_(transpose_b) {}
  const char* name() const override { return "matmul"; }
  OpParams parameters() const override;
  // bfloat16 multiplies natively where the CPU can (cpu::native_bfloat16); elsewhere, and for
  // the other storage dtypes, in float32 as every op does (src/ops/bfloat16_dispatch.cpp).
  bool takes_bfloat16() const override;
  bool transpose_a() const { return ta_; }
  bool transpose_b() const { return tb_; }
  EF_OP_RULES EF_OP_VJP
 private:
  bool ta_, tb_;
};

// ---------------------------------------------------------------- shapes
class Reshape : public MergeablePrimitive<Reshape> {
 public:
  explicit Reshape(Shape target) : target_(std::move(target)) {}
  const char* name() const override { return "reshape"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override;
  EF_OP_RULES EF_OP_VJP
 private:
  std::string target_str() const;
  Shape target_;
};

// reshape(x, like's runtime shape): how gradients undo reshapes with dynamic dims.
class ReshapeLike : public MergeablePrimitive<ReshapeLike> {
 public:
  const char* name() const override { return "reshape_like"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  EF_OP_RULES EF_OP_VJP
};

class ExpandDims : public MergeablePrimitive<ExpandDims> {
 public:
  explicit ExpandDims(int axis) : axis_(axis) {}
  const char* name() const override { return "expand_dims"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override { return OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  EF_OP_RULES EF_OP_VJP
 private:
  int axis_;
};

class Squeeze : public MergeablePrimitive<Squeeze> {
 public:
  explicit Squeeze(std::vector<int> axes) : axes_(std::move(axes)) {}
  const char* name() const override { return "squeeze"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override;
  const std::vector<int>& axes() const { return axes_; }
  EF_OP_RULES EF_OP_VJP
 private:
  std::vector<bool> dropped(const Shape& s) const;
  std::vector<int> axes_;
};

class Transpose : public MergeablePrimitive<Transpose> {
 public:
  explicit Transpose(std::vector<int> perm) : perm_(std::move(perm)) {}
  const char* name() const override { return "transpose"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override;
  std::vector<int> resolved(int rank) const;
  const std::vector<int>& perm() const { return perm_; }
  EF_OP_RULES EF_OP_VJP
 private:
  std::vector<int> perm_;
};

class Concat : public MergeablePrimitive<Concat> {
 public:
  explicit Concat(int axis) : axis_(axis) {}
  const char* name() const override { return "concat"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override { return OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  EF_OP_RULES EF_OP_VJP
 private:
  int axis_;
};

class Slice : public MergeablePrimitive<Slice> {
 public:
  Slice(std::vector<std::int64_t> b, std::vector<std::int64_t> e, std::vector<std::int64_t> s)
      : begin_(std::move(b)), end_(std::move(e)), strides_(std::move(s)) {}
  const char* name() const override { return "slice"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override;
  struct Axis { std::int64_t start, step, count; };
  Axis resolve(int axis, std::int64_t n) const;  // Python slice semantics on one axis
  void check(const Tensor& x) const;
  const std::vector<std::int64_t>& begin() const { return begin_; }
  const std::vector<std::int64_t>& end() const { return end_; }
  const std::vector<std::int64_t>& strides() const { return strides_; }
  EF_OP_RULES EF_OP_VJP
 private:
  std::vector<std::int64_t> begin_, end_, strides_;
};

// The gradient of slice: zeros shaped like input 1 with input 0 written where the slice read.
class SliceGrad : public MergeablePrimitive<SliceGrad> {
 public:
  explicit SliceGrad(Slice slice) : slice_(std::move(slice)) {}
  const char* name() const override { return "slice_grad"; }
  bool takes_complex() const override { return true; }  // the input whose shape it takes (complex gradients go by parts)
  OpParams parameters() const override { return slice_.parameters(); }
  EF_OP_RULES EF_OP_VJP
 private:
  Slice slice_;
};

class Gather : public MergeablePrimitive<Gather> {
 public:
  explicit Gather(int axis) : axis_(axis) {}
  const char* name() const override { return "gather"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override { return OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  EF_OP_RULES EF_OP_VJP
 private:
  int axis_;
};

// The gradient of gather: zeros shaped like input 2, input 0's slices added at the indices
// (input 1) along the axis; repeated indices accumulate.
class GatherGrad : public MergeablePrimitive<GatherGrad> {
 public:
  explicit GatherGrad(int axis) : axis_(axis) {}
  const char* name() const override { return "gather_grad"; }
  bool takes_complex() const override { return true; }  // as SliceGrad
  bool is_index_input(std::size_t i) const override { return i == 1; }
  OpParams parameters() const override { return OpParams().add("axis", axis_); }
  EF_OP_RULES EF_OP_VJP
 private:
  int axis_;
};

class OneHot : public MergeablePrimitive<OneHot> {
 public:
  OneHot(std::int64_t depth, DType dtype) : depth_(depth), dtype_(dtype) {}
  const char* name() const override { return "one_hot"; }
  bool is_index_input(std::size_t) const override { return true; }
  OpParams parameters() const override;
  bool is_differentiable() const override { return false; }
  std::int64_t depth() const { return depth_; }
  EF_OP_RULES
 private:
  std::int64_t depth_;
  DType dtype_;
};

// ---------------------------------------------------------------- runtime shapes
// The runtime shape of a tensor as int64[rank] (a number of elements: int64[] with `size`).
class ShapeOf : public MergeablePrimitive<ShapeOf> {
 public:
  explicit ShapeOf(bool size) : size_(size) {}
  const char* name() const override { return size_ ? "size" : "shape"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  EF_OP_RULES
 private:
  bool size_;
};

// A tensor of like's runtime shape filled with `value` (dtype: like's, or `dtype`).
class FillLike : public MergeablePrimitive<FillLike> {
 public:
  FillLike(double value, std::optional<DType> dtype) : value_(value), dtype_(dtype) {}
  const char* name() const override;
  bool takes_bfloat16() const override { return true; }
  bool takes_complex() const override { return true; }
  OpParams parameters() const override;
  std::vector<Tensor> vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor>,
                          const std::vector<bool>&) const override { return {Tensor()}; }
  double value() const { return value_; }
  EF_OP_RULES
 private:
  double value_;
  std::optional<DType> dtype_;
};

// broadcast_to a static shape (kDynamic dims keep the input's dim), or to input 1's runtime
// shape when `like`.
class BroadcastTo : public MergeablePrimitive<BroadcastTo> {
 public:
  explicit BroadcastTo(std::optional<Shape> shape) : shape_(std::move(shape)) {}
  const char* name() const override { return shape_ ? "broadcast_to" : "broadcast_like"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  OpParams parameters() const override;
  EF_OP_RULES EF_OP_VJP
 private:
  std::optional<Shape> shape_;
};

// Sums input 0 down to input 1's shape (the inverse of broadcasting): how gradients of
// broadcasting ops reach their inputs.
class SumTo : public MergeablePrimitive<SumTo> {
 public:
  const char* name() const override { return "sum_to"; }
  bool takes_complex() const override { return true; }  // as SliceGrad
  // bfloat16 reaches it (its sum then goes through float32 as every reduction does), so that
  // a bias gradient stays one node beside the convolution's filter gradient (fuse_conv).
  bool computes_bfloat16() const override { return true; }
  EF_OP_RULES EF_OP_VJP
};

// ---------------------------------------------------------------- state
class ReadVariable : public PrimitiveBase<ReadVariable> {
 public:
  explicit ReadVariable(std::shared_ptr<VariableState> var) : var_(std::move(var)) {}
  const char* name() const override { return "read_variable"; }
  bool takes_bfloat16() const override { return true; }
  OpParams parameters() const override;
  bool is_stateful() const override { return true; }
  const std::shared_ptr<VariableState>& variable() const { return var_; }
  EF_OP_RULES
 private:
  std::shared_ptr<VariableState> var_;
};

enum class AssignMode { set, add, sub };

class AssignVariable : public PrimitiveBase<AssignVariable> {
 public:
  AssignVariable(std::shared_ptr<VariableState> var, AssignMode mode) : var_(std::move(var)), mode_(mode) {}
  const char* name() const override;
  bool takes_bfloat16() const override { return true; }
  OpParams parameters() const override;
  bool has_effect() const override { return true; }
  bool is_differentiable() const override { return false; }
  const std::shared_ptr<VariableState>& variable() const { return var_; }
  EF_OP_RULES
 private:
  std::shared_ptr<VariableState> var_;
  AssignMode mode_;
};

// truncated_normal: normal draws redrawn until within two standard deviations (TF's).
enum class RandomKind { uniform, normal, truncated_normal };

// A random draw: each execution draws fresh numbers from the generator state (the global
// seed and counter, or the op's seed and that seed's counter), so a dropout mask changes on
// every call, eager or traced; ef::random::set_seed makes runs repeat.
class RandomOp : public PrimitiveBase<RandomOp> {
 public:
  // stateless: the same numbers on every execution (needs a seed): TF's stateless_uniform.
  RandomOp(RandomKind kind, Shape shape, double a, double b, DType dtype, std::optional<std::uint64_t> seed,
           bool like, bool stateless = false, std::shared_ptr<random::SeedGenerator::State> generator = nullptr);
  const char* name() const override {
    return kind_ == RandomKind::uniform ? "random_uniform" : kind_ == RandomKind::normal ? "random_normal" : "random_truncated_normal";
  }
  bool takes_bfloat16() const override { return true; }
  OpParams parameters() const override;
  bool is_stateful() const override { return !stateless_; }
  bool is_differentiable() const override { return false; }
  EF_OP_RULES
 private:
  RandomKind kind_;
  Shape shape_;
  double a_, b_;
  DType dtype_;
  std::optional<std::uint64_t> seed_;
  bool like_;
  // Draws so far of this op's sequence (seeded ops): the counter of all ops with this seed, or
  // of the SeedGenerator it draws from; shared by eager calls and traced replays, so an eager
  // and a traced run draw the same sequence.
  std::shared_ptr<random::SeedGenerator::State> seeded_draws_;
  bool stateless_ = false;
};

// ---------------------------------------------------------------- convolution and pooling
// NHWC activations, HWIO kernels (Keras' layouts); padding as TF: "valid" or "same".
struct Conv2DParams {
  std::int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  bool same = false;
  bool operator==(const Conv2DParams&) const = default;
  OpParams parameters() const;
};

class Conv2D : public MergeablePrimitive<Conv2D> {
 public:
  explicit Conv2D(Conv2DParams p) : p_(p) {}
  const char* name() const override { return "conv2d"; }
  OpParams parameters() const override { return p_.parameters(); }
  const Conv2DParams& params() const { return p_; }
  bool takes_bfloat16() const override;  // natively where the CPU can (src/ops/conv.cpp)
  EF_OP_RULES EF_OP_VJP
 private:
  Conv2DParams p_;
};

// d input from (dy, kernel), shaped like input 2.
class Conv2DBackpropInput : public MergeablePrimitive<Conv2DBackpropInput> {
 public:
  explicit Conv2DBackpropInput(Conv2DParams p) : p_(p) {}
  const char* name() const override { return "conv2d_backprop_input"; }
  OpParams parameters() const override { return p_.parameters(); }
  bool takes_bfloat16() const override;  // natively where the CPU can (src/ops/conv.cpp)
  EF_OP_RULES EF_OP_VJP
 private:
  Conv2DParams p_;
};

// d kernel from (x, dy), shaped like input 2.
class Conv2DBackpropFilter : public MergeablePrimitive<Conv2DBackpropFilter> {
 public:
  explicit Conv2DBackpropFilter(Conv2DParams p) : p_(p) {}
  const char* name() const override { return "conv2d_backprop_filter"; }
  OpParams parameters() const override { return p_.parameters(); }
  const Conv2DParams& params() const { return p_; }
  bool takes_bfloat16() const override;  // natively where the CPU can (src/ops/conv.cpp)
  EF_OP_RULES EF_OP_VJP
 private:
  Conv2DParams p_;
};

struct Pool2DParams {
  std::int64_t kh = 2, kw = 2, sh = 2, sw = 2;
  bool same = false;
  bool max = true;
  bool operator==(const Pool2DParams&) const = default;
  OpParams parameters() const;
};

class Pool2D : public MergeablePrimitive<Pool2D> {
 public:
  explicit Pool2D(Pool2DParams p) : p_(p) {}
  const char* name() const override { return p_.max ? "max_pool2d" : "avg_pool2d"; }
  OpParams parameters() const override { return p_.parameters(); }
  bool computes_bfloat16() const override;
  const Pool2DParams& params() const { return p_; }
  EF_OP_RULES EF_OP_VJP
 private:
  Pool2DParams p_;
};

// dx from (x, dy).
class Pool2DGrad : public MergeablePrimitive<Pool2DGrad> {
 public:
  explicit Pool2DGrad(Pool2DParams p) : p_(p) {}
  const char* name() const override { return p_.max ? "max_pool2d_grad" : "avg_pool2d_grad"; }
  OpParams parameters() const override { return p_.parameters(); }
  bool computes_bfloat16() const override;
  const Pool2DParams& params() const { return p_; }
  EF_OP_RULES EF_OP_VJP
 private:
  Pool2DParams p_;
};

// ---------------------------------------------------------------- checks (include/eagerflow/ops/checks.h)
// Identity that fails when a float holds NaN or Inf; its gradient passes through unchecked.
class CheckNumerics : public MergeablePrimitive<CheckNumerics> {
 public:
  explicit CheckNumerics(std::string message) : message_(std::move(message)) {}
  const char* name() const override { return "check_numerics"; }
  OpParams parameters() const override;
  const std::string& message() const { return message_; }
  EF_OP_RULES EF_OP_VJP
 private:
  std::string message_;
};

// TF's tf.debugging.Assert: an effect with no outputs that fails (INVALID_ARGUMENT) when any
// element of its bool condition is false, with the message and the first `summarize` values of
// each data input. Kept in traces and run on every replay, as prints are.
class Assert : public PrimitiveBase<Assert> {
 public:
  Assert(std::string message, std::int64_t summarize) : message_(std::move(message)), summarize_(summarize) {}
  const char* name() const override { return "assert"; }
  OpParams parameters() const override;
  bool has_effect() const override { return true; }
  bool is_differentiable() const override { return false; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  EF_OP_RULES
 private:
  std::string message_;
  std::int64_t summarize_;
};

// Labels (any integer or floating dtype) as int64 class indices, checked against [0, classes).
class ClassIndices : public MergeablePrimitive<ClassIndices> {
 public:
  ClassIndices(std::int64_t classes, std::string who) : classes_(classes), who_(std::move(who)) {}
  const char* name() const override { return "class_indices"; }
  bool is_index_input(std::size_t) const override { return true; }
  OpParams parameters() const override;
  bool is_differentiable() const override { return false; }
  std::int64_t classes() const { return classes_; }
  const std::string& who() const { return who_; }
  EF_OP_RULES
 private:
  std::int64_t classes_;
  std::string who_;
};

#undef EF_OP_RULES
#undef EF_OP_VJP

// Ops created by the fusion passes (src/ops/fused.h) and by control flow
// (src/function/control_flow_ops.h) are declared beside their makers.

}  // namespace ef
