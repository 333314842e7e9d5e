// Keras 3's remaining optimizers (eagerflow/optim/keras_optimizers.h): each against Keras 3.15's
// own results for the same three steps, eagerly and in a traced step; the base options
// (weight_decay, clipvalue), build, make_optimizer, and LossScaleOptimizer's dynamic scale.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eagerflow/eagerflow.h"

using namespace ef;

namespace {

// Three steps of fixed gradients on a 2x3 variable (rows of `rows` entries when vector).
std::vector<Tensor> gradients(bool vector) {
  std::vector<std::vector<float>> g = {{0.1f, -0.2f, 0.3f, 0.5f, 0.5f, -0.5f},
                                       {-1.f, 2.f, 0.25f, 0.f, 1e-3f, -3.f},
                                       {0.3f, 0.3f, 0.3f, -0.7f, 0.2f, 0.9f}};
  std::vector<Tensor> out;
  for (auto& v : g) {
    if (vector) v.resize(3);
    out.push_back(vector ? tensor(v, Shape{3}) : tensor(v, Shape{2, 3}));
  }
  return out;
}

Variable start(bool vector) {
  std::vector<float> v = {1.f, -2.f, 3.f, 0.5f, 0.25f, -1.5f};
  if (vector) v.resize(3);
  return Variable(vector ? tensor(v, Shape{3}) : tensor(v, Shape{2, 3}), "w");
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// Runs the three steps eagerly, and on a fresh optimizer inside one traced step function.
void check(const std::function<std::shared_ptr<optim::Optimizer>()>& make, const std::vector<float>& keras,
           bool vector = false, double tol = 2e-6) {
  {
    auto opt = make();
    Variable w = start(vector);
    for (const auto& g : gradients(vector)) opt->apply_gradients({g}, {w});
    expect_near(Tensor(w).to_vector<float>(), keras, tol);
    EXPECT_EQ(Tensor(opt->iterations()).item<std::int64_t>(), 3);
  }
  {
    auto opt = make();
    Variable w = start(vector);
    auto step = function([&](const Tensor& g) {
      opt->apply_gradients({g}, {w});
      return Tensor(w);
    });
    for (const auto& g : gradients(vector)) step(g);
    expect_near(Tensor(w).to_vector<float>(), keras, tol);
    EXPECT_EQ(step.tracing_count(), 1);
  }
}

}  // namespace

// The expected values are Keras 3.15's (TensorFlow backend) for the same steps and arguments.
TEST(KerasOptimizers, AdagradMatchesKeras) {
  check([] { return std::make_shared<optim::Adagrad>(0.1); },
        {1.0373785495758057f, -2.0594289302825928f, 2.8301620483398438f, 0.49186083674430847f, 0.13328996300697327f,
         -1.3456095457077026f});
}

TEST(KerasOptimizers, AdadeltaMatchesKeras) {
  check([] { return std::make_shared<optim::Adadelta>(0.5); },
        {0.9998776316642761f, -2.000500440597534f, 2.9979045391082764f, 0.5001099705696106f, 0.248907670378685f,
         -1.4987117052078247f});
}

TEST(KerasOptimizers, AdamaxMatchesKeras) {
  check([] { return std::make_shared<optim::Adamax>(0.1); },
        {0.9670652747154236f, -1.9836870431900024f, 2.7142159938812256f, 0.3681350648403168f, 0.05767345055937767f,
         -1.31232488155365f});
}

TEST(KerasOptimizers, NadamMatchesKeras) {
  check([] { return std::make_shared<optim::Nadam>(0.1); },
        {0.9715277552604675f, -2.0181281566619873f, 2.748569965362549f, 0.4690050482749939f, 0.08939969539642334f,
         -1.3127632141113281f});
}

TEST(KerasOptimizers, FtrlWithRegularizationMatchesKeras) {
  check([] { return std::make_shared<optim::Ftrl>(0.1, -0.5, 0.1, 0.01, 0.02, 0.03, 0.1); },
        {0.05959904193878174f, -0.27949389815330505f, 0.4791487157344818f, 0.1871659904718399f,
         -0.0017478842055425048f, -0.4383171498775482f});
}

TEST(KerasOptimizers, LionMatchesKeras) {
  check([] { return std::make_shared<optim::Lion>(0.1); },
        {0.8999999761581421f, -2.0999999046325684f, 2.700000286102295f, 0.4000000059604645f, -0.04999999701976776f,
         -1.399999976158142f});
}

TEST(KerasOptimizers, LambMatchesKeras) {
  check([] { return std::make_shared<optim::Lamb>(0.1); },
        {1.0453606843948364f, -2.1166276931762695f, 2.393540143966675f, 0.2532242238521576f, -0.22516995668411255f,
         -1.0571943521499634f});
}

TEST(KerasOptimizers, AdafactorFactoredAndVectorMatchKeras) {
  check([] { return std::make_shared<optim::Adafactor>(0.1); },
        {1.0398626327514648f, -2.150855779647827f, 2.7205660343170166f, 0.4898949861526489f, 0.05027623474597931f,
         -1.2597447633743286f});
  check([] { return std::make_shared<optim::Adafactor>(0.1); }, {0.9018325805664062f, -2.0501763820648193f, 2.4230294227600098f},
        /*vector=*/true);
}

TEST(KerasOptimizers, BaseWeightDecayAndClipValueMatchKeras) {
  optim::ClipOptions decay;
  decay.weight_decay = 0.1;
  check([&] { return std::make_shared<optim::SGD>(0.1, 0.0, false, decay); },
        {1.0294979810714722f, -2.148995876312256f, 2.8267438411712646f, 0.5061445236206055f, 0.17347075045108795f,
         -1.1994435787200928f});
  optim::ClipOptions clip;
  clip.clipvalue = 0.4;
  // Adam's update is one fused kernel, Keras' a chain of ops: they round apart by ~1 ulp per step.
  check([&] { return std::make_shared<optim::Adam>(0.1, 0.9, 0.999, 1e-7, clip); },
        {0.9533213376998901f, -1.9957109689712524f, 2.701209783554077f, 0.3415835499763489f, 0.007773548364639282f,
         -1.2738038301467896f},
        /*vector=*/false, /*tol=*/5e-6);
}

TEST(KerasOptimizers, MuonOrthogonalizesMatricesAndUsesAdamWForVectors) {
  check([] { return std::make_shared<optim::Muon>(0.1); },
        {0.9869498014450073f, -2.0431318283081055f, 2.952878952026367f, 0.4877447783946991f, 0.2221425324678421f,
         -1.4326307773590088f},
        /*vector=*/false, /*tol=*/1e-5);
  check([] { return std::make_shared<optim::Muon>(0.1); }, {0.9978631734848022f, -2.0259850025177f, 2.6977310180664062f},
        /*vector=*/true);
  optim::Muon muon(0.1);
  EXPECT_FALSE(muon.uses_adamw(Variable(zeros({2, 3}), "dense/kernel")));
  EXPECT_TRUE(muon.uses_adamw(Variable(zeros({5, 3}), "embedding/embeddings")));
  EXPECT_TRUE(muon.uses_adamw(Variable(zeros({3}), "dense/bias")));
}

TEST(KerasOptimizers, ScheduleFreeAdamWMatchesKeras) {
  check([] { return std::make_shared<optim::ScheduleFreeAdamW>(0.1); },
        {0.9772757291793823f, -2.002312421798706f, 2.8044674396514893f, 0.4469734728336334f, 0.12836134433746338f,
         -1.3234063386917114f});
  check([] { return std::make_shared<optim::ScheduleFreeAdamW>(0.1, 0.9, 0.999, 1e-8, 2); },
        {1.0272759199142456f, -2.0523126125335693f, 2.8544673919677734f, 0.4969734251499176f, 0.17836132645606995f,
         -1.3734065294265747f});
}

TEST(KerasOptimizers, MovingAveragesAndTheirOverwriteMatchKeras) {
  optim::ClipOptions ema;
  ema.use_ema = true;
  ema.ema_momentum = 0.5;
  std::vector<float> average = {1.0499999523162842f, -2.1449999809265137f, 2.9362499713897705f,
                                0.48499998450279236f, 0.18992501497268677f, -1.2700001001358032f};
  std::shared_ptr<optim::Optimizer> kept;
  check([&] { return kept = std::make_shared<optim::SGD>(0.1, 0.0, false, ema); },
        {1.0600000619888306f, -2.2100000381469727f, 2.9149999618530273f, 0.5199999809265137f, 0.17990000545978546f,
         -1.2400001287460327f});
  ASSERT_EQ(kept->variables().size(), 2u);  // the step counter and the average
  expect_near(Tensor(kept->variables()[1]).to_vector<float>(), average, 2e-6);
  ema.ema_overwrite_frequency = 2;
  check([&] { return std::make_shared<optim::SGD>(0.1, 0.0, false, ema); },
        {1.0099999904632568f, -2.109999895095825f, 2.927500009536743f, 0.5199999809265137f, 0.17995001375675201f,
         -1.3900001049041748f});
}

TEST(KerasOptimizers, BadArgumentsAreErrors) {
  EXPECT_THROW(optim::Adagrad(0.1, -1.0), Error);
  EXPECT_THROW(optim::Adadelta(0.1, 1.5), Error);
  EXPECT_THROW(optim::Nadam(0.1, std::nan("")), Error);
  EXPECT_THROW(optim::Ftrl(0.1, 0.5), Error);  // learning_rate_power must be <= 0
  EXPECT_THROW(optim::Lion(0.1, 0.0), Error);
  EXPECT_THROW(optim::Adafactor(0.1, 0.5), Error);
  optim::ClipOptions bad;
  bad.clipvalue = -1.0;
  EXPECT_THROW(optim::Adam(0.1, 0.9, 0.999, 1e-7, bad), Error);
  EXPECT_THROW(optim::ScheduleFreeAdamW(0.1, 0.0), Error);
  optim::Muon::Options bad_muon;
  bad_muon.ns_steps = -1;
  EXPECT_THROW(optim::Muon(0.1, bad_muon), Error);
  optim::ClipOptions bad_ema;
  bad_ema.use_ema = true;
  bad_ema.ema_momentum = 1.5;
  EXPECT_THROW(optim::SGD(0.1, 0.0, false, bad_ema), Error);
  EXPECT_THROW(optim::LossScaleOptimizer(nullptr), Error);
  EXPECT_THROW(optim::LossScaleOptimizer(std::make_shared<optim::SGD>(), 0.0), Error);
  EXPECT_THROW(optim::LossScaleOptimizer(std::make_shared<optim::SGD>(), 8.0, 0), Error);
}

TEST(KerasOptimizers, BuildMakesEverySlotAndMakeOptimizerRebuilds) {
  optim::Ftrl ftrl(0.1);
  Variable w = start(false);
  ftrl.build({w});
  auto slots = ftrl.slots_of(w);
  ASSERT_EQ(slots.size(), 2u);
  // Ftrl's accumulator starts at initial_accumulator_value, its linear term at zero.
  EXPECT_EQ(Tensor(slots.at("accumulator")).to_vector<float>(), std::vector<float>(6, 0.1f));
  EXPECT_EQ(Tensor(slots.at("linear")).to_vector<float>(), std::vector<float>(6, 0.f));
  optim::Adafactor ada(0.1);
  ada.build({w});
  EXPECT_EQ(ada.slots_of(w).at("r").shape(), (Shape{2}));
  EXPECT_EQ(ada.slots_of(w).at("c").shape(), (Shape{3}));

  auto hp = ftrl.hyperparameters();
  std::map<std::string, double> args(hp.begin(), hp.end());
  auto copy = optim::make_optimizer("Ftrl", 0.1, args);
  EXPECT_EQ(copy->hyperparameters(), hp);
  EXPECT_EQ(optim::keras_class_name(*copy), "Ftrl");
  EXPECT_THROW(optim::make_optimizer("Ftrl", 0.1, {{"betaa", 1.0}}), Error);
  EXPECT_THROW(optim::make_optimizer("Nope", 0.1, {}), Error);
  EXPECT_EQ(optim::keras_class_name(*optim::optimizer_by_name("NADAM")), "Nadam");
}

TEST(KerasOptimizers, LossScaleSkipsNonFiniteStepsAndAdaptsTheScale) {
  for (bool traced : {false, true}) {
    auto inner = std::make_shared<optim::SGD>(0.1);
    optim::LossScaleOptimizer lso(inner, 8.0, 2);
    Variable w(tensor({1.f, 2.f}), "w");
    auto apply = [&](const Tensor& g) { lso.apply_gradients({g}, {w}); };
    auto step = function([&](const Tensor& g) {
      apply(g);
      return Tensor(w);
    });
    auto run = [&](const Tensor& g) {
      if (traced) step(g);
      else apply(g);
    };
    EXPECT_EQ(lso.scale_loss(scalar(2.f)).item<float>(), 16.f);
    run(tensor({8.f, 16.f}));  // finite: unscaled to [1, 2], one SGD step
    expect_near(Tensor(w).to_vector<float>(), {0.9f, 1.8f}, 1e-6);
    EXPECT_EQ(Tensor(lso.dynamic_scale()).item<float>(), 8.f);
    float inf = std::numeric_limits<float>::infinity();
    run(tensor({inf, 1.f}));  // skipped, scale halved
    expect_near(Tensor(w).to_vector<float>(), {0.9f, 1.8f}, 1e-6);
    EXPECT_EQ(Tensor(lso.dynamic_scale()).item<float>(), 4.f);
    EXPECT_EQ(Tensor(lso.iterations()).item<std::int64_t>(), 1);
    run(tensor({4.f, 4.f}));
    run(tensor({4.f, 4.f}));  // the second finite step in a row doubles the scale
    EXPECT_EQ(Tensor(lso.dynamic_scale()).item<float>(), 8.f);
    EXPECT_EQ(Tensor(lso.step_counter()).item<std::int64_t>(), 0);
    expect_near(Tensor(w).to_vector<float>(), {0.7f, 1.6f}, 1e-6);
    EXPECT_EQ(Tensor(lso.iterations()).item<std::int64_t>(), 3);
    if (traced) {
      EXPECT_EQ(step.tracing_count(), 1);
    }
  }
}

TEST(KerasOptimizers, LossScaleOptimizerTrainsAModelInFit) {
  random::set_seed(3);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(1);
  auto lso = std::make_shared<optim::LossScaleOptimizer>(std::make_shared<optim::SGD>(0.05), 1024.0);
  model->compile(lso, train::MeanSquaredError());
  Tensor x = tensor(std::vector<float>{0.f, 1.f, 2.f, 3.f}, Shape{4, 1});
  Tensor y = x * 2.0f + 1.0f;
  train::FitOptions fit;
  fit.epochs = 200;
  fit.batch_size = 4;
  fit.verbose = 0;
  auto history = model->fit(x, y, fit);
  EXPECT_LT(history.history.at("loss").back(), 1e-2);
  // The gradients arrived scaled by 1024 and were unscaled: SGD took 200 ordinary steps.
  EXPECT_EQ(Tensor(lso->iterations()).item<std::int64_t>(), 200);
}
