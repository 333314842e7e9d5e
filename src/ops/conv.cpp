// Convolution and pooling ops (NHWC, HWIO), their gradients as ops of their own, on oneDNN.
#include <limits>
#include <vector>

#include "eagerflow/ops/ops.h"
#include "kernels/cpu/bfloat16_blocks.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "ops/activation_grad_op.h"
#include "ops/bfloat16_dispatch.h"
#include "ops/fused_conv.h"
#include "ops/primitives.h"
#include "ops/op_factories.h"
#include "ops/rules/builtin_rules.h"
#include "eagerflow/ops/op_rules.h"

namespace ef {
namespace {

// oneDNN computes window geometry in 32-bit ints: larger windows, strides or inputs would
// overflow inside it (and a window of 2^31 made its max pooling loop without end).
constexpr std::int64_t kMaxGeometry = std::numeric_limits<std::int32_t>::max();

// TF's output size and padding for one spatial axis; kDynamic in, kDynamic out. The window
// and stride given to the kernel may be smaller than asked where that cannot change the
// result: a stride past the end of the input takes one window whatever it is, and (pooling
// only, `clamp_window`) a "same" window more than twice the input covers all of it from every
// output position, as a window of 2 * input + 2 does.
struct Axis {
  std::int64_t out, pad_before, pad_after, window, stride;
};
Axis axis_geometry(const char* op, const Shape& x, int axis, std::int64_t k, std::int64_t s, std::int64_t d, bool same,
                   bool clamp_window) {
  const char* which = axis == 1 ? "height" : "width";
  std::int64_t in = x[axis];
  bool clamp = clamp_window && same && d == 1;
  if (clamp && in == kDynamic && k >= 1 && s >= 1) return {kDynamic, 0, 0, k, s};  // clamped when the size is known
  if (clamp && in < kMaxGeometry && k > 2 * in + 2) k = 2 * in + 2;
  std::int64_t effective = 0;
  if (k < 1 || s < 1 || d < 1 || __builtin_mul_overflow(k - 1, d, &effective) || effective >= kMaxGeometry)
    fail(op, std::string("the window's ") + which + " " + std::to_string(k) +
                 (d != 1 ? " with dilation " + std::to_string(d) : std::string()) +
                 " is out of range: windows span 1 to 2^31-1 elements (input " + x.str() + ")");
  effective += 1;
  if (in == kDynamic) return {kDynamic, 0, 0, k, s};
  std::int64_t stride = std::min(s, std::max<std::int64_t>(in, 1));
  if (same) {
    std::int64_t out = in / stride + (in % stride != 0);
    std::int64_t total = std::max<std::int64_t>(((out - 1) * stride - in) + effective, 0);
    return {out, total / 2, total - total / 2, k, stride};
  }
  if (in < effective)
    fail(op, "the input (" + std::to_string(in) + ") is smaller than the window (" + std::to_string(effective) +
                 ") with padding \"valid\" (input " + x.str() + ")");
  return {(in - effective) / stride + 1, 0, 0, k, stride};
}

// Before a kernel runs (shape rules accept any size: an empty tensor never reaches oneDNN).
void expect_kernel_sizes(const Primitive& op, const Shape& x) {
  for (int axis : {1, 2})
    if (x[axis] > kMaxGeometry)
      fail(op.name(), std::string("the input's ") + (axis == 1 ? "height " : "width ") + std::to_string(x[axis]) +
                          " exceeds 2^31-1, the most the kernels support (input " + x.str() + ")");
}

// The dtype the convolution kernels run in for `d`: bfloat16 natively where the CPU can
// (Primitive::takes_bfloat16 is then true), float32 for everything else: the other storage
// dtypes (float16 ...) reach these ops only then, and eval computes them through float32.
DType kernel_dtype(DType d) {
  if (d == DType::bfloat16 && cpu::native_bfloat16()) return DType::bfloat16;
  return is_storage_dtype(d) ? DType::float32 : d;
}

// eval for a storage dtype that is not computed natively: the float32 op, cast around.
bool computed_via_float32(const Primitive& op, std::span<const Tensor> in, std::span<Tensor> out) {
  if (!is_storage_dtype(in[0].dtype()) || kernel_dtype(in[0].dtype()) == in[0].dtype()) return false;
  std::vector<Tensor> r = detail::dispatch_via_float32(op, in);
  for (std::size_t i = 0; i < r.size(); ++i) out[i] = r[i];
  return true;
}

// As the dispatch point says it for every other op: a 16-bit float does not mix with float32.
void expect_same_dtype(const Primitive& op, const Tensor& a, const Tensor& b, std::span<const Tensor> in) {
  if (a.dtype() == b.dtype()) return;
  bool storage = is_storage_dtype(a.dtype()) || is_storage_dtype(b.dtype());
  fail(kWrongType, op.name(),
       "dtypes differ: " + describe(in) +
           (storage ? " (" + std::string(name_of(is_storage_dtype(a.dtype()) ? a.dtype() : b.dtype())) +
                          " and float32 do not mix; use ef::cast, or a mixed precision policy that casts a layer's "
                          "inputs and variables)"
                    : std::string()));
}

cpu::ConvGeometry with_dtype(cpu::ConvGeometry g, DType d) {
  g.bf16 = d == DType::bfloat16;
  return g;
}

void expect_nhwc(const Primitive& op, const Tensor& x) {
  DType k = kernel_dtype(x.dtype());
  if ((k != DType::float32 && k != DType::bfloat16) || x.rank() != 4)
    fail(kWrongType, op.name(),
         "expects a float32 NHWC tensor [batch, height, width, channels], got " + x.spec().str());
}

cpu::ConvGeometry conv_geometry(const Primitive& op, const Conv2DParams& p, const Shape& x, const Shape& w) {
  Axis h = axis_geometry(op.name(), x, 1, w[0], p.sh, p.dh, p.same, false),
       v = axis_geometry(op.name(), x, 2, w[1], p.sw, p.dw, p.same, false);
  return {x[0], x[1], x[2], x[3], w[0], w[1], w[3], h.out, v.out, h.stride, v.stride, p.dh, p.dw, h.pad_before, v.pad_before,
          h.pad_after, v.pad_after};
}

Shape conv_output(const Primitive& op, const Conv2DParams& p, const Tensor& x, const Tensor& w) {
  expect_nhwc(op, x);
  if (w.dtype() != x.dtype() && w.rank() == 4) expect_same_dtype(op, x, w, std::span<const Tensor>(&x, 1));
  if (w.dtype() != x.dtype() || w.rank() != 4)
    fail(kWrongType, op.name(),
         "expects a float32 HWIO kernel [height, width, in_channels, filters] of the input's dtype, got " + w.spec().str() +
             " for the input " + x.spec().str());
  if (x.shape()[3] != w.shape()[2] && x.shape()[3] != kDynamic)
    fail(op.name(), "input channels differ: input " + x.spec().str() + " has " + std::to_string(x.shape()[3]) +
                        ", kernel " + w.spec().str() + " expects " + std::to_string(w.shape()[2]));
  for (int a = 0; a < 4; ++a)
    if (w.shape()[a] == kDynamic || w.shape()[a] <= 0) fail(op.name(), "the kernel needs a known, nonzero shape: " + w.spec().str());
  cpu::ConvGeometry g = conv_geometry(op, p, x.shape(), w.shape());
  return Shape{x.shape()[0], g.oh, g.ow, g.f};
}

cpu::PoolGeometry pool_geometry(const Primitive& op, const Pool2DParams& p, const Shape& x) {
  Axis h = axis_geometry(op.name(), x, 1, p.kh, p.sh, 1, p.same, true), v = axis_geometry(op.name(), x, 2, p.kw, p.sw, 1, p.same, true);
  return {x[0], x[1], x[2], x[3], h.window, v.window, h.out, v.out, h.stride, v.stride, h.pad_before, v.pad_before,
          h.pad_after, v.pad_after, p.max ? cpu::PoolKind::max : cpu::PoolKind::average};
}

bool empty(const Shape& s) { return s.num_elements() == 0; }

// dx from (x, dy) for max_pool2d_grad, avg_pool2d_grad and (relu_mask) max_pool2d_relu_grad.
// Max pooling's gradient on bfloat16 (computes_bfloat16), an image at a time: its x and dy
// widened into float32 buffers, the float32 kernel (the same windows, maxima and sums per
// image), dx rounded back. The bits of the float32 op between casts, in one pass.
void max_pool_gradient_bfloat16(const cpu::PoolGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dx, bool relu_mask) {
  if (cpu::max_pool2d_backward_bf16(g, static_cast<const std::uint16_t*>(x.raw_data()),
                                    static_cast<const std::uint16_t*>(dy.raw_data()),
                                    static_cast<std::uint16_t*>(dx.raw_mutable_data()), relu_mask))
    return;  // windows apart: routed on the bits
  const std::int64_t image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.c;
  cpu::PoolGeometry one = g;
  one.n = 1;
  const auto& vk = cpu::vec::kernels();
  const auto* px = static_cast<const std::uint16_t*>(x.raw_data());
  const auto* pdy = static_cast<const std::uint16_t*>(dy.raw_data());
  auto* pdx = static_cast<std::uint16_t*>(dx.raw_mutable_data());
  cpu::parallel_for(g.n, image * 4, [&](std::int64_t n0, std::int64_t n1) {
    thread_local std::vector<float> xf, dyf, dxf;  // kept: a replay allocates nothing
    xf.resize(static_cast<std::size_t>(image));
    dyf.resize(static_cast<std::size_t>(out_image));
    dxf.resize(static_cast<std::size_t>(image));
    for (std::int64_t n = n0; n < n1; ++n) {
      vk.cast(cpu::kBfloat16Code, cpu::kFloat32Code, px + n * image, xf.data(), image);
      vk.cast(cpu::kBfloat16Code, cpu::kFloat32Code, pdy + n * out_image, dyf.data(), out_image);
      cpu::max_pool2d_backward(one, xf.data(), dyf.data(), dxf.data(), relu_mask);
      vk.cast(cpu::kFloat32Code, cpu::kBfloat16Code, dxf.data(), pdx + n * image, image);
    }
  });
}

void pool_gradient(const Primitive& op, const Pool2DParams& p, std::span<const Tensor> in, std::span<const TensorSpec> specs,
                   std::span<Tensor> out, bool relu_mask) {
  cpu::PoolGeometry g = pool_geometry(op, p, in[0].shape());
  if (in[1].shape() != Shape{g.n, g.oh, g.ow, g.c})
    fail(op.name(), "gradient " + in[1].spec().str() + " does not fit the pooling of " + in[0].spec().str());
  if (empty(specs[0].shape) || empty(in[1].shape())) {
    out[0] = zeros(specs[0].shape, specs[0].dtype);
    return;
  }
  expect_kernel_sizes(op, in[0].shape());
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (in[0].dtype() == DType::bfloat16) {
    max_pool_gradient_bfloat16(g, in[0], in[1], out[0], relu_mask);
    return;
  }
  const float *x = in[0].data<float>().data(), *dy = in[1].data<float>().data();
  float* dx = out[0].mutable_data<float>().data();
  if (relu_mask) cpu::max_pool2d_backward(g, x, dy, dx, true);
  else cpu::pool2d_backward(g, x, dy, dx);
}

}  // namespace

OpParams Conv2DParams::parameters() const {
  OpParams p;
  p.add("strides", std::vector<std::int64_t>{sh, sw}).add("padding", Word{same ? "same" : "valid"});
  if (dh != 1 || dw != 1) p.add("dilation", std::vector<std::int64_t>{dh, dw});
  return p;
}

OpParams Pool2DParams::parameters() const {
  return OpParams()
      .add("pool", std::vector<std::int64_t>{kh, kw})
      .add("strides", std::vector<std::int64_t>{sh, sw})
      .add("padding", Word{same ? "same" : "valid"});
}

// ---------------------------------------------------------------- conv2d
bool Conv2D::takes_bfloat16() const { return cpu::native_bfloat16(); }

std::vector<TensorSpec> Conv2D::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  return {{in[0].dtype(), conv_output(*this, p_, in[0], in[1]), {}}};
}

void Conv2D::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (computed_via_float32(*this, in, out)) return;
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (empty(specs[0].shape)) return;
  if (empty(in[0].shape())) {  // no input channels or pixels: every output is 0
    out[0] = zeros(specs[0].shape, specs[0].dtype);
    return;
  }
  expect_kernel_sizes(*this, in[0].shape());
  cpu::conv2d_forward(with_dtype(conv_geometry(*this, p_, in[0].shape(), in[1].shape()), in[0].dtype()), in[0].raw_data(),
                      in[1].raw_data(), nullptr, out[0].raw_mutable_data());
}

std::vector<Tensor> Conv2D::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  return {needed[0] ? dispatch1(Conv2DBackpropInput(p_), {cot[0], in[1], in[0]}) : Tensor(),
          needed[1] ? dispatch1(Conv2DBackpropFilter(p_), {in[0], cot[0], in[1]}) : Tensor()};
}

bool Conv2DBackpropInput::takes_bfloat16() const { return cpu::native_bfloat16(); }

std::vector<TensorSpec> Conv2DBackpropInput::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  conv_output(*this, p_, in[2], in[1]);
  expect_same_dtype(*this, in[0], in[1], in);
  return {{in[0].dtype(), in[2].shape(), {}}};
}

void Conv2DBackpropInput::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (computed_via_float32(*this, in, out)) return;
  cpu::ConvGeometry g = with_dtype(conv_geometry(*this, p_, specs[0].shape, in[1].shape()), in[0].dtype());
  if (in[0].shape() != Shape{g.n, g.oh, g.ow, g.f})
    fail(name(), "gradient " + in[0].spec().str() + " does not fit the convolution of " + specs[0].str());
  if (empty(specs[0].shape) || empty(in[0].shape())) {
    out[0] = zeros(specs[0].shape, specs[0].dtype);
    return;
  }
  expect_kernel_sizes(*this, specs[0].shape);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  cpu::conv2d_backward_data(g, in[0].raw_data(), in[1].raw_data(), out[0].raw_mutable_data());
}

// dx = B(dy, w) is linear in dy and in w: its cotangent g flows back as conv(g, w) to dy and
// as the filter gradient of (g, dy) to w.
std::vector<Tensor> Conv2DBackpropInput::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                             const std::vector<bool>& needed) const {
  return {needed[0] ? dispatch1(Conv2D(p_), {cot[0], in[1]}) : Tensor(),
          needed[1] ? dispatch1(Conv2DBackpropFilter(p_), {cot[0], in[0], in[1]}) : Tensor(), Tensor()};
}

bool Conv2DBackpropFilter::takes_bfloat16() const { return cpu::native_bfloat16(); }

std::vector<TensorSpec> Conv2DBackpropFilter::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  conv_output(*this, p_, in[0], in[2]);
  expect_same_dtype(*this, in[0], in[1], in);
  return {{in[0].dtype(), in[2].shape(), {}}};
}

void Conv2DBackpropFilter::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (computed_via_float32(*this, in, out)) return;
  cpu::ConvGeometry g = with_dtype(conv_geometry(*this, p_, in[0].shape(), specs[0].shape), in[0].dtype());
  if (in[1].shape() != Shape{g.n, g.oh, g.ow, g.f})
    fail(name(), "gradient " + in[1].spec().str() + " does not fit the convolution of " + in[0].spec().str());
  if (empty(in[0].shape()) || empty(in[1].shape())) {
    out[0] = zeros(specs[0].shape, specs[0].dtype);
    return;
  }
  expect_kernel_sizes(*this, in[0].shape());
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  cpu::conv2d_backward_weights(g, in[0].raw_data(), in[1].raw_data(), out[0].raw_mutable_data(), nullptr);
}

std::vector<Tensor> Conv2DBackpropFilter::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                              const std::vector<bool>& needed) const {
  return {needed[0] ? dispatch1(Conv2DBackpropInput(p_), {in[1], cot[0], in[0]}) : Tensor(),
          needed[1] ? dispatch1(Conv2D(p_), {in[0], cot[0]}) : Tensor(), Tensor()};
}

// ---------------------------------------------------------------- fused (made by passes)
bool conv_fusible_activation(UnaryKind k) {
  return k == UnaryKind::relu || k == UnaryKind::sigmoid || k == UnaryKind::tanh;
}

FusedConv2D::FusedConv2D(Conv2DParams p, bool has_bias, std::optional<UnaryKind> activation)
    : p_(p), has_bias_(has_bias), activation_(activation) {
  if (activation && !conv_fusible_activation(*activation))
    fail("fused_conv2d", std::string("cannot fuse the activation ") + unary_name(*activation));
}

OpParams FusedConv2D::parameters() const {
  OpParams o = p_.parameters();
  o.add("bias", has_bias_);
  if (activation_) o.add("activation", Word{unary_name(*activation_)});
  return o;
}

bool FusedConv2D::takes_bfloat16() const { return cpu::native_bfloat16(); }

std::vector<TensorSpec> FusedConv2D::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, has_bias_ ? 3 : 2);
  Shape out = conv_output(*this, p_, in[0], in[1]);
  if (has_bias_ && (in[2].dtype() != in[0].dtype() || in[2].rank() != 1 ||
                    (in[2].shape()[0] != out[3] && in[2].shape()[0] != kDynamic)))
    fail(name(), "expects a float32 bias [" + std::to_string(out[3]) + "] of the input's dtype, got " + describe(in));
  return {{in[0].dtype(), out, {}}};
}

void FusedConv2D::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (computed_via_float32(*this, in, out)) return;
  if (has_bias_ && in[2].shape() != Shape{in[1].shape()[3]})
    fail(name(), "bias " + in[2].spec().str() + " does not match the kernel " + in[1].spec().str());
  if (empty(specs[0].shape)) {
    out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
    return;
  }
  if (empty(in[0].shape())) {  // no input channels or pixels: activation(bias)
    Tensor z = zeros(specs[0].shape, specs[0].dtype);
    if (has_bias_) z = z + in[2];
    out[0] = activation_ ? dispatch1(Unary(*activation_), {z}) : z;
    return;
  }
  expect_kernel_sizes(*this, in[0].shape());
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  cpu::ConvGeometry g = with_dtype(conv_geometry(*this, p_, in[0].shape(), in[1].shape()), in[0].dtype());
  g.relu = g.bf16 && activation_ == UnaryKind::relu;  // inside the convolution (it rounds once anyway)
  cpu::conv2d_forward(g, in[0].raw_data(), in[1].raw_data(), has_bias_ ? in[2].raw_data() : nullptr,
                      out[0].raw_mutable_data());
  if (g.relu) return;
  if (activation_ && specs[0].dtype == DType::bfloat16) {  // in place, from float32 a block at a time
    auto* y = static_cast<std::uint16_t*>(out[0].raw_mutable_data());
    const auto& vk = cpu::vec::kernels();
    UnaryKind act = *activation_;
    cpu::bfloat16_unary_blocks(y, y, out[0].num_elements(), 8,
                               [&](const float* a, float* b, std::int64_t m) { vk.unary_f32(act, a, b, m); });
    return;
  }
  if (activation_) {
    float* y = out[0].mutable_data<float>().data();
    const auto& vk = cpu::vec::kernels();
    UnaryKind act = *activation_;
    cpu::parallel_for(out[0].num_elements(), 8, [&](std::int64_t b, std::int64_t e) { vk.unary_f32(act, y + b, y + b, e - b); });
  }
}

// The unfused chain's gradients: through the activation (from the output), the bias add and
// the convolution.
std::vector<Tensor> FusedConv2D::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                     const std::vector<bool>& needed) const {
  const Tensor &y = out[0], &g = cot[0];
  Tensor dz = g;
  if (activation_ == UnaryKind::relu) dz = relu_grad(y, g);
  else if (activation_ == UnaryKind::sigmoid) dz = g * y * (1.0 - y);
  else if (activation_ == UnaryKind::tanh) dz = g * (1.0 - y * y);
  std::vector<Tensor> grads = Conv2D(p_).vjp(in.first(2), out, std::span<const Tensor>(&dz, 1),
                                             std::vector<bool>{needed[0], needed[1]});
  if (has_bias_) grads.push_back(needed[2] ? sum_to(dz, in[2]) : Tensor());
  return grads;
}

bool Conv2DBackpropFilterBias::takes_bfloat16() const { return cpu::native_bfloat16(); }

std::vector<TensorSpec> Conv2DBackpropFilterBias::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  Shape out = conv_output(*this, p_, in[0], in[2]);
  if (in[1].dtype() != in[0].dtype() || in[1].rank() != 4)
    fail(name(), "expects a float32 gradient " + out.str() + " of the input's dtype, got " + describe(in));
  return {{in[0].dtype(), in[2].shape(), {}}, {in[0].dtype(), Shape{in[2].shape()[3]}, {}}};
}

void Conv2DBackpropFilterBias::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (computed_via_float32(*this, in, out)) return;
  cpu::ConvGeometry g = with_dtype(conv_geometry(*this, p_, in[0].shape(), specs[0].shape), in[0].dtype());
  if (in[1].shape() != Shape{g.n, g.oh, g.ow, g.f})
    fail(name(), "gradient " + in[1].spec().str() + " does not fit the convolution of " + in[0].spec().str());
  if (empty(in[0].shape()) || empty(in[1].shape())) {
    out[0] = zeros(specs[0].shape, specs[0].dtype);
    out[1] = empty(in[1].shape()) ? zeros(specs[1].shape, specs[1].dtype) : sum(in[1], {0, 1, 2});
    return;
  }
  expect_kernel_sizes(*this, in[0].shape());
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  out[1] = Tensor::empty(specs[1].dtype, specs[1].shape);
  cpu::conv2d_backward_weights(g, in[0].raw_data(), in[1].raw_data(), out[0].raw_mutable_data(), out[1].raw_mutable_data());
}

// (dw, db) are linear in dy (and dw in x): the filter gradient's rule, plus db's cotangent
// broadcast back over dy.
std::vector<Tensor> Conv2DBackpropFilterBias::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                                  const std::vector<bool>& needed) const {
  std::vector<Tensor> grads{Tensor(), Tensor(), Tensor()};
  if (cot[0].defined()) grads = Conv2DBackpropFilter(p_).vjp(in, {}, cot.first(1), needed);
  if (needed[1] && cot[1].defined()) {
    Tensor from_bias = broadcast_like(reshape(cot[1], {1, 1, 1, -1}), in[1]);
    grads[1] = grads[1].defined() ? grads[1] + from_bias : from_bias;
  }
  return grads;
}

MaxPool2DReluGrad::MaxPool2DReluGrad(Pool2DParams p) : p_(p) {
  if (!p.max) fail("max_pool2d_relu_grad", "needs max pooling parameters");
}

std::vector<TensorSpec> MaxPool2DReluGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_nhwc(*this, in[0]);
  expect_nhwc(*this, in[1]);
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void MaxPool2DReluGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  pool_gradient(*this, p_, in, specs, out, true);
}

// Linear in dy, as max_pool2d_grad (whose second derivative is not implemented either).
std::vector<Tensor> MaxPool2DReluGrad::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                           const std::vector<bool>& needed) const {
  return Pool2DGrad(p_).vjp(in, out, cot, needed);
}

// ---------------------------------------------------------------- pooling
// bfloat16 max pooling and its gradients on ef's own kernels (any CPU: the maximum's bits, dy
// routed on the bits); average pooling on oneDNN's bfloat16 pooling where the CPU has native
// bfloat16 (as the convolutions).
bool Pool2D::computes_bfloat16() const { return p_.max || cpu::native_bfloat16(); }
bool Pool2DGrad::computes_bfloat16() const { return p_.max; }
bool MaxPool2DReluGrad::computes_bfloat16() const { return true; }

std::vector<TensorSpec> Pool2D::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_nhwc(*this, in[0]);
  cpu::PoolGeometry g = pool_geometry(*this, p_, in[0].shape());
  return {{in[0].dtype(), Shape{in[0].shape()[0], g.oh, g.ow, in[0].shape()[3]}, {}}};
}

void Pool2D::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (empty(specs[0].shape)) return;
  expect_kernel_sizes(*this, in[0].shape());
  cpu::PoolGeometry g = pool_geometry(*this, p_, in[0].shape());
  g.bf16 = in[0].dtype() == DType::bfloat16;
  if (g.bf16 && p_.max)
    cpu::max_pool2d_forward_bf16(g, static_cast<const std::uint16_t*>(in[0].raw_data()),
                                 static_cast<std::uint16_t*>(out[0].raw_mutable_data()));
  else
    cpu::pool2d_forward(g, in[0].raw_data(), out[0].raw_mutable_data());
}

std::vector<Tensor> Pool2D::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                const std::vector<bool>&) const {
  return {dispatch1(Pool2DGrad(p_), {in[0], cot[0]})};
}

std::vector<TensorSpec> Pool2DGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_nhwc(*this, in[0]);
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Pool2DGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  pool_gradient(*this, p_, in, specs, out, false);
}

// Average pooling's gradient is linear in dy: it flows back through the same pooling. Max
// pooling's routes dy to the maxima of x: linear in dy for a fixed x.
std::vector<Tensor> Pool2DGrad::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                    const std::vector<bool>& needed) const {
  if (!needed[1]) return {Tensor(), Tensor()};
  if (!p_.max) return {Tensor(), dispatch1(Pool2D(p_), {cot[0]})};
  fail(ErrorCode::unimplemented, "gradient", "the second derivative of max_pool2d is not implemented");
}

namespace {
Conv2DParams conv_params(Stride2 strides, const std::string& padding, Stride2 dilation) {
  if (padding != "valid" && padding != "same") fail("conv2d", "padding must be \"valid\" or \"same\", got \"" + padding + "\"");
  if (strides.h < 1 || strides.w < 1 || dilation.h < 1 || dilation.w < 1)
    fail("conv2d", "strides and dilation must be >= 1");
  if ((strides.h > 1 || strides.w > 1) && (dilation.h > 1 || dilation.w > 1))
    fail("conv2d", "strides > 1 together with dilation > 1 is not supported (as in Keras)");
  return {strides.h, strides.w, dilation.h, dilation.w, padding == "same"};
}

Tensor pool(bool max, const Tensor& x, Stride2 size, std::optional<Stride2> strides, const std::string& padding) {
  const char* op = max ? "max_pool2d" : "avg_pool2d";
  if (padding != "valid" && padding != "same") fail(op, "padding must be \"valid\" or \"same\", got \"" + padding + "\"");
  Stride2 s = strides.value_or(size);
  if (size.h < 1 || size.w < 1 || s.h < 1 || s.w < 1) fail(op, "pool size and strides must be >= 1");
  return dispatch1(Pool2D({size.h, size.w, s.h, s.w, padding == "same", max}), {x});
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& kernel, Stride2 strides, const std::string& padding, Stride2 dilation) {
  return dispatch1(Conv2D(conv_params(strides, padding, dilation)), {x, kernel});
}
Tensor max_pool2d(const Tensor& x, Stride2 size, std::optional<Stride2> strides, const std::string& padding) {
  return pool(true, x, size, strides, padding);
}
Tensor avg_pool2d(const Tensor& x, Stride2 size, std::optional<Stride2> strides, const std::string& padding) {
  return pool(false, x, size, strides, padding);
}


namespace {

bool same_padding(const OpParams& p) {
  std::string pad = p.word("padding");
  if (pad != "same" && pad != "valid") p.bad("padding must be same or valid");
  return pad == "same";
}

Conv2DParams conv_params(const OpParams& p) {
  Conv2DParams c;
  auto s = p.ints("strides");
  if (s.size() != 2) p.bad("strides must have two entries");
  c.sh = s[0];
  c.sw = s[1];
  if (p.has("dilation")) {
    auto d = p.ints("dilation");
    if (d.size() != 2) p.bad("dilation must have two entries");
    c.dh = d[0];
    c.dw = d[1];
  }
  c.same = same_padding(p);
  if (c.sh < 1 || c.sw < 1 || c.dh < 1 || c.dw < 1) p.bad("strides and dilations must be positive");
  return c;
}

Pool2DParams pool_params(const OpParams& p, bool max) {
  Pool2DParams q;
  auto k = p.ints("pool"), s = p.ints("strides");
  if (k.size() != 2 || s.size() != 2) p.bad("pool and strides must have two entries");
  q.kh = k[0];
  q.kw = k[1];
  q.sh = s[0];
  q.sw = s[1];
  q.same = same_padding(p);
  q.max = max;
  if (q.kh < 1 || q.kw < 1 || q.sh < 1 || q.sw < 1) p.bad("pool sizes and strides must be positive");
  return q;
}

}  // namespace

void detail::add_conv_factories(detail::OpFactories& f) {
  f["conv2d"] = [](const OpParams& p) { return std::make_shared<Conv2D>(conv_params(p)); };
  f["conv2d_backprop_input"] = [](const OpParams& p) { return std::make_shared<Conv2DBackpropInput>(conv_params(p)); };
  f["conv2d_backprop_filter"] = [](const OpParams& p) { return std::make_shared<Conv2DBackpropFilter>(conv_params(p)); };
  f["max_pool2d"] = [](const OpParams& p) { return std::make_shared<Pool2D>(pool_params(p, true)); };
  f["avg_pool2d"] = [](const OpParams& p) { return std::make_shared<Pool2D>(pool_params(p, false)); };
  f["max_pool2d_grad"] = [](const OpParams& p) { return std::make_shared<Pool2DGrad>(pool_params(p, true)); };
  f["avg_pool2d_grad"] = [](const OpParams& p) { return std::make_shared<Pool2DGrad>(pool_params(p, false)); };
}

void detail::register_fused_conv_rules() {
  for (bool registered : {register_op_rules<FusedConv2D>({.runs_per_example = true, .onnx_unsupported = "made by graph optimization, which ONNX export does not run"}),
                          register_op_rules<Conv2DBackpropFilterBias>({.runs_per_example = true, .onnx_unsupported = "made by graph optimization, which ONNX export does not run"}),
                          register_op_rules<MaxPool2DReluGrad>({.runs_per_example = true, .onnx_unsupported = "made by graph optimization, which ONNX export does not run"})})
    (void)registered;
}

}  // namespace ef
