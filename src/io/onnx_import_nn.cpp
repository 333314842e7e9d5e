// ONNX convolution, pooling and normalization ops. ONNX is channels-first (NCHW, OIHW
// kernels) where eagerflow's kernels are NHWC/HWIO: each op transposes in and out, and the
// optimizer's passes cancel the transposes between consecutive ops. 1-D forms run as 2-D ones
// with a height of 1; explicit pads become an ef::pad before a "valid" op.
#include <cmath>
#include <limits>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/array_ops.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/ops.h"
#include "io/onnx_import_program.h"

namespace ef::onnx::detail {
namespace {

using Out = std::vector<Tensor>;
using Ints = std::vector<std::int64_t>;

// The spatial parameters of a Conv or pooling node, as 2-D (a 1-D node gets a leading 1).
struct Window {
  bool one_d = false;
  std::int64_t kh = 1, kw = 1;
  Stride2 strides{1, 1}, dilations{1, 1};
  std::int64_t top = 0, left = 0, bottom = 0, right = 0;
};

Window window(NodeContext& c, const Tensor& x, Ints kernel, bool pooling) {
  Window w;
  int spatial = x.rank() - 2;
  if (spatial != 1 && spatial != 2) c.unsupported("only 1-D and 2-D forms are supported (input rank " + std::to_string(x.rank()) + ")");
  w.one_d = spatial == 1;
  if (static_cast<int>(kernel.size()) != spatial) c.bad("kernel_shape's length differs from the spatial rank");
  Ints strides = c.attr_ints("strides", Ints(static_cast<std::size_t>(spatial), 1));
  Ints dil = c.attr_ints("dilations", Ints(static_cast<std::size_t>(spatial), 1));
  Ints pads = c.attr_ints("pads", Ints(static_cast<std::size_t>(2 * spatial), 0));
  if (static_cast<int>(strides.size()) != spatial || static_cast<int>(dil.size()) != spatial ||
      static_cast<int>(pads.size()) != 2 * spatial)
    c.bad("strides, dilations or pads do not match the spatial rank");
  for (auto v : kernel) if (v <= 0 || v > (1 << 20)) c.bad("bad kernel size " + std::to_string(v));
  for (auto v : strides) if (v <= 0 || v > (1 << 20)) c.bad("bad stride " + std::to_string(v));
  for (auto v : dil) if (v <= 0 || v > (1 << 20)) c.bad("bad dilation " + std::to_string(v));
  for (auto v : pads) if (v < 0 || v > (1 << 20)) c.bad("bad pad " + std::to_string(v));
  if (pooling)
    for (auto v : dil) if (v != 1) c.unsupported("pooling with dilations");
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int i = 0; i < spatial; ++i) {
      std::int64_t in = x.shape()[2 + i];
      if (in == kDynamic) c.unsupported("auto_pad SAME over a dynamic spatial dim");
      std::int64_t s = strides[static_cast<std::size_t>(i)];
      std::int64_t out = (in + s - 1) / s;
      std::int64_t total = std::max<std::int64_t>(0, (out - 1) * s + (kernel[static_cast<std::size_t>(i)] - 1) * dil[static_cast<std::size_t>(i)] + 1 - in);
      std::int64_t small = total / 2, big = total - small;
      pads[static_cast<std::size_t>(i)] = auto_pad == "SAME_UPPER" ? small : big;
      pads[static_cast<std::size_t>(i + spatial)] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (auto_pad != "NOTSET") {
    c.bad("auto_pad '" + auto_pad + "'");
  }
  if (w.one_d) {
    w.kw = kernel[0];
    w.strides = {1, strides[0]};
    w.dilations = {1, dil[0]};
    w.left = pads[0];
    w.right = pads[1];
  } else {
    w.kh = kernel[0];
    w.kw = kernel[1];
    w.strides = {strides[0], strides[1]};
    w.dilations = {dil[0], dil[1]};
    w.top = pads[0];
    w.left = pads[1];
    w.bottom = pads[2];
    w.right = pads[3];
  }
  return w;
}

// NC[H]W -> NHWC (a 1-D input gets H = 1).
Tensor to_nhwc(const Tensor& x, bool one_d) {
  Tensor y = one_d ? expand_dims(x, 2) : x;
  return transpose(y, {0, 2, 3, 1});
}
Tensor from_nhwc(const Tensor& y, bool one_d) {
  Tensor x = transpose(y, {0, 3, 1, 2});
  return one_d ? squeeze(x, {2}) : x;
}

Tensor pad_nhwc(NodeContext& c, const Tensor& x, const Window& w, double value) {
  if (!w.top && !w.bottom && !w.left && !w.right) return x;
  const Shape& s = x.shape();
  auto grow = [](std::int64_t d, std::int64_t by) { return d == kDynamic ? d : d + by; };
  c.check_size(Shape{s[0], grow(s[1], w.top + w.bottom), grow(s[2], w.left + w.right), s[3]});
  return pad(x, {{0, 0}, {w.top, w.bottom}, {w.left, w.right}, {0, 0}}, "constant", value);
}

// ceil_mode: the extra end padding that makes the last partial window count (ONNX drops a
// window that would start in the end padding).
void ceil_pads(NodeContext& c, const Tensor& x, Window& w) {
  auto extra = [&](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t b, std::int64_t& e) {
    if (in == kDynamic) c.unsupported("ceil_mode over a dynamic spatial dim");
    std::int64_t span = in + b + e - k;
    if (span < 0) return;
    std::int64_t out = (span + s - 1) / s + 1;
    if ((out - 1) * s >= in + b) --out;
    e += std::max<std::int64_t>(0, (out - 1) * s + k - (in + b + e));
  };
  if (w.one_d) {
    extra(x.shape()[2], w.kw, w.strides.w, w.left, w.right);
  } else {
    extra(x.shape()[2], w.kh, w.strides.h, w.top, w.bottom);
    extra(x.shape()[3], w.kw, w.strides.w, w.left, w.right);
  }
}

Out conv(NodeContext& c) {
  const Tensor &x = c.in(0), &weight = c.in(1);
  if (x.rank() != 3 && x.rank() != 4) c.unsupported("only 1-D and 2-D forms are supported (input rank " + std::to_string(x.rank()) + ")");
  if (weight.rank() != x.rank()) c.bad("the weight's rank differs from the input's");
  Ints kernel(weight.shape().begin() + 2, weight.shape().end());
  if (c.has_attr("kernel_shape") && c.attr_ints("kernel_shape") != kernel) c.bad("kernel_shape disagrees with the weight");
  Window w = window(c, x, kernel, false);
  std::int64_t group = c.attr_int("group", 1);
  std::int64_t cin = x.shape()[1], cout = weight.shape()[0];
  if (group <= 0 || cout % group != 0 || (cin != kDynamic && cin != weight.shape()[1] * group))
    c.bad("group " + std::to_string(group) + " does not fit " + std::to_string(cin) + " input and " +
          std::to_string(cout) + " output channels");
  Tensor xh = pad_nhwc(c, to_nhwc(x, w.one_d), w, 0.0);
  Tensor k = transpose(w.one_d ? expand_dims(weight, 2) : weight, {2, 3, 1, 0});  // OIHW -> HWIO
  Tensor y;
  if (group == 1) {
    y = conv2d(xh, k, w.strides, "valid", w.dilations);
  } else {
    std::vector<Tensor> xs = split(xh, group, 3), ks = split(k, group, 3), ys;
    for (std::int64_t g = 0; g < group; ++g)
      ys.push_back(conv2d(xs[static_cast<std::size_t>(g)], ks[static_cast<std::size_t>(g)], w.strides, "valid", w.dilations));
    y = concat(ys, 3);
  }
  if (c.has(2)) y = add(y, c.in(2));
  return {from_nhwc(y, w.one_d)};
}

Out max_pool(NodeContext& c) {
  const Tensor& x = c.in(0);
  if (c.num_outputs() > 1 && c.node.outputs[1] >= 0) c.unsupported("the Indices output");
  Window w = window(c, x, c.attr_ints("kernel_shape"), true);
  if (c.attr_int("ceil_mode", 0)) ceil_pads(c, x, w);
  Tensor xh = pad_nhwc(c, to_nhwc(x, w.one_d), w, -std::numeric_limits<double>::infinity());
  return {from_nhwc(max_pool2d(xh, {w.kh, w.kw}, w.strides, "valid"), w.one_d)};
}

Out avg_pool(NodeContext& c) {
  const Tensor& x = c.in(0);
  Window w = window(c, x, c.attr_ints("kernel_shape"), true);
  Window unpadded = w;
  if (c.attr_int("ceil_mode", 0)) ceil_pads(c, x, w);
  Tensor xh = to_nhwc(x, w.one_d);
  Tensor y = avg_pool2d(pad_nhwc(c, xh, w, 0.0), {w.kh, w.kw}, w.strides, "valid");
  bool padded = w.top || w.left || w.bottom || w.right;
  if (padded) {
    // Divide by the number of elements each window covers: the input's (count_include_pad=0)
    // or the input's and the explicit pads' (=1; ceil_mode's extra padding never counts).
    Tensor ones = ones_like(xh);
    Tensor counted = c.attr_int("count_include_pad", 0) ? pad_nhwc(c, ones, unpadded, 1.0) : ones;
    Window extra = w;
    if (c.attr_int("count_include_pad", 0)) {
      extra.top -= unpadded.top;
      extra.bottom -= unpadded.bottom;
      extra.left -= unpadded.left;
      extra.right -= unpadded.right;
    }
    Tensor frac = avg_pool2d(pad_nhwc(c, counted, extra, 0.0), {w.kh, w.kw}, w.strides, "valid");
    y = div(y, frac);
  }
  return {from_nhwc(y, w.one_d)};
}

// Along axis `axis` of x: `before`/`after` zeros added, or elements removed where negative.
Tensor pad_or_crop(NodeContext& c, const Tensor& x, int axis, std::int64_t before, std::int64_t after) {
  Tensor y = x;
  if (before < 0 || after < 0) {
    std::int64_t d = y.shape()[axis];
    std::vector<std::int64_t> b(static_cast<std::size_t>(y.rank()), 0), e(static_cast<std::size_t>(y.rank()), std::int64_t{1} << 40);
    b[static_cast<std::size_t>(axis)] = before < 0 ? -before : 0;
    e[static_cast<std::size_t>(axis)] = after < 0 ? d + after : d;
    if (e[static_cast<std::size_t>(axis)] <= b[static_cast<std::size_t>(axis)]) c.bad("the pads remove the whole output");
    y = slice(y, b, e);
  }
  if (before > 0 || after > 0) {
    std::vector<std::pair<std::int64_t, std::int64_t>> p(static_cast<std::size_t>(y.rank()), {0, 0});
    p[static_cast<std::size_t>(axis)] = {std::max<std::int64_t>(before, 0), std::max<std::int64_t>(after, 0)};
    std::vector<std::int64_t> dims(y.shape().begin(), y.shape().end());
    dims[static_cast<std::size_t>(axis)] += p[static_cast<std::size_t>(axis)].first + p[static_cast<std::size_t>(axis)].second;
    c.check_size(Shape(dims));
    y = pad(y, p);
  }
  return y;
}

// NHWC x with (s - 1) zeros between neighbours along H (axis 1) or W (axis 2).
Tensor spread(NodeContext& c, const Tensor& x, int axis, std::int64_t s) {
  if (s == 1) return x;
  std::int64_t n = x.shape()[axis];
  if (n == kDynamic) c.unsupported("a strided ConvTranspose over a dynamic spatial dim");
  Shape sh = x.shape();
  std::vector<std::int64_t> dims(sh.begin(), sh.end());
  dims[0] = -1;
  std::vector<std::int64_t> split_dims = dims;
  split_dims.insert(split_dims.begin() + axis + 1, 1);
  Tensor y = pad_or_crop(c, reshape(x, Shape(split_dims)), axis + 1, 0, s - 1);  // [.., n, s, ..]
  dims[static_cast<std::size_t>(axis)] = n * s;
  return pad_or_crop(c, reshape(y, Shape(dims)), axis, 0, -(s - 1));
}

// ConvTranspose as a convolution: the input spread by the strides, padded by d*(k-1) less the
// pads (plus output_padding at the end), convolved at stride 1 with the kernel flipped.
Out conv_transpose(NodeContext& c) {
  const Tensor &x = c.in(0), &weight = c.in(1);
  if (x.rank() != 3 && x.rank() != 4) c.unsupported("only 1-D and 2-D forms are supported (input rank " + std::to_string(x.rank()) + ")");
  if (weight.rank() != x.rank()) c.bad("the weight's rank differs from the input's");
  if (c.has_attr("output_shape")) c.unsupported("output_shape (give pads instead)");
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") c.unsupported("auto_pad " + auto_pad);
  Ints kernel(weight.shape().begin() + 2, weight.shape().end());
  Window w = window(c, x, kernel, false);
  Ints out_pad = c.attr_ints("output_padding", Ints(kernel.size(), 0));
  if (out_pad.size() != kernel.size()) c.bad("output_padding does not match the spatial rank");
  std::int64_t oph = w.one_d ? 0 : out_pad[0], opw = out_pad.back();
  std::int64_t group = c.attr_int("group", 1);
  std::int64_t cin = weight.shape()[0];
  if (group <= 0 || cin % group != 0 || (x.shape()[1] != kDynamic && x.shape()[1] != cin))
    c.bad("group " + std::to_string(group) + " does not fit the weight " + weight.shape().str());
  Tensor xh = to_nhwc(x, w.one_d);
  xh = spread(c, spread(c, xh, 1, w.strides.h), 2, w.strides.w);
  std::int64_t eh = w.dilations.h * (w.kh - 1), ew = w.dilations.w * (w.kw - 1);
  xh = pad_or_crop(c, xh, 1, eh - w.top, eh - w.bottom + oph);
  xh = pad_or_crop(c, xh, 2, ew - w.left, ew - w.right + opw);
  // [C_in, C_out/g, kh, kw] -> HWIO [kh, kw, C_in, C_out/g], flipped in space.
  Tensor k = reverse(transpose(w.one_d ? expand_dims(weight, 2) : weight, {2, 3, 0, 1}), {0, 1});
  Tensor y;
  if (group == 1) {
    y = conv2d(xh, k, {1, 1}, "valid", w.dilations);
  } else {
    std::vector<Tensor> xs = split(xh, group, 3), ks = split(k, group, 2), ys;
    for (std::int64_t g = 0; g < group; ++g)
      ys.push_back(conv2d(xs[static_cast<std::size_t>(g)], ks[static_cast<std::size_t>(g)], {1, 1}, "valid", w.dilations));
    y = concat(ys, 3);
  }
  if (c.has(2)) y = add(y, c.in(2));
  return {from_nhwc(y, w.one_d)};
}

// Resize of NCHW images over H and W with the sampling tf.image.resize has: linear with
// half-pixel centers (ONNX's half_pixel, and pytorch_half_pixel for sizes above 1), and nearest
// where it picks the same pixels (integer upsampling, as torch's Upsample writes it).
Out resize(NodeContext& c) {
  const Tensor& x = c.in(0);
  if (x.rank() != 4) c.unsupported("only 4-D (NCHW) inputs");
  std::int64_t h = x.shape()[2], w = x.shape()[3];
  if (h == kDynamic || w == kDynamic) c.unsupported("a dynamic height or width");
  std::string mode = c.attr_string("mode", "nearest");
  std::string coords = c.attr_string("coordinate_transformation_mode", "half_pixel");
  if (c.attr_int("antialias", 0) != 0) c.unsupported("antialias");
  if (c.has_attr("axes")) c.unsupported("the axes attribute");
  std::int64_t oh = 0, ow = 0;
  bool integer_up = false;
  if (c.has(3) && c.in(3).num_elements() > 0) {
    Ints sizes = c.ints(3);
    if (sizes.size() != 4) c.bad("sizes must hold 4 values");
    if (x.shape()[0] != kDynamic && sizes[0] != x.shape()[0]) c.unsupported("resizing the batch or channel axis");
    if (x.shape()[1] != kDynamic && sizes[1] != x.shape()[1]) c.unsupported("resizing the batch or channel axis");
    oh = sizes[2];
    ow = sizes[3];
    integer_up = oh % h == 0 && ow % w == 0;
  } else if (c.has(2) && c.in(2).num_elements() > 0) {
    const Tensor& st = c.in(2);
    if (st.is_symbolic() || st.num_elements() != 4) c.bad("scales must be 4 values known when the graph is traced");
    auto sc = cast(st, DType::float64).to_vector<double>();
    if (sc[0] != 1 || sc[1] != 1) c.unsupported("resizing the batch or channel axis");
    if (!(sc[2] > 0 && sc[2] < 1e4 && sc[3] > 0 && sc[3] < 1e4)) c.bad("scales out of range");
    oh = static_cast<std::int64_t>(std::floor(static_cast<double>(h) * sc[2]));
    ow = static_cast<std::int64_t>(std::floor(static_cast<double>(w) * sc[3]));
    integer_up = sc[2] == std::floor(sc[2]) && sc[3] == std::floor(sc[3]);
  } else {
    c.bad("needs scales or sizes");
  }
  if (oh <= 0 || ow <= 0) c.bad("an empty output size");
  c.check_size(Shape{x.shape()[0], x.shape()[1], oh, ow});
  std::string method;
  if (mode == "linear" && (coords == "half_pixel" || (coords == "pytorch_half_pixel" && oh > 1 && ow > 1))) {
    method = "bilinear";
  } else if (mode == "nearest" && integer_up &&
             ((coords == "asymmetric" && c.attr_string("nearest_mode", "round_prefer_floor") == "floor") ||
              (coords == "half_pixel" && c.attr_string("nearest_mode", "round_prefer_floor") == "round_prefer_ceil"))) {
    method = "nearest";
  } else {
    c.unsupported("mode '" + mode + "' with coordinate_transformation_mode '" + coords +
                  "' (linear with half_pixel, and nearest upsampling by whole factors, are supported)");
  }
  Tensor y = image::resize(transpose(x, {0, 2, 3, 1}), oh, ow, method);
  return {transpose(cast(y, x.dtype()), {0, 3, 1, 2})};
}

std::vector<int> spatial_axes(const Tensor& x) {
  std::vector<int> a;
  for (int d = 2; d < x.rank(); ++d) a.push_back(d);
  return a;
}

// Per-channel parameters [C] shaped to broadcast against N C ... (channels at axis 1).
Tensor per_channel(const Tensor& p, int rank) {
  std::vector<std::int64_t> dims{-1};
  for (int d = 2; d < rank; ++d) dims.push_back(1);
  return reshape(p, Shape(dims));
}

}  // namespace

void add_nn_ops(std::map<std::string, OpFn>& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["Resize"] = resize;
  t["MaxPool"] = max_pool;
  t["AveragePool"] = avg_pool;
  t["GlobalAveragePool"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    if (x.rank() < 3) c.bad("the input needs spatial dims");
    return Out{mean(x, spatial_axes(x), true)};
  };
  t["GlobalMaxPool"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    if (x.rank() < 3) c.bad("the input needs spatial dims");
    return Out{max(x, spatial_axes(x), true)};
  };
  t["BatchNormalization"] = [](NodeContext& c) {
    if (c.attr_int("training_mode", 0) != 0) c.unsupported("training_mode=1 (the importer runs inference)");
    const Tensor& x = c.in(0);
    if (x.rank() < 2) c.bad("the input needs a channel axis");
    double eps = c.attr_float("epsilon", 1e-5f);
    int r = x.rank();
    Tensor var = c.in(4);
    Tensor inv = mul(c.in(1), rsqrt(add(var, scalar_like(var, eps))));
    Tensor y = add(mul(sub(x, per_channel(c.in(3), r)), per_channel(inv, r)), per_channel(c.in(2), r));
    return Out{y};
  };
  t["InstanceNormalization"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    if (x.rank() < 3) c.bad("the input needs spatial dims");
    double eps = c.attr_float("epsilon", 1e-5f);
    auto axes = spatial_axes(x);
    Tensor mu = mean(x, axes, true);
    Tensor centered = sub(x, mu);
    Tensor var = mean(square(centered), axes, true);
    Tensor y = mul(centered, rsqrt(add(var, scalar_like(var, eps))));
    return Out{add(mul(y, per_channel(c.in(1), x.rank())), per_channel(c.in(2), x.rank()))};
  };
  t["LayerNormalization"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    int axis = c.axis(c.attr_int("axis", -1), x.rank());
    double eps = c.attr_float("epsilon", 1e-5f);
    std::vector<int> axes;
    for (int d = axis; d < x.rank(); ++d) axes.push_back(d);
    Tensor mu = mean(x, axes, true);
    Tensor centered = sub(x, mu);
    Tensor inv = rsqrt(add(mean(square(centered), axes, true), scalar_like(x, eps)));
    Tensor y = mul(mul(centered, inv), c.in(1));
    if (c.has(2)) y = add(y, c.in(2));
    return Out{y, mu, inv};
  };
}

}  // namespace ef::onnx::detail
