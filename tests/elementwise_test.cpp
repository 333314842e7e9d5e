#include <functional>
#include <limits>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

namespace {

// Reference broadcasting by explicit index arithmetic, independent of the library's kernels.
std::vector<float> ref_binary(const Tensor& a, const Tensor& b, const Shape& out,
                              const std::function<float(float, float)>& f) {
  auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  std::vector<float> r(static_cast<std::size_t>(out.num_elements()));
  for (std::int64_t i = 0; i < out.num_elements(); ++i) {
    std::int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (int d = out.rank() - 1; d >= 0; --d) {
      std::int64_t idx = rem % out[d];
      rem /= out[d];
      int da = d - (out.rank() - a.rank()), db = d - (out.rank() - b.rank());
      if (da >= 0) { ia += (a.shape()[da] == 1 ? 0 : idx) * sa; sa *= a.shape()[da]; }
      if (db >= 0) { ib += (b.shape()[db] == 1 ? 0 : idx) * sb; sb *= b.shape()[db]; }
    }
    r[static_cast<std::size_t>(i)] = f(av[static_cast<std::size_t>(ia)], bv[static_cast<std::size_t>(ib)]);
  }
  return r;
}

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<float(float, float)> ref;
};

}  // namespace

TEST(Binary, MatchesReferenceWithBroadcasting) {
  random::set_seed(1);
  std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return ef::add(a, b); }, [](float x, float y) { return x + y; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return ef::sub(a, b); }, [](float x, float y) { return x - y; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return ef::mul(a, b); }, [](float x, float y) { return x * y; }},
      {"div", [](const Tensor& a, const Tensor& b) { return ef::div(a, b); }, [](float x, float y) { return x / y; }},
      {"pow", [](const Tensor& a, const Tensor& b) { return ef::pow(a, b); }, [](float x, float y) { return std::pow(x, y); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return ef::maximum(a, b); }, [](float x, float y) { return std::max(x, y); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return ef::minimum(a, b); }, [](float x, float y) { return std::min(x, y); }},
  };
  std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {3, 1}}, {{}, {2, 2}},
      {{5}, {}}, {{0, 4}, {4}}, {{2, 1, 3}, {2, 4, 1}}, {{300, 257}, {257}}};
  for (const auto& c : cases)
    for (const auto& [sa, sb] : shapes) {
      Tensor a = random::uniform(sa, 0.5, 2.0), b = random::uniform(sb, 0.5, 2.0);
      Tensor r = c.op(a, b);
      SCOPED_TRACE(std::string(c.name) + " " + sa.str() + " " + sb.str());
      expect_close(r.to_vector<float>(), ref_binary(a, b, r.shape(), c.ref));
    }
}

TEST(Binary, ComparisonsAndLogicalGiveBool) {
  Tensor a = tensor({1.f, 2.f, 3.f}), b = tensor({2.f, 2.f, 2.f});
  EXPECT_EQ(less(a, b).dtype(), DType::bool_);
  EXPECT_EQ(less(a, b).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(less_equal(a, b).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(greater(a, b).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(greater_equal(a, b).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(equal(a, b).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(not_equal(a, b).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  Tensor p = tensor(std::vector<bool>{true, true, false}), q = tensor(std::vector<bool>{true, false, false});
  EXPECT_EQ(logical_and(p, q).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(logical_or(p, q).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(logical_not(p).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ((a > 1.5f).to_vector<bool>(), (std::vector<bool>{false, true, true}));
}

TEST(Binary, ScalarsAdoptTheTensorDtype) {
  Tensor i = tensor(std::vector<std::int32_t>{1, 2, 3});
  Tensor r = i * 2.0;
  EXPECT_EQ(r.dtype(), DType::int32);
  EXPECT_EQ(r.to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, 4, 6}));
  EXPECT_EQ((1.0f - tensor({0.25f})).to_vector<float>(), (std::vector<float>{0.75f}));
  EXPECT_EQ((tensor({3.f}) / 2).to_vector<float>(), (std::vector<float>{1.5f}));
  EXPECT_EQ(pow(i, tensor(std::vector<std::int32_t>{3, 0, 2})).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 1, 9}));
}

TEST(Binary, NaNAndInfPropagate) {
  float nan = std::nanf(""), inf = INFINITY;
  Tensor a = tensor({nan, 1.f, inf, -inf}), b = tensor({1.f, nan, 1.f, 1.f});
  expect_close(add(a, b).to_vector<float>(), {nan, nan, inf, -inf});
  expect_close(maximum(a, b).to_vector<float>(), {nan, nan, inf, 1.f});
  expect_close(minimum(a, b).to_vector<float>(), {nan, nan, 1.f, -inf});
  expect_close(relu(a).to_vector<float>(), {nan, 1.f, inf, 0.f});
  expect_close(exp(tensor({-inf, inf})).to_vector<float>(), {0.f, inf});
}

TEST(Binary, Errors) {
  Tensor f = zeros({2, 3}), i = zeros({2, 3}, DType::int32);
  expect_error([&] { add(f, i); }, {"[add]", "float32[2,3]", "int32[2,3]", "dtypes differ"});
  expect_error([&] { mul(zeros({2, 3}), zeros({4})); }, {"[mul]", "cannot broadcast", "float32[2,3]", "float32[4]"});
  expect_error([&] { logical_and(f, f); }, {"[logical_and]", "bool"});
  expect_error([&] { add(zeros({2}, DType::bool_), zeros({2}, DType::bool_)); }, {"[add]", "bool"});
  expect_error([&] { div(i, zeros({2, 3}, DType::int32)); }, {"[div]", "division by zero"});
  expect_error([&] { add(f, Tensor()); }, {"[add]", "undefined"});
}

TEST(Unary, MatchesReference) {
  random::set_seed(2);
  Tensor x = random::uniform({1000}, -3, 3);
  auto xv = x.to_vector<float>();
  auto check = [&](const char* name, Tensor (*op)(const Tensor&), float (*ref)(float)) {
    SCOPED_TRACE(name);
    std::vector<float> want;
    for (float v : xv) want.push_back(ref(v));
    expect_close(op(x).to_vector<float>(), want, 1e-5f);
  };
  check("neg", ef::neg, [](float v) { return -v; });
  check("abs", ef::abs, [](float v) { return std::fabs(v); });
  check("exp", ef::exp, [](float v) { return std::exp(v); });
  check("square", ef::square, [](float v) { return v * v; });
  check("relu", ef::relu, [](float v) { return v > 0 ? v : 0.f; });
  check("sigmoid", ef::sigmoid, [](float v) { return 1.f / (1.f + std::exp(-v)); });
  check("tanh", ef::tanh, [](float v) { return std::tanh(v); });
  check("gelu", ef::gelu, [](float v) { return 0.5f * v * (1.f + std::erf(v / std::sqrt(2.f))); });
  Tensor p = abs(x) + 0.1f;
  auto pv = p.to_vector<float>();
  std::vector<float> lg, sq, rs;
  for (float v : pv) { lg.push_back(std::log(v)); sq.push_back(std::sqrt(v)); rs.push_back(1 / std::sqrt(v)); }
  expect_close(log(p).to_vector<float>(), lg);
  expect_close(sqrt(p).to_vector<float>(), sq);
  expect_close(rsqrt(p).to_vector<float>(), rs);
  expect_close(sigmoid(tensor({-100.f, 100.f})).to_vector<float>(), {0.f, 1.f});
  expect_close(log(tensor({0.f, -1.f})).to_vector<float>(), {-INFINITY, std::nanf("")});
  expect_error([] { ef::exp(zeros({2}, DType::int32)); }, {"[exp]", "int32[2]"});
  expect_error([] { neg(zeros({2}, DType::bool_)); }, {"[neg]", "bool"});
  EXPECT_EQ(exp(zeros({0})).shape(), Shape({0}));
}

TEST(WhereAndCast, Work) {
  Tensor c = tensor(std::vector<bool>{true, false, true});
  Tensor r = where(c, tensor({1.f, 2.f, 3.f}), scalar(0.f));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 0, 3}));
  Tensor r2 = where(tensor(std::vector<bool>{true, false}, Shape{2, 1}), ones({2, 3}), zeros({3}));
  EXPECT_EQ(r2.to_vector<float>(), (std::vector<float>{1, 1, 1, 0, 0, 0}));
  expect_error([&] { where(ones({3}), ones({3}), ones({3})); }, {"[where]", "bool"});
  expect_error([&] { where(c, ones({3}), ones({3}, DType::int32)); }, {"[where]", "float32[3]", "int32[3]"});
  EXPECT_EQ(cast(tensor({1.7f, -1.7f, 0.f}), DType::int32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, -1, 0}));
  EXPECT_EQ(cast(tensor({0.5f, 0.f}), DType::bool_).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(cast(tensor(std::vector<bool>{true, false}), DType::float64).to_vector<double>(), (std::vector<double>{1, 0}));
  EXPECT_EQ(cast(tensor({std::nanf(""), 1e20f}), DType::int32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, 2147483647}));
}

TEST(Binary, IntegerArithmeticWrapsInsteadOfTrapping) {
  constexpr std::int32_t lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
  Tensor a = tensor(std::vector<std::int32_t>{lo, hi, lo, 7});
  Tensor b = tensor(std::vector<std::int32_t>{-1, 1, -1, -2});
  EXPECT_EQ(div(a, b).to_vector<std::int32_t>(), (std::vector<std::int32_t>{lo, hi, lo, -3}));  // no SIGFPE
  EXPECT_EQ(add(a, b).to_vector<std::int32_t>(), (std::vector<std::int32_t>{hi, lo, hi, 5}));
  EXPECT_EQ(sub(a, b).to_vector<std::int32_t>(), (std::vector<std::int32_t>{lo + 1, hi - 1, lo + 1, 9}));
  EXPECT_EQ(mul(a, b).to_vector<std::int32_t>(), (std::vector<std::int32_t>{lo, hi, lo, -14}));
  EXPECT_EQ(neg(a).to_vector<std::int32_t>(), (std::vector<std::int32_t>{lo, -hi, lo, -7}));
  EXPECT_EQ(ef::abs(a).to_vector<std::int32_t>(), (std::vector<std::int32_t>{lo, hi, lo, 7}));
  EXPECT_EQ(square(tensor(std::vector<std::int32_t>{65536})).item<std::int32_t>(), 0);
}
