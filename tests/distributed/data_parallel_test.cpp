// DataParallel under `mpirun -np 2`: a distributed fit gives what one process gives for the
// same global batches (each rank also runs the one-process fit itself, as the reference).
#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>

#include <filesystem>

#include "../test_util.h"

namespace ef {
namespace {

using train::Sequential;

constexpr std::int64_t kFeatures = 20, kClasses = 10;

// Separable-ish data: labels from a fixed random linear map; the same on every rank.
std::pair<Tensor, Tensor> make_data(std::int64_t n) {
  Tensor x = random::stateless_normal({n, kFeatures}, 11, 0.0, 1.0, DType::float32);
  Tensor w = random::stateless_normal({kFeatures, kClasses}, 12, 0.0, 1.0, DType::float32);
  Tensor y = cast(argmax(matmul(x, w), 1), DType::int32);
  return {x, y};
}

std::shared_ptr<Sequential> make_mlp(std::shared_ptr<optim::Optimizer> opt) {
  random::set_seed(7);
  auto m = std::make_shared<Sequential>("mlp");
  m->add<nn::Dense>(32, nn::ActivationFn("relu"));
  m->add<nn::Dense>(kClasses, nn::ActivationFn("softmax"));
  m->build(Shape{kDynamic, kFeatures});  // weights drawn now: the same on every rank and in the reference
  m->compile(std::move(opt), train::LossRef("sparse_categorical_crossentropy"), {"accuracy"});
  return m;
}

double max_weight_difference(const train::Model& a, const train::Model& b) {
  double d = 0;
  auto wa = a.weights(), wb = b.weights();
  EXPECT_EQ(wa.size(), wb.size());
  for (std::size_t i = 0; i < wa.size() && i < wb.size(); ++i)
    d = std::max(d, max(abs(cast(wa[i].value(), DType::float64) - cast(wb[i].value(), DType::float64))).item<double>());
  return d;
}

TEST(DataParallel, FitEqualsOneProcessWithTheGlobalBatch) {
  auto [x, y] = make_data(128 * 25);
  train::FitOptions o;
  o.batch_size = 128;
  o.epochs = 2;  // 50 steps
  o.verbose = 0;
  // The reference: this process alone (no strategy), batch 128, the same shuffles.
  auto reference = make_mlp(std::make_shared<optim::SGD>(0.1, 0.9));
  train::History want = reference->fit(x, y, o);
  auto model = make_mlp(std::make_shared<optim::SGD>(0.1, 0.9));
  auto dp = std::make_shared<dist::DataParallel>();
  model->set_distribution(dp);
  train::History got = model->fit(x, y, o);
  EXPECT_LT(max_weight_difference(*model, *reference), 1e-5);
  EXPECT_EQ(model->tracing_count(), 1);
  // Global loss and accuracy: what the one process logged.
  ASSERT_EQ(got.history["loss"].size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(got.history["loss"][e], want.history["loss"][e], 1e-5);
    EXPECT_NEAR(got.history["accuracy"][e], want.history["accuracy"][e], 1e-6);
  }
  // Every rank holds the same weights.
  for (const Variable& v : model->weights())
    testing::expect_tensor_near(dist::broadcast(v.value(), 0), v.value(), 0);
  // evaluate and predict, sharded and gathered, equal the reference's.
  train::Logs e_got = model->evaluate(x, y, 100), e_want = reference->evaluate(x, y, 100);
  EXPECT_NEAR(e_got["loss"], e_want["loss"], 1e-5);
  EXPECT_NEAR(e_got["accuracy"], e_want["accuracy"], 1e-6);
  Tensor p_got = model->predict(x, 300), p_want = reference->predict(x, 300);
  testing::expect_tensor_near(p_got, p_want, 1e-4);
}

TEST(DataParallel, UnevenLastBatchAndAdam) {
  // 131 examples, global batch 64: the last batch has 3 rows (a rank may get fewer).
  auto [x, y] = make_data(131);
  train::FitOptions o;
  o.batch_size = 64;
  o.epochs = 3;
  o.verbose = 0;
  auto reference = make_mlp(std::make_shared<optim::Adam>(0.01));
  reference->fit(x, y, o);
  auto model = make_mlp(std::make_shared<optim::Adam>(0.01));
  model->set_distribution(std::make_shared<dist::DataParallel>());
  model->fit(x, y, o);
  EXPECT_LT(max_weight_difference(*model, *reference), 1e-5);
}

// mnist_data_parallel's set-up (Adam, a last batch smaller than the others, validation data
// evaluated after every epoch) over several epochs, with and without shuffling: the two
// ranks hold what one process trains, epoch after epoch, not only after the first.
TEST(DataParallel, SeveralEpochsWithValidationEqualOneProcess) {
  auto [x, y] = make_data(1000);  // batch 128: 7 full batches and one of 104
  auto [vx, vy] = make_data(300);
  for (bool shuffle : {true, false}) {
    SCOPED_TRACE(shuffle ? "shuffle" : "no shuffle");
    train::FitOptions o;
    o.batch_size = 128;
    o.epochs = 4;
    o.verbose = 0;
    o.shuffle = shuffle;
    o.validation_data = train::ValidationData{vx, vy};
    auto reference = make_mlp(std::make_shared<optim::Adam>(1e-2));
    train::History want = reference->fit(x, y, o);
    auto model = make_mlp(std::make_shared<optim::Adam>(1e-2));
    model->set_distribution(std::make_shared<dist::DataParallel>());
    train::History got = model->fit(x, y, o);
    EXPECT_LT(max_weight_difference(*model, *reference), 1e-5);
    ASSERT_EQ(got.history["loss"].size(), 4u);
    for (std::size_t e = 0; e < 4; ++e) {
      EXPECT_NEAR(got.history["loss"][e], want.history["loss"][e], 1e-5) << "epoch " << e;
      EXPECT_NEAR(got.history["val_loss"][e], want.history["val_loss"][e], 1e-5) << "epoch " << e;
    }
  }
}

TEST(DataParallel, LastBatchSmallerThanTheWorld) {
  // 65 examples, batch 64: the last batch has one row, so some rank trains on none.
  auto [x, y] = make_data(65);
  train::FitOptions o;
  o.batch_size = 64;
  o.epochs = 2;
  o.verbose = 0;
  o.shuffle = false;
  auto reference = make_mlp(std::make_shared<optim::SGD>(0.1));
  train::History want = reference->fit(x, y, o);
  auto model = make_mlp(std::make_shared<optim::SGD>(0.1));
  model->set_distribution(std::make_shared<dist::DataParallel>());
  train::History got = model->fit(x, y, o);
  EXPECT_LT(max_weight_difference(*model, *reference), 1e-5);
  EXPECT_NEAR(got.history["loss"].back(), want.history["loss"].back(), 1e-5);
}

TEST(DataParallel, BucketSizesDoNotChangeTheResult) {
  auto [x, y] = make_data(256);
  train::FitOptions o;
  o.batch_size = 64;
  o.verbose = 0;
  std::vector<std::shared_ptr<Sequential>> models;
  for (std::int64_t bytes : {std::int64_t{1}, std::int64_t{16} << 20, std::int64_t{1} << 40}) {
    auto m = make_mlp(std::make_shared<optim::SGD>(0.1));
    m->set_distribution(std::make_shared<dist::DataParallel>(dist::DataParallelOptions{.bucket_bytes = bytes}));
    m->fit(x, y, o);
    models.push_back(m);
  }
  EXPECT_LT(max_weight_difference(*models[0], *models[1]), 1e-7);
  EXPECT_LT(max_weight_difference(*models[2], *models[1]), 1e-7);
  testing::expect_error([] { dist::DataParallel dp(dist::DataParallelOptions{.bucket_bytes = 0}); }, {"DataParallel", "bucket_bytes"});
}

TEST(DataParallel, SharedMemoryAndMpiAllreduceTrainTheSameWeights) {
  // The gradient buckets through the shared window or through MPI_Allreduce: the same bits.
  auto [x, y] = make_data(256);
  train::FitOptions o;
  o.batch_size = 64;
  o.verbose = 0;
  const bool shm = dist::shared_memory();
  std::vector<std::shared_ptr<Sequential>> models;
  for (bool on : {true, false}) {
    dist::use_shared_memory(on);
    auto m = make_mlp(std::make_shared<optim::Adam>(0.01));
    m->set_distribution(std::make_shared<dist::DataParallel>());
    m->fit(x, y, o);
    models.push_back(m);
  }
  dist::use_shared_memory(shm);
  EXPECT_EQ(max_weight_difference(*models[0], *models[1]), 0.0);
}

TEST(DataParallel, BatchNormalizationMovingStatisticsAgreeAcrossRanks) {
  // The rule: batch statistics are each rank's own (Keras' synchronized=False), the moving
  // statistics are averaged across ranks at each epoch's end, so every rank ends with the same
  // model (and evaluates alike).
  auto [x, y] = make_data(512);
  random::set_seed(9);
  auto m = std::make_shared<Sequential>("bn");
  m->add<nn::Dense>(16);
  auto& bn = m->add<nn::BatchNormalization>(0.9);
  m->add<nn::Dense>(kClasses, nn::ActivationFn("softmax"));
  m->build(Shape{kDynamic, kFeatures});
  m->compile(std::make_shared<optim::SGD>(0.1), train::LossRef("sparse_categorical_crossentropy"), {"accuracy"});
  m->set_distribution(std::make_shared<dist::DataParallel>());
  train::FitOptions o;
  o.batch_size = 64;
  o.epochs = 3;
  o.verbose = 0;
  train::History h = m->fit(x, y, o);
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
  for (const Variable& v : m->weights()) testing::expect_tensor_near(dist::broadcast(v.value(), 0), v.value(), 0);
  // The moving mean moved away from its initial zeros.
  EXPECT_GT(max(abs(bn.moving_mean().value())).item<float>(), 0.0f);
  train::Logs e = m->evaluate(x, y, 128);
  Tensor mine = tensor(std::vector<double>{e["loss"], e["accuracy"]});
  testing::expect_tensor_near(dist::broadcast(mine, 0), mine, 0);
}

TEST(DataParallel, CallbacksSeeTheSameLogsAndStopTogether) {
  auto [x, y] = make_data(256);
  train::FitOptions o;
  o.batch_size = 64;
  o.epochs = 20;
  o.verbose = 0;
  // Stops when the loss improves by less than 10%: the epoch depends on the loss, which is
  // global, so every rank stops at the same epoch.
  o.callbacks.push_back(std::make_shared<train::EarlyStopping>("loss", 0, 0.1));
  std::vector<double> seen;
  o.callbacks.push_back(std::make_shared<train::LambdaCallback>(
      nullptr, nullptr, nullptr, [&](int, const train::Logs& logs) { seen.push_back(logs.at("loss")); }));
  auto model = make_mlp(std::make_shared<optim::SGD>(0.05));
  model->set_distribution(std::make_shared<dist::DataParallel>());
  train::History h = model->fit(x, y, o);
  Tensor mine = tensor(seen);
  testing::expect_tensor_near(dist::broadcast(mine, 0), mine, 0);
  std::int64_t epochs = static_cast<std::int64_t>(h.epoch.size());
  EXPECT_LT(epochs, 20);
  EXPECT_EQ(dist::all_reduce(tensor(std::vector<std::int64_t>{epochs}), dist::ReduceOp::max).to_vector<std::int64_t>()[0],
            dist::all_reduce(tensor(std::vector<std::int64_t>{epochs}), dist::ReduceOp::min).to_vector<std::int64_t>()[0]);
}

TEST(DataParallel, StartsFromRankZerosWeights) {
  auto [x, y] = make_data(64);
  auto model = make_mlp(std::make_shared<optim::SGD>(1e-30));  // no visible step
  // Different weights per rank before fit; rank 0's everywhere after (a learning rate too small to move them).
  Variable k = model->weights()[0];
  Tensor rank0 = dist::broadcast(k.value() + 0.0, 0);
  k.assign(k.value() + static_cast<float>(dist::rank()));
  model->set_distribution(std::make_shared<dist::DataParallel>());
  train::FitOptions o;
  o.batch_size = 64;
  o.verbose = 0;
  model->fit(x, y, o);
  testing::expect_tensor_near(k.value(), rank0, 0);
}

TEST(DataParallel, CustomLoopAveragesGradients) {
  auto dp = std::make_shared<dist::DataParallel>();
  Variable w(random::stateless_normal({3, 2}, 1, 0.0, 1.0, DType::float32), "w");
  dp->broadcast_variables({w});
  auto sgd = std::make_shared<optim::SGD>(1.0);
  dist::DistributedOptimizer opt(sgd, dp);
  // Rank r's gradient is (r + 1) * ones: the update is the mean over ranks.
  Tensor before = w.value() + 0.0f;
  std::vector<Tensor> g{full({3, 2}, static_cast<double>(dist::rank() + 1), DType::float32)};
  opt.apply_gradients(g, {w});
  double mean = (dist::world_size() + 1) / 2.0;
  testing::expect_tensor_near(w.value(), before - static_cast<float>(mean), 1e-6);
  // average_gradients directly, with an undefined entry (a variable without gradient).
  auto avg = dp->average_gradients({Tensor(), g[0]});
  EXPECT_FALSE(avg[0].defined());
  testing::expect_tensor_near(avg[1], full({3, 2}, mean, DType::float32), 1e-6);
}

TEST(DataParallel, SaveWeightsWritesOnRankZeroOnly) {
  namespace fs = std::filesystem;
  auto model = make_mlp(std::make_shared<optim::SGD>(0.1));
  model->set_distribution(std::make_shared<dist::DataParallel>());
  // Each rank names its own path: only rank 0's file appears.
  fs::path dir = fs::temp_directory_path() / ("ef_dist_save_" + std::to_string(dist::broadcast(tensor(std::vector<std::int64_t>{::getpid()}), 0).to_vector<std::int64_t>()[0]));
  fs::create_directories(dir);
  fs::path mine = dir / ("rank" + std::to_string(dist::rank()) + ".safetensors");
  model->save_weights(mine.string());
  dist::barrier();
  EXPECT_EQ(fs::exists(mine), dist::rank() == 0);
  dist::barrier();
  if (dist::rank() == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace ef
