// The fused scaled-dot-product attention op (against the naive softmax(q k^T) v composition,
// eagerly, traced and in gradients; memory linear in the sequence length), MultiHeadAttention
// (Keras 3's numbers on fixed weights, causality, saving, fit) and PositionalEmbedding.
#include <cmath>

#include "eagerflow/nn/attention.h"
#include "ops/attention_op.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
using ef::testing::expect_tensor_near;
using ef::testing::randn;

namespace {

// softmax(scale q k^T, masked) v with ef's plain ops, masked probabilities zeroed (Keras 3).
Tensor naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal) {
  double scale = 1.0 / std::sqrt(static_cast<double>(q.shape()[3]));
  Tensor s = matmul(q, k, false, true) * scale;
  Tensor visible = mask.defined() ? broadcast_like(mask, s) : Tensor();
  if (causal) {
    std::int64_t sq = q.shape()[2], sk = k.shape()[2];
    Tensor c = broadcast_like(greater_equal(reshape(arange(sq), {sq, 1}), reshape(arange(sk), {1, sk})), s);
    visible = visible.defined() ? logical_and(visible, c) : c;
  }
  if (!visible.defined()) return matmul(softmax(s, -1), v);
  Tensor p = softmax(where(visible, s, scalar_like(s, -1e9)), -1);
  return matmul(where(visible, p, zeros_like(p)), v);
}

Tensor fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal) {
  nn::AttentionOptions o;
  o.mask = mask;
  o.causal = causal;
  return nn::scaled_dot_product_attention(q, k, v, o);
}

// The case list: shapes that cross the kernel's 128-row blocks, unequal lengths and widths.
struct Case {
  std::int64_t b, h, sq, sk, d, dv;
  bool mask, causal;
};
const Case kCases[] = {
    {2, 3, 5, 7, 4, 6, false, false}, {1, 2, 130, 300, 8, 5, true, false}, {2, 1, 257, 257, 16, 16, false, true},
    {1, 2, 200, 140, 8, 8, true, true}, {1, 1, 1, 1, 3, 2, false, false},
    // head_dim 64 with partial blocks of queries (150 = 128 + 22) and keys (273 = 256 + 17, 520 =
    // 2 * 256 + 8): the vector tails of the fused exp passes and of the transposed backward;
    // 300 x 600 crosses the forward's 256 x 512 blocks (non-causal) in both directions.
    {1, 2, 150, 273, 64, 48, false, true}, {2, 1, 33, 520, 64, 64, true, false}, {1, 1, 300, 600, 16, 16, true, false},
};

Tensor mask_for(const Case& c, std::uint64_t seed) {
  // [batch, 1, sq, sk]: broadcast over heads; about a fifth hidden, and one query row fully hidden.
  Tensor m = random::stateless_uniform({c.b, 1, c.sq, c.sk}, seed, 0.0, 1.0, DType::float64) > 0.2;
  Tensor row = reshape(arange(c.sq), {1, 1, c.sq, 1});
  return logical_and(m, not_equal(row, scalar_like(row, 1.0)));
}

std::vector<Tensor> grads_of(const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f,
                             const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w) {
  GradientTape tape;
  tape.watch(std::vector<Tensor>{q, k, v});
  Tensor loss = sum(f(q, k, v) * w);
  return tape.gradient(loss, std::vector<Tensor>{q, k, v});
}

// The same deterministic fill as the Keras reference script: sin(0.7 i + c) * 0.8.
Tensor fill(const Shape& s, double c) {
  std::vector<float> v(static_cast<std::size_t>(s.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + c) * 0.8);
  return tensor(v, s);
}

}  // namespace

TEST(ScaledDotProductAttention, MatchesTheNaiveCompositionInFloat64AndFloat32) {
  std::uint64_t seed = 1;
  for (const Case& c : kCases) {
    for (DType dt : {DType::float64, DType::float32}) {
      SCOPED_TRACE(std::to_string(c.sq) + "x" + std::to_string(c.sk) + " mask " + std::to_string(c.mask) + " causal " +
                   std::to_string(c.causal) + " " + std::string(name_of(dt)));
      Tensor q = randn({c.b, c.h, c.sq, c.d}, ++seed, dt), k = randn({c.b, c.h, c.sk, c.d}, ++seed, dt);
      Tensor v = randn({c.b, c.h, c.sk, c.dv}, ++seed, dt);
      Tensor m = c.mask ? mask_for(c, ++seed) : Tensor();
      Tensor got = fused(q, k, v, m, c.causal);
      Tensor want = naive_attention(q, k, v, m, c.causal);
      expect_tensor_near(got, want, dt == DType::float64 ? 1e-12 : 2e-5);
      // Gradients of every input against the composition's.
      Tensor w = randn(got.shape(), ++seed, dt);
      auto gf = grads_of([&](const Tensor& a, const Tensor& b, const Tensor& x) { return fused(a, b, x, m, c.causal); }, q, k, v, w);
      auto gn = grads_of([&](const Tensor& a, const Tensor& b, const Tensor& x) { return naive_attention(a, b, x, m, c.causal); }, q, k, v, w);
      for (int i = 0; i < 3; ++i) expect_tensor_near(gf[i], gn[i], dt == DType::float64 ? 1e-11 : 1e-4);
    }
  }
}

TEST(ScaledDotProductAttention, TheSequenceMajorLayoutGivesTheSameNumbers) {
  // bshd: q, k, v, out [batch, seq, heads, dim], read in place with strides.
  std::uint64_t seed = 100;
  for (const Case& c : kCases) {
    for (DType dt : {DType::float64, DType::float32}) {
      SCOPED_TRACE(std::to_string(c.sq) + "x" + std::to_string(c.sk) + " " + std::string(name_of(dt)));
      Tensor q = randn({c.b, c.h, c.sq, c.d}, ++seed, dt), k = randn({c.b, c.h, c.sk, c.d}, ++seed, dt);
      Tensor v = randn({c.b, c.h, c.sk, c.dv}, ++seed, dt);
      Tensor m = c.mask ? mask_for(c, ++seed) : Tensor();
      Tensor w = randn({c.b, c.h, c.sq, c.dv}, ++seed, dt);
      auto swap = [](const Tensor& t) { return transpose(t, {0, 2, 1, 3}); };
      auto major = [&](const Tensor& a, const Tensor& b, const Tensor& x) {
        nn::AttentionOptions o;
        o.mask = m;
        o.causal = c.causal;
        o.bshd = true;
        return swap(nn::scaled_dot_product_attention(swap(a), swap(b), swap(x), o));
      };
      double tol = dt == DType::float64 ? 1e-12 : 1e-5;
      expect_tensor_near(major(q, k, v), fused(q, k, v, m, c.causal), tol);
      auto g1 = grads_of(major, q, k, v, w);
      auto g2 = grads_of([&](const Tensor& a, const Tensor& b, const Tensor& x) { return fused(a, b, x, m, c.causal); },
                         q, k, v, w);
      for (int i = 0; i < 3; ++i) expect_tensor_near(g1[i], g2[i], tol * 10);
    }
  }
  nn::AttentionOptions o;
  o.bshd = true;
  Tensor q = randn({1, 3, 2, 4}, 1, DType::float32);
  expect_error([&] { nn::scaled_dot_product_attention(q, q, randn({1, 4, 2, 4}, 2, DType::float32), o); },
               {"same sequence length", "[batch, seq, heads, head_dim]"});
}

TEST(ScaledDotProductAttention, ARowThatSeesNoKeyIsZeroWithZeroGradient) {
  Tensor q = randn({1, 1, 3, 4}, 1), k = randn({1, 1, 5, 4}, 2), v = randn({1, 1, 5, 2}, 3);
  Tensor mask = tensor(std::vector<bool>{1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, Shape{1, 1, 3, 5});
  GradientTape tape;
  tape.watch(q);
  Tensor out = fused(q, k, v, mask, false);
  std::vector<double> o = out.to_vector<double>();
  EXPECT_EQ(o[2], 0.0);
  EXPECT_EQ(o[3], 0.0);
  // The last row sees only key 4: its output is v[4].
  EXPECT_NEAR(o[4], v.to_vector<double>()[8], 1e-14);
  std::vector<double> g = tape.gradient(sum(out), q).to_vector<double>();
  for (double x : g) EXPECT_TRUE(std::isfinite(x));
  for (int e = 0; e < 4; ++e) EXPECT_EQ(g[4 + e], 0.0);  // row 1 has no path to the output
}

TEST(ScaledDotProductAttention, TracedEqualsEagerAndTracesOnce) {
  Tensor q = randn({2, 2, 150, 8}, 4, DType::float32), k = randn({2, 2, 150, 8}, 5, DType::float32);
  Tensor v = randn({2, 2, 150, 8}, 6, DType::float32);
  auto step = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    GradientTape tape;
    tape.watch(std::vector<Tensor>{a, b, c});
    nn::AttentionOptions o;
    o.causal = true;
    Tensor y = nn::scaled_dot_product_attention(a, b, c, o);
    std::vector<Tensor> g = tape.gradient(sum(y * y), std::vector<Tensor>{a, b, c});
    return std::vector<Tensor>{y, g[0], g[1], g[2]};
  };
  std::vector<Tensor> eager = step(q, k, v);
  auto f = function(step);
  std::vector<Tensor> traced;
  for (int i = 0; i < 2; ++i) traced = f(q, k, v);
  EXPECT_EQ(f.tracing_count(), 1);
  for (int i = 0; i < 4; ++i) expect_tensor_near(traced[i], eager[i], 0.0);
}

TEST(ScaledDotProductAttention, SecondOrderGradientsMatchTheComposition) {
  Tensor q = randn({1, 2, 4, 3}, 7), k = randn({1, 2, 6, 3}, 8), v = randn({1, 2, 6, 2}, 9);
  Tensor mask = random::stateless_uniform({1, 1, 4, 6}, 10, 0.0, 1.0, DType::float64) > 0.3;
  auto second = [&](bool use_fused) {
    GradientTape outer;
    outer.watch(q);
    Tensor gq;
    {
      GradientTape inner;
      inner.watch(q);
      Tensor y = use_fused ? fused(q, k, v, mask, true) : naive_attention(q, k, v, mask, true);
      gq = inner.gradient(sum(y * y), q);
    }
    return outer.gradient(sum(gq * gq), q);
  };
  expect_tensor_near(second(true), second(false), 1e-10);
}

TEST(ScaledDotProductAttention, DropoutDropsAboutTheRateAndItsGradientMatchesDifferences) {
  // q = k = 0: every probability is 1/S; v = identity: out[i, j] = keep(i, j) / (1 - rate) / S.
  const std::int64_t s = 64;
  const double rate = 0.25;
  Tensor q = zeros({1, 1, s, 4}, DType::float64);
  Tensor v = reshape(cast(equal(reshape(arange(s), {s, 1}), reshape(arange(s), {1, s})), DType::float64), {1, 1, s, s});
  nn::AttentionOptions o;
  o.dropout = rate;
  std::vector<double> out = nn::scaled_dot_product_attention(q, q, v, o).to_vector<double>();
  std::size_t dropped = 0;
  for (double x : out) {
    if (x == 0.0) ++dropped;
    else EXPECT_NEAR(x, 1.0 / (1.0 - rate) / s, 1e-12);
  }
  double frac = static_cast<double>(dropped) / static_cast<double>(out.size());
  EXPECT_NEAR(frac, rate, 0.03);
  // With one seed input the op is a fixed function: its gradient against central differences.
  AttentionParams p;
  p.scale = 0.5;
  p.dropout = 0.3;
  Tensor seed = scalar<double>(12345.0);
  Tensor a = randn({1, 2, 5, 3}, 11), b = randn({1, 2, 6, 3}, 12), c = randn({1, 2, 6, 2}, 13);
  Tensor w = randn({1, 2, 5, 2}, 14);
  auto loss = [&](const Tensor& x, const Tensor& y, const Tensor& z) {
    return sum(dispatch(ScaledDotProductAttention(p), std::vector<Tensor>{x, y, z, seed})[0] * w);
  };
  GradientTape tape;
  tape.watch(std::vector<Tensor>{a, b, c});
  std::vector<Tensor> g = tape.gradient(loss(a, b, c), std::vector<Tensor>{a, b, c});
  for (int i = 0; i < 3; ++i) {
    Tensor dir = randn((i == 0 ? a : i == 1 ? b : c).shape(), 20 + i);
    auto at = [&](double e) {
      Tensor x = a, y = b, z = c;
      (i == 0 ? x : i == 1 ? y : z) = (i == 0 ? a : i == 1 ? b : c) + dir * e;
      return loss(x, y, z).item<double>();
    };
    double numeric = (at(1e-6) - at(-1e-6)) / 2e-6;
    EXPECT_NEAR(sum(g[i] * dir).item<double>(), numeric, 1e-6 * (1 + std::fabs(numeric))) << "input " << i;
  }
}

TEST(ScaledDotProductAttention, MemoryStaysLinearAtSequence4096) {
  // Forward and backward at 4096 x 4096: a score matrix would be 64 MiB per head; the fused op
  // allocates nothing larger than its inputs (1 MiB each) through ef's allocator.
  const std::int64_t s = 4096, d = 64;
  Tensor q = randn({1, 1, s, d}, 30, DType::float32), k = randn({1, 1, s, d}, 31, DType::float32);
  Tensor v = randn({1, 1, s, d}, 32, DType::float32);
  allocator::reset_largest_request();
  GradientTape tape;
  tape.watch(std::vector<Tensor>{q, k, v});
  nn::AttentionOptions o;
  o.causal = true;
  Tensor y = nn::scaled_dot_product_attention(q, k, v, o);
  std::vector<Tensor> g = tape.gradient(sum(y), std::vector<Tensor>{q, k, v});
  std::size_t largest = allocator::largest_request();
  EXPECT_LE(largest, static_cast<std::size_t>(s * d * 4)) << "largest single allocation " << largest;
  // The naive composition does allocate the quadratic matrix: the statistic can see it.
  allocator::reset_largest_request();
  Tensor small_q = slice(q, {0, 0, 0, 0}, {1, 1, 1024, d}, {1, 1, 1, 1});
  (void)matmul(small_q, small_q, false, true);
  EXPECT_GE(allocator::largest_request(), static_cast<std::size_t>(1024 * 1024 * 4));
  for (const Tensor& t : g) EXPECT_TRUE(std::isfinite(sum(t).item<float>()));
}

TEST(ScaledDotProductAttention, BadInputsNameTheOpAndShapes) {
  Tensor q = randn({1, 2, 3, 4}, 1, DType::float32);
  expect_error([&] { nn::scaled_dot_product_attention(reshape(q, {2, 3, 4}), q, q); }, {"scaled_dot_product_attention", "rank 4"});
  expect_error([&] { nn::scaled_dot_product_attention(q, randn({1, 2, 3, 5}, 2, DType::float32), q); },
               {"scaled_dot_product_attention", "head_dim", "float32[1,2,3,5]"});
  expect_error([&] { nn::scaled_dot_product_attention(q, q, randn({1, 2, 4, 4}, 2, DType::float32)); },
               {"same sequence length"});
  expect_error([&] { nn::scaled_dot_product_attention(q, q, randn({1, 2, 3, 4}, 2)); }, {"share a dtype"});
  nn::AttentionOptions o;
  o.mask = ones({1, 2, 3, 3});
  expect_error([&] { nn::scaled_dot_product_attention(q, q, q, o); }, {"mask must be bool"});
  o.mask = ones({4, 3}) > 0.0f;
  expect_error([&] { nn::scaled_dot_product_attention(q, q, q, o); }, {"does not broadcast", "[1,2,3,3]"});
  nn::AttentionOptions bad_rate;
  bad_rate.dropout = 1.0;
  expect_error([&] { nn::scaled_dot_product_attention(q, q, q, bad_rate); }, {"dropout must be in [0, 1)"});
}

// ---------------------------------------------------------------- MultiHeadAttention
namespace {

// Keras 3.15.1 (TensorFlow backend) in the peer virtualenv, by /tmp/attn/keras_ref.py (kept in
// the test's comment below): keras.layers.MultiHeadAttention(num_heads=2, key_dim=3,
// value_dim=4, output_shape=5) called on query fill((2,4,6), 0.1), value fill((2,5,7), 0.2),
// key fill((2,5,3), 0.3), where fill(shape, c) = sin(0.7 * arange(n) + c) * 0.8 in float32, and
// each weight i of layer.weights (query kernel, bias, key kernel, bias, value kernel, bias,
// output kernel, bias) assigned fill(w.shape, 1.0 + i). The mask is fill((2,4,5), 0.5) > -0.3
// with query row [1, 2] fully masked; outputs and scores from return_attention_scores=True
// (Keras' explicit masked softmax, which zeroes masked probabilities).
const std::vector<bool> kMask = {1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1,
                                 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
const std::vector<float> kMaskedOut = {0.5325115919113159, 0.01326066255569458, -0.512226939201355, -0.7968061566352844, -0.7066351175308228, 0.08156228065490723, -1.101703405380249, -1.7668207883834839, -1.6009745597839355, -0.6821654438972473, 0.5308833122253418, 0.32625120878219604, -0.03182185813784599, -0.3749285936355591, -0.5417006015777588, 0.3489607572555542, -0.5773779153823853, -1.2321666479110718, -1.307448148727417, -0.7678164839744568, 0.8251818418502808, 0.4534277319908142, -0.13158056139945984, -0.6547044515609741, -0.869910478591919, 0.5306457281112671, -0.1201443076133728, -0.7144285440444946, -0.9727058410644531, -0.7735045552253723, 0.7914866209030151, 0.5303753614425659, 0.01982033997774124, -0.5000565052032471, -0.7847489714622498, 0.5497286319732666, -0.03203713893890381, -0.5987352728843689, -0.8838388323783875, -0.7532592415809631};
const std::vector<float> kMaskedScores = {0.19114725291728973, 0.22698695957660675, 0.16347330808639526, 0.19175632297992706, 0.22663617134094238, 0.0, 0.0, 0.0, 0.3568335771560669, 0.6431664824485779, 0.25447508692741394, 0.2970004975795746, 0.1929837316274643, 0.255540668964386, 0.0, 0.0, 0.0, 0.28032588958740234, 0.3313758075237274, 0.38829830288887024, 0.14424937963485718, 0.29082825779914856, 0.12904027104377747, 0.14538997411727905, 0.2904921770095825, 0.0, 0.0, 0.0, 0.2654128670692444, 0.7345871329307556, 0.1869688779115677, 0.467744380235672, 0.15632107853889465, 0.1889656037092209, 0.0, 0.0, 0.0, 0.22807000577449799, 0.25785937905311584, 0.5140705704689026, 0.2848246395587921, 0.25575166940689087, 0.4594237506389618, 0.0, 0.0, 0.0, 0.2551683783531189, 0.2961983382701874, 0.19239559769630432, 0.2562377154827118, 0.0, 0.0, 0.0, 0.0, 0.0, 0.18516644835472107, 0.16593800485134125, 0.2980627119541168, 0.18411830067634583, 0.1667145937681198, 0.20651459693908691, 0.21285125613212585, 0.5806341767311096, 0.0, 0.0, 0.0, 0.18969136476516724, 0.46567556262016296, 0.15288282930850983, 0.19175021350383759, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1458689570426941, 0.1501510590314865, 0.4078478515148163, 0.14446300268173218, 0.15166908502578735};
// The same layer and inputs without a mask.
const std::vector<float> kPlainOut = {0.5325117111206055, 0.01326078176498413, -0.512226939201355, -0.7968062162399292, -0.7066351771354675, 0.5842729806900024, 0.09198665618896484, -0.44356241822242737, -0.7704971432685852, -0.7350550889968872, 0.5134100914001465, 0.008012890815734863, -0.5011528134346008, -0.7746186256408691, -0.683769166469574, 0.5310564041137695, 0.0115012526512146, -0.5134630799293518, -0.7969377040863037, -0.7056001424789429, 0.5498700737953186, -0.03228825330734253, -0.5992608666419983, -0.884391725063324, -0.7535793781280518, 0.6081573367118835, 0.031234413385391235, -0.5603784322738647, -0.8884365558624268, -0.7986491322517395, 0.5992359519004822, 0.04282835125923157, -0.5337220430374146, -0.8592546582221985, -0.7806663513183594, 0.5497286319732666, -0.03203713893890381, -0.5987352728843689, -0.8838388919830322, -0.7532593011856079};
// MultiHeadAttention(num_heads=2, key_dim=4, use_bias=False) on query = value = fill((2,6,8), 0.1),
// weights fill(w.shape, 1.0 + i) as above, use_causal_mask=True.
const std::vector<float> kCausalOut = {-6.555219650268555, -8.196341514587402, -5.982595920562744, -0.9551427364349365, 4.521529197692871, 7.871654987335205, 7.519618511199951, 3.630988121032715, -2.3040294647216797, -6.7445902824401855, -8.013065338134766, -5.512870788574219, -0.4198862910270691, 4.870576858520508, 7.870331764221191, 7.168546676635742, 3.173053503036499, -2.2228875160217285, -6.57336950302124, -7.83229398727417, -5.407567024230957, -0.439577579498291, 4.735152244567871, 7.682866096496582, 7.12750768661499, 3.2800960540771484, -2.1099960803985596, -6.507723331451416, -7.844767093658447, -5.492294788360596, -0.5567095875740051, 4.64070463180542, 7.850432395935059, 7.2490668296813965, 3.2383525371551514, -2.2954094409942627, -6.749605178833008, -8.0293550491333, -5.532775402069092, -0.4340437054634094, 5.134340763092041, 7.937526226043701, 7.007569789886475, 2.781843423843384, -2.7522270679473877, -6.991881847381592, -7.943146228790283, -5.158623695373535, -0.028083331882953644, 5.151492118835449, 7.908239364624023, 6.945618629455566, 2.716365337371826, -2.790437936782837, -6.984854221343994, -7.894184589385986, -5.068211555480957, -0.01606815494596958, 5.043632984161377, 7.731234073638916, 6.782715320587158, 2.6441798210144043, -2.737955093383789, -6.8323869705200195, -7.856634616851807, -5.186038017272949, -0.07636670023202896, 5.069221496582031, 7.83067512512207, 6.90924072265625, 2.738281726837158, -2.720533609390259, -7.136523723602295, -7.971491813659668, -5.0573410987854, 0.2353544533252716, 5.417359352111816, 8.051495552062988, 6.89888858795166, 2.501624822616577, -3.334704637527466, -7.277894496917725, -7.798177242279053, -4.65085506439209, 0.6838366985321045, 5.696908950805664, 8.03063678741455, 6.587430000305176, 1.9889986515045166, -2.7837581634521484, -6.247269630432129, -6.772593021392822, -4.112659931182861, 0.48152151703834534, 4.849236011505127, 6.936278820037842};

void assign_keras_fill(nn::Layer& layer) {
  std::vector<Variable> w = layer.weights();
  for (std::size_t i = 0; i < w.size(); ++i) w[i].assign(fill(w[i].shape(), 1.0 + static_cast<double>(i)));
}

std::shared_ptr<nn::MultiHeadAttention> keras_layer() {
  nn::MultiHeadAttentionOptions o;
  o.value_dim = 4;
  o.output_shape = 5;
  return std::make_shared<nn::MultiHeadAttention>(2, 3, o);
}

}  // namespace

TEST(MultiHeadAttention, MatchesKerasOnFixedWeights) {
  auto layer = keras_layer();
  Tensor q = fill({2, 4, 6}, 0.1), v = fill({2, 5, 7}, 0.2), k = fill({2, 5, 3}, 0.3);
  nn::MultiHeadAttention::Call call;
  call.key = k;
  (*layer)(q, v, call);
  std::vector<std::string> names;
  for (const auto& w : layer->weights()) names.push_back(w.name());
  EXPECT_EQ(names, (std::vector<std::string>{"multi_head_attention/query/kernel", "multi_head_attention/query/bias",
                                             "multi_head_attention/key/kernel", "multi_head_attention/key/bias",
                                             "multi_head_attention/value/kernel", "multi_head_attention/value/bias",
                                             "multi_head_attention/attention_output/kernel",
                                             "multi_head_attention/attention_output/bias"}));
  EXPECT_EQ(layer->query_kernel().shape(), (Shape{6, 2, 3}));
  EXPECT_EQ(layer->output_kernel().shape(), (Shape{2, 4, 5}));
  assign_keras_fill(*layer);
  ef::testing::expect_close((*layer)(q, v, call).to_vector<float>(), kPlainOut, 2e-5f);
  call.attention_mask = tensor(kMask, Shape{2, 4, 5});
  ef::testing::expect_close((*layer)(q, v, call).to_vector<float>(), kMaskedOut, 2e-5f);
  auto [out, scores] = layer->call_with_scores(q, v, call);
  EXPECT_EQ(scores.shape(), (Shape{2, 2, 4, 5}));
  ef::testing::expect_close(out.to_vector<float>(), kMaskedOut, 2e-5f);
  ef::testing::expect_close(scores.to_vector<float>(), kMaskedScores, 2e-5f);

  nn::MultiHeadAttentionOptions no_bias;
  no_bias.use_bias = false;
  nn::MultiHeadAttention causal(2, 4, no_bias);
  Tensor x = fill({2, 6, 8}, 0.1);
  nn::MultiHeadAttention::Call c;
  c.use_causal_mask = true;
  causal(x, x, c);
  EXPECT_EQ(causal.weights().size(), 4u);
  assign_keras_fill(causal);
  ef::testing::expect_close(causal(x, x, c).to_vector<float>(), kCausalOut, 2e-5f);
}

TEST(MultiHeadAttention, CausalOutputsIgnoreLaterTokens) {
  nn::MultiHeadAttention layer(4, 8);
  nn::MultiHeadAttention::Call c;
  c.use_causal_mask = true;
  Tensor x = randn({2, 10, 16}, 40, DType::float32);
  Tensor before = layer(x, x, c);
  // Perturb token 6 of every sequence: outputs 0..5 stay, 6.. change.
  Tensor bump = cast(equal(reshape(arange(10), {1, 10, 1}), scalar<std::int64_t>(6)), DType::float32) * 3.0f;
  Tensor after = layer(x + bump, x + bump, c);
  Tensor b = slice(before, {0, 0, 0}, {2, 6, 16}, {1, 1, 1}), a = slice(after, {0, 0, 0}, {2, 6, 16}, {1, 1, 1});
  EXPECT_EQ(max(abs(a - b)).item<float>(), 0.0f);
  Tensor b2 = slice(before, {0, 6, 0}, {2, 10, 16}, {1, 1, 1}), a2 = slice(after, {0, 6, 0}, {2, 10, 16}, {1, 1, 1});
  EXPECT_GT(max(abs(a2 - b2)).item<float>(), 1e-3f);
  // Without the causal mask the earlier outputs do change.
  Tensor open_before = layer(x, x), open_after = layer(x + bump, x + bump);
  EXPECT_GT(max(abs(slice(open_after, {0, 0, 0}, {2, 6, 16}, {1, 1, 1}) - slice(open_before, {0, 0, 0}, {2, 6, 16}, {1, 1, 1}))).item<float>(), 1e-3f);
}

TEST(MultiHeadAttention, GradientsMatchTheExplicitPathAndTracedCalls) {
  // The fused path and the explicit one (return_attention_scores) are the same function.
  auto layer = keras_layer();
  Tensor q = randn({2, 4, 6}, 50, DType::float32), v = randn({2, 5, 7}, 51, DType::float32);
  nn::MultiHeadAttention::Call call;
  call.attention_mask = tensor(kMask, Shape{2, 4, 5});
  call.use_causal_mask = true;
  auto grads = [&](bool scores) {
    GradientTape tape;
    tape.watch(q);
    Tensor y = scores ? layer->call_with_scores(q, v, call).first : (*layer)(q, v, call);
    std::vector<GradientSource> src{q};
    for (const auto& w : layer->trainable_weights()) src.emplace_back(w);
    return tape.gradient(sum(y * y), src);
  };
  (*layer)(q, v, call);
  std::vector<Tensor> a = grads(false), b = grads(true);
  ASSERT_EQ(a.size(), 9u);
  for (std::size_t i = 0; i < a.size(); ++i) expect_tensor_near(a[i], b[i], 1e-4);
  // Traced: one trace, the eager numbers.
  auto f = function([&](const Tensor& x, const Tensor& y) { return (*layer)(x, y, call); });
  Tensor eager = (*layer)(q, v, call);
  expect_tensor_near(f(q, v), eager, 1e-6);
  expect_tensor_near(f(q, v), eager, 1e-6);
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(MultiHeadAttention, HonoursKerasMasksFromEmbedding) {
  // Embedding(mask_zero) marks padding (id 0); attention then equals the explicit mask
  // query_mask[:, :, None] & value_mask[:, None, :], as Keras' _compute_attention_mask builds it.
  nn::Embedding embed(9, 6);
  embed.mask_zero = true;
  Tensor ids = tensor(std::vector<std::int64_t>{3, 1, 4, 0, 0, 5, 2, 6, 7, 0}, Shape{2, 5});
  Tensor x = embed(ids);
  Tensor pad = not_equal(ids, scalar<std::int64_t>(0));
  ASSERT_TRUE(nn::mask_of(x).defined());
  nn::MultiHeadAttention layer(2, 3);
  nn::MultiHeadAttention::Call with_keras_mask;
  with_keras_mask.use_causal_mask = true;
  Tensor got = layer(x, x, with_keras_mask);
  nn::MultiHeadAttention::Call explicit_mask;
  explicit_mask.use_causal_mask = true;
  explicit_mask.attention_mask = logical_and(expand_dims(pad, -1), expand_dims(pad, 1));
  Tensor plain = identity(x);  // a handle without the mask
  EXPECT_FALSE(nn::mask_of(plain).defined());
  Tensor want = layer(plain, plain, explicit_mask);
  expect_tensor_near(got, want, 0.0);
  EXPECT_GT(max(abs(layer(plain, plain, with_keras_mask) - want)).item<float>(), 1e-4f);
  ASSERT_TRUE(nn::mask_of(got).defined());
  EXPECT_EQ(nn::mask_of(got).to_vector<bool>(), pad.to_vector<bool>());
}

TEST(MultiHeadAttention, DropoutOnlyWhileTraining) {
  nn::MultiHeadAttentionOptions o;
  o.dropout = 0.5;
  nn::MultiHeadAttention layer(2, 4, o);
  Tensor x = randn({2, 8, 6}, 60, DType::float32);
  nn::MultiHeadAttention::Call c;
  Tensor a = layer(x, x, c), b = layer(x, x, c);
  EXPECT_EQ(max(abs(a - b)).item<float>(), 0.0f);
  c.training = true;
  Tensor t1 = layer(x, x, c), t2 = layer(x, x, c);
  EXPECT_GT(max(abs(t1 - t2)).item<float>(), 1e-4f);  // a fresh mask per call
  EXPECT_GT(max(abs(t1 - a)).item<float>(), 1e-4f);
  // Traced: one trace, and each replay draws a fresh mask (the seed is a stateful draw recorded
  // in the graph; the gradient op takes the same seed input as the forward op).
  auto step = function([&](const Tensor& xt) {
    GradientTape tape;
    Tensor y = layer(xt, xt, c);
    std::vector<GradientSource> src;
    for (const auto& w : layer.trainable_weights()) src.emplace_back(w);
    std::vector<Tensor> g = tape.gradient(sum(y * y), src);
    return std::vector<Tensor>{y, g[0]};
  });
  std::vector<Tensor> r1 = step(x), r2 = step(x);
  EXPECT_EQ(step.tracing_count(), 1);
  EXPECT_GT(max(abs(r1[0] - r2[0])).item<float>(), 1e-4f);
  EXPECT_TRUE(std::isfinite(sum(r1[1]).item<float>()));
}

TEST(MultiHeadAttention, BadInputsAndArgumentsNameTheLayer) {
  expect_error([] { nn::MultiHeadAttention(0, 4); }, {"multi_head_attention", "positive"});
  nn::MultiHeadAttentionOptions o;
  o.kernel_initializer = "nope";
  expect_error([&] { nn::MultiHeadAttention(2, 4, o); }, {"unknown initializer 'nope'"});
  nn::MultiHeadAttention layer(2, 4, {}, "mha");
  Tensor x = randn({2, 5, 6}, 1, DType::float32);
  expect_error([&] { layer(reshape(x, {10, 6}), x); }, {"mha", "rank 3"});
  layer(x, x);
  expect_error([&] { layer(randn({2, 5, 7}, 1, DType::float32), x); }, {"mha", "query", "7 features", "built for 6"});
  nn::MultiHeadAttention::Call c;
  c.attention_mask = ones({2, 4, 4}) > 0.0f;
  expect_error([&] { layer(x, x, c); }, {"does not broadcast"});
}

TEST(MultiHeadAttention, ConfigRoundTripsAndSavedModelsReload) {
  nn::MultiHeadAttentionOptions o;
  o.value_dim = 5;
  o.output_shape = 3;
  o.dropout = 0.1;
  o.use_bias = false;
  o.kernel_initializer = "random_normal";
  nn::MultiHeadAttention layer(3, 4, o, "attn");
  auto config = layer.get_config();
  ASSERT_TRUE(config);
  EXPECT_EQ(config->class_name, "MultiHeadAttention");
  auto back = std::dynamic_pointer_cast<nn::MultiHeadAttention>(nn::layer_from_config(*config));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->get_config()->config, config->config);
  EXPECT_EQ(back->num_heads(), 3);
  EXPECT_EQ(back->value_dim(), 5);
  EXPECT_EQ(*back->options().output_shape, 3);

  // A model with attention saves and loads with its weights and outputs.
  random::set_seed(3);
  Tensor in = train::Input({6}, DType::int64, "ids");
  auto embed = std::make_shared<nn::PositionalEmbedding>(11, 6, 8);
  auto attn = std::make_shared<nn::MultiHeadAttention>(2, 4);
  auto head = std::make_shared<nn::Dense>(11);
  Tensor h = (*embed)(in);
  nn::MultiHeadAttention::Call c;
  c.use_causal_mask = true;
  Tensor out = (*head)((*attn)(h, h, c));
  auto model = std::make_shared<train::Functional>(in, out);
  Tensor ids = cast(random::stateless_uniform({3, 6}, 4, 0.0, 11.0, DType::float64), DType::int64);
  Tensor want = model->predict(ids);
  auto dir = ef::testing::fresh_temp_dir("attention_save");
  std::string path = (dir / "m.efmodel").string();
  save_model(*model, path);
  auto loaded = load_model(path);
  expect_tensor_near(loaded->predict(ids), want, 1e-6);
  // Causality survived the round trip: a later token does not move earlier logits.
  std::vector<std::int64_t> changed = ids.to_vector<std::int64_t>();
  changed[5] = (changed[5] + 1) % 11;
  Tensor moved = loaded->predict(tensor(changed, Shape{3, 6}));
  EXPECT_EQ(max(abs(slice(moved, {0, 0, 0}, {1, 5, 11}, {1, 1, 1}) - slice(want, {0, 0, 0}, {1, 5, 11}, {1, 1, 1}))).item<float>(), 0.0f);
}

TEST(MultiHeadAttention, ATinyTransformerLearnsToCopyThePreviousToken) {
  // ids [batch, 8] over 6 symbols; the target at t is the id at t - 1 (0 at t = 0): the model can
  // only solve it by attending (causally) to the previous position.
  random::set_seed(11);
  const std::int64_t vocab = 6, seq = 8, n = 256;
  Tensor ids = cast(random::stateless_uniform({n, seq}, 5, 1.0, static_cast<double>(vocab), DType::float64), DType::int64);
  Tensor target = concat({zeros({n, 1}, DType::int64), slice(ids, {0, 0}, {n, seq - 1}, {1, 1})}, 1);
  Tensor in = train::Input({seq}, DType::int64, "ids");
  auto embed = std::make_shared<nn::PositionalEmbedding>(vocab, seq, 32);
  auto attn = std::make_shared<nn::MultiHeadAttention>(4, 8);
  auto norm = std::make_shared<nn::LayerNormalization>();
  auto ff = std::make_shared<nn::Dense>(64, "relu");
  auto head = std::make_shared<nn::Dense>(vocab);
  Tensor h = (*embed)(in);
  nn::MultiHeadAttention::Call c;
  c.use_causal_mask = true;
  Tensor a = (*norm)((*std::make_shared<nn::Add>())(std::vector<Tensor>{h, (*attn)(h, h, c)}));
  Tensor logits = (*head)((*ff)(a));
  auto model = std::make_shared<train::Functional>(in, logits);
  model->compile(std::make_shared<optim::Adam>(1e-2), train::SparseCategoricalCrossentropy(true), {"accuracy"});
  train::FitOptions o;
  o.epochs = 30;
  o.batch_size = 32;
  o.verbose = 0;
  train::History hist = model->fit(ids, target, o);
  EXPECT_EQ(model->tracing_count(), 1);
  // Chance is 1/5 per token; copying the previous token is exact.
  EXPECT_LT(hist.history["loss"].back(), 0.3) << "first loss " << hist.history["loss"].front();
  EXPECT_GT(hist.history["accuracy"].back(), 0.9);
}

// ---------------------------------------------------------------- PositionalEmbedding
TEST(PositionalEmbedding, AddsTokenAndPositionVectors) {
  nn::PositionalEmbedding layer(7, 5, 3, "pe");
  Tensor ids = tensor(std::vector<std::int64_t>{1, 4, 0, 6, 2, 2}, Shape{2, 3});
  Tensor y = layer(ids);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(layer.weights()[0].name(), "pe/token_embedding/embeddings");
  EXPECT_EQ(layer.weights()[1].name(), "pe/position_embedding/embeddings");
  std::vector<float> tok = Tensor(layer.token_embeddings()).to_vector<float>();
  std::vector<float> pos = Tensor(layer.position_embeddings()).to_vector<float>();
  std::vector<float> got = y.to_vector<float>();
  std::vector<std::int64_t> id = ids.to_vector<std::int64_t>();
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      for (int e = 0; e < 3; ++e)
        EXPECT_FLOAT_EQ(got[(b * 3 + t) * 3 + e], tok[id[b * 3 + t] * 3 + e] + pos[t * 3 + e]);
  expect_error([&] { layer(ones({2, 3})); }, {"pe", "integer ids"});
  expect_error([&] { layer(zeros({2, 6}, DType::int64)); }, {"pe", "longer than sequence_length 5"});
  auto back = nn::layer_from_config(*layer.get_config());
  EXPECT_EQ(back->get_config()->config, layer.get_config()->config);
}
