#include "ops/fft_op.h"

#include <complex>
#include <numeric>

#include "eagerflow/ops/complex.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/fft.h"
#include "kernels/cpu/parallel.h"
#include "ops/op_factories.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

using Cd = std::complex<double>;

constexpr const char* kNames[3][2][3] = {
    {{"fft", "fft2d", "fft3d"}, {"ifft", "ifft2d", "ifft3d"}},
    {{"rfft", "rfft2d", "rfft3d"}, {"rfft", "rfft2d", "rfft3d"}},
    {{"irfft", "irfft2d", "irfft3d"}, {"irfft", "irfft2d", "irfft3d"}},
};

// Transforms every line of a [outer, dims...] array of doubles along each of the given axes
// (of `dims`), in place.
void transform_axes(std::vector<Cd>& data, const std::vector<std::int64_t>& dims, const std::vector<int>& axes, bool inverse) {
  std::int64_t total = static_cast<std::int64_t>(data.size());
  if (total == 0) return;
  for (int axis : axes) {
    std::int64_t n = dims[static_cast<std::size_t>(axis)];
    if (n <= 1) continue;
    std::int64_t stride = 1;
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < dims.size(); ++d) stride *= dims[d];
    std::int64_t lines = total / n;
    cpu::FftPlan plan(n);
    Cd* base = data.data();
    cpu::parallel_for(lines, n * 8, [&](std::int64_t begin, std::int64_t end) {
      std::vector<Cd> line(static_cast<std::size_t>(n)), scratch(static_cast<std::size_t>(plan.scratch_size()));
      for (std::int64_t l = begin; l < end; ++l) {
        // Line l: the `stride` lines of one block are adjacent.
        Cd* p = base + (l / stride) * stride * n + (l % stride);
        for (std::int64_t j = 0; j < n; ++j) line[static_cast<std::size_t>(j)] = p[j * stride];
        plan.run(line.data(), inverse, scratch.data());
        for (std::int64_t j = 0; j < n; ++j) p[j * stride] = line[static_cast<std::size_t>(j)];
      }
    });
  }
}

// Copies src ([outer, src_dims...]) into dst ([outer, dst_dims...]), cropping or zero-padding
// each axis; `read` converts an element.
template <class T, class Read>
void copy_fitted(const T* src, const std::vector<std::int64_t>& src_dims, Cd* dst, const std::vector<std::int64_t>& dst_dims,
                 std::int64_t outer, Read read) {
  std::size_t r = src_dims.size();
  std::int64_t src_block = 1, dst_block = 1;
  for (std::size_t d = 0; d < r; ++d) src_block *= src_dims[d], dst_block *= dst_dims[d];
  std::vector<std::int64_t> idx(r);
  for (std::int64_t o = 0; o < outer; ++o) {
    Cd* out = dst + o * dst_block;
    const T* in = src + o * src_block;
    for (std::int64_t i = 0; i < dst_block; ++i) {
      std::int64_t rem = i, at = 0, mul = 1;
      bool inside = true;
      for (std::size_t d = r; d-- > 0;) {
        std::int64_t k = rem % dst_dims[d];
        rem /= dst_dims[d];
        inside &= k < src_dims[d];
        at += k * mul;
        mul *= src_dims[d];
      }
      out[i] = inside ? read(in[at]) : Cd(0.0, 0.0);
    }
  }
}

std::vector<std::int64_t> inner_dims(const Shape& s, int rank) {
  return std::vector<std::int64_t>(s.end() - rank, s.end());
}

// x cropped or zero-padded along its innermost axes to `dims`.
Tensor fit_to(Tensor x, const std::vector<std::int64_t>& dims) {
  int rank = static_cast<int>(dims.size());
  for (int i = 0; i < rank; ++i) {
    int axis = x.rank() - rank + i;
    std::int64_t have = x.shape()[axis], want = dims[static_cast<std::size_t>(i)];
    if (have > want) {
      std::vector<std::int64_t> b(static_cast<std::size_t>(x.rank()), 0), e(x.shape().begin(), x.shape().end());
      e[static_cast<std::size_t>(axis)] = want;
      x = slice(x, b, e);
    } else if (have < want) {
      std::vector<std::int64_t> pad_dims(x.shape().begin(), x.shape().end());
      pad_dims[static_cast<std::size_t>(axis)] = want - have;
      x = concat({x, zeros(Shape(pad_dims), x.dtype())}, axis);
    }
  }
  return x;
}

}  // namespace

Fft::Fft(FftKind kind, int rank, bool inverse, std::vector<std::int64_t> lengths)
    : kind_(kind), rank_(rank), inverse_(kind == FftKind::c2c ? inverse : kind == FftKind::c2r), lengths_(std::move(lengths)) {
  if (rank < 1 || rank > 3) fail(name(), "transforms 1 to 3 axes, got " + std::to_string(rank));
  if (kind != FftKind::c2c && static_cast<int>(lengths_.size()) != rank)
    fail(name(), "fft_length needs " + std::to_string(rank) + " entries, got " + std::to_string(lengths_.size()));
  for (std::int64_t n : lengths_)
    if (n < 0) fail(ErrorCode::invalid_argument, name(), "fft_length must not be negative, got " + std::to_string(n));
}

const char* Fft::name() const { return kNames[static_cast<int>(kind_)][inverse_ ? 1 : 0][rank_ - 1]; }

OpParams Fft::parameters() const {
  OpParams p;
  p.add("rank", rank_);
  if (kind_ != FftKind::c2c) p.add("fft_length", lengths_);
  return p;
}

std::vector<TensorSpec> Fft::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  const Tensor& x = in[0];
  if (x.rank() < rank_)
    fail(ErrorCode::invalid_argument, name(), "needs a tensor of rank >= " + std::to_string(rank_) + ", got " + x.spec().str());
  if (kind_ == FftKind::r2c ? !(x.dtype() == DType::float32 || x.dtype() == DType::float64) : !is_complex(x.dtype()))
    fail(kWrongType, name(),
         std::string("takes ") + (kind_ == FftKind::r2c ? "float32 or float64" : "complex64 or complex128") + ", got " +
             x.spec().str());
  std::vector<std::int64_t> dims(x.shape().begin(), x.shape().end());
  if (kind_ == FftKind::c2c) return {{x.dtype(), x.shape(), {}}};
  for (int i = 0; i < rank_; ++i) dims[dims.size() - static_cast<std::size_t>(rank_) + static_cast<std::size_t>(i)] = lengths_[static_cast<std::size_t>(i)];
  if (kind_ == FftKind::r2c) {
    dims.back() = lengths_.back() / 2 + 1;
    return {{complex_dtype_of(x.dtype()), Shape(dims), {}}};
  }
  return {{real_dtype_of(x.dtype()), Shape(dims), {}}};
}

void Fft::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  const Shape& so = specs[0].shape;
  out[0] = Tensor::empty(specs[0].dtype, so);
  // The grid the transforms run on: the output's inner dims, with the full last length for
  // rfft (of which it keeps n/2 + 1) and irfft (which it extends Hermitian-symmetrically).
  std::vector<std::int64_t> grid = kind_ == FftKind::c2c ? inner_dims(so, rank_) : lengths_;
  std::int64_t outer = 1;
  for (int d = 0; d < so.rank() - rank_; ++d) outer *= so[d];
  std::int64_t block = std::accumulate(grid.begin(), grid.end(), std::int64_t{1}, std::multiplies<>());
  if (outer * block == 0 || out[0].num_elements() == 0) {
    if (out[0].num_elements()) std::memset(out[0].raw_mutable_data(), 0, out[0].num_elements() * size_of(specs[0].dtype));
    return;
  }
  std::vector<Cd> work(static_cast<std::size_t>(outer * block));
  std::vector<std::int64_t> in_dims = inner_dims(x.shape(), rank_);
  std::vector<int> axes(static_cast<std::size_t>(rank_));
  std::iota(axes.begin(), axes.end(), 0);
  if (kind_ == FftKind::c2r) {
    // The given frequencies of the last axis (at most n/2 + 1), then the rest as conjugates.
    std::vector<std::int64_t> half = grid;
    half.back() = grid.back() / 2 + 1;
    std::vector<Cd> freq(static_cast<std::size_t>(outer * block / grid.back() * half.back()));
    auto read = [](auto v) { return Cd(v.real(), v.imag()); };
    if (x.dtype() == DType::complex64) copy_fitted(x.data<std::complex<float>>().data(), in_dims, freq.data(), half, outer, read);
    else copy_fitted(x.data<std::complex<double>>().data(), in_dims, freq.data(), half, outer, read);
    // The other axes first (numpy's irfftn order), then the last axis as complex-to-real.
    std::vector<int> others(axes.begin(), axes.end() - 1);
    transform_axes(freq, half, others, true);
    std::int64_t n = grid.back(), h = half.back(), lines = outer * block / n;
    for (std::int64_t l = 0; l < lines; ++l) {
      Cd* w = work.data() + l * n;
      const Cd* f = freq.data() + l * h;
      for (std::int64_t k = 0; k < n; ++k) w[k] = k < h ? f[k] : std::conj(f[n - k]);
    }
    transform_axes(work, grid, {rank_ - 1}, true);
    double scale = 1.0 / static_cast<double>(block);
    dispatch_dtype(specs[0].dtype, [&](auto tag) {
      using R = decltype(tag);
      if constexpr (std::is_floating_point_v<R>) {
        R* y = out[0].mutable_data<R>().data();
        for (std::size_t i = 0; i < work.size(); ++i) y[i] = static_cast<R>(work[i].real() * scale);
      }
    });
    return;
  }
  if (kind_ == FftKind::r2c) {
    auto read = [](auto v) { return Cd(static_cast<double>(v), 0.0); };
    if (x.dtype() == DType::float32) copy_fitted(x.data<float>().data(), in_dims, work.data(), grid, outer, read);
    else copy_fitted(x.data<double>().data(), in_dims, work.data(), grid, outer, read);
  } else {
    auto read = [](auto v) { return Cd(v.real(), v.imag()); };
    if (x.dtype() == DType::complex64) copy_fitted(x.data<std::complex<float>>().data(), in_dims, work.data(), grid, outer, read);
    else copy_fitted(x.data<std::complex<double>>().data(), in_dims, work.data(), grid, outer, read);
  }
  transform_axes(work, grid, axes, inverse_);
  double scale = inverse_ ? 1.0 / static_cast<double>(block) : 1.0;
  std::int64_t n = grid.back(), keep = so[so.rank() - 1], lines = outer * block / n;
  auto write = [&](auto* y) {
    using C = std::remove_pointer_t<decltype(y)>;
    using R = typename C::value_type;
    for (std::int64_t l = 0; l < lines; ++l)
      for (std::int64_t k = 0; k < keep; ++k) {
        Cd v = work[static_cast<std::size_t>(l * n + k)] * scale;
        y[l * keep + k] = C(static_cast<R>(v.real()), static_cast<R>(v.imag()));
      }
  };
  if (specs[0].dtype == DType::complex64) write(out[0].mutable_data<std::complex<float>>().data());
  else write(out[0].mutable_data<std::complex<double>>().data());
}

std::vector<Tensor> Fft::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                             const std::vector<bool>&) const {
  const Tensor &x = in[0], &g = cot[0];
  std::vector<std::int64_t> grid = kind_ == FftKind::c2c ? inner_dims(x.shape(), rank_) : lengths_;
  double points = 1.0;
  for (std::int64_t n : grid) points *= static_cast<double>(n);
  if (kind_ == FftKind::c2c) {  // F^H = n F^{-1}
    Tensor t = dispatch1(Fft(FftKind::c2c, rank_, !inverse_, {}), {g});
    return {mul(t, scalar_like(t, inverse_ ? 1.0 / points : points))};
  }
  if (kind_ == FftKind::r2c) {
    // Re(F^H g), g zero-padded to the full last axis; then back to the input's extent.
    std::vector<std::int64_t> full(g.shape().begin(), g.shape().end());
    full.back() = grid.back();
    Tensor padded = fit_to(g, inner_dims(Shape(full), rank_));
    Tensor t = real(dispatch1(Fft(FftKind::c2c, rank_, true, {}), {padded}));
    return {fit_to(mul(t, scalar_like(t, points)), inner_dims(x.shape(), rank_))};
  }
  // irfft: rfft(g) / n, the frequencies that stand for two (k and n - k) counted twice.
  Tensor t = dispatch1(Fft(FftKind::r2c, rank_, false, grid), {g});
  std::int64_t n = grid.back(), h = n / 2 + 1;
  std::vector<double> weight(static_cast<std::size_t>(h), 2.0 / points);
  weight[0] = 1.0 / points;
  if (n % 2 == 0) weight.back() = 1.0 / points;
  Tensor w = cast(tensor(weight, Shape{h}), t.dtype());
  return {fit_to(mul(t, w), inner_dims(x.shape(), rank_))};
}

namespace signal {
namespace {
Tensor c2c(const Tensor& x, int rank, bool inverse) { return dispatch1(Fft(FftKind::c2c, rank, inverse, {}), {x}); }

// The lengths of an rfft/irfft: given, or the input's innermost dims (irfft: 2 (m - 1) last).
std::vector<std::int64_t> lengths_of(const Tensor& x, std::vector<std::int64_t> given, int rank, bool inverse, const char* op) {
  if (rank < 1 || rank > 3) fail(op, "transforms 1 to 3 axes, got " + std::to_string(rank));
  if (!given.empty()) return given;
  if (x.rank() < rank) fail(ErrorCode::invalid_argument, op, "needs a tensor of rank >= " + std::to_string(rank) + ", got " + x.spec().str());
  std::vector<std::int64_t> dims = inner_dims(x.shape(), rank);
  for (std::int64_t d : dims)
    if (d == kDynamic) fail(ErrorCode::invalid_argument, op, "needs fft_length for an input whose inner dims are unknown: " + x.spec().str());
  if (inverse) dims.back() = 2 * (dims.back() - 1);
  return dims;
}
}  // namespace

Tensor fft(const Tensor& x) { return c2c(x, 1, false); }
Tensor ifft(const Tensor& x) { return c2c(x, 1, true); }
Tensor fft2d(const Tensor& x) { return c2c(x, 2, false); }
Tensor ifft2d(const Tensor& x) { return c2c(x, 2, true); }
Tensor fft3d(const Tensor& x) { return c2c(x, 3, false); }
Tensor ifft3d(const Tensor& x) { return c2c(x, 3, true); }
Tensor rfft(const Tensor& x, std::vector<std::int64_t> fft_length, int rank) {
  return dispatch1(Fft(FftKind::r2c, rank, false, lengths_of(x, std::move(fft_length), rank, false, "rfft")), {x});
}
Tensor irfft(const Tensor& x, std::vector<std::int64_t> fft_length, int rank) {
  return dispatch1(Fft(FftKind::c2r, rank, true, lengths_of(x, std::move(fft_length), rank, true, "irfft")), {x});
}

}  // namespace signal

void detail::add_fft_factories(detail::OpFactories& f) {
  for (int kind = 0; kind < 3; ++kind)
    for (int inverse = 0; inverse < 2; ++inverse)
      for (int rank = 1; rank <= 3; ++rank) {
        auto k = static_cast<FftKind>(kind);
        bool inv = inverse != 0;
        f[kNames[kind][inverse][rank - 1]] = [k, rank, inv](const OpParams& p) {
          return std::make_shared<Fft>(k, rank, inv, k == FftKind::c2c ? std::vector<std::int64_t>{} : p.ints("fft_length"));
        };
      }
}

void detail::register_fft_rules() {
  // Each example's innermost axes transform alone: the vmap batch is one more leading axis.
  register_op_rules<Fft>({.batching = [](const Fft& op, BatchingCall call) { return batching::leading_batch(op, call); },
                          .onnx_unsupported = "ONNX has no complex tensors"});
}

}  // namespace ef
