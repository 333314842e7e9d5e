// gather_nd, scatter_nd and tensor_scatter_nd_* (eagerflow/ops/scatter_nd.h): values against
// hand-computed references, repeated rows, gradients by central differences, errors with their
// kinds, eager == traced, saving and ONNX export.
#include <eagerflow/ops/scatter_nd.h>
#include <eagerflow/autodiff/vmap.h>
#include <eagerflow/function/function.h>
#include <eagerflow/saving/onnx.h>
#include <eagerflow/saving/saved_model.h>

#include <filesystem>

#include "test_util.h"

namespace {

using namespace ef;
using ef::testing::expect_error;

Tensor ints(std::vector<std::int64_t> v, Shape s) { return tensor(v, s); }
std::vector<double> values(const Tensor& t) { return cast(t, DType::float64).to_vector<double>(); }

Tensor params() { return reshape(arange(0.0, 24.0, 1.0, DType::float32), Shape{2, 3, 4}); }

TEST(ScatterNd, GatherNdPicksElementsRowsAndMatrices) {
  Tensor p = params();
  EXPECT_EQ(values(gather_nd(p, ints({1, 2, 3, 0, 1, 0}, Shape{2, 3}))), (std::vector<double>{23, 4}));
  Tensor rows = gather_nd(p, ints({1, 0, 0, 2}, Shape{2, 2}));  // [2, 4]: p[1, 0, :], p[0, 2, :]
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
  EXPECT_EQ(values(rows), (std::vector<double>{12, 13, 14, 15, 8, 9, 10, 11}));
  Tensor mats = gather_nd(p, tensor(std::vector<std::int32_t>{1, 1, 0}, Shape{3, 1}));
  EXPECT_EQ(mats.shape(), (Shape{3, 3, 4}));
  EXPECT_EQ(values(mats)[0], 12.0);
  EXPECT_EQ(values(mats)[24], 0.0);
  // Depth 0: the whole tensor per row.
  EXPECT_EQ(gather_nd(p, zeros(Shape{2, 0}, DType::int64)).shape(), (Shape{2, 2, 3, 4}));
  // No rows at all.
  EXPECT_EQ(gather_nd(p, zeros(Shape{0, 2}, DType::int64)).shape(), (Shape{0, 4}));
}

TEST(ScatterNd, GatherNdBatchDimsGatherWithinEachBatch) {
  Tensor p = params();
  Tensor idx = ints({2, 0, 1, 1}, Shape{2, 2, 1});  // batch 0 rows 2, 0; batch 1 rows 1, 1
  Tensor g = gather_nd(p, idx, /*batch_dims=*/1);
  EXPECT_EQ(g.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(values(g), (std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3, 16, 17, 18, 19, 16, 17, 18, 19}));
  expect_error([&] { gather_nd(p, ints({0, 0, 0}, Shape{3, 1}), 1); }, {"gather_nd", "batch dim 0 differs"});
  expect_error([&] { gather_nd(p, idx, 3); }, {"gather_nd", "batch_dims"});
}

TEST(ScatterNd, TensorScatterModesAndRepeatedRows) {
  Tensor t = tensor(std::vector<float>{1, 5, 3, -2}, Shape{4});
  Tensor idx = ints({1, 3, 1}, Shape{3, 1});
  Tensor u = tensor(std::vector<float>{10, 0, 2}, Shape{3});
  EXPECT_EQ(values(tensor_scatter_nd_update(t, idx, u)), (std::vector<double>{1, 2, 3, 0}));  // the last write stays
  EXPECT_EQ(values(tensor_scatter_nd_add(t, idx, u)), (std::vector<double>{1, 17, 3, -2}));
  EXPECT_EQ(values(tensor_scatter_nd_sub(t, idx, u)), (std::vector<double>{1, -7, 3, -2}));
  EXPECT_EQ(values(tensor_scatter_nd_min(t, idx, u)), (std::vector<double>{1, 2, 3, -2}));
  EXPECT_EQ(values(tensor_scatter_nd_max(t, idx, u)), (std::vector<double>{1, 10, 3, 0}));
  EXPECT_EQ(values(t), (std::vector<double>{1, 5, 3, -2}));  // the input is not changed
  Tensor z = scatter_nd(ints({0, 0, 2, 0}, Shape{2, 2}), tensor(std::vector<std::int32_t>{4, 5}, Shape{2}), Shape{3, 2});
  EXPECT_EQ(z.dtype(), DType::int32);
  EXPECT_EQ(z.to_vector<std::int32_t>(), (std::vector<std::int32_t>{4, 0, 0, 0, 5, 0}));
  Tensor flags = tensor_scatter_nd_update(zeros(Shape{3}, DType::bool_), ints({2}, Shape{1, 1}), ones(Shape{1}, DType::bool_));
  EXPECT_EQ(values(flags), (std::vector<double>{0, 0, 1}));
}

TEST(ScatterNd, ErrorsNameTheRowAndHaveKinds) {
  Tensor p = params();
  try {
    gather_nd(p, ints({0, 0, 1, 3}, Shape{2, 2}));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("indices[1] = [1, 3] does not index into param shape [2, 3, 4]"), std::string::npos) << e.what();
  }
  expect_error([&] { gather_nd(p, ints({-1}, Shape{1, 1})); }, {"indices[0] = [-1]"});
  expect_error([&] { gather_nd(p, ints({0, 0, 0, 0}, Shape{1, 4})); }, {"index depth 4", "rank"});
  expect_error([&] { gather_nd(p, tensor(std::vector<float>{0}, Shape{1, 1})); }, {"int32 or int64"});
  Tensor t = zeros(Shape{4});
  expect_error([&] { tensor_scatter_nd_update(t, ints({4}, Shape{1, 1}), ones(Shape{1})); }, {"does not index into tensor shape [4]"});
  expect_error([&] { tensor_scatter_nd_add(t, ints({1}, Shape{1, 1}), ones(Shape{2})); }, {"updates", "[1]"});
  expect_error([&] { tensor_scatter_nd_add(t, ints({1}, Shape{1, 1}), ones(Shape{1}, DType::float64)); }, {"dtype"});
  expect_error([&] { tensor_scatter_nd_add(zeros(Shape{2}, DType::bool_), ints({1}, Shape{1, 1}), ones(Shape{1}, DType::bool_)); },
               {"bool"});
  expect_error([&] { scatter_nd(ints({1}, Shape{1, 1}), ones(Shape{1}), Shape{kDynamic}); }, {"scatter_nd", "shape"});
}

// Central differences of sum(f(x) * w) in float64.
void expect_gradient_matches_differences(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  Tensor w = ef::testing::randn(f(x).shape(), 7);
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(f(x) * w), x);
  std::vector<double> xv = values(x), gv = values(g);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    auto at = [&](double d) {
      std::vector<double> v = xv;
      v[i] += d;
      return sum(f(tensor(v, x.shape())) * w).item<double>();
    };
    EXPECT_NEAR(gv[i], (at(1e-6) - at(-1e-6)) / 2e-6, 1e-6) << i;
  }
}

TEST(ScatterNd, GradientsMatchCentralDifferences) {
  Tensor idx = ints({2, 0, 2}, Shape{3, 1});
  Tensor base = ef::testing::randn(Shape{4, 2}, 1);
  Tensor upd = ef::testing::randn(Shape{3, 2}, 2);
  expect_gradient_matches_differences([&](const Tensor& x) { return gather_nd(x, ints({1, 1, 3, 0, 1, 1}, Shape{3, 2})); }, base);
  expect_gradient_matches_differences([&](const Tensor& x) { return gather_nd(reshape(x, Shape{2, 2, 2}), ints({1, 0, 1}, Shape{1, 3}), 0); }, base);
  Tensor distinct = ints({2, 0, 3}, Shape{3, 1});
  for (auto fn : {tensor_scatter_nd_update, tensor_scatter_nd_add, tensor_scatter_nd_sub, tensor_scatter_nd_min, tensor_scatter_nd_max}) {
    expect_gradient_matches_differences([&](const Tensor& x) { return fn(x, distinct, upd); }, base);
    expect_gradient_matches_differences([&](const Tensor& u) { return fn(base, distinct, u); }, upd);
  }
  // Repeated rows add up.
  expect_gradient_matches_differences([&](const Tensor& u) { return tensor_scatter_nd_add(base, idx, u); }, upd);
}

TEST(ScatterNd, TracedEqualsEagerAndSavesAndExports) {
  Tensor p = params();
  Tensor idx = ints({1, 2, 0, 1}, Shape{2, 2});
  auto body = [&](const Tensor& x) {
    Tensor picked = gather_nd(x, idx);  // [2, 4]
    Tensor updated = tensor_scatter_nd_update(x, idx, picked * 2.0f);
    return tensor_scatter_nd_add(updated, idx, picked) + tensor_scatter_nd_sub(x, idx, picked);
  };
  Tensor eager = body(p);
  auto f = function(body);
  EXPECT_EQ(values(f(p)), values(eager));
  auto dir = ef::testing::fresh_temp_dir("scatter_nd");
  save(f, (dir / "model").string());
  SavedModel loaded = load((dir / "model").string());
  EXPECT_EQ(values(loaded("serving_default", {p})[0]), values(eager));
  onnx::export_model(*f.get_concrete_function(TensorSpec{DType::float32, Shape{2, 3, 4}, {}}), (dir / "nd.onnx").string());
  EXPECT_GT(std::filesystem::file_size(dir / "nd.onnx"), 100u);
  auto g = function([&](const Tensor& x) { return tensor_scatter_nd_max(x, idx, gather_nd(x, idx)); });
  expect_error([&] { onnx::export_model(*g.get_concrete_function(TensorSpec{DType::float32, Shape{2, 3, 4}, {}}), (dir / "m.onnx").string()); },
               {"tensor_scatter_nd_max", "opset 18"});
  std::filesystem::remove_all(dir);
}

TEST(ScatterNd, VmapBatchesIntoOneGather) {
  Tensor xs = reshape(arange(0.0, 12.0, 1.0, DType::float32), Shape{3, 4});
  Tensor idx = tensor(std::vector<std::int64_t>{3, 0}, Shape{2, 1});
  Tensor got = vmap([&](const Tensor& x) { return gather_nd(x, idx); })(xs);
  EXPECT_EQ(values(got), (std::vector<double>{3, 0, 7, 4, 11, 8}));
}

}  // namespace
