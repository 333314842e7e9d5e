// Keras' learning-rate schedules in C++ (eagerflow/optim/schedules.h): each against its closed
// form at steps around its boundaries, and each rebuilt by save_model / load_model.
#include <cmath>

#include "eagerflow/saving/model.h"
#include "test_util.h"

using namespace ef;

namespace {

double rate(const optim::LearningRateSchedule& s, double step) {
  return static_cast<double>(s(scalar(static_cast<float>(step))).item<float>());
}

void expect_rates(const optim::LearningRateSchedule& s, const std::vector<std::pair<double, double>>& step_rate,
                  const std::string& what) {
  for (auto [step, want] : step_rate) EXPECT_NEAR(rate(s, step), want, 1e-6 * std::max(1.0, std::abs(want))) << what << " step " << step;
}

}  // namespace

TEST(Schedules, MatchTheirClosedForms) {
  expect_rates(optim::PiecewiseConstantDecay({10, 20}, {1.0, 0.5, 0.1}),
               {{0, 1.0}, {10, 1.0}, {10.5, 0.5}, {20, 0.5}, {21, 0.1}, {1e6, 0.1}}, "piecewise");
  auto poly = [](double s, double init, double steps, double end, double power) {
    s = std::min(s, steps);
    return (init - end) * std::pow(1 - s / steps, power) + end;
  };
  expect_rates(optim::PolynomialDecay(0.1, 100, 0.01, 2.0),
               {{0, poly(0, 0.1, 100, 0.01, 2)}, {50, poly(50, 0.1, 100, 0.01, 2)}, {150, 0.01}}, "polynomial");
  // With cycle the decay restarts over the next multiple of decay_steps: at 150, over 200 steps.
  expect_rates(optim::PolynomialDecay(0.1, 100, 0.01, 1.0, true), {{0, 0.1}, {150, (0.1 - 0.01) * (1 - 150.0 / 200) + 0.01}},
               "polynomial cycle");
  expect_rates(optim::InverseTimeDecay(0.5, 10, 2.0), {{0, 0.5}, {5, 0.5 / 2.0}, {15, 0.5 / 4.0}}, "inverse time");
  expect_rates(optim::InverseTimeDecay(0.5, 10, 2.0, true), {{5, 0.5}, {15, 0.5 / 3.0}}, "inverse time staircase");
  // SGDR with t_mul 2: periods of 10, 20, 40 steps; the second peaks at m_mul.
  auto sgdr = [](double fraction, double m) { return 0.2 * (0.5 * m * (1 + std::cos(M_PI * fraction))); };
  expect_rates(optim::CosineDecayRestarts(0.2, 10, 2.0, 0.5),
               {{0, 0.2}, {5, sgdr(0.5, 1)}, {10, sgdr(0, 0.5)}, {20, sgdr(0.5, 0.5)}, {30, sgdr(0, 0.25)}}, "restarts");
  expect_rates(optim::CosineDecayRestarts(0.2, 10, 1.0, 1.0, 0.1), {{13, 0.2 * (0.9 * 0.5 * (1 + std::cos(0.3 * M_PI)) + 0.1)}},
               "restarts t_mul 1");
  // Warmup from 0 to 1 over 10 steps, then a cosine decay over 100 from 1.
  expect_rates(optim::CosineDecay(0.0, 100, 0.0, 1.0, 10),
               {{0, 0.0}, {5, 0.5}, {10, 1.0}, {60, 0.5}, {110, 0.0}, {500, 0.0}}, "cosine warmup");
  ef::testing::expect_error([] { optim::PiecewiseConstantDecay({1, 2}, {1.0}); }, {"1 less than the length of values"});
  ef::testing::expect_error([] { optim::PolynomialDecay(0.1, 0); }, {"decay_steps must be positive"});
}

TEST(Schedules, SaveModelRebuildsEachSchedule) {
  auto dir = ef::testing::fresh_temp_dir("schedules_save");
  std::vector<optim::LearningRate> rates{optim::PiecewiseConstantDecay({2, 4}, {0.3, 0.2, 0.1}),
                                         optim::PolynomialDecay(0.1, 50, 0.001, 0.5, true),
                                         optim::InverseTimeDecay(0.1, 5, 0.5, true),
                                         optim::CosineDecayRestarts(0.1, 7, 1.5, 0.8, 0.05),
                                         optim::CosineDecay(0.01, 30, 0.1, 0.2, 5)};
  for (std::size_t i = 0; i < rates.size(); ++i) {
    for (const char* ext : {".efmodel", ".keras"}) {
      auto m = std::make_shared<train::Sequential>("s");
      m->add(std::make_shared<nn::Dense>(1, nn::ActivationFn{}, true, "d"));
      m->build(Shape{kDynamic, 2});
      m->compile(std::make_shared<optim::SGD>(rates[i]), train::LossRef("mse"));
      std::string path = (dir / ("m" + std::to_string(i) + ext)).string();
      save_model(*m, path);
      auto back = load_model(path);
      const auto& a = m->optimizer()->learning_rate_setting().schedule();
      const auto& b = back->optimizer()->learning_rate_setting().schedule();
      ASSERT_NE(b, nullptr) << path;
      EXPECT_EQ(typeid(*a), typeid(*b)) << path;
      for (double step : {0.0, 1.0, 3.0, 9.0, 40.0, 100.0}) EXPECT_EQ(rate(*a, step), rate(*b, step)) << path << " step " << step;
    }
  }
}
