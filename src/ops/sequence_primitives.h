#pragma once
// The op classes of issue 18's ops for sequence models: triangular masks, rounding, clipping,
// boolean reductions, pad/tile/repeat (one family: each output index along an axis reads one
// input index, or none), cumulative sums and products, sorting and top-k with the gathers and
// scatters their gradients need. einsum, random::categorical/randint/permutation are
// compositions of existing ops (src/ops/einsum.cpp, src/ops/random_sampling.cpp).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/ops/op_params.h"
#include "eagerflow/ops/primitive.h"

namespace ef {

#define EF_SEQ_RULES                                                                                 \
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;                          \
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out)    \
      const override;
#define EF_SEQ_VJP                                                                                   \
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out,                   \
                          std::span<const Tensor> cot, const std::vector<bool>& needed) const override;

// ---------------------------------------------------------------- src/ops/tri_clip_round.cpp
// tril (lower) / triu on the last two axes: entries with j - i > k (tril) or j - i < k (triu)
// become zero (false for bool).
class Tri : public MergeablePrimitive<Tri> {
 public:
  Tri(bool lower, std::int64_t k) : lower_(lower), k_(k) {}
  const char* name() const override { return lower_ ? "tril" : "triu"; }
  OpParams parameters() const override { return OpParams().add("k", k_); }
  bool lower() const { return lower_; }
  std::int64_t k() const { return k_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  bool lower_;
  std::int64_t k_;
};

enum class RoundKind { floor, ceil, round };

// floor, ceil, round (half to even, as NumPy and TF). Piecewise constant: no gradient (TF's
// rule), so the tape stops here.
class Rounding : public MergeablePrimitive<Rounding> {
 public:
  explicit Rounding(RoundKind k) : kind_(k) {}
  const char* name() const override;
  bool is_differentiable() const override { return false; }
  RoundKind kind() const { return kind_; }
  EF_SEQ_RULES
 private:
  RoundKind kind_;
};

// clip_by_value with constant bounds: min(max(x, lo), hi); NaN stays NaN. The gradient passes
// where lo <= x <= hi (TF's rule).
class Clip : public MergeablePrimitive<Clip> {
 public:
  Clip(double lo, double hi) : lo_(lo), hi_(hi) {}
  const char* name() const override { return "clip"; }
  OpParams parameters() const override { return OpParams().add("min", lo_).add("max", hi_); }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  double lo_, hi_;
};

// any / all over axes (empty: all axes); nonzero counts as true; the result is bool.
class ReduceBool : public MergeablePrimitive<ReduceBool> {
 public:
  ReduceBool(bool any, std::vector<int> axes, bool keepdims) : any_(any), axes_(std::move(axes)), keepdims_(keepdims) {}
  const char* name() const override { return any_ ? "any" : "all"; }
  OpParams parameters() const override { return OpParams().add("axes", axes_).add_flag("keepdims", keepdims_); }
  bool is_differentiable() const override { return false; }
  bool any() const { return any_; }
  bool keepdims() const { return keepdims_; }
  std::vector<bool> reduced_mask(int rank) const;
  EF_SEQ_RULES
 private:
  bool any_;
  std::vector<int> axes_;
  bool keepdims_;
};

// ---------------------------------------------------------------- src/ops/pad_tile.cpp
// pad, tile and repeat map each output index along an axis to one input index (or to none:
// pad's constant). AxisMapGrad sums cotangents back through the same maps.
class AxisMapping {
 public:
  virtual ~AxisMapping() = default;
  // Output dims from input dims (kDynamic stays kDynamic); throws naming the op.
  virtual Shape out_shape(const Shape& in) const = 0;
  // Whether axis `a` maps to itself (no map needed).
  virtual bool is_identity(const Shape& in, int a) const = 0;
  // For a non-identity axis `a` of an input of static shape `in`: the input index each output
  // index reads, -1 for "the constant" (written into `map`, whose capacity kernels reuse).
  virtual void fill_axis_map(const Shape& in, int a, std::vector<std::int64_t>& map) const = 0;
  // The same as a new vector; nullopt for the identity.
  std::optional<std::vector<std::int64_t>> axis_map(const Shape& in, int a) const {
    if (is_identity(in, a)) return std::nullopt;
    std::vector<std::int64_t> map;
    fill_axis_map(in, a, map);
    return map;
  }
  virtual double constant() const { return 0.0; }
};

class Pad : public MergeablePrimitive<Pad>, public AxisMapping {
 public:
  enum class Mode { constant, reflect, symmetric };
  Pad(std::vector<std::int64_t> paddings, Mode mode, double value)
      : paddings_(std::move(paddings)), mode_(mode), value_(value) {}
  const char* name() const override { return "pad"; }
  OpParams parameters() const override;
  const std::vector<std::int64_t>& paddings() const { return paddings_; }  // before0, after0, before1, ...
  Mode mode() const { return mode_; }
  double constant() const override { return value_; }
  Shape out_shape(const Shape& in) const override;
  void fill_axis_map(const Shape& in, int a, std::vector<std::int64_t>& map) const override;
  bool is_identity(const Shape& in, int a) const override;
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  std::vector<std::int64_t> paddings_;
  Mode mode_;
  double value_;
};

class Tile : public MergeablePrimitive<Tile>, public AxisMapping {
 public:
  explicit Tile(std::vector<std::int64_t> multiples) : multiples_(std::move(multiples)) {}
  const char* name() const override { return "tile"; }
  OpParams parameters() const override { return OpParams().add("multiples", multiples_); }
  const std::vector<std::int64_t>& multiples() const { return multiples_; }
  Shape out_shape(const Shape& in) const override;
  void fill_axis_map(const Shape& in, int a, std::vector<std::int64_t>& map) const override;
  bool is_identity(const Shape& in, int a) const override;
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  std::vector<std::int64_t> multiples_;
};

// NumPy's repeat along one axis: one count for every element, or one count per element.
class Repeat : public MergeablePrimitive<Repeat>, public AxisMapping {
 public:
  Repeat(std::vector<std::int64_t> repeats, int axis) : repeats_(std::move(repeats)), axis_(axis) {}
  const char* name() const override { return "repeat"; }
  OpParams parameters() const override { return OpParams().add("repeats", repeats_).add("axis", axis_); }
  const std::vector<std::int64_t>& repeats() const { return repeats_; }
  int axis() const { return axis_; }
  Shape out_shape(const Shape& in) const override;
  void fill_axis_map(const Shape& in, int a, std::vector<std::int64_t>& map) const override;
  bool is_identity(const Shape& in, int a) const override;
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  std::vector<std::int64_t> repeats_;
  int axis_;
};

// The gradient of pad/tile/repeat: input 0 (shaped like the forward output) summed back into
// the shape of input 1 (the forward input). Linear: its gradient is the forward op with a zero
// constant.
class AxisMapGrad : public MergeablePrimitive<AxisMapGrad> {
 public:
  explicit AxisMapGrad(std::shared_ptr<const Primitive> forward);
  const char* name() const override;
  OpParams parameters() const override { return forward_->parameters(); }
  const Primitive& forward() const { return *forward_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  std::shared_ptr<const Primitive> forward_;
  const AxisMapping* map_;
};

// ---------------------------------------------------------------- src/ops/cumulative.cpp
// cumsum / cumprod along an axis, TF's exclusive and reverse options.
class Cumulative : public MergeablePrimitive<Cumulative> {
 public:
  Cumulative(bool product, int axis, bool exclusive, bool reverse)
      : product_(product), axis_(axis), exclusive_(exclusive), reverse_(reverse) {}
  const char* name() const override { return product_ ? "cumprod" : "cumsum"; }
  OpParams parameters() const override {
    return OpParams().add("axis", axis_).add_flag("exclusive", exclusive_).add_flag("reverse", reverse_);
  }
  bool product() const { return product_; }
  int axis() const { return axis_; }
  bool exclusive() const { return exclusive_; }
  bool reverse() const { return reverse_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  bool product_;
  int axis_;
  bool exclusive_, reverse_;
};

// The gradient of cumprod (inputs x, cotangent g), exact with zeros: dx_i = E_i * S_i with E
// the exclusive running product before i and S the running sum of g weighted by the products
// after i (one backward and one forward pass; no division). Its own gradient uses TF's
// division rule (exact where x has no zeros).
class CumprodGrad : public MergeablePrimitive<CumprodGrad> {
 public:
  CumprodGrad(int axis, bool exclusive, bool reverse) : axis_(axis), exclusive_(exclusive), reverse_(reverse) {}
  const char* name() const override { return "cumprod_grad"; }
  OpParams parameters() const override {
    return OpParams().add("axis", axis_).add_flag("exclusive", exclusive_).add_flag("reverse", reverse_);
  }
  int axis() const { return axis_; }
  bool exclusive() const { return exclusive_; }
  bool reverse() const { return reverse_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  int axis_;
  bool exclusive_, reverse_;
};

// cumprod's forward derivative (inputs x, tangent c): dy_t = dy_{t-1} x_t + y_{t-1} c_t along
// the scan, exact with zeros. The gradient of cumprod_grad with respect to its cotangent (so
// forward mode and Hessian-vector products stay exact too); its own gradient in x divides by x.
class CumprodJvp : public MergeablePrimitive<CumprodJvp> {
 public:
  CumprodJvp(int axis, bool exclusive, bool reverse) : axis_(axis), exclusive_(exclusive), reverse_(reverse) {}
  const char* name() const override { return "cumprod_jvp"; }
  OpParams parameters() const override {
    return OpParams().add("axis", axis_).add_flag("exclusive", exclusive_).add_flag("reverse", reverse_);
  }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  int axis_;
  bool exclusive_, reverse_;
};

// ---------------------------------------------------------------- src/ops/sort_ops.cpp
// Sorted values along an axis (stable; NaN sorts after every number, as NumPy).
class Sort : public MergeablePrimitive<Sort> {
 public:
  Sort(int axis, bool descending) : axis_(axis), descending_(descending) {}
  const char* name() const override { return "sort"; }
  OpParams parameters() const override { return OpParams().add("axis", axis_).add_flag("descending", descending_); }
  int axis() const { return axis_; }
  bool descending() const { return descending_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  int axis_;
  bool descending_;
};

// The int64 indices that sort along an axis (stable).
class ArgSort : public MergeablePrimitive<ArgSort> {
 public:
  ArgSort(int axis, bool descending) : axis_(axis), descending_(descending) {}
  const char* name() const override { return "argsort"; }
  bool output_follows_inputs(std::size_t, DType, DType) const override { return false; }  // indices
  OpParams parameters() const override { return OpParams().add("axis", axis_).add_flag("descending", descending_); }
  bool is_differentiable() const override { return false; }
  int axis() const { return axis_; }
  bool descending() const { return descending_; }
  EF_SEQ_RULES
 private:
  int axis_;
  bool descending_;
};

// tf.math.top_k over the last axis: outputs (values, int32 indices), largest first; equal
// values keep the lower index first.
class TopK : public MergeablePrimitive<TopK> {
 public:
  explicit TopK(std::int64_t k) : k_(k) {}
  const char* name() const override { return "top_k"; }
  // The values follow the input; the int32 indices stay int32 (computed in int32 for uint8).
  bool output_follows_inputs(std::size_t i, DType dtype, DType computed) const override {
    return i == 0 && dtype == computed;
  }
  OpParams parameters() const override { return OpParams().add("k", k_); }
  bool accepts_missing_cotangents() const override { return true; }
  std::int64_t k() const { return k_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  std::int64_t k_;
};

// np.take_along_axis: out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis`;
// indices have x's shape except on that axis.
class TakeAlongAxis : public MergeablePrimitive<TakeAlongAxis> {
 public:
  explicit TakeAlongAxis(int axis) : axis_(axis) {}
  const char* name() const override { return "take_along_axis"; }
  bool is_index_input(std::size_t i) const override { return i == 1; }
  OpParams parameters() const override { return OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  int axis_;
};

// The gradient of take_along_axis: zeros shaped like input 2, input 0 added at the indices
// (input 1) along the axis.
class ScatterAlongAxis : public MergeablePrimitive<ScatterAlongAxis> {
 public:
  explicit ScatterAlongAxis(int axis) : axis_(axis) {}
  const char* name() const override { return "scatter_add_along_axis"; }
  bool is_index_input(std::size_t i) const override { return i == 1; }
  OpParams parameters() const override { return OpParams().add("axis", axis_); }
  int axis() const { return axis_; }
  EF_SEQ_RULES EF_SEQ_VJP
 private:
  int axis_;
};

#undef EF_SEQ_RULES
#undef EF_SEQ_VJP

}  // namespace ef
