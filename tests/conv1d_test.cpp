// Conv1D and the 1-D / global pooling layers (include/eagerflow/nn/conv1d.h): Keras' numbers
// on fixed weights, gradients, traces, saving and errors.
#include <cmath>

#include "eagerflow/nn/conv1d.h"
#include "eagerflow/nn/recurrent.h"
#include "eagerflow/saving/model.h"
#include "eagerflow/train/model.h"
#include "test_util.h"

namespace ef {
namespace {

using ef::testing::expect_close;
using ef::testing::expect_error;

// Reference numbers: Keras 3.15.1 (TensorFlow backend, CPU) in the peer virtualenv,
// `~/.cache/eagerflow/peers/bin/python tests/tools/keras_rnn_reference.py` (its Conv1D/pooling
// part). x = det([2, 7, 3], 0.37, 0.1, 0.8) with det(shape, a, b, scale) = scale * sin(a * i + b)
// over the flat index i; the kernel det([3, 3, 4], 0.53, 0, 0.4), the bias det([4], 0.64, 0.2, 0.4);
// GlobalMaxPooling2D's input det([2, 3, 4, 2], 0.37, 0.1, 0.8).
const std::vector<float> k_conv_valid = {0.1165028, 0.3184194, 0.3967996, 0.3179347, 0.2917106, 0.6131062, 0.7301075, 0.5984087, 0.2311851, 0.5576532, 0.6949426, 0.5931804, 0.002150625, 0.2136509, 0.3303617, 0.3080569, -0.1410096, -0.03682542, 0.04129642, 0.05971816, 0.3003761, 0.6401284, 0.7680718, 0.6368982, 0.161064, 0.4573765, 0.5920247, 0.5158607, -0.06887521, 0.09745026, 0.2008701, 0.2008051, -0.1340534, -0.03988856, 0.02905446, 0.04165643, 0.03792146, 0.1978991, 0.2674094, 0.2151774};
const std::vector<float> k_conv_same_s2 = {-0.01284631, 0.142881, 0.2232372, 0.1939714, 0.2917106, 0.6131062, 0.7301075, 0.5984087, 0.002150625, 0.2136509, 0.3303617, 0.3080569, -0.09335549, 0.01168743, 0.07735682, 0.07343167, 0.2571377, 0.5549822, 0.6643807, 0.5431137, 0.161064, 0.4573765, 0.5920247, 0.5158607, -0.1340534, -0.03988856, 0.02905446, 0.04165643, 0.1361558, 0.3697461, 0.4657166, 0.3855321};
const std::vector<float> k_conv_causal_d2 = {0, 0.1330978, 0.2248558, 0.2065476, 0.08714512, 0.3023971, 0.398509, 0.3369067, 0.09711869, 0.307138, 0.3967164, 0.3290724, 0.1843835, 0.4485296, 0.5534388, 0.4581233, 0.06654236, 0.2692409, 0.3618968, 0.3068845, 0.05004981, 0.2637221, 0.3688661, 0.3244295, 0.06623103, 0.2961164, 0.408585, 0.3605746, 0.1335325, 0.3705925, 0.4698005, 0.3917329, 0.2071924, 0.4837808, 0.5914599, 0.4884819, 0.1889367, 0.4616695, 0.57156, 0.4762536, 0.1205324, 0.3747075, 0.4899014, 0.4223044, 0.05204976, 0.2716373, 0.3805247, 0.3366326, 0.07682688, 0.3099435, 0.4218495, 0.3696369, 0.1045371, 0.3348259, 0.4370765, 0.3710305};
const std::vector<float> k_maxpool_valid = {0.7484928, 0.7999661, 0.7431678, 0.5857852, 0.3491193, 0.06520172, -0.4733725, -0.208126, 0.08528935, 0.7998974, 0.7411324, 0.5820586, -0.4937871, -0.6716036, -0.4689666, 0.6029366, 0.7522723, 0.7997915};
const std::vector<float> k_maxpool_same_s1 = {0.7484928, 0.7999661, 0.7431678, 0.7484928, 0.7999661, 0.7431678, 0.7484928, 0.7999661, 0.7431678, 0.5857852, 0.3491193, 0.06520172, -0.2275406, -0.208126, 0.08528935, 0.3671612, 0.5993395, 0.7504, 0.3671612, 0.5993395, 0.7504, 0.7998974, 0.7411324, 0.5820586, 0.7998974, 0.7411324, 0.5820586, 0.344206, 0.05976663, -0.2327618, -0.2028572, 0.09070802, 0.3719963, 0.6029366, 0.7522723, 0.7997915, 0.7390626, 0.7522723, 0.7997915, 0.7390626, 0.7522723, 0.7997915};
const std::vector<float> k_avgpool_same = {0.4141797, 0.5811375, 0.6694411, 0.3689124, 0.2198664, 0.04106236, -0.4963517, -0.4940144, -0.4248144, -0.05310564, 0.1956067, 0.4178447, 0.5720516, 0.4004495, 0.1746484, -0.3109744, -0.4332725, -0.4969292, -0.1277543, 0.05712559, 0.2342737, 0.6709996, 0.6652887, 0.5695341};
const std::vector<float> k_gap1d = {0.04175008, 0.08981297, 0.1257201, 0.1437309, 0.1232286, 0.08604793};
const std::vector<float> k_gmp1d = {0.7484928, 0.7999661, 0.7504, 0.7998974, 0.7522723, 0.7997915};
const std::vector<float> k_gmp2d = {0.7999661, 0.7998974, 0.7997915, 0.7522723};
Tensor det(const Shape& s, double a, double b, double scale) {
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(a * static_cast<double>(i) + b);
  return cast(tensor(v, s), DType::float32);
}

Tensor xc() { return det({2, 7, 3}, 0.37, 0.1, 0.8); }

Tensor run_conv(nn::Conv1D& conv) {
  conv(xc());
  conv.kernel().assign(det({3, 3, 4}, 0.53, 0.0, 0.4));
  conv.bias().assign(det({4}, 0.64, 0.2, 0.4));
  return conv(xc());
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

TEST(Conv1D, MatchesKeras) {
  nn::Conv1D valid(4, 3);
  Tensor y = run_conv(valid);
  EXPECT_EQ(y.shape(), (Shape{2, 5, 4}));
  expect_close(values(y), k_conv_valid, 1e-5f);
  nn::Conv1DOptions same;
  same.strides = 2;
  same.padding = "same";
  nn::Conv1D strided(4, 3, same);
  y = run_conv(strided);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 4}));
  expect_close(values(y), k_conv_same_s2, 1e-5f);
  nn::Conv1DOptions causal;
  causal.padding = "causal";
  causal.dilation_rate = 2;
  causal.activation = "relu";
  nn::Conv1D c(4, 3, causal);
  y = run_conv(c);
  EXPECT_EQ(y.shape(), (Shape{2, 7, 4}));
  expect_close(values(y), k_conv_causal_d2, 1e-5f);
}

TEST(Conv1D, CausalOutputsDoNotSeeTheFuture) {
  nn::Conv1DOptions causal;
  causal.padding = "causal";
  causal.dilation_rate = 2;
  nn::Conv1D c(4, 3, causal);
  Tensor x = xc();
  Tensor y = c(x);
  std::vector<float> xs = x.to_vector<float>();
  xs[(0 * 7 + 5) * 3 + 1] += 10.0f;  // step 5 of example 0
  Tensor y2 = c(tensor(xs, x.shape()));
  Tensor diff = abs(y2 - y);
  EXPECT_EQ(max(slice(diff, {0, 0}, {2, 5})).item<float>(), 0.0f);
  EXPECT_GT(max(slice(diff, {0, 5}, {1, 7})).item<float>(), 0.0f);
}

TEST(Pooling1D, MatchKeras) {
  expect_close(values(nn::MaxPooling1D(2)(xc())), k_maxpool_valid, 1e-6f);
  expect_close(values(nn::MaxPooling1D(3, 1, "same")(xc())), k_maxpool_same_s1, 1e-6f);
  Tensor avg = nn::AveragePooling1D(3, 2, "same")(xc());
  EXPECT_EQ(avg.shape(), (Shape{2, 4, 3}));
  expect_close(values(avg), k_avgpool_same, 1e-6f);
  expect_close(values(nn::GlobalAveragePooling1D()(xc())), k_gap1d, 1e-6f);
  expect_close(values(nn::GlobalMaxPooling1D()(xc())), k_gmp1d, 1e-6f);
  expect_close(values(nn::GlobalMaxPooling2D()(det({2, 3, 4, 2}, 0.37, 0.1, 0.8))), k_gmp2d, 1e-6f);
  EXPECT_EQ(nn::GlobalMaxPooling1D(true)(xc()).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(nn::GlobalMaxPooling2D(true)(det({2, 3, 4, 2}, 0.37, 0.1, 0.8)).shape(), (Shape{2, 1, 1, 2}));
}

TEST(Pooling1D, GlobalAverageHonoursAMask) {
  Tensor x = xc();
  Tensor m = tensor(std::vector<bool>{true, true, false, true, false, false, false, true, true, true, true, true, true, true},
                    Shape{2, 7});
  Tensor y = identity(x);
  nn::set_mask(y, m);
  Tensor got = nn::GlobalAveragePooling1D()(y);
  std::vector<float> xs = x.to_vector<float>(), g = got.to_vector<float>();
  std::vector<bool> ms = m.to_vector<bool>();
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 3; ++c) {
      double s = 0, n = 0;
      for (int t = 0; t < 7; ++t)
        if (ms[static_cast<std::size_t>(b * 7 + t)]) {
          s += xs[static_cast<std::size_t>((b * 7 + t) * 3 + c)];
          n += 1;
        }
      EXPECT_NEAR(g[static_cast<std::size_t>(b * 3 + c)], s / n, 1e-6);
    }
}

TEST(Conv1D, GradientsMatchFiniteDifferences) {
  nn::Conv1DOptions causal;
  causal.padding = "causal";
  causal.dilation_rate = 2;
  nn::Conv1D c(2, 3, causal);
  Tensor x = det({1, 6, 2}, 0.41, 0.2, 1.0);
  c(x);
  Tensor probe = det({1, 6, 2}, 0.77, 0.1, 1.0);
  auto loss_of = [&](const Tensor& v) { return sum(c(v) * probe); };
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(loss_of(x), x);
  std::vector<float> xs = x.to_vector<float>(), gs = g.to_vector<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::vector<float> p = xs, m = xs;
    p[i] += 1e-2f;
    m[i] -= 1e-2f;
    double fd = (loss_of(tensor(p, x.shape())).item<float>() - loss_of(tensor(m, x.shape())).item<float>()) / 2e-2;
    EXPECT_NEAR(gs[i], fd, 2e-3 * (1 + std::fabs(fd))) << i;
  }
}

TEST(Conv1D, TrainsInFitTracedOnceAndRoundTripsThroughSaveModel) {
  auto dir = ef::testing::fresh_temp_dir("conv1d_save");
  random::set_seed(3);
  auto model = std::make_shared<train::Sequential>();
  nn::Conv1DOptions o;
  o.padding = "causal";
  o.activation = "relu";
  model->add<nn::Conv1D>(8, 3, o);
  model->add<nn::MaxPooling1D>(2);
  model->add<nn::AveragePooling1D>(2, 1, "same");
  model->add<nn::GlobalAveragePooling1D>();
  model->add<nn::Dense>(1);
  Tensor x = random::normal(Shape{64, 8, 2});
  Tensor y = reshape(cast(sum(slice(x, {0, 0, 0}, {64, 8, 1}), {1, 2}) > 0.0f, DType::float32), {64, 1});
  model->compile(std::make_shared<optim::Adam>(2e-2), "mse", {});
  train::History h;
  {
    ef::testing::CaptureStdout quiet;
    h = model->fit(x, y, {.batch_size = 16, .epochs = 10, .verbose = 0});
  }
  EXPECT_LT(h.history["loss"].back(), 0.7 * h.history["loss"].front());
  EXPECT_EQ(model->tracing_count(), 1);
  std::string path = (dir / "c.efmodel").string();
  save_model(*model, path);
  auto loaded = load_model(path);
  ef::testing::expect_tensor_near(loaded->predict(x), model->predict(x), 0);
  auto gm = std::make_shared<train::Sequential>();
  gm->add<nn::GlobalMaxPooling1D>(true);
  save_model(*gm, (dir / "g.efmodel").string());
  EXPECT_EQ((*load_model((dir / "g.efmodel").string()))(x).shape(), (Shape{64, 1, 2}));
}

TEST(Conv1D, BadArgumentsAndInputsAreErrors) {
  nn::Conv1DOptions bad;
  bad.padding = "full";
  expect_error([&] { nn::Conv1D(2, 3, bad); }, {"conv1d", "padding"});
  expect_error([] { nn::Conv1D(0, 3); }, {"conv1d", "filters"});
  nn::Conv1DOptions both;
  both.strides = 2;
  both.dilation_rate = 2;
  expect_error([&] { nn::Conv1D(2, 3, both); }, {"conv1d", "dilation"});
  nn::Conv1D c(2, 3, {}, "my_conv");
  expect_error([&] { c(ones({2, 5})); }, {"my_conv", "[batch, steps, channels]"});
  c(ones({2, 5, 3}));
  expect_error([&] { c(ones({2, 5, 4})); }, {"my_conv", "channels"});
  expect_error([&] { c(ones({2, 2, 3})); }, {"conv2d", "smaller than the window"});
  expect_error([] { nn::MaxPooling1D(2, 1, "causal"); }, {"padding"});
  expect_error([] { nn::GlobalMaxPooling2D()(ones({2, 3, 4})); }, {"[batch, height, width, channels]"});
}

}  // namespace
}  // namespace ef
