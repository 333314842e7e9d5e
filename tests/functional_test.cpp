// The functional API (Input, layers on Keras tensors, Functional), several inputs and outputs in
// fit/evaluate/predict, per-output losses, loss_weights and metrics, sample_weight and
// class_weight, overridable train steps, and Model::build.
#include <sstream>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
using ef::testing::expect_tensor_near;
using ef::testing::randn;

namespace {

template <class L, class... Args>
std::shared_ptr<L> make(Args&&... args) {
  return std::make_shared<L>(std::forward<Args>(args)...);
}

Tensor f32(const Tensor& t) { return cast(t, DType::float32); }

double value(const Tensor& t) { return cast(t, DType::float64).item<double>(); }

}  // namespace

TEST(Functional, KerasTensorsCarryShapesAndRecordNoValues) {
  Tensor in = train::Input({4}, DType::float32, "features");
  EXPECT_TRUE(in.is_keras_tensor());
  EXPECT_FALSE(in.is_symbolic());
  EXPECT_EQ(in.shape(), Shape({kDynamic, 4}));
  auto dense = make<nn::Dense>(3, "relu");
  Tensor h = (*dense)(in);
  EXPECT_TRUE(h.is_keras_tensor());
  EXPECT_EQ(h.shape(), Shape({kDynamic, 3}));
  EXPECT_TRUE(dense->built());  // built from the Keras tensor's shape, as Keras
  Tensor twice = h * scalar(2.0f) + scalar(1.0f);  // ops on Keras tensors are nodes too
  EXPECT_TRUE(twice.is_keras_tensor());
  expect_error([&] { (void)h.item<float>(); }, {"Keras tensor", "Functional"});
  Tensor fixed = train::Input({2, 5}, DType::int32, "", 8);
  EXPECT_EQ(fixed.shape(), Shape({8, 2, 5}));
  EXPECT_EQ(fixed.dtype(), DType::int32);
}

TEST(Functional, TwoInputsTwoOutputsComputeWhatTheLayersCompute) {
  Tensor a = train::Input({3}, DType::float32, "a"), b = train::Input({2}, DType::float32, "b");
  auto da = make<nn::Dense>(4, "tanh", true, "da");
  auto db = make<nn::Dense>(4, nn::ActivationFn{}, true, "db");
  auto merge = make<nn::Add>("merge");
  auto head1 = make<nn::Dense>(1, nn::ActivationFn{}, true, "head1");
  auto head2 = make<nn::Dense>(2, nn::ActivationFn{}, true, "head2");
  Tensor h = (*merge)(std::vector<Tensor>{(*da)(a), (*db)(b)});
  auto model = make<train::Functional>(std::vector<Tensor>{a, b}, std::vector<Tensor>{(*head1)(h), (*head2)(h)}, "two");
  EXPECT_EQ(model->input_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(model->output_names(), (std::vector<std::string>{"head1", "head2"}));
  EXPECT_EQ(model->weights().size(), 8u);

  Tensor xa = f32(randn({5, 3}, 1)), xb = f32(randn({5, 2}, 2));
  std::vector<Tensor> outs = model->call_outputs({xa, xb});
  ASSERT_EQ(outs.size(), 2u);
  Tensor manual_h = (*merge)(std::vector<Tensor>{(*da)(xa), (*db)(xb)});
  expect_tensor_near(outs[0], (*head1)(manual_h), 1e-6);
  expect_tensor_near(outs[1], (*head2)(manual_h), 1e-6);
  // Traced, the same numbers.
  auto traced = function([&](const Tensor& x1, const Tensor& x2) { return model->call_outputs({x1, x2}); });
  std::vector<Tensor> t = traced(xa, xb);
  expect_tensor_near(t[0], outs[0], 1e-6);
  expect_tensor_near(t[1], outs[1], 1e-6);
  expect_error([&] { (*model)(xa); }, {"two", "expects 2 inputs, got 1"});
}

TEST(Functional, SharedLayersHaveOneSetOfWeightsAndModelsNest) {
  Tensor x = train::Input({3}, DType::float32, "x");
  auto shared = make<nn::Dense>(3, "relu", true, "shared");
  Tensor y = (*shared)((*shared)(x));
  auto inner = make<train::Functional>(x, y, "inner");
  EXPECT_EQ(inner->weights().size(), 2u);
  Tensor data = f32(randn({4, 3}, 3));
  expect_tensor_near((*inner)(data), (*shared)((*shared)(data)), 1e-6);

  Tensor z = train::Input({3}, DType::float32, "z");
  auto out = make<nn::Dense>(1, nn::ActivationFn{}, true, "out");
  auto outer = make<train::Functional>(z, (*out)((*inner)(z)), "outer");
  EXPECT_EQ(outer->weights().size(), 4u);
  expect_tensor_near((*outer)(data), (*out)((*inner)(data)), 1e-6);
  std::ostringstream summary;
  outer->summary(summary);
  EXPECT_NE(summary.str().find("inner (Functional)"), std::string::npos) << summary.str();
  EXPECT_NE(summary.str().find("Connected to"), std::string::npos);
  EXPECT_NE(summary.str().find("z[0][0]"), std::string::npos) << summary.str();
  std::ostringstream inner_summary;
  inner->summary(inner_summary);
  // The shared layer's second call reads its first.
  EXPECT_NE(inner_summary.str().find("shared[0][0]"), std::string::npos) << inner_summary.str();
  EXPECT_NE(inner_summary.str().find("x (InputLayer)"), std::string::npos);
}

TEST(Functional, GraphErrorsNameTheLayer) {
  Tensor a = train::Input({2}, DType::float32, "a"), b = train::Input({2}, DType::float32, "b");
  auto d = make<nn::Dense>(2, nn::ActivationFn{}, true, "d");
  Tensor from_b = (*d)(b);
  expect_error([&] { train::Functional(a, from_b); }, {"depends on Input 'b'", "not among the model's inputs"});
  expect_error([&] { train::Functional(std::vector<Tensor>{a, b}, std::vector<Tensor>{from_b}); }, {"Input 'a' is not used"});
  expect_error([&] { train::Functional(from_b, from_b); }, {"output of layer 'd'", "Input"});
  expect_error([&] { train::Functional(a, ones({2, 2})); }, {"output 0 is not a Keras tensor"});
  nn::Dense on_stack(2);
  expect_error([&] { on_stack(a); }, {"std::shared_ptr"});
  auto wide = make<nn::Dense>(2, nn::ActivationFn{}, true, "wide");
  auto model = make<train::Functional>(a, (*wide)(a), "m");
  expect_error([&] { (*model)(ones({3, 5})); }, {"input 'a' expects float32[?,2]", "float32[3,5]"});
  // Data one trailing axis short is expanded, as Keras; other dtypes are cast to the Input's.
  Tensor one = train::Input({1}, DType::float32, "one");
  auto scale = make<nn::Dense>(1, nn::ActivationFn{}, false, "scale");
  auto m1 = make<train::Functional>(one, (*scale)(one));
  Tensor col = tensor(std::vector<double>{1, 2, 3});
  expect_tensor_near(m1->predict(col), (*scale)(f32(reshape(col, {3, 1}))), 1e-6);
}

TEST(Functional, FitsSeveralOutputsWithPerOutputLossesWeightsAndMetrics) {
  random::set_seed(7);
  Tensor in = train::Input({4}, DType::float32, "in");
  auto body = make<nn::Dense>(8, "relu", true, "body");
  auto reg = make<nn::Dense>(1, nn::ActivationFn{}, true, "reg");
  auto cls = make<nn::Dense>(3, nn::ActivationFn{}, true, "cls");
  Tensor h = (*body)(in);
  auto model = make<train::Functional>(std::vector<Tensor>{in}, std::map<std::string, Tensor>{{"value", (*reg)(h)}, {"label", (*cls)(h)}});
  EXPECT_EQ(model->output_names(), (std::vector<std::string>{"label", "value"}));
  train::CompileOptions c;
  c.optimizer = std::make_shared<optim::Adam>(1e-2);
  c.loss_by_output = {{"value", "mse"}, {"label", train::SparseCategoricalCrossentropy(true)}};
  c.loss_weights_by_output = {{"value", 0.5}, {"label", 2.0}};
  c.metrics_by_output = {{"label", {"accuracy"}}, {"value", {"mae"}}};
  model->compile(c);

  Tensor x = f32(randn({64, 4}, 11));
  Tensor value_y = f32(sum(x, {1}, true));
  Tensor label_y = cast(argmax(slice(x, {0, 0}, {64, 3}), 1), DType::int32);
  train::FitOptions o;
  o.epochs = 3;
  o.batch_size = 16;
  o.verbose = 0;
  train::History hist = model->fit(x, std::map<std::string, Tensor>{{"value", value_y}, {"label", label_y}}, o);
  for (const char* key : {"loss", "label_loss", "value_loss", "label_accuracy", "value_mae"})
    EXPECT_EQ(hist.history[key].size(), 3u) << key;
  EXPECT_EQ(model->tracing_count(), 1);
  EXPECT_LT(hist.history["loss"].back(), hist.history["loss"].front());

  // evaluate's loss is the weighted sum of the per-output losses, computed here from predict.
  train::Logs logs = model->evaluate(x, std::vector<Tensor>{label_y, value_y}, 64);
  std::vector<Tensor> pred = model->predict_outputs(x);
  double mse = value(train::MeanSquaredError()(value_y, pred[1]));
  double ce = value(train::SparseCategoricalCrossentropy(true)(label_y, pred[0]));
  EXPECT_NEAR(logs["value_loss"], mse, 1e-5 * (1 + mse));
  EXPECT_NEAR(logs["label_loss"], ce, 1e-5 * (1 + ce));
  EXPECT_NEAR(logs["loss"], 0.5 * mse + 2.0 * ce, 1e-4 * (1 + ce));
  EXPECT_EQ(model->predict_tracing_count(), 1);
  model->predict_outputs(x, 7);  // other batch sizes: the same trace
  EXPECT_EQ(model->predict_tracing_count(), 1);

  expect_error([&] { model->fit(x, std::map<std::string, Tensor>{{"valu", value_y}, {"label", label_y}}, o); },
               {"'valu'", "label, value"});
  expect_error([&] { model->fit(x, value_y, o); }, {"1 targets (y) for a model with 2 outputs"});
}

TEST(Functional, SampleWeightsWeighTheLossAsKeras) {
  random::set_seed(3);
  auto model = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(1)});
  model->compile(std::make_shared<optim::SGD>(0.1), "mse");
  Tensor x = f32(randn({6, 2}, 5)), y = f32(randn({6, 1}, 6));
  Tensor w = tensor(std::vector<float>{1, 0, 2, 0, 1, 3});
  train::Logs weighted = model->evaluate(x, y, 6, 0, w);
  Tensor err = (*model)(x) - y;
  std::vector<float> e = (err * err).to_vector<float>(), wv = w.to_vector<float>();
  double want = 0;
  for (std::size_t i = 0; i < e.size(); ++i) want += e[i] * wv[i];
  want /= static_cast<double>(e.size());  // Keras: sum over batch size, not over the weights
  EXPECT_NEAR(weighted["loss"], want, 1e-5 * (1 + want));

  // class_weight is sample_weight from the labels.
  auto clf = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(3)});
  clf->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true));
  auto twin = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(3)});
  twin->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true));
  Tensor xc = f32(randn({8, 2}, 9));
  Tensor yc = tensor(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0, 0});
  (*clf)(xc);
  (*twin)(xc);
  for (std::size_t i = 0; i < clf->weights().size(); ++i) twin->weights()[i].assign(clf->weights()[i].value());
  train::FitOptions o;
  o.verbose = 0;
  o.batch_size = 8;
  o.class_weight = {{0, 0.5}, {2, 3.0}};
  clf->fit(xc, yc, o);
  train::FitOptions o2 = o;
  o2.class_weight.clear();
  o2.sample_weight = tensor(std::vector<float>{0.5f, 1, 3, 0.5f, 1, 3, 0.5f, 0.5f});
  twin->fit(xc, yc, o2);
  for (std::size_t i = 0; i < clf->weights().size(); ++i) expect_tensor_near(clf->weights()[i].value(), twin->weights()[i].value(), 1e-6);
  train::FitOptions both = o;
  both.sample_weight = o2.sample_weight;
  expect_error([&] { clf->fit(xc, yc, both); }, {"class_weight and sample_weight"});
  train::FitOptions bad = o2;
  bad.class_weight.clear();
  bad.sample_weight = ones({8, 2});
  expect_error([&] { clf->fit(xc, yc, bad); }, {"sample_weight is [n] or [n, 1]"});
}

namespace {

// A Keras 3-style custom train step: its own loss (MAE, whatever was compiled) and a log of
// its own. Host code counts how often it is traced.
class CustomStepModel : public train::Sequential {
 public:
  using Sequential::Sequential;
  int traced = 0;
  train::StepLogs train_step(const train::StepData& data) override {
    ++traced;
    GradientTape tape;
    Tensor pred = (*this)(data.x[0], true);
    Tensor loss = mean(abs(pred - data.y[0]));
    std::vector<Variable> vars = trainable_weights();
    optimizer()->apply_gradients(tape.gradient(loss, vars), vars);
    return {{"loss", loss}, {"twice", loss * scalar(2.0f)}};
  }
};

}  // namespace

TEST(Functional, OverriddenTrainStepIsTracedOnceByFit) {
  random::set_seed(1);
  auto model = make<CustomStepModel>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(1)});
  model->compile(std::make_shared<optim::SGD>(0.1), "mse");
  Tensor x = f32(randn({40, 3}, 2));
  Tensor y = f32(sum(x, {1}, true));
  train::FitOptions o;
  o.epochs = 30;
  o.batch_size = 16;  // a smaller last batch: still one trace
  o.verbose = 0;
  auto mae = [&] { return value(mean(abs((*model)(x) - y))); };
  (*model)(x);
  double before = mae();
  train::History h = model->fit(x, y, o);
  EXPECT_EQ(model->traced, 1);
  EXPECT_EQ(model->tracing_count(), 1);
  ASSERT_EQ(h.history["twice"].size(), 30u);
  EXPECT_NEAR(h.history["twice"].back(), 2 * h.history["loss"].back(), 1e-6);
  EXPECT_LT(mae(), 0.5 * before);
}

namespace {
// A custom test step with a log of its own: fit reports it as val_<key>, as Keras does.
class CustomTestStepModel : public train::Sequential {
 public:
  using Sequential::Sequential;
  train::StepLogs test_step(const train::StepData& data) override {
    Tensor pred = (*this)(data.x[0], false);
    Tensor err = mean(abs(pred - data.y[0]));
    return {{"loss", err}, {"abs_err", err * scalar(3.0f)}};
  }
};
}  // namespace

TEST(Functional, ValidationLogsEveryTestStepKeyAndTakesItsOwnSampleWeights) {
  random::set_seed(2);
  auto model = make<CustomTestStepModel>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(1)});
  model->compile(std::make_shared<optim::SGD>(0.05), "mse");
  Tensor x = f32(randn({32, 3}, 4));
  Tensor y = f32(sum(x, {1}, true));
  train::FitOptions o;
  o.epochs = 3;
  o.batch_size = 8;
  o.verbose = 0;
  o.validation_data = train::ValidationData{x, y, {}};
  auto h = model->fit(x, y, o);
  ASSERT_EQ(h.history["val_abs_err"].size(), 3u) << "a custom test step's own key is logged as val_abs_err";
  EXPECT_NEAR(h.history["val_abs_err"][2], 3 * h.history["val_loss"][2], 1e-5);
  EXPECT_EQ(model->tracing_count(), 1);

  // Validation sample weights while training has none: the test step is traced for them, the
  // train step keeps its one trace, and the weighted validation loss is what evaluate gives.
  auto plain = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(1)});
  plain->compile(std::make_shared<optim::SGD>(0.05), "mse");
  Tensor sw = f32(abs(randn({32}, 6)));
  train::FitOptions w = o;
  w.epochs = 2;
  w.validation_data = train::ValidationData{x, y, sw};
  auto hw = plain->fit(x, y, w);
  EXPECT_EQ(plain->tracing_count(), 1);
  auto ev = plain->evaluate(x, y, 8, 0, sw);
  EXPECT_NEAR(hw.history["val_loss"].back(), ev.at("loss"), 1e-6 * std::max(1.0, ev.at("loss")));
  auto unweighted = plain->evaluate(x, y, 8);
  EXPECT_NE(ev.at("loss"), unweighted.at("loss")) << "the weights must change the validation loss";
}

TEST(Functional, BuildCreatesWeightsBeforeAnyCall) {
  auto model = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(5, "relu"), make<nn::Dense>(2)});
  EXPECT_TRUE(model->weights().empty());
  model->build(Shape{kDynamic, 3});
  ASSERT_EQ(model->weights().size(), 4u);
  EXPECT_EQ(model->weights()[0].shape(), Shape({3, 5}));
  std::ostringstream s;
  model->summary(s);
  EXPECT_NE(s.str().find("Total params: 32"), std::string::npos) << s.str();
  auto dir = ef::testing::fresh_temp_dir("functional_build");
  model->save_weights((dir / "w.safetensors").string());
  auto twin = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{make<nn::Dense>(5, "relu"), make<nn::Dense>(2)});
  twin->build(Shape{kDynamic, 3});
  twin->load_weights((dir / "w.safetensors").string());
  Tensor x = f32(randn({2, 3}, 4));
  expect_tensor_near((*twin)(x), (*model)(x), 0);
}

TEST(Functional, TrainingFlagReachesLayersOfTheGraph) {
  random::set_seed(2);
  Tensor in = train::Input({100}, DType::float32, "in");
  auto drop = make<nn::Dropout>(0.5);
  auto model = make<train::Functional>(in, (*drop)(in));
  Tensor x = ones({4, 100});
  expect_tensor_near(model->predict(x), x, 0);  // inference: no dropout
  Tensor trained = (*model)(x, true);
  double zeros = value(sum(cast(equal(trained, scalar(0.0f)), DType::float32)));
  EXPECT_GT(zeros, 100);  // about half of 400 dropped
  EXPECT_LT(zeros, 300);
}

TEST(Functional, DeepGraphsBuildRunAndFreeWithoutRecursion) {
  // 200k ops: built, run and dropped iteratively (a recursive walk or destructor would overflow).
  Tensor in = train::Input({2}, DType::float32, "deep_in");
  Tensor x = in;
  const int depth = 200000;
  for (int i = 0; i < depth; ++i) x = x + scalar(1.0f);
  {
    auto model = make<train::Functional>(in, x);
    Tensor out = (*model)(zeros({1, 2}));
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{static_cast<float>(depth), static_cast<float>(depth)}));
  }
  x = Tensor();
  in = Tensor();
}

TEST(Functional, FitAddsRegularizationAndAppliesConstraintsEachStep) {
  random::set_seed(4);
  auto dense = make<nn::Dense>(1, nn::ActivationFn{}, false, "reg_dense");
  dense->kernel_regularizer = nn::l2(0.5);
  auto model = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{dense});
  model->compile(std::make_shared<optim::SGD>(0.1), "mse");
  Tensor x = f32(randn({8, 3}, 21)), y = f32(randn({8, 1}, 22));
  model->build(Shape{kDynamic, 3});
  Tensor w0 = dense->kernel().value().clone();
  // The logged loss is the mse plus 0.5 * sum(w^2) at the weights of the step.
  double mse = value(train::MeanSquaredError()(y, matmul(x, w0)));
  double penalty = 0.5 * value(sum(w0 * w0));
  train::Logs logs = model->train_on_batch(x, y);
  EXPECT_NEAR(logs["loss"], mse + penalty, 1e-5 * (1 + mse + penalty));
  // The step's gradient includes the penalty's: w1 = w0 - 0.1 * (dmse/dw + w0).
  Tensor g = scalar(2.0f / 8.0f) * matmul(transpose(x), matmul(x, w0) - y);
  expect_tensor_near(dense->kernel().value(), w0 - scalar(0.1f) * (g + w0), 1e-5);

  auto constrained = make<nn::Dense>(4, nn::ActivationFn{}, true, "nonneg_dense");
  constrained->kernel_constraint = nn::non_neg();
  auto m2 = make<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{constrained});
  m2->compile(std::make_shared<optim::SGD>(0.5), "mse");
  train::FitOptions o;
  o.verbose = 0;
  o.epochs = 2;
  m2->fit(x, f32(randn({8, 4}, 23)), o);
  EXPECT_EQ(m2->tracing_count(), 1);
  for (float v : constrained->kernel().value().to_vector<float>()) EXPECT_GE(v, 0.0f);
}

namespace {
// A layer whose host code (not an op) counts its runs.
class CountingDense : public nn::Dense {
 public:
  using Dense::Dense;
  int* runs = nullptr;

 protected:
  Tensor call(const Tensor& x) override {
    ++*runs;
    return Dense::call(x);
  }
};
}  // namespace

// When host code runs, pinned: once when the functional model is made (the call traced on
// placeholders, as Keras runs call() on Keras tensors), once when fit traces its train step, and
// never on replay: more epochs and fits do not run it again. A graph model with a host effect
// sees it at those points only (ef::print is for every execution).
TEST(Functional, HostCodeRunsAtConstructionAndAtEachTraceOnly) {
  int runs = 0;
  auto dense = make<CountingDense>(2);
  dense->runs = &runs;
  Tensor in = train::Input({3});
  auto model = make<train::Functional>(in, (*dense)(in), "counted");
  EXPECT_EQ(runs, 1) << "the call is traced once on placeholders to build the layer and learn its output";
  model->compile(std::make_shared<optim::SGD>(0.1), "mse");
  Tensor x = f32(randn({16, 3}, 1)), y = f32(randn({16, 2}, 2));
  train::FitOptions o;
  o.epochs = 3;
  o.batch_size = 4;
  o.verbose = 0;
  model->fit(x, y, o);
  EXPECT_EQ(runs, 2) << "fit traces its train step once";
  model->fit(x, y, o);
  EXPECT_EQ(runs, 2) << "a second fit replays the same trace";
  model->evaluate(x, y, 4);
  EXPECT_EQ(runs, 3) << "evaluate traces the test step once";
  model->evaluate(x, y, 4);
  model->predict(x, 4);
  EXPECT_EQ(runs, 4) << "predict traces its own step once; the second evaluate replays";
}
