// User-defined metrics in compile (updated inside the traced train step), weighted_metrics
// (sample weights reach them; plain metrics stay unweighted, as Keras), and optimizers by
// Keras name.
#include <cmath>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
using ef::testing::randn;

namespace {

template <class L, class... Args>
std::shared_ptr<L> make(Args&&... args) {
  return std::make_shared<L>(std::forward<Args>(args)...);
}

Tensor f32(const Tensor& t) { return cast(t, DType::float32); }

// The sum of every label seen: independent of the weights being trained, so the expected value
// is known. `traces` counts how often the host code of update_state ran.
struct SumOfLabels : train::Metric {
  explicit SumOfLabels(int* traces) : Metric("sum_of_labels"), traces_(traces), total_(zeros({}), "sum_of_labels/total", false) {}
  using Metric::update_state;
  void update_state(const Tensor& y_true, const Tensor&) override {
    ++*traces_;
    total_.assign(total_.value() + sum(f32(y_true)));
  }
  Tensor result() const override { return total_.value(); }
  void reset_state() override { total_.assign(zeros({})); }

 private:
  int* traces_;
  Variable total_;
};

std::shared_ptr<train::Sequential> dense_model(std::int64_t units) {
  return make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(units)});
}

}  // namespace

TEST(CustomMetric, UserMetricInCompileIsTracedOnceAndCountsEveryBatch) {
  random::set_seed(1);
  int traces = 0;
  std::shared_ptr<train::Metric> metric = make<SumOfLabels>(&traces);
  auto model = dense_model(1);
  model->compile(std::make_shared<optim::SGD>(0.01), "mse", {metric, "mae"});
  Tensor x = f32(randn({12, 3}, 1)), y = f32(randn({12, 1}, 2));
  double want = 0;
  for (float v : y.to_vector<float>()) want += v;
  train::FitOptions o;
  o.verbose = 0;
  o.batch_size = 4;
  o.epochs = 3;
  train::History h = model->fit(x, y, o);
  ASSERT_EQ(h.history.count("sum_of_labels"), 1u);
  ASSERT_EQ(h.history["sum_of_labels"].size(), 3u);
  for (double v : h.history["sum_of_labels"]) EXPECT_NEAR(v, want, 1e-4 * (1 + std::abs(want)));  // reset each epoch
  EXPECT_EQ(traces, 1);  // 9 steps, one trace: host code runs at trace time only
  EXPECT_EQ(model->metrics_names(), (std::vector<std::string>{"loss", "sum_of_labels", "mae"}));

  train::Logs logs = model->evaluate(x, y, 6);
  EXPECT_NEAR(logs["sum_of_labels"], want, 1e-4 * (1 + std::abs(want)));
  EXPECT_EQ(traces, 2);  // the test step: one more trace

  // compile through CompileOptions too, and the object is the one the model reports.
  train::CompileOptions co;
  co.optimizer = std::make_shared<optim::SGD>(0.01);
  co.loss.emplace_back("mse");
  co.metrics.emplace_back(metric);
  model->compile(std::move(co));
  bool found = false;
  for (const auto& m : model->metrics()) found = found || m.get() == metric.get();
  EXPECT_TRUE(found);
}

TEST(CustomMetric, WeightedMetricsGetSampleWeightsPlainMetricsDoNot) {
  random::set_seed(2);
  auto model = dense_model(1);
  std::shared_ptr<train::Metric> named = make<train::metrics::MeanAbsoluteError>("wmae");
  train::CompileOptions co;
  co.optimizer = std::make_shared<optim::SGD>(0.01);
  co.loss.emplace_back("mse");
  co.metrics = {"mae"};
  co.weighted_metrics = {"mae", named};
  model->compile(std::move(co));
  EXPECT_EQ(model->metrics_names(), (std::vector<std::string>{"loss", "mae", "weighted_mae", "wmae"}));

  Tensor x = f32(randn({8, 2}, 3)), y = f32(randn({8, 1}, 4));
  Tensor w = tensor(std::vector<float>{1, 0, 2, 0.5f, 3, 0, 1, 4});
  std::vector<float> p = (*model)(x).to_vector<float>(), yv = y.to_vector<float>(), wv = w.to_vector<float>();
  double plain = 0, weighted = 0, wsum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    double e = std::abs(static_cast<double>(p[i]) - yv[i]);
    plain += e;
    weighted += e * wv[i];
    wsum += wv[i];
  }
  plain /= static_cast<double>(p.size());
  weighted /= wsum;
  ASSERT_GT(std::abs(plain - weighted), 1e-3);  // the data tells the two apart
  for (std::int64_t batch : {8, 3}) {
    train::Logs logs = model->evaluate(x, y, batch, 0, w);
    EXPECT_NEAR(logs["mae"], plain, 1e-5);
    EXPECT_NEAR(logs["weighted_mae"], weighted, 1e-5);
    EXPECT_NEAR(logs["wmae"], weighted, 1e-5);
  }
  // Without sample weights the weighted metrics are the plain ones.
  train::Logs logs = model->evaluate(x, y, 8);
  EXPECT_NEAR(logs["weighted_mae"], plain, 1e-5);
  EXPECT_NEAR(logs["wmae"], plain, 1e-5);

  // A user metric that only has the two-argument update refuses the weights (never drops them).
  int traces = 0;
  train::CompileOptions bad;
  bad.optimizer = std::make_shared<optim::SGD>(0.01);
  bad.loss.emplace_back("mse");
  bad.weighted_metrics = {std::shared_ptr<train::Metric>(make<SumOfLabels>(&traces))};
  model->compile(std::move(bad));
  expect_error([&] { model->evaluate(x, y, 8, 0, w); }, {"sample_weight"});
}

TEST(CustomMetric, WeightedMetricsByOutputName) {
  random::set_seed(3);
  Tensor in = train::Input({2});
  Tensor a = (*make<nn::Dense>(1))(in);
  Tensor b = (*make<nn::Dense>(1))(in);
  auto model = make<train::Functional>(std::vector<Tensor>{in}, std::map<std::string, Tensor>{{"a", a}, {"b", b}});
  train::CompileOptions co;
  co.optimizer = std::make_shared<optim::SGD>(0.01);
  co.loss.emplace_back("mse");
  co.weighted_metrics_by_output["b"] = {"mae"};
  co.metrics_by_output["b"] = {"mae"};
  model->compile(std::move(co));
  EXPECT_EQ(model->metrics_names(),
            (std::vector<std::string>{"loss", "a_loss", "b_loss", "b_mae", "b_weighted_mae"}));
  expect_error(
      [&] {
        train::CompileOptions o;
        o.optimizer = std::make_shared<optim::SGD>(0.01);
        o.loss.emplace_back("mse");
        o.weighted_metrics_by_output["c"] = {"mae"};
        model->compile(std::move(o));
      },
      {"weighted_metrics", "'c'"});
}

TEST(CustomMetric, OptimizersByKerasName) {
  EXPECT_NE(dynamic_cast<optim::SGD*>(optim::optimizer_by_name("sgd").get()), nullptr);
  EXPECT_NE(dynamic_cast<optim::Adam*>(optim::optimizer_by_name("Adam").get()), nullptr);
  EXPECT_EQ(dynamic_cast<optim::AdamW*>(optim::optimizer_by_name("adam").get()), nullptr);
  EXPECT_NE(dynamic_cast<optim::AdamW*>(optim::optimizer_by_name("ADAMW").get()), nullptr);
  EXPECT_NE(dynamic_cast<optim::RMSprop*>(optim::optimizer_by_name("rmsprop").get()), nullptr);
  EXPECT_NE(optim::optimizer_by_name("adam"), optim::optimizer_by_name("adam"));  // a new one each time
  EXPECT_NE(dynamic_cast<optim::Adagrad*>(optim::optimizer_by_name("adagrad").get()), nullptr);
  expect_error([] { optim::optimizer_by_name("adagard"); }, {"adagard", "sgd", "adam", "adamw", "rmsprop", "adagrad", "lion"});

  random::set_seed(4);
  auto model = dense_model(1);
  model->compile("adam", "mse", {"mae"});
  ASSERT_NE(dynamic_cast<optim::Adam*>(model->optimizer().get()), nullptr);
  Tensor x = f32(randn({8, 2}, 5)), y = f32(randn({8, 1}, 6));
  train::FitOptions o;
  o.verbose = 0;
  o.epochs = 2;
  train::History h = model->fit(x, y, o);
  EXPECT_EQ(h.history["loss"].size(), 2u);
  EXPECT_LT(h.history["loss"][1], h.history["loss"][0]);  // Adam trains
  expect_error([&] { model->compile("nope", "mse"); }, {"unknown optimizer 'nope'"});
}
