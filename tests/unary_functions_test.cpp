// The trigonometric, hyperbolic and special unary ops (tan ... erfc): values against <cmath> in
// float64 and float32 on the vector kernels (long tensors) and the scalar path (short ones),
// domain edges, fused == unfused, ONNX export. Gradients are checked in the op table.
#include <eagerflow/function/function.h>
#include <eagerflow/saving/onnx.h>

#include <cmath>
#include <filesystem>

#include "test_util.h"

namespace {

using namespace ef;

struct Case {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  double lo, hi;
};

const Case kCases[] = {
    {"tan", tan, [](double v) { return std::tan(v); }, -1.4, 1.4},
    {"asin", asin, [](double v) { return std::asin(v); }, -1.0, 1.0},
    {"acos", acos, [](double v) { return std::acos(v); }, -1.0, 1.0},
    {"atan", atan, [](double v) { return std::atan(v); }, -50.0, 50.0},
    {"sinh", sinh, [](double v) { return std::sinh(v); }, -20.0, 20.0},
    {"cosh", cosh, [](double v) { return std::cosh(v); }, -20.0, 20.0},
    {"asinh", asinh, [](double v) { return std::asinh(v); }, -1e3, 1e3},
    {"acosh", acosh, [](double v) { return std::acosh(v); }, 1.0, 1e3},
    {"atanh", atanh, [](double v) { return std::atanh(v); }, -0.999, 0.999},
    {"expm1", expm1, [](double v) { return std::expm1(v); }, -30.0, 30.0},
    {"erfc", erfc, [](double v) { return std::erfc(v); }, -5.0, 9.0},
};

TEST(UnaryFunctions, MatchCmathInBothPrecisions) {
  for (const Case& c : kCases) {
    std::vector<double> xs;
    for (int i = 0; i <= 1000; ++i) xs.push_back(c.lo + (c.hi - c.lo) * i / 1000.0);
    Tensor x = tensor(xs, Shape{static_cast<std::int64_t>(xs.size())});
    std::vector<double> got = c.op(x).to_vector<double>();
    std::vector<float> got32 = c.op(cast(x, DType::float32)).to_vector<float>();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double want = c.ref(xs[i]);
      EXPECT_NEAR(got[i], want, 4e-15 * std::max(1.0, std::abs(want))) << c.name << "(" << xs[i] << ")";
      double want32 = c.ref(static_cast<float>(xs[i]));
      EXPECT_NEAR(got32[i], want32, 4e-6 * std::max(1.0, std::abs(want32))) << c.name << "(" << xs[i] << ") float32";
    }
    // A short tensor takes the same kernels: the same bits as the long one's first element.
    EXPECT_EQ(c.op(tensor(std::vector<double>{xs[0]}, Shape{1})).item<double>(), got[0]) << c.name;
  }
}

TEST(UnaryFunctions, EdgesAndDtypes) {
  EXPECT_TRUE(std::isnan(asin(scalar(1.5)).item<double>()));
  EXPECT_TRUE(std::isinf(atanh(scalar(1.0)).item<double>()));
  EXPECT_EQ(expm1(scalar(1e-300)).item<double>(), 1e-300);  // not exp(x) - 1 = 0
  EXPECT_EQ(erfc(scalar(30.0)).item<double>(), 0.0);
  EXPECT_THROW(tan(tensor(std::vector<std::int32_t>{1}, Shape{1})), Error);
}

TEST(UnaryFunctions, FusedEqualsEagerAndExports) {
  Tensor x = tensor(std::vector<float>{0.1f, -0.4f, 0.7f, 0.3f}, Shape{4});
  auto body = [](const Tensor& v) {
    return tan(v) + asin(v) + acos(v) + atan(v) + sinh(v) + cosh(v) + asinh(v) + acosh(v + 1.5f) + atanh(v) + expm1(v) + erfc(v);
  };
  Tensor eager = body(x);
  auto f = function(body);
  EXPECT_EQ(f(x).to_vector<float>(), eager.to_vector<float>());
  auto dir = ef::testing::fresh_temp_dir("unary_functions");
  onnx::export_model(*f.get_concrete_function(TensorSpec{DType::float32, Shape{4}, {}}), (dir / "u.onnx").string());
  EXPECT_GT(std::filesystem::file_size(dir / "u.onnx"), 100u);
  std::filesystem::remove_all(dir);
}

}  // namespace
