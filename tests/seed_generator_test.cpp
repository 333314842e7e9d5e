// A layer's own random sequence (ef::random::SeedGenerator, Keras 3's seed_generator): two
// layers with one seed repeat each other's masks, each call still draws a new one, and
// checkpoints and saved models continue the sequence where it was.
#include "test_util.h"

using namespace ef;

namespace {
std::vector<float> mask_of(nn::Dropout& drop, std::int64_t n = 64) { return drop(ones({n}), true).to_vector<float>(); }
}  // namespace

TEST(SeedGenerator, TwoDropoutsWithOneSeedDrawTheSameMasks) {
  random::set_seed(1);
  nn::Dropout first(0.5, 21);
  std::vector<std::vector<float>> a;
  for (int i = 0; i < 3; ++i) a.push_back(mask_of(first));
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(a[1], a[2]);
  // Another op drawing from seed 21 and unseeded draws in between change nothing for a new layer.
  random::uniform({8}, 0.0, 1.0, DType::float32, 21);
  random::uniform({8});
  nn::Dropout second(0.5, 21);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(mask_of(second), a[static_cast<std::size_t>(i)]) << "call " << i;
  // A third, unseeded or with another seed, draws other masks.
  nn::Dropout other(0.5, 22), unseeded(0.5);
  EXPECT_NE(mask_of(other), a[0]);
  EXPECT_NE(mask_of(unseeded), a[0]);
}

TEST(SeedGenerator, TracedLayersDrawTheirOwnSequences) {
  random::set_seed(3);
  nn::Dropout eager_layer(0.3, 5);
  std::vector<std::vector<float>> eager;
  for (int i = 0; i < 4; ++i) eager.push_back(mask_of(eager_layer, 32));
  // Two layers of seed 5 in one traced function: each draws the sequence from its start.
  nn::Dropout d1(0.3, 5), d2(0.3, 5);
  auto f = function([&](const Tensor& x) { return std::vector<Tensor>{d1(x, true), d2(x, true)}; });
  for (int i = 0; i < 4; ++i) {
    auto out = f(ones({32}));
    EXPECT_EQ(out[0].to_vector<float>(), eager[static_cast<std::size_t>(i)]) << "call " << i;
    EXPECT_EQ(out[1].to_vector<float>(), eager[static_cast<std::size_t>(i)]) << "call " << i;
  }
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_EQ(d1.seed_generator()->draws(), 4u);
}

TEST(SeedGenerator, HandlesShareTheCountAndSetSeedRestartsIt) {
  random::SeedGenerator g(9);
  random::SeedGenerator copy = g;
  auto first = random::uniform({6}, 0.0, 1.0, DType::float32, g).to_vector<float>();
  auto second = random::normal({6}, 0.0, 1.0, DType::float32, copy).to_vector<float>();
  EXPECT_EQ(g.draws(), 2u);
  EXPECT_EQ(copy.draws(), 2u);
  random::set_seed(11);
  EXPECT_EQ(g.draws(), 0u);
  EXPECT_EQ(random::uniform({6}, 0.0, 1.0, DType::float32, g).to_vector<float>(), first);
  g.set_draws(1);
  EXPECT_EQ(random::normal({6}, 0.0, 1.0, DType::float32, g).to_vector<float>(), second);
  // A generator without a seed takes one from the global generator: new for each, repeatable.
  random::set_seed(12);
  std::uint64_t s1 = random::SeedGenerator().seed(), s2 = random::SeedGenerator().seed();
  EXPECT_NE(s1, s2);
  random::set_seed(12);
  EXPECT_EQ(random::SeedGenerator().seed(), s1);
}

TEST(SeedGenerator, ManyShortLivedGeneratorsAreForgotten) {
  // Layers made and dropped in a loop: set_seed must still restart the live ones only.
  random::SeedGenerator kept(4);
  for (int i = 0; i < 5000; ++i) {
    random::SeedGenerator temp(static_cast<std::uint64_t>(i));
    random::uniform({1}, 0.0, 1.0, DType::float32, temp);
  }
  random::uniform({1}, 0.0, 1.0, DType::float32, kept);
  random::set_seed(1);
  EXPECT_EQ(kept.draws(), 0u);
}

TEST(SeedGenerator, MultiHeadAttentionWithOneSeedDropsAlike) {
  random::set_seed(2);
  Tensor q = random::normal({2, 5, 8});
  for (bool scores : {false, true}) {
    nn::MultiHeadAttentionOptions o;
    o.dropout = 0.5;
    o.seed = 17;
    nn::MultiHeadAttention a(2, 4, o), b(2, 4, o);
    a(q, q);
    b(q, q);
    train::set_layer_weights(b, train::layer_weights(a));
    nn::MultiHeadAttention::Call train;
    train.training = true;
    auto run = [&](nn::MultiHeadAttention& m) {
      return scores ? m.call_with_scores(q, q, train).first : m(q, q, train);
    };
    Tensor a1 = run(a), a2 = run(a);
    EXPECT_GT(max(abs(a1 - a2)).item<float>(), 0.0f) << "scores " << scores;
    EXPECT_EQ(run(b).to_vector<float>(), a1.to_vector<float>()) << "scores " << scores;
    EXPECT_EQ(run(b).to_vector<float>(), a2.to_vector<float>()) << "scores " << scores;
  }
}

TEST(SeedGenerator, CheckpointsContinueALayersSequence) {
  auto make = [] {
    auto m = std::make_shared<train::Sequential>();
    m->add<nn::Dense>(16, nn::ActivationFn{}, true, "dense");
    m->add<nn::Dropout>(0.5, 31, "drop");
    return m;
  };
  auto model = make();
  Tensor x = ones({2, 16});
  for (int i = 0; i < 3; ++i) (*model)(x, true);
  auto dir = ef::testing::fresh_temp_dir("seed_generator_ckpt");
  std::string path = (dir / "c.safetensors").string();
  train::Checkpoint ckpt;
  ckpt.track("model", *model);
  ckpt.save(path);
  io::TensorFile f = io::load_safetensors(path);
  const Tensor* saved = f.find("rng/generators/model/drop");
  ASSERT_NE(saved, nullptr);
  EXPECT_EQ(saved->item<std::int64_t>(), 3);
  auto next = (*model)(x, true).to_vector<float>();

  random::set_seed(5);  // another run restarts every sequence
  auto resumed = make();
  (*resumed)(x);  // built (inference: no draw)
  train::Checkpoint back;
  back.track("model", *resumed);
  back.restore(path);
  EXPECT_EQ((*resumed)(x, true).to_vector<float>(), next);
  // A damaged count is refused, and nothing changes.
  f.tensors.erase(std::remove_if(f.tensors.begin(), f.tensors.end(),
                                 [](const io::NamedTensor& t) { return t.name == "rng/generators/model/drop"; }),
                  f.tensors.end());
  f.tensors.push_back({"rng/generators/model/drop", scalar(1.5f)});
  f.metadata.erase("checksum");
  io::save_safetensors(path, f.tensors, f.metadata);
  ef::testing::expect_error([&] { back.restore(path); }, {"seed generator", "int64"});
  EXPECT_EQ(resumed->layers()[1]->seed_generator()->draws(), 4u);
}

TEST(SeedGenerator, SavedModelsContinueALayersSequence) {
  auto m = std::make_shared<train::Sequential>();
  m->add<nn::Dense>(8);
  m->add<nn::Dropout>(0.5, 8, "drop");
  Tensor x = ones({4, 3});
  (*m)(x, true);
  (*m)(x, true);
  auto dir = ef::testing::fresh_temp_dir("seed_generator_model");
  std::string path = (dir / "m.efmodel").string();
  save_model(*m, path);
  auto next = (*m)(x, true).to_vector<float>();
  random::set_seed(6);
  auto loaded = load_model(path);
  EXPECT_EQ((*loaded)(x, true).to_vector<float>(), next);
}
