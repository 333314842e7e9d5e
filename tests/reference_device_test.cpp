// The device seam (eagerflow/core/device.h, eagerflow/ops/device_kernels.h), proved with a
// second device registered here, outside the library: a reference backend of plain loops for
// elementwise ops, matmul, reductions and conv2d. The same programs, eager and traced, run on
// the CPU and on it and agree; an op it lacks is a clear error.
#include <atomic>
#include <cmath>

#include "eagerflow/ops/device_kernels.h"
#include "ops/primitives.h"
#include "test_util.h"

using namespace ef;

namespace {

std::atomic<int> reference_calls{0};

// Row-major strides of a shape, and the offset of a broadcast input for an output index.
std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.rank()), 1);
  for (int a = s.rank() - 2; a >= 0; --a) st[static_cast<std::size_t>(a)] = st[static_cast<std::size_t>(a + 1)] * s[a + 1];
  return st;
}
std::int64_t broadcast_offset(const Shape& out, std::int64_t flat, const Shape& in) {
  std::int64_t offset = 0, stride = 1;
  for (int a = out.rank() - 1, b = in.rank() - 1; b >= 0; --a, --b) {
    std::int64_t coord = flat % out[a];
    flat /= out[a];
    if (in[b] != 1) offset += coord * stride;
    stride *= in[b];
  }
  return offset;
}

float unary(UnaryKind k, float x) {
  switch (k) {
    case UnaryKind::neg: return -x;
    case UnaryKind::abs: return std::fabs(x);
    case UnaryKind::exp: return std::exp(x);
    case UnaryKind::log: return std::log(x);
    case UnaryKind::sqrt: return std::sqrt(x);
    case UnaryKind::square: return x * x;
    case UnaryKind::relu: return x > 0 ? x : 0;
    case UnaryKind::sigmoid: return 1 / (1 + std::exp(-x));
    case UnaryKind::tanh: return std::tanh(x);
    default: fail("reference", std::string("no reference loop for ") + unary_name(k));
  }
}
float binary(BinaryKind k, float a, float b) {
  switch (k) {
    case BinaryKind::add: return a + b;
    case BinaryKind::sub: return a - b;
    case BinaryKind::mul: return a * b;
    case BinaryKind::div: return a / b;
    case BinaryKind::maximum: return std::max(a, b);
    case BinaryKind::minimum: return std::min(a, b);
    default: fail("reference", std::string("no reference loop for ") + binary_name(k));
  }
}
void expect_float(const Primitive& op, std::span<const Tensor> in) {
  for (const Tensor& t : in)
    if (t.dtype() != DType::float32) fail(op.name(), "the reference device computes float32 only");
}

Device reference_device() {
  static const Device device = [] {
    Device d = register_device("reference");
    register_kernel<Unary>(d, [](const Primitive& p, auto in, auto specs, auto out) {
      ++reference_calls;
      expect_float(p, in);
      auto& op = static_cast<const Unary&>(p);
      out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
      auto x = in[0].template data<float>();
      auto y = out[0].template mutable_data<float>();
      for (std::size_t i = 0; i < x.size(); ++i) y[i] = unary(op.kind(), x[i]);
    });
    register_kernel<Binary>(d, [](const Primitive& p, auto in, auto specs, auto out) {
      ++reference_calls;
      expect_float(p, in);
      auto& op = static_cast<const Binary&>(p);
      out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
      auto a = in[0].template data<float>(), b = in[1].template data<float>();
      auto y = out[0].template mutable_data<float>();
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(y.size()); ++i)
        y[static_cast<std::size_t>(i)] = binary(op.kind(), a[static_cast<std::size_t>(broadcast_offset(specs[0].shape, i, in[0].shape()))],
                                                b[static_cast<std::size_t>(broadcast_offset(specs[0].shape, i, in[1].shape()))]);
    });
    register_kernel<MatMul>(d, [](const Primitive& p, auto in, auto specs, auto out) {
      ++reference_calls;
      expect_float(p, in);
      auto& op = static_cast<const MatMul&>(p);
      if (in[0].rank() != 2 || in[1].rank() != 2) fail(p.name(), "the reference device multiplies matrices only");
      std::int64_t m = specs[0].shape[0], n = specs[0].shape[1], k = op.transpose_a() ? in[0].shape()[0] : in[0].shape()[1];
      out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
      auto a = in[0].template data<float>(), b = in[1].template data<float>();
      auto y = out[0].template mutable_data<float>();
      std::int64_t lda = in[0].shape()[1], ldb = in[1].shape()[1];
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::int64_t l = 0; l < k; ++l)
            acc += double(a[static_cast<std::size_t>(op.transpose_a() ? l * lda + i : i * lda + l)]) *
                   double(b[static_cast<std::size_t>(op.transpose_b() ? j * ldb + l : l * ldb + j)]);
          y[static_cast<std::size_t>(i * n + j)] = static_cast<float>(acc);
        }
    });
    register_kernel<Reduce>(d, [](const Primitive& p, auto in, auto specs, auto out) {
      ++reference_calls;
      expect_float(p, in);
      auto& op = static_cast<const Reduce&>(p);
      const Shape& s = in[0].shape();
      std::vector<bool> reduced = op.reduced_mask(s.rank());
      // The output index of each input element: its coordinates with the reduced axes dropped.
      std::vector<std::int64_t> kept_dims;
      for (int a = 0; a < s.rank(); ++a)
        if (!reduced[static_cast<std::size_t>(a)]) kept_dims.push_back(s[a]);
      std::int64_t outputs = 1;
      for (auto dim : kept_dims) outputs *= dim;
      std::vector<double> acc(static_cast<std::size_t>(outputs), op.kind() == ReduceKind::max   ? -INFINITY
                                                                 : op.kind() == ReduceKind::min ? INFINITY
                                                                                                : 0.0);
      auto x = in[0].template data<float>();
      std::vector<std::int64_t> st = strides_of(s);
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(x.size()); ++i) {
        std::int64_t o = 0;
        for (int a = 0; a < s.rank(); ++a)
          if (!reduced[static_cast<std::size_t>(a)]) o = o * s[a] + (i / st[static_cast<std::size_t>(a)]) % s[a];
        double v = x[static_cast<std::size_t>(i)];
        double& r = acc[static_cast<std::size_t>(o)];
        r = op.kind() == ReduceKind::max ? std::max(r, v) : op.kind() == ReduceKind::min ? std::min(r, v) : r + v;
      }
      double count = static_cast<double>(x.size()) / static_cast<double>(std::max<std::int64_t>(outputs, 1));
      out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
      auto y = out[0].template mutable_data<float>();
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(op.kind() == ReduceKind::mean ? acc[i] / count : acc[i]);
    });
    register_kernel<Conv2D>(d, [](const Primitive& p, auto in, auto specs, auto out) {
      ++reference_calls;
      expect_float(p, in);
      const Conv2DParams& c = static_cast<const Conv2D&>(p).params();
      const Shape &xs = in[0].shape(), &ks = in[1].shape(), &ys = specs[0].shape;  // NHWC, HWIO, NHWC
      auto pad_before = [&](std::int64_t in_len, std::int64_t out_len, std::int64_t k, std::int64_t s, std::int64_t dil) {
        if (!c.same) return std::int64_t{0};
        std::int64_t total = std::max<std::int64_t>((out_len - 1) * s + (k - 1) * dil + 1 - in_len, 0);
        return total / 2;
      };
      std::int64_t ph = pad_before(xs[1], ys[1], ks[0], c.sh, c.dh), pw = pad_before(xs[2], ys[2], ks[1], c.sw, c.dw);
      out[0] = Tensor::empty(specs[0].dtype, ys);
      auto x = in[0].template data<float>(), k = in[1].template data<float>();
      auto y = out[0].template mutable_data<float>();
      for (std::int64_t b = 0; b < ys[0]; ++b)
        for (std::int64_t oh = 0; oh < ys[1]; ++oh)
          for (std::int64_t ow = 0; ow < ys[2]; ++ow)
            for (std::int64_t oc = 0; oc < ys[3]; ++oc) {
              double acc = 0;
              for (std::int64_t kh = 0; kh < ks[0]; ++kh)
                for (std::int64_t kw = 0; kw < ks[1]; ++kw) {
                  std::int64_t ih = oh * c.sh + kh * c.dh - ph, iw = ow * c.sw + kw * c.dw - pw;
                  if (ih < 0 || iw < 0 || ih >= xs[1] || iw >= xs[2]) continue;
                  for (std::int64_t ic = 0; ic < xs[3]; ++ic)
                    acc += double(x[static_cast<std::size_t>(((b * xs[1] + ih) * xs[2] + iw) * xs[3] + ic)]) *
                           double(k[static_cast<std::size_t>(((kh * ks[1] + kw) * ks[2] + ic) * ks[3] + oc)]);
                }
              y[static_cast<std::size_t>(((b * ys[1] + oh) * ys[2] + ow) * ys[3] + oc)] = static_cast<float>(acc);
            }
    });
    return d;
  }();
  return device;
}

void expect_close(const Tensor& got, const Tensor& want, float tol = 1e-5f) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = got.to_vector<float>(), w = want.to_vector<float>();
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
}

// A small program of the subset: dense layer, activation, broadcasting, reductions.
std::vector<Tensor> mlp_program(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor h = relu(matmul(x, w) + b);
  Tensor t = matmul(h, w, /*transpose_a=*/false, /*transpose_b=*/true);
  return {h, sum(h, {1}), mean(t), max(square(t) - h * 0.5f, {0}, true), tanh(sigmoid(t) / (abs(t) + 1.0f))};
}

}  // namespace

TEST(ReferenceDevice, EagerProgramsAgreeWithTheCpu) {
  Device ref = reference_device();
  EXPECT_EQ(device_name(ref), "reference");
  EXPECT_EQ(device_named("reference"), ref);
  random::set_seed(3);
  Tensor x = random::normal({5, 7}), w = random::normal({7, 7}), b = random::normal({7});
  auto want = mlp_program(x, w, b);
  int before = reference_calls;
  // Only x moves: the CPU weights are read in place, the results live on the device.
  auto got = mlp_program(to_device(x, ref), w, b);
  EXPECT_GE(reference_calls - before, 12);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].device(), ref) << "result " << i;
    expect_close(got[i], want[i]);
  }
  // A copy back is on the CPU and equal.
  Tensor back = to_device(got[0], Device::cpu);
  EXPECT_EQ(back.device(), Device::cpu);
  EXPECT_EQ(back.to_vector<float>(), got[0].to_vector<float>());
}

TEST(ReferenceDevice, ConvolutionsAgreeWithTheCpu) {
  Device ref = reference_device();
  random::set_seed(4);
  Tensor x = random::normal({2, 9, 8, 3}), k = random::normal({3, 2, 3, 4});
  for (bool same : {false, true})
    for (std::int64_t stride : {1, 2})
      for (std::int64_t dilation : {1, 2}) {
        if (stride > 1 && dilation > 1) continue;  // TF refuses both at once
        Conv2DParams p{.sh = stride, .sw = stride, .dh = dilation, .dw = dilation, .same = same};
        Tensor want = dispatch1(Conv2D(p), {x, k});
        Tensor got = dispatch1(Conv2D(p), {to_device(x, ref), k});
        EXPECT_EQ(got.device(), ref);
        expect_close(got, want, 1e-4f);
      }
}

TEST(ReferenceDevice, TracedFunctionsReplayOnTheDeviceOfTheirArguments) {
  Device ref = reference_device();
  random::set_seed(5);
  Tensor x = random::normal({4, 7}), w = random::normal({7, 7}), b = random::normal({7});
  FunctionOptions plain;
  plain.passes.fuse_dense = false;  // the fused op has no reference kernel
  plain.passes.fuse_elementwise = false;
  auto f = function([&](const Tensor& in) { return mlp_program(in, w, b); }, plain);
  auto want = f(x);
  int before = reference_calls;
  auto got = f(to_device(x, ref));
  EXPECT_GT(reference_calls - before, 0);
  EXPECT_EQ(f.tracing_count(), 1);  // the device is not part of the signature
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].device(), ref) << "result " << i;
    expect_close(got[i], want[i]);
  }
  // And back on the CPU, the CPU kernels again.
  before = reference_calls;
  auto again = f(x);
  EXPECT_EQ(reference_calls - before, 0);
  EXPECT_EQ(again[0].device(), Device::cpu);
}

TEST(ReferenceDevice, ScopesPlaceOpsAndMissingKernelsAreClearErrors) {
  Device ref = reference_device();
  Tensor a = tensor({1.0f, -2.0f, 3.0f});
  {
    DeviceScope scope(ref);
    EXPECT_EQ(current_device(), ref);
    int before = reference_calls;
    Tensor r = relu(a);  // a CPU input, placed by the scope
    EXPECT_EQ(reference_calls - before, 1);
    EXPECT_EQ(r.device(), ref);
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 0, 3}));
    // top_k has no reference kernel: an error naming the op and the device.
    ef::testing::expect_error([&] { top_k(a, 2); }, {"top_k", "no kernel on device 'reference'"});
  }
  EXPECT_EQ(current_device(), Device::cpu);
  EXPECT_EQ(relu(a).device(), Device::cpu);
  ef::testing::expect_error([] { device_named("tpu"); }, {"no device named 'tpu'"});
  ef::testing::expect_error([] { register_kernel<Unary>(Device::cpu, [](auto&, auto, auto, auto) {}); }, {"CPU kernel"});
  // A device of its own name is found again, not made twice.
  EXPECT_EQ(register_device("reference"), ref);
}
