// SimpleRNN, LSTM, GRU, Bidirectional and masks (include/eagerflow/nn/recurrent.h): Keras'
// numbers on fixed weights, the fused (oneDNN) path against the ef::scan one, gradients
// against finite differences, traces, fit and saving.
#include <cmath>

#include "eagerflow/nn/recurrent.h"
#include "eagerflow/saving/model.h"
#include "eagerflow/saving/saved_model.h"
#include "eagerflow/train/model.h"
#include "test_util.h"

namespace ef {
namespace {

using ef::testing::expect_close;
using ef::testing::expect_error;

// Reference numbers: Keras 3.15.1 (TensorFlow backend, CPU) in the peer virtualenv,
// `~/.cache/eagerflow/peers/bin/python tests/tools/keras_rnn_reference.py`. Inputs and weights
// are det(shape, a, b, scale) = scale * sin(a * i + b) over the flat index i (below, the same
// formula), weight i of layer.get_weights() using det(shape, 0.53 + 0.11 i, 0.2 i, 0.4); x is
// det([2, 4, 5], 0.37, 0.1, 0.8), h0 det([2, 3], 0.71, 0.3, 0.5), c0 det([2, 3], 0.29, 0.7, 0.5).
const std::vector<float> k_lstm_seq_0 = {-0.1081159, -0.21102, -0.2682419, -0.1604159, -0.2748241, -0.2983826, -0.1085228, 0.009229095, 0.005193855, -0.1716753, -0.1175098, -0.02651509, -0.0845362, -0.1935493, -0.276563, -0.1303494, -0.0547752, -0.001999855, -0.1391332, 0.08147144, 0.1652246, -0.1311154, -0.1736035, -0.218564};
const std::vector<float> k_lstm_seq_1 = {-0.1716753, -0.1175098, -0.02651509, -0.1311154, -0.1736035, -0.218564};
const std::vector<float> k_lstm_seq_2 = {-0.3235398, -0.2041619, -0.04655027, -0.4782118, -0.5054858, -0.5089429};
const std::vector<float> k_lstm_back_init_0 = {-0.1552784, -0.2332437, -0.2778335, -0.1113587, -0.1578626, -0.2066281};
const std::vector<float> k_lstm_back_init_1 = {-0.1552784, -0.2332437, -0.2778335, -0.1113587, -0.1578626, -0.2066281};
const std::vector<float> k_lstm_back_init_2 = {-0.5147313, -0.6495892, -0.63542, -0.393483, -0.4543139, -0.4837713};
const std::vector<float> k_gru_seq_0 = {-0.2209866, -0.1191129, -0.01063284, -0.2424054, -0.09109415, 0.07618484, -0.3123586, -0.09758019, 0.1513187, -0.4252938, -0.1898341, 0.1077583, -0.1853409, -0.07937244, 0.02025736, -0.2289776, -0.05193619, 0.1293378, -0.3650737, -0.1425518, 0.1213496, -0.4286845, -0.2001514, 0.08833326};
const std::vector<float> k_gru_seq_1 = {-0.4252938, -0.1898341, 0.1077583, -0.4286845, -0.2001514, 0.08833326};
const std::vector<float> k_gru_back_init_0 = {-0.4006436, -0.1232789, 0.1550376, -0.3042834, -0.1349439, 0.07777074};
const std::vector<float> k_gru_back_init_1 = {-0.4006436, -0.1232789, 0.1550376, -0.3042834, -0.1349439, 0.07777074};
const std::vector<float> k_rnn_tanh_0 = {0.01716798, 0.3003415, 0.398484, 0.319229, 0.4276383, 0.3586788, 0.24061, 0.3137709, 0.2139544, 0.002216827, 0.2235227, 0.2824896, 0.2377732, 0.4737675, 0.5008138, 0.3315695, 0.3750793, 0.2423358, 0.05659246, 0.2208183, 0.2241479, 0.09801935, 0.3332874, 0.3873889};
const std::vector<float> k_rnn_relu_back_0 = {0.0861059, 0.3057926, 0.3463283, 0.3115138, 0.5402984, 0.522007};
const std::vector<float> k_rnn_relu_back_1 = {0.0861059, 0.3057926, 0.3463283, 0.3115138, 0.5402984, 0.522007};
const std::vector<float> k_bi_lstm_concat_0 = {-0.1081159, -0.21102, -0.2682419, 0.1134178, 0.122273, -0.02148182, -0.1604159, -0.2748241, -0.2983826, 0.1384383, 0.1590391, 0.03726152, -0.1085228, 0.009229095, 0.005193855, 0.1418629, 0.116639, -0.03603427, -0.1716753, -0.1175098, -0.02651509, 0.07784797, 0.03722977, -0.08414966, -0.0845362, -0.1935493, -0.276563, 0.1249473, 0.1509297, 0.0272189, -0.1303494, -0.0547752, -0.001999855, 0.1564122, 0.1481931, 0.004243375, -0.1391332, 0.08147144, 0.1652246, 0.1142454, 0.07951938, -0.08740996, -0.1311154, -0.1736035, -0.218564, 0.05608494, 0.03609057, -0.05480857};
const std::vector<float> k_bi_gru_sum_0 = {-0.3350028, -0.05719008, 0.1132229, -0.2179086, 0.05851501, 0.1555963};
const std::vector<float> k_mask_lstm_0 = {-0.1064631, -0.2032332, -0.2485582, -0.1606639, -0.1633932, -0.07477498, -0.1606639, -0.1633932, -0.07477498, -0.1458274, 0.02288395, 0.1274211, -0.1458274, 0.02288395, 0.1274211, -0.09134942, -0.0414242, 0.04971705, -0.09134942, -0.0414242, 0.04971705, -0.09134942, -0.0414242, 0.04971705, -0.1185197, -0.01157179, 0.1105353, -0.1346579, 0.1002949, 0.2041033};
const std::vector<float> k_mask_lstm_1 = {-0.1458274, 0.02288395, 0.1274211, -0.1346579, 0.1002949, 0.2041033};
const std::vector<float> k_mask_lstm_2 = {-0.2019899, 0.03214417, 0.2104845, -0.1815575, 0.139069, 0.3433053};
const std::vector<float> k_mask_gru_0 = {-0.212375, -0.1036592, 0.01054748, -0.2440744, -0.07632905, 0.1060629, -0.2440744, -0.07632905, 0.1060629, -0.3628131, -0.1475893, 0.1125172, -0.3628131, -0.1475893, 0.1125172, -0.1452391, -0.0300811, 0.07657311, -0.1452391, -0.0300811, 0.07657311, -0.1452391, -0.0300811, 0.07657311, -0.2155609, -0.0407681, 0.1341003, -0.3475797, -0.1257707, 0.1271187};
const std::vector<float> k_mask_gru_1 = {-0.3628131, -0.1475893, 0.1125172, -0.3475797, -0.1257707, 0.1271187};
const std::vector<float> k_mask_rnn_back_0 = {0, 0, 0, 0.03745572, 0.2246571, 0.2554001, 0.03745572, 0.2246571, 0.2554001, 0.3164631, 0.4152408, 0.3329307, 0.1540064, 0.3624731, 0.3812213, 0.03745572, 0.2246571, 0.2554001, 0.3164631, 0.4152408, 0.3329307, 0.3164631, 0.4152408, 0.3329307, 0.3164631, 0.4152408, 0.3329307, 0.3756084, 0.4872159, 0.4013418};
const std::vector<float> k_mask_bi_lstm_0 = {-0.1064631, -0.2032332, -0.2485582, 0.1182053, 0.1263191, -0.01126769, -0.1606639, -0.1633932, -0.07477498, 0.1330666, 0.1379488, 0.01778235, 0, 0, 0, 0, 0, 0, -0.1458274, 0.02288395, 0.1274211, 0.09392322, 0.06714123, -0.04869295, 0, 0, 0, 0, 0, 0, -0.09134942, -0.0414242, 0.04971705, 0.1349507, 0.1642526, 0.05852418, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.1185197, -0.01157179, 0.1105353, 0.1330666, 0.1379488, 0.01778235, -0.1346579, 0.1002949, 0.2041033, 0.09392322, 0.06714123, -0.04869295};
// GRU(reset_after=False, return_sequences, return_state) on x with initial state h0 (bias [3u]):
const std::vector<float> k_gru_before_0 = {-0.1808916, 0.08966869, 0.2526946, -0.1460567, 0.01450219, 0.170606, -0.2179052, -0.04275475, 0.1676488, -0.3560877, -0.175439, 0.0858111, 0.01715536, -0.101577, -0.2142294, -0.07301072, -0.05018135, -0.007626161, -0.25973, -0.1588993, 0.01689503, -0.3302, -0.2118055, 0.003418479};
const std::vector<float> k_gru_before_1 = {-0.3560877, -0.175439, 0.0858111, -0.3302, -0.2118055, 0.003418479};
Tensor det(const Shape& s, double a, double b, double scale, DType dtype = DType::float32) {
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(a * static_cast<double>(i) + b);
  return cast(tensor(v, s), dtype);
}

constexpr std::int64_t B = 2, T = 4, C = 5, U = 3;
Tensor x_in(DType dt = DType::float32) { return det({B, T, C}, 0.37, 0.1, 0.8, dt); }
Tensor h0_in(DType dt = DType::float32) { return det({B, U}, 0.71, 0.3, 0.5, dt); }
Tensor c0_in(DType dt = DType::float32) { return det({B, U}, 0.29, 0.7, 0.5, dt); }

// Builds the layer on x and sets its weights as the reference script did (offset: the index of
// the first weight, 3 for a Bidirectional's backward layer).
void set_weights(nn::RNNBase& layer, const Tensor& x, int offset = 0) {
  if (!layer.built()) layer.call_outputs({x});
  std::vector<Variable> ws{layer.kernel(), layer.recurrent_kernel(), layer.bias()};
  for (int i = 0; i < 3; ++i) {
    int k = i + offset;
    ws[static_cast<std::size_t>(i)].assign(det(ws[static_cast<std::size_t>(i)].shape(), 0.53 + 0.11 * (k % 3 + (k / 3) * 3),
                                               0.2 * k, 0.4, ws[static_cast<std::size_t>(i)].dtype()));
  }
}

std::vector<float> values(const Tensor& t) { return cast(t, DType::float32).to_vector<float>(); }

nn::RNNOptions opts(bool seq, bool state, bool back, bool fused) {
  nn::RNNOptions o;
  o.return_sequences = seq;
  o.return_state = state;
  o.go_backwards = back;
  o.allow_fused = fused;
  return o;
}

class BothPaths : public ::testing::TestWithParam<bool> {};

TEST_P(BothPaths, LstmMatchesKeras) {
  bool fused = GetParam();
  nn::LSTM a(U, opts(true, true, false, fused));
  set_weights(a, x_in());
  auto r = a.call_outputs({x_in()});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].shape(), (Shape{B, T, U}));
  expect_close(values(r[0]), k_lstm_seq_0, 2e-5f);
  expect_close(values(r[1]), k_lstm_seq_1, 2e-5f);
  expect_close(values(r[2]), k_lstm_seq_2, 2e-5f);
  nn::LSTM b(U, opts(false, true, true, fused));
  set_weights(b, x_in());
  r = b.call_outputs({x_in(), h0_in(), c0_in()});
  EXPECT_EQ(r[0].shape(), (Shape{B, U}));
  expect_close(values(r[0]), k_lstm_back_init_0, 2e-5f);
  expect_close(values(r[1]), k_lstm_back_init_1, 2e-5f);
  expect_close(values(r[2]), k_lstm_back_init_2, 2e-5f);
}

TEST_P(BothPaths, GruMatchesKeras) {
  bool fused = GetParam();
  nn::GRU a(U, opts(true, true, false, fused));
  set_weights(a, x_in());
  EXPECT_EQ(a.bias().shape(), (Shape{2, 3 * U}));
  auto r = a.call_outputs({x_in()});
  expect_close(values(r[0]), k_gru_seq_0, 2e-5f);
  expect_close(values(r[1]), k_gru_seq_1, 2e-5f);
  nn::GRU b(U, opts(false, true, true, fused));
  set_weights(b, x_in());
  r = b.call_outputs({x_in(), h0_in()});
  expect_close(values(r[0]), k_gru_back_init_0, 2e-5f);
  expect_close(values(r[1]), k_gru_back_init_1, 2e-5f);
}

TEST_P(BothPaths, BidirectionalMatchesKeras) {
  bool fused = GetParam();
  auto lstm = std::make_shared<nn::LSTM>(U, opts(true, false, false, fused));
  nn::Bidirectional bi(lstm, "concat");
  Tensor y = bi(x_in());
  set_weights(bi.forward_layer(), x_in(), 0);
  set_weights(bi.backward_layer(), x_in(), 3);
  y = bi(x_in());
  EXPECT_EQ(y.shape(), (Shape{B, T, 2 * U}));
  expect_close(values(y), k_bi_lstm_concat_0, 2e-5f);
  auto gru = std::make_shared<nn::GRU>(U, opts(false, false, false, fused));
  nn::Bidirectional bg(gru, "sum");
  bg(x_in());
  set_weights(bg.forward_layer(), x_in(), 0);
  set_weights(bg.backward_layer(), x_in(), 3);
  expect_close(values(bg(x_in())), k_bi_gru_sum_0, 2e-5f);
  // Weights: the forward layer's, then the backward one's (Keras' get_weights order).
  ASSERT_EQ(bg.weights().size(), 6u);
  EXPECT_TRUE(bg.weights()[0].same_as(bg.forward_layer().kernel()));
  EXPECT_TRUE(bg.weights()[3].same_as(bg.backward_layer().kernel()));
}

TEST(Recurrent, GruResetBeforeMatchesKeras) {
  nn::RNNOptions o = opts(true, true, false, true);
  o.reset_after = false;
  nn::GRU gru(U, o);
  set_weights(gru, x_in());
  EXPECT_EQ(gru.bias().shape(), (Shape{3 * U}));
  auto r = gru.call_outputs({x_in(), h0_in()});
  expect_close(values(r[0]), k_gru_before_0, 2e-5f);
  expect_close(values(r[1]), k_gru_before_1, 2e-5f);
}

INSTANTIATE_TEST_SUITE_P(Recurrent, BothPaths, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "fused" : "scan"; });

TEST(Recurrent, SimpleRnnMatchesKeras) {
  nn::SimpleRNN a(U, opts(true, false, false, true));
  set_weights(a, x_in());
  expect_close(values(a(x_in())), k_rnn_tanh_0, 2e-5f);
  nn::RNNOptions o = opts(false, true, true, true);
  o.activation = "relu";
  nn::SimpleRNN b(U, o);
  set_weights(b, x_in());
  auto r = b.call_outputs({x_in()});
  expect_close(values(r[0]), k_rnn_relu_back_0, 2e-5f);
  expect_close(values(r[1]), k_rnn_relu_back_1, 2e-5f);
}

// Masks: Embedding(5, 5, mask_zero) on ids with zeros (masked) inside and at the end; the
// embedding weights are det([5, 5], 0.41, 0.5, 0.6).
Tensor masked_embeddings(nn::Embedding& e) {
  Tensor ids = tensor(std::vector<std::int64_t>{3, 1, 0, 2, 0, 4, 0, 0, 1, 2}, Shape{2, 5});
  e.mask_zero = true;
  e(ids);
  e.embeddings().assign(det({5, C}, 0.41, 0.5, 0.6));
  return e(ids);
}

TEST(RecurrentMask, EmbeddingMaskZeroMakesRnnsKeepStatesAsKeras) {
  nn::Embedding e(5, C);
  Tensor x = masked_embeddings(e);
  Tensor m = nn::mask_of(x);
  ASSERT_TRUE(m.defined());
  EXPECT_EQ(m.to_vector<bool>(), (std::vector<bool>{true, true, false, true, false, true, false, false, true, true}));
  nn::LSTM lstm(U, opts(true, true, false, true));
  set_weights(lstm, x);
  auto r = lstm.call_outputs({x});
  expect_close(values(r[0]), k_mask_lstm_0, 2e-5f);
  expect_close(values(r[1]), k_mask_lstm_1, 2e-5f);
  expect_close(values(r[2]), k_mask_lstm_2, 2e-5f);
  EXPECT_TRUE(nn::mask_of(r[0]).defined());  // return_sequences passes the mask on
  nn::GRU gru(U, opts(true, true, false, true));
  set_weights(gru, x);
  r = gru.call_outputs({x});
  expect_close(values(r[0]), k_mask_gru_0, 2e-5f);
  expect_close(values(r[1]), k_mask_gru_1, 2e-5f);
  nn::SimpleRNN rnn(U, opts(true, false, true, true));
  set_weights(rnn, x);
  expect_close(values(rnn(x)), k_mask_rnn_back_0, 2e-5f);
  nn::Bidirectional bi(std::make_shared<nn::LSTM>(U, opts(true, false, false, true)));
  bi(x);
  set_weights(bi.forward_layer(), x, 0);
  set_weights(bi.backward_layer(), x, 3);
  expect_close(values(bi(x)), k_mask_bi_lstm_0, 2e-5f);
  // Without the mask the numbers differ (the test would notice a mask that is ignored).
  Tensor plain = identity(x);
  EXPECT_FALSE(nn::mask_of(plain).defined());
  EXPECT_GT(max(abs(lstm.call_outputs({plain})[0] - r[0])).item<float>(), 1e-3f);
}

TEST(RecurrentMask, MaskWorksInsideSequentialTracedFit) {
  random::set_seed(4);
  auto model = std::make_shared<train::Sequential>();
  auto& e = model->add<nn::Embedding>(6, 4);
  e.mask_zero = true;
  nn::RNNOptions o;
  model->add<nn::LSTM>(5, o);
  model->add<nn::Dense>(2);
  Tensor ids = tensor(std::vector<std::int64_t>{1, 2, 0, 0, 3, 4, 5, 0, 2, 2, 2, 2, 5, 0, 0, 0}, Shape{4, 4});
  Tensor y = tensor(std::vector<std::int64_t>{0, 1, 0, 1});
  model->compile(std::make_shared<optim::Adam>(1e-2), "sparse_categorical_crossentropy", {});
  // Trailing zeros do not change a masked LSTM's last output.
  Tensor a = model->predict(slice(ids, {0}, {1}));
  Tensor one_step = (*model)(tensor(std::vector<std::int64_t>{1, 2}, Shape{1, 2}));
  ef::testing::expect_tensor_near(a, one_step, 1e-6);
  {
    ef::testing::CaptureStdout quiet;
    model->fit(ids, y, {.batch_size = 4, .epochs = 3, .verbose = 0});
  }
  EXPECT_EQ(model->tracing_count(), 1);
}

// Layers that keep the steps (Dense, Dropout, Activation, LayerNormalization) pass a mask on,
// as Keras' supports_masking; others drop it.
TEST(RecurrentMask, MasksPassThroughLayersThatSupportMasking) {
  random::set_seed(8);
  auto model = std::make_shared<train::Sequential>();
  auto& e = model->add<nn::Embedding>(6, 4);
  e.mask_zero = true;
  model->add<nn::Dropout>(0.5);
  model->add<nn::Dense>(5, "relu");
  model->add<nn::LayerNormalization>();
  model->add<nn::LSTM>(3);
  Tensor padded = (*model)(tensor(std::vector<std::int64_t>{1, 2, 0, 0}, Shape{1, 4}));
  Tensor shorter = (*model)(tensor(std::vector<std::int64_t>{1, 2}, Shape{1, 2}));
  ef::testing::expect_tensor_near(padded, shorter, 1e-6);
  nn::Embedding plain_e(6, 4);
  plain_e.mask_zero = true;
  Tensor x = plain_e(tensor(std::vector<std::int64_t>{1, 0}, Shape{1, 2}));
  EXPECT_TRUE(nn::mask_of(nn::Dense(2)(x)).defined());
  EXPECT_FALSE(nn::mask_of(nn::Flatten()(x)).defined());
}

// The fused op and the ef::scan path: same outputs and gradients (float32).
TEST(RecurrentFused, FusedAndUnrolledGiveTheSameGradients) {
  for (bool lstm : {true, false})
    for (bool back : {false, true})
      for (bool init : {false, true}) {
        SCOPED_TRACE(std::string(lstm ? "lstm" : "gru") + (back ? " backwards" : "") + (init ? " initial state" : ""));
        std::shared_ptr<nn::RNNBase> layers[2];
        for (int k = 0; k < 2; ++k) {
          nn::RNNOptions o = opts(true, true, back, k == 0);
          if (lstm) layers[k] = std::make_shared<nn::LSTM>(U, o);
          else layers[k] = std::make_shared<nn::GRU>(U, o);
          set_weights(*layers[k], x_in());
        }
        Tensor probe = det({B, T, U}, 0.9, 0.4, 1.0), probe_h = det({B, U}, 1.3, 0.2, 1.0);
        std::vector<std::vector<Tensor>> grads;
        std::vector<Tensor> outs;
        for (auto& layer : layers) {
          Tensor x = x_in(), h = h0_in(), c = c0_in();
          GradientTape tape;
          tape.watch(x);
          tape.watch(h);
          tape.watch(c);
          std::vector<Tensor> in{x};
          if (init) {
            in.push_back(h);
            if (lstm) in.push_back(c);
          }
          auto r = layer->call_outputs(in);
          Tensor loss = sum(r[0] * probe) + sum(r[1] * probe_h);
          if (lstm) loss = loss + sum(r.back() * probe_h * 0.5f);
          std::vector<GradientSource> src{x, layer->kernel(), layer->recurrent_kernel(), layer->bias()};
          if (init) src.push_back(h);
          if (init && lstm) src.push_back(c);
          grads.push_back(tape.gradient(loss, src));
          outs.push_back(r[0]);
        }
        ef::testing::expect_tensor_near(outs[0], outs[1], 1e-5);
        for (std::size_t i = 0; i < grads[0].size(); ++i) {
          SCOPED_TRACE("gradient " + std::to_string(i));
          ef::testing::expect_tensor_near(grads[0][i], grads[1][i], 1e-4);
        }
      }
}

// Gradients of gradients through the fused op (its gradient op differentiates the scan
// reference) equal those of the scan path.
TEST(RecurrentFused, SecondOrderGradientsMatchTheScanPath) {
  for (bool lstm : {true, false}) {
    SCOPED_TRACE(lstm ? "lstm" : "gru");
    std::vector<Tensor> results;
    for (bool fused : {true, false}) {
      std::shared_ptr<nn::RNNBase> layer;
      nn::RNNOptions o = opts(true, false, !lstm, fused);
      if (lstm) layer = std::make_shared<nn::LSTM>(U, o);
      else layer = std::make_shared<nn::GRU>(U, o);
      set_weights(*layer, x_in());
      Tensor x = x_in();
      GradientTape outer;
      outer.watch(x);
      Tensor gx;
      {
        GradientTape inner;
        inner.watch(x);
        Tensor loss = sum(square((*layer)(x)));
        gx = inner.gradient(loss, x);
      }
      Tensor s = sum(gx * det({B, T, C}, 0.8, 0.3, 1.0));
      std::vector<Tensor> g = outer.gradient(s, std::vector<GradientSource>{x, layer->recurrent_kernel()});
      results.push_back(concat({reshape(g[0], {-1}), reshape(g[1], {-1})}, 0));
    }
    ef::testing::expect_tensor_near(results[0], results[1], 1e-4);
    EXPECT_GT(max(abs(results[0])).item<float>(), 1e-3f);
  }
}

// The ef::scan path against central differences in float64.
TEST(RecurrentGradient, ScanPathMatchesFiniteDifferences) {
  for (int kind = 0; kind < 4; ++kind) {
    SCOPED_TRACE(kind);
    nn::RNNOptions o = opts(true, false, kind == 3, false);
    o.dtype = DType::float64;
    std::shared_ptr<nn::RNNBase> layer;
    if (kind == 0 || kind == 3) layer = std::make_shared<nn::LSTM>(U, o);
    else if (kind == 1) layer = std::make_shared<nn::GRU>(U, o);
    else layer = std::make_shared<nn::SimpleRNN>(U, o);
    Tensor x = x_in(DType::float64);
    set_weights(*layer, x);
    Tensor probe = det({B, T, U}, 0.9, 0.4, 1.0, DType::float64);
    auto loss_of = [&](const Tensor& xv) { return sum((*layer)(xv) * probe); };
    GradientTape tape;
    tape.watch(x);
    Tensor loss = loss_of(x);
    auto g = tape.gradient(loss, std::vector<GradientSource>{x, layer->recurrent_kernel()});
    // x: every element; the recurrent kernel: every element, through assign.
    std::vector<double> xs = x.to_vector<double>(), gx = g[0].to_vector<double>();
    const double eps = 1e-6;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      std::vector<double> p = xs, m = xs;
      p[i] += eps;
      m[i] -= eps;
      double fd = (loss_of(tensor(p, x.shape())).item<double>() - loss_of(tensor(m, x.shape())).item<double>()) / (2 * eps);
      EXPECT_NEAR(gx[i], fd, 1e-7 * (1 + std::fabs(fd))) << "x " << i;
    }
    Variable r = layer->recurrent_kernel();
    Tensor r0 = r.value().clone();
    std::vector<double> rs = r0.to_vector<double>(), gr = g[1].to_vector<double>();
    for (std::size_t i = 0; i < rs.size(); ++i) {
      std::vector<double> p = rs, m = rs;
      p[i] += eps;
      m[i] -= eps;
      r.assign(tensor(p, r0.shape()));
      double lp = loss_of(x).item<double>();
      r.assign(tensor(m, r0.shape()));
      double lm = loss_of(x).item<double>();
      r.assign(r0);
      EXPECT_NEAR(gr[i], (lp - lm) / (2 * eps), 1e-7 * (1 + std::fabs(gr[i]))) << "recurrent_kernel " << i;
    }
  }
}

TEST(RecurrentFused, TracedEqualsEagerWithOneTraceForAnyBatchAndLength) {
  nn::LSTM lstm(U, opts(true, false, false, true));
  set_weights(lstm, x_in());
  auto f = function([&](const Tensor& x) { return lstm(x); });
  Tensor eager = lstm(x_in());
  ef::testing::expect_tensor_near(f(x_in()), eager, 0);
  // The fused op takes a dynamic batch and length: relaxed shapes keep one trace.
  nn::GRU gru(U, opts(false, false, true, true));
  set_weights(gru, x_in());
  FunctionOptions fo;
  fo.input_signature = std::vector<TensorSpec>{{DType::float32, Shape{kDynamic, kDynamic, C}, {}}};
  auto g = function([&](const Tensor& x) { return gru(x); }, fo);
  for (std::int64_t n : {1, 3})
    for (std::int64_t t : {2, 7}) {
      Tensor x = det({n, t, C}, 0.21, 0.3, 0.9);
      ef::testing::expect_tensor_near(g(x), gru(x), 0);
    }
  EXPECT_EQ(g.tracing_count(), 1);
}

TEST(RecurrentFused, LstmModelTrainsInFitWithOneTrace) {
  random::set_seed(7);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::LSTM>(8);
  model->add<nn::Dense>(1);
  // Sequences whose label is the sign of their sum.
  Tensor x = random::normal(Shape{64, 6, 3});
  Tensor y = cast(sum(x, {1, 2}) > 0.0f, DType::float32);
  y = reshape(y, {64, 1});
  model->compile(std::make_shared<optim::Adam>(2e-2), "mse", {});
  train::History h;
  {
    ef::testing::CaptureStdout quiet;
    h = model->fit(x, y, {.batch_size = 16, .epochs = 15, .verbose = 0});
  }
  EXPECT_LT(h.history["loss"].back(), 0.5 * h.history["loss"].front());
  EXPECT_EQ(model->tracing_count(), 1);
}

TEST(RecurrentSave, ModelsRoundTripThroughSaveModel) {
  auto dir = ef::testing::fresh_temp_dir("recurrent_save");
  random::set_seed(2);
  auto model = std::make_shared<train::Sequential>();
  auto& e = model->add<nn::Embedding>(7, 4);
  e.mask_zero = true;
  nn::RNNOptions o;
  o.return_sequences = true;
  model->add<nn::Bidirectional>(std::make_shared<nn::GRU>(3, o), "ave");
  nn::RNNOptions last;
  last.go_backwards = true;
  last.activation = "relu";
  model->add<nn::SimpleRNN>(4, last);
  model->add<nn::Dense>(2);
  Tensor ids = tensor(std::vector<std::int64_t>{1, 2, 0, 5, 6, 3, 2, 0}, Shape{2, 4});
  Tensor before = (*model)(ids);
  std::string path = (dir / "rnn.efmodel").string();
  save_model(*model, path);
  auto loaded = load_model(path);
  ef::testing::expect_tensor_near((*loaded)(ids), before, 0);
  auto lstm_model = std::make_shared<train::Sequential>();
  nn::RNNOptions lo;
  lo.unit_forget_bias = false;
  lo.return_sequences = true;
  lstm_model->add<nn::LSTM>(3, lo);
  Tensor x = x_in();
  Tensor y = (*lstm_model)(x);
  save_model(*lstm_model, (dir / "lstm.efmodel").string());
  ef::testing::expect_tensor_near((*load_model((dir / "lstm.efmodel").string()))(x), y, 0);
}

// ef::save writes the fused ops by name and parameters (reverse included); the loaded graph
// runs them, and differentiates them when it fine-tunes as a SavedModelLayer.
TEST(RecurrentSave, SavedFunctionsRunAndTrainTheFusedOps) {
  random::set_seed(6);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::LSTM>(4, opts(true, false, true, true));
  model->add<nn::GRU>(3, opts(false, false, false, true));
  model->add<nn::Dense>(2);
  Tensor x = x_in();
  (*model)(x);
  auto dir = ef::testing::fresh_temp_dir("recurrent_saved_function");
  save(*model, dir.string());
  SavedModel loaded = load(dir.string());
  for (std::int64_t n : {1, 2}) {
    Tensor xb = slice(x, {0}, {n});
    ef::testing::expect_tensor_near(loaded("serving_default", {xb})[0], (*model)(xb, false), 0);
  }
  nn::SavedModelLayer layer(loaded);
  GradientTape tape;
  Tensor loss = sum(square(layer(x)));
  std::vector<Tensor> g = tape.gradient(loss, layer.trainable_weights());
  GradientTape tape2;
  Tensor loss2 = sum(square((*model)(x)));
  std::vector<Tensor> g2 = tape2.gradient(loss2, model->trainable_weights());
  // The same weights by name (the loaded model lists them in its own order).
  std::vector<Variable> lw = layer.trainable_weights(), mw = model->trainable_weights();
  ASSERT_EQ(g.size(), g2.size());
  int matched = 0;
  for (std::size_t i = 0; i < lw.size(); ++i)
    for (std::size_t j = 0; j < mw.size(); ++j)
      if (lw[i].name() == mw[j].name()) {
        SCOPED_TRACE(lw[i].name());
        ef::testing::expect_tensor_near(g[i], g2[j], 1e-5);
        ++matched;
      }
  EXPECT_EQ(matched, static_cast<int>(mw.size()));
}

TEST(Recurrent, BadInputsAreErrorsNamingTheLayer) {
  nn::LSTM lstm(U, opts(false, false, false, true), "my_lstm");
  expect_error([&] { lstm(ones({2, 5})); }, {"my_lstm", "[batch, time, features]"});
  lstm(x_in());
  expect_error([&] { lstm(ones({2, 4, 6})); }, {"my_lstm", "incompatible"});
  expect_error([&] { lstm.call_outputs({x_in(), h0_in()}); }, {"my_lstm", "2 initial state"});
  expect_error([&] { lstm.call_outputs({x_in(), ones({2, 4}), ones({2, 4})}); }, {"my_lstm", "initial state"});
  nn::LSTM stateful(U, opts(false, true, false, true), "with_state");
  expect_error([&] { stateful(x_in()); }, {"with_state", "call_outputs"});
  expect_error([] { nn::Bidirectional(std::make_shared<nn::LSTM>(2), "max"); }, {"merge_mode"});
  expect_error([] { ef::lstm(ones({2, 3, 5}), ones({4, 12}), ones({3, 12}), ones({12})); }, {"lstm", "features"});
  expect_error([] { ef::gru(ones({2, 3, 5}), ones({5, 9}), ones({3, 9}), ones({9})); }, {"gru", "[2, 3 * units]"});
  // The scan path (here: relu) takes any number of steps in one trace, as the fused op does.
  nn::RNNOptions relu = opts(true, false, true, true);
  relu.activation = "relu";
  nn::LSTM scanned(U, relu, "relu_lstm");
  scanned(x_in());
  FunctionOptions fo;
  fo.input_signature = std::vector<TensorSpec>{{DType::float32, Shape{kDynamic, kDynamic, C}, {}}};
  auto f = function([&](const Tensor& x) { return scanned(x); }, fo);
  for (std::int64_t t : {1, 4, 6}) {
    Tensor x = det({2, t, C}, 0.3, 0.2, 0.9);
    ef::testing::expect_tensor_near(f(x), scanned(x), 1e-6);
  }
  EXPECT_EQ(f.tracing_count(), 1);
}

// No steps: the output sequence is empty and the states are the initial ones, on both paths,
// with gradients (zeros for the weights, the state cotangents for h0 / c0).
TEST(Recurrent, ZeroStepsPassTheInitialStatesThrough) {
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "scan");
    nn::LSTM lstm(U, opts(true, true, false, fused));
    lstm.call_outputs({x_in()});
    Tensor x = zeros({B, 0, C}), h = h0_in(), c = c0_in();
    GradientTape tape;
    tape.watch(h);
    auto r = lstm.call_outputs({x, h, c});
    EXPECT_EQ(r[0].shape(), (Shape{B, 0, U}));
    ef::testing::expect_tensor_near(r[1], h, 0);
    ef::testing::expect_tensor_near(r[2], c, 0);
    Tensor gh = tape.gradient(sum(r[1] * 2.0f), h);
    ef::testing::expect_tensor_near(gh, full({B, U}, 2.0), 0);
    auto z = lstm.call_outputs({x});  // no initial state: zeros
    ef::testing::expect_tensor_near(z[1], zeros({B, U}), 0);
  }
}

TEST(Recurrent, OrthogonalInitializerGivesOrthonormalColumns) {
  random::set_seed(5);
  for (Shape s : {Shape{6, 6}, Shape{8, 3}, Shape{3, 8}}) {
    Tensor q = cast(nn::orthogonal_initializer()(s, DType::float32), DType::float64);
    bool tall = s[0] >= s[1];
    Tensor gram = tall ? matmul(q, q, true, false) : matmul(q, q, false, true);
    std::int64_t k = tall ? s[1] : s[0];
    std::vector<double> g = gram.to_vector<double>();
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < k; ++j) EXPECT_NEAR(g[static_cast<std::size_t>(i * k + j)], i == j ? 1.0 : 0.0, 1e-5);
  }
}

}  // namespace
}  // namespace ef
