// set_weights and the bulk loaders check everything first: one bad entry (count, shape, dtype)
// is an error that leaves every weight as it was.
#include <cstring>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

std::shared_ptr<train::Sequential> mlp() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(4, "relu");
  model->add<nn::Dense>(2);
  model->build(Shape{kDynamic, 3});
  return model;
}

std::vector<std::vector<float>> values_of(const nn::Layer& layer) {
  std::vector<std::vector<float>> out;
  for (const auto& v : layer.weights()) out.push_back(v.value().to_vector<float>());
  return out;
}

}  // namespace

TEST(SetWeights, RoundTripsAndAssignsAll) {
  random::set_seed(1);
  auto a = mlp(), b = mlp();
  b->set_weights(a->get_weights());
  EXPECT_EQ(values_of(*a), values_of(*b));
}

TEST(SetWeights, OneBadShapeAssignsNothing) {
  random::set_seed(2);
  auto model = mlp();
  auto before = values_of(*model);
  // Every position of the bad entry: the ones before it must not have been assigned.
  for (std::size_t bad = 0; bad < before.size(); ++bad) {
    std::vector<Tensor> values;
    for (const auto& v : model->weights()) values.push_back(ones(v.shape(), v.dtype()));
    Shape s = values[bad].shape();
    std::vector<std::int64_t> dims = s.dims();
    dims.back() += 1;
    values[bad] = ones(Shape(dims));
    expect_error([&] { model->set_weights(values); }, {"set_weights", "nothing was assigned", "shape"});
    EXPECT_EQ(values_of(*model), before) << "bad entry " << bad;
  }
}

TEST(SetWeights, WrongCountOrDtypeAssignsNothing) {
  auto model = mlp();
  auto before = values_of(*model);
  std::vector<Tensor> values;
  for (const auto& v : model->weights()) values.push_back(ones(v.shape(), v.dtype()));
  std::vector<Tensor> fewer(values.begin(), values.end() - 1);
  expect_error([&] { model->set_weights(fewer); }, {"set_weights", "3 values", "4 weights"});
  std::vector<Tensor> wrong_dtype = values;
  wrong_dtype.back() = ones(values.back().shape(), DType::float64);
  expect_error([&] { model->set_weights(wrong_dtype); }, {"float64", "nothing was assigned"});
  std::vector<Tensor> undefined = values;
  undefined[1] = Tensor();
  expect_error([&] { model->set_weights(undefined); }, {"undefined"});
  EXPECT_EQ(values_of(*model), before);
  // A layer alone, as Keras' Layer.set_weights.
  const nn::Layer& dense = *model->stack()[1];
  auto dense_before = values_of(dense);
  expect_error([&] { train::set_layer_weights(*model->stack()[1], {ones({4, 2}), ones({3})}); }, {"shape"});
  EXPECT_EQ(values_of(dense), dense_before);
  train::set_layer_weights(*model->stack()[1], {ones({4, 2}), ones({2})});
  EXPECT_EQ(values_of(dense)[1], (std::vector<float>{1.0f, 1.0f}));
}

TEST(SetWeights, LoadWeightsWithOneBadEntryLeavesTheModel) {
  auto dir = ef::testing::fresh_temp_dir("set_weights_load");
  auto model = mlp();
  std::string path = (dir / "w.safetensors").string();
  // A file whose last entry has another shape: the entries before it must not load.
  auto keyed = train::weights_by_key(*model);
  std::vector<io::NamedTensor> tensors;
  for (std::size_t i = 0; i < keyed.size(); ++i)
    tensors.push_back({keyed[i].first, i + 1 == keyed.size() ? ones({5}) : ones(keyed[i].second.shape())});
  io::save_safetensors(path, tensors, {{"format", "eagerflow-weights"}, {"version", "1"}});
  auto before = values_of(*model);
  expect_error([&] { model->load_weights(path); }, {"mismatch", "nothing was loaded"});
  EXPECT_EQ(values_of(*model), before);
}
