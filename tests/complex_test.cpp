// Complex tensors (DType::complex64/complex128, eagerflow/ops/complex.h): the arithmetic against
// std::complex, the parts, casts, matmul with its flags, sums, FFTs against a direct DFT, TF's
// gradient convention, eager == traced, vmap, and the errors of what does not take them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include "eagerflow/autodiff/vmap.h"
#include "eagerflow/eagerflow.h"
#include "eagerflow/ops/complex.h"

namespace {

using ef::Shape;
using ef::Tensor;
using C = std::complex<double>;
using Cf = std::complex<float>;

Tensor Z(std::vector<C> v, Shape s) { return ef::tensor(v, s); }
Tensor Z(std::vector<C> v) { return ef::tensor(v); }
std::vector<C> values(const Tensor& t) {
  if (t.dtype() == ef::DType::complex64) {
    std::vector<C> out;
    for (Cf v : t.to_vector<Cf>()) out.emplace_back(v);
    return out;
  }
  return t.to_vector<C>();
}

void expect_near(const std::vector<C>& got, const std::vector<C>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].real(), want[i].real(), tol * (1 + std::abs(want[i]))) << "element " << i;
    EXPECT_NEAR(got[i].imag(), want[i].imag(), tol * (1 + std::abs(want[i]))) << "element " << i;
  }
}

TEST(Complex, DtypesAndConstruction) {
  EXPECT_EQ(ef::size_of(ef::DType::complex64), 8u);
  EXPECT_EQ(ef::size_of(ef::DType::complex128), 16u);
  EXPECT_EQ(ef::name_of(ef::DType::complex64), "complex64");
  EXPECT_EQ(ef::dtype_named("c128"), ef::DType::complex128);
  EXPECT_EQ(ef::real_dtype_of(ef::DType::complex64), ef::DType::float32);
  Tensor z = ef::complex(ef::tensor({1.0f, -2.0f}), ef::tensor({0.5f, 3.0f}));
  EXPECT_EQ(z.dtype(), ef::DType::complex64);
  expect_near(values(z), {{1, 0.5}, {-2, 3}});
  EXPECT_EQ(z.str(), "Tensor([1.+0.5j -2.+3.j], shape=(2,), dtype=complex64)");
  // Broadcast parts, and the parts back.
  Tensor w = ef::complex(ef::tensor(std::vector<double>{1, 2, 3}), ef::scalar(-1.0));
  expect_near(values(w), {{1, -1}, {2, -1}, {3, -1}});
  EXPECT_EQ(ef::real(w).to_vector<double>(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(ef::imag(w).to_vector<double>(), (std::vector<double>{-1, -1, -1}));
  EXPECT_THROW(ef::complex(ef::tensor({1.0f}), ef::tensor(std::vector<double>{1.0})), ef::Error);
  EXPECT_THROW(ef::complex(ef::tensor(std::vector<std::int32_t>{1}), ef::tensor(std::vector<std::int32_t>{1})), ef::Error);
}

TEST(Complex, ArithmeticMatchesStdComplex) {
  std::vector<C> a{{1, 2}, {-0.5, 3}, {0, -1}, {2.5, 0}}, b{{0.5, -1}, {2, 2}, {-3, 0.25}, {1, 1}};
  Tensor ta = Z(a), tb = Z(b);
  std::vector<C> sum, diff, prod, quot, pw;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sum.push_back(a[i] + b[i]), diff.push_back(a[i] - b[i]), prod.push_back(a[i] * b[i]), quot.push_back(a[i] / b[i]);
    pw.push_back(std::pow(a[i], b[i]));
  }
  expect_near(values(ef::add(ta, tb)), sum);
  expect_near(values(ef::sub(ta, tb)), diff);
  expect_near(values(ef::mul(ta, tb)), prod);
  expect_near(values(ef::div(ta, tb)), quot);
  expect_near(values(ef::pow(ta, tb)), pw, 1e-10);
  EXPECT_EQ(ef::equal(ta, ta).to_vector<bool>(), (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(ef::not_equal(ta, tb).to_vector<bool>(), (std::vector<bool>{true, true, true, true}));
  // Broadcasting a row against a column.
  Tensor col = Z({{1, 1}, {0, 2}}, Shape{2, 1}), row = Z({{3, 0}, {0, -1}, {1, 1}}, Shape{1, 3});
  Tensor p = ef::mul(col, row);
  EXPECT_EQ(p.shape(), (Shape{2, 3}));
  expect_near(values(p), {C(1, 1) * C(3, 0), C(1, 1) * C(0, -1), C(1, 1) * C(1, 1), C(0, 2) * C(3, 0),
                          C(0, 2) * C(0, -1), C(0, 2) * C(1, 1)});
  // Complex numbers are not ordered.
  EXPECT_THROW(ef::less(ta, tb), ef::Error);
  EXPECT_THROW(ef::maximum(ta, tb), ef::Error);
  EXPECT_THROW(ef::relu(ta), ef::Error);
  // Mixed dtypes are an error, as TF's.
  EXPECT_THROW(ef::add(ta, ef::tensor(std::vector<double>{1, 2, 3, 4})), ef::Error);
}

TEST(Complex, UnaryFunctionsMatchStdComplex) {
  std::vector<C> z{{0.3, 0.4}, {-1.2, 0.7}, {2.0, -0.5}, {0.1, -1.5}};
  Tensor t = Z(z);
  auto check = [&](Tensor (*f)(const Tensor&), C (*g)(const C&)) {
    std::vector<C> want;
    for (C v : z) want.push_back(g(v));
    expect_near(values(f(t)), want, 1e-12);
  };
  check(ef::exp, [](const C& v) { return std::exp(v); });
  check(ef::log, [](const C& v) { return std::log(v); });
  check(ef::sqrt, [](const C& v) { return std::sqrt(v); });
  check(ef::sin, [](const C& v) { return std::sin(v); });
  check(ef::cos, [](const C& v) { return std::cos(v); });
  check(ef::tanh, [](const C& v) { return std::tanh(v); });
  check(ef::asinh, [](const C& v) { return std::asinh(v); });
  check(ef::atan, [](const C& v) { return std::atan(v); });
  check(ef::square, [](const C& v) { return v * v; });
  check(ef::neg, [](const C& v) { return -v; });
  check(ef::conj, [](const C& v) { return std::conj(v); });
  check(ef::expm1, [](const C& v) { return std::exp(v) - 1.0; });
  // expm1 keeps its digits near 0, where exp(z) - 1 loses them.
  C tiny(1e-10, 2e-10);
  expect_near(values(ef::expm1(Z({tiny}))), {tiny + tiny * tiny / 2.0}, 1e-15);
  std::vector<double> mod = ef::abs(t).to_vector<double>(), arg = ef::angle(t).to_vector<double>();
  for (std::size_t i = 0; i < z.size(); ++i) {
    EXPECT_NEAR(mod[i], std::abs(z[i]), 1e-15);
    EXPECT_NEAR(arg[i], std::arg(z[i]), 1e-15);
  }
  EXPECT_EQ(ef::abs(t).dtype(), ef::DType::float64);
  // angle of reals: pi for negatives.
  EXPECT_EQ(ef::angle(ef::tensor({-2.0f, 3.0f})).to_vector<float>(), (std::vector<float>{static_cast<float>(M_PI), 0.0f}));
}

TEST(Complex, CastsReductionsAndMovement) {
  Tensor z = Z({{1.5, -2}, {3, 0.25}, {-1, 1}, {0, 4}}, Shape{2, 2});
  // To a real dtype: the real part (TF's tf.cast); from reals: imaginary part zero.
  EXPECT_EQ(ef::cast(z, ef::DType::float32).to_vector<float>(), (std::vector<float>{1.5f, 3, -1, 0}));
  EXPECT_EQ(ef::cast(z, ef::DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 3, -1, 0}));
  Tensor z64 = ef::cast(z, ef::DType::complex64);
  EXPECT_EQ(z64.dtype(), ef::DType::complex64);
  expect_near(values(z64), values(z), 1e-7);
  expect_near(values(ef::cast(ef::tensor({2.0f, -1.0f}), ef::DType::complex128)), {{2, 0}, {-1, 0}});
  expect_near(values(ef::sum(z, {0})), {{0.5, -1}, {3, 4.25}});
  expect_near(values(ef::mean(z)), {{3.5 / 4, 3.25 / 4}});
  // Ops that move elements take complex tensors as they are.
  expect_near(values(ef::transpose(z)), {{1.5, -2}, {-1, 1}, {3, 0.25}, {0, 4}});
  expect_near(values(ef::reshape(z, {4})), values(z));
  expect_near(values(ef::slice(z, {1, 0}, {2, 2})), {{-1, 1}, {0, 4}});
  expect_near(values(ef::concat({z, z}, 0)), [&] {
    auto v = values(z);
    v.insert(v.end(), v.begin(), v.end());
    return v;
  }());
  expect_near(values(ef::gather(z, ef::tensor(std::vector<std::int64_t>{1}), 0)), {{-1, 1}, {0, 4}});
  expect_near(values(ef::broadcast_to(Z({{1, 1}}), {3})), {{1, 1}, {1, 1}, {1, 1}});
  expect_near(values(ef::where(ef::tensor(std::vector<bool>{true, false}), Z({{1, 1}, {2, 2}}), Z({{3, 3}, {4, 4}}))),
              {{1, 1}, {4, 4}});
  expect_near(values(ef::zeros_like(z)), std::vector<C>(4));
  expect_near(values(ef::ones({2}, ef::DType::complex64)), {{1, 0}, {1, 0}});
  // Kernels without a complex form name the op.
  try {
    ef::max(z);
    FAIL() << "max took a complex tensor";
  } catch (const ef::Error& e) {
    EXPECT_NE(std::string(e.what()).find("complex"), std::string::npos) << e.what();
  }
}

TEST(Complex, MatmulWithTransposeAndConjugateFlags) {
  Tensor a = Z({{1, 2}, {0, -1}, {3, 0.5}, {-2, 1}, {0.5, 0.5}, {1, -3}}, Shape{2, 3});
  Tensor b = Z({{2, 0}, {1, 1}, {-1, 2}, {0, 1}, {0.5, -0.5}, {3, 0}}, Shape{3, 2});
  auto av = values(a), bv = values(b);
  auto A = [&](int i, int j) { return av[static_cast<std::size_t>(i * 3 + j)]; };
  auto B = [&](int i, int j) { return bv[static_cast<std::size_t>(i * 2 + j)]; };
  std::vector<C> want(4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want[static_cast<std::size_t>(i * 2 + j)] += A(i, k) * B(k, j);
  expect_near(values(ef::matmul(a, b)), want);
  // adjoint(a^H) @ b^T-style flags: a^H is [3, 2]; a^H @ conj(a^H)^H = a^H a.
  Tensor gram = ef::matmul_conj(a, a, true, false, true, false);  // a^H a, [3, 3]
  auto g = values(gram);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      C s;
      for (int k = 0; k < 2; ++k) s += std::conj(A(k, i)) * A(k, j);
      EXPECT_NEAR(std::abs(g[static_cast<std::size_t>(i * 3 + j)] - s), 0.0, 1e-12);
    }
  // Conjugating without transposing, and batches broadcast against one matrix.
  Tensor ca = ef::matmul_conj(a, b, false, false, true, false);
  expect_near(values(ca), values(ef::matmul(ef::conj(a), b)));
  Tensor batch = ef::stack({a, ef::mul(a, Z({{0, 1}}))}, 0);  // [2, 2, 3]
  Tensor out = ef::matmul(batch, b);
  EXPECT_EQ(out.shape(), (Shape{2, 2, 2}));
  auto ov = values(out);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(std::abs(ov[4 + i] - C(0, 1) * want[i]), 0.0, 1e-12);
}

// A direct DFT, the reference for the FFTs.
std::vector<C> dft(const std::vector<C>& x, bool inverse) {
  std::size_t n = x.size();
  std::vector<C> out(n);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t j = 0; j < n; ++j)
      out[k] += x[j] * std::polar(1.0, (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>(j * k % n) / static_cast<double>(n));
  if (inverse)
    for (C& v : out) v /= static_cast<double>(n);
  return out;
}

TEST(Complex, FftMatchesTheDirectTransformAtEveryLength) {
  for (std::int64_t n : {1, 2, 3, 5, 8, 12, 17, 64, 97}) {
    std::vector<C> x;
    for (std::int64_t i = 0; i < n; ++i) x.emplace_back(std::sin(0.7 * i + 1), std::cos(1.3 * i) - 0.2);
    Tensor t = Z(x);
    expect_near(values(ef::signal::fft(t)), dft(x, false), 1e-11);
    expect_near(values(ef::signal::ifft(t)), dft(x, true), 1e-11);
    expect_near(values(ef::signal::ifft(ef::signal::fft(t))), x, 1e-12);
  }
  // complex64 computes in double and rounds once.
  std::vector<C> x{{1, 0}, {2, -1}, {0, 3}, {-1, 0.5}, {4, 4}};
  expect_near(values(ef::signal::fft(ef::cast(Z(x), ef::DType::complex64))), dft(x, false), 1e-6);
}

TEST(Complex, Fft2dAndBatchesTransformTheInnerAxes) {
  // [2 batches, 3, 4]: a 2-D DFT is a DFT of the rows then of the columns.
  std::vector<C> x;
  for (int i = 0; i < 24; ++i) x.emplace_back(0.1 * i * i - 1, std::sin(i));
  Tensor t = Z(x, Shape{2, 3, 4});
  std::vector<C> want;
  for (int b = 0; b < 2; ++b) {
    std::vector<std::vector<C>> rows(3);
    for (int r = 0; r < 3; ++r) rows[r] = dft(std::vector<C>(x.begin() + b * 12 + r * 4, x.begin() + b * 12 + r * 4 + 4), false);
    std::vector<C> block(12);
    for (int c = 0; c < 4; ++c) {
      std::vector<C> col{rows[0][c], rows[1][c], rows[2][c]};
      auto f = dft(col, false);
      for (int r = 0; r < 3; ++r) block[r * 4 + c] = f[r];
    }
    want.insert(want.end(), block.begin(), block.end());
  }
  expect_near(values(ef::signal::fft2d(t)), want, 1e-11);
  expect_near(values(ef::signal::ifft2d(ef::signal::fft2d(t))), x, 1e-12);
  expect_near(values(ef::signal::ifft3d(ef::signal::fft3d(t))), x, 1e-12);
}

TEST(Complex, RealFftKeepsTheNonnegativeFrequencies) {
  std::vector<double> x{1, 2, 3, 4, 5};
  Tensor f = ef::signal::rfft(ef::tensor(x));
  EXPECT_EQ(f.dtype(), ef::DType::complex128);
  std::vector<C> full = dft({1, 2, 3, 4, 5}, false);
  expect_near(values(f), {full[0], full[1], full[2]});
  // TF's documented example: [15, -2.5+3.44j, -2.5+0.81j].
  EXPECT_NEAR(values(f)[1].imag(), 3.440954801177934, 1e-12);
  // Cropping and zero-padding to fft_length.
  expect_near(values(ef::signal::rfft(ef::tensor(x), {3})), {{6, 0}, {-1.5, std::sqrt(3) / 2}});
  std::vector<C> padded = dft({1, 2, 3, 4, 5, 0, 0, 0}, false);
  expect_near(values(ef::signal::rfft(ef::tensor(x), {8})), std::vector<C>(padded.begin(), padded.begin() + 5));
  // irfft inverts it, for even and odd lengths.
  expect_near(values(ef::cast(ef::signal::irfft(f, {5}), ef::DType::complex128)), {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}}, 1e-12);
  Tensor even = ef::tensor(std::vector<double>{0.5, -1, 2, 7, 3, 1});
  EXPECT_EQ(ef::signal::irfft(ef::signal::rfft(even)).shape(), (Shape{6}));
  auto back = ef::signal::irfft(ef::signal::rfft(even)).to_vector<double>();
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i], even.to_vector<double>()[i], 1e-12);
  // 2-D: irfft2d(rfft2d(x)) == x.
  Tensor img = ef::reshape(ef::cast(ef::arange(0, 12, 1, ef::DType::float32), ef::DType::float32), {3, 4});
  Tensor round = ef::signal::irfft(ef::signal::rfft(img, {}, 2), {3, 4}, 2);
  auto r = round.to_vector<float>(), want = img.to_vector<float>();
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_NEAR(r[i], want[i], 1e-5);
  EXPECT_THROW(ef::signal::fft(ef::tensor({1.0f})), ef::Error);   // fft takes complex
  EXPECT_THROW(ef::signal::rfft(Z({{1, 0}})), ef::Error);         // rfft takes reals
}

// TF's convention: d real(L)/dz = dL/dx + i dL/dy.
TEST(Complex, GradientsFollowTfsConvention) {
  Tensor z = Z({{1, 2}, {3, -1}});
  ef::GradientTape tape;
  tape.watch(z);
  Tensor y = ef::sum(ef::abs(ef::mul(z, z)));
  Tensor g = tape.gradient(y, z);
  expect_near(values(g), {{2, 4}, {6, -2}});  // TF 2.21 gives these
  // A complex target is seeded with ones: conj(f'(z)).
  ef::GradientTape tape2;
  tape2.watch(z);
  Tensor sq = ef::mul(z, z);
  expect_near(values(tape2.gradient(sq, z)), {{2, -4}, {6, 2}});
  // real and imag of a function of real inputs: the real chain rule.
  Tensor x = ef::tensor(std::vector<double>{0.3, -0.7}), w = ef::tensor(std::vector<double>{1.1, 0.4});
  ef::GradientTape tape3(true);
  tape3.watch(x);
  tape3.watch(w);
  Tensor e = ef::exp(ef::complex(x, w));  // e^x (cos w + i sin w)
  Tensor loss = ef::sum(ef::add(ef::real(e), ef::mul(ef::imag(e), ef::scalar(2.0))));
  auto gx = tape3.gradient(loss, x).to_vector<double>(), gw = tape3.gradient(loss, w).to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    double xi = x.to_vector<double>()[i], wi = w.to_vector<double>()[i];
    EXPECT_NEAR(gx[i], std::exp(xi) * (std::cos(wi) + 2 * std::sin(wi)), 1e-12);
    EXPECT_NEAR(gw[i], std::exp(xi) * (-std::sin(wi) + 2 * std::cos(wi)), 1e-12);
  }
}

// An integer target gives no gradient (TF returns None), not an error.
TEST(Complex, IntegerTargetsAndSourcesGetNoGradient) {
  Tensor x = ef::scalar(3.0f);
  ef::GradientTape tape(true);
  tape.watch(x);
  Tensor y = ef::cast(ef::mul(x, ef::scalar(2.0f)), ef::DType::int32);
  EXPECT_FALSE(tape.gradient(y, x).defined());
  Tensor xi = ef::scalar(std::int32_t{3});
  ef::GradientTape tape2;
  tape2.watch(xi);
  Tensor f = ef::mul(ef::cast(xi, ef::DType::float32), ef::scalar(2.0f));
  EXPECT_FALSE(tape2.gradient(f, xi).defined());
}

TEST(Complex, TracedEqualsEagerAndVmapBatches) {
  auto body = [](const Tensor& re, const Tensor& im) {
    Tensor z = ef::complex(re, im);
    Tensor f = ef::signal::fft(ef::mul(z, ef::exp(z)));
    Tensor inner = ef::matmul(ef::reshape(f, {1, 4}), ef::reshape(ef::conj(f), {4, 1}));
    return ef::concat({ef::abs(f), ef::reshape(ef::real(inner), {1})}, 0);
  };
  Tensor re = ef::tensor(std::vector<double>{0.1, 0.2, -0.3, 0.4}), im = ef::tensor(std::vector<double>{1, 0, -1, 0.5});
  auto traced = ef::function([&](const Tensor& a, const Tensor& b) { return body(a, b); });
  EXPECT_EQ(traced(re, im).to_vector<double>(), body(re, im).to_vector<double>());
  Tensor re2 = ef::mul(re, ef::scalar(2.0));
  EXPECT_EQ(traced(re2, im).to_vector<double>(), body(re2, im).to_vector<double>());
  EXPECT_EQ(traced.tracing_count(), 1);
  // vmap over a batch of signals gives each one's transform.
  auto per = [](const Tensor& a, const Tensor& b) { return ef::abs(ef::signal::fft(ef::complex(a, b))); };
  Tensor v = ef::vmap(per)(ef::stack({re, re2}, 0), ef::stack({im, im}, 0));
  auto vv = v.to_vector<double>(), sv = per(re2, im).to_vector<double>();
  ASSERT_EQ(vv.size(), 8u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(vv[4 + i], sv[i], 1e-12);
}

}  // namespace

namespace {

TEST(Complex, EigOfGeneralMatricesSatisfiesAvEqualsLambdaV) {
  // A rotation: eigenvalues +-i; a nonsymmetric real matrix with real eigenvalues 2 and 3.
  Tensor rot = ef::tensor({{0.0f, -1.0f}, {1.0f, 0.0f}});
  Tensor w = ef::linalg::eigvals(rot);
  EXPECT_EQ(w.dtype(), ef::DType::complex64);
  auto wv = values(w);
  EXPECT_NEAR(std::abs(wv[0] * wv[1] - C(1, 0)), 0.0, 1e-6);  // i * -i
  EXPECT_NEAR(std::abs(wv[0] + wv[1]), 0.0, 1e-6);
  Tensor a = ef::tensor(std::vector<double>{4, 1, -2, 1}, Shape{2, 2});  // eigenvalues 2 and 3
  auto [values_t, vectors] = ef::linalg::eig(a);
  EXPECT_EQ(values_t.dtype(), ef::DType::complex128);
  // A V = V diag(w), column by column; each column of unit norm.
  Tensor av = ef::matmul(ef::cast(a, ef::DType::complex128), vectors);
  Tensor vw = ef::mul(vectors, ef::reshape(values_t, {1, 2}));
  expect_near(values(av), values(vw), 1e-12);
  auto v = values(vectors);
  for (int c = 0; c < 2; ++c) EXPECT_NEAR(std::norm(v[c]) + std::norm(v[2 + c]), 1.0, 1e-12);
  auto ev = values(values_t);
  std::vector<double> re{ev[0].real(), ev[1].real()};
  std::sort(re.begin(), re.end());
  EXPECT_NEAR(re[0], 2, 1e-12);
  EXPECT_NEAR(re[1], 3, 1e-12);
  EXPECT_THROW(ef::linalg::eig(ef::tensor({1.0f, 2.0f})), ef::Error);  // not a matrix
  EXPECT_THROW(ef::linalg::eig(ef::tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3})), ef::Error);
}

}  // namespace
