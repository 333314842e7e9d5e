// ef::save_model / ef::load_model (eagerflow/saving/model.h): layer configs of every built-in
// layer, Sequential and functional models (several inputs and outputs, a shared layer, a nested
// model, ops on Keras tensors) round trip with the same predictions, the loaded model continues
// training step for step as the original, errors say what to register, and damaged files
// (fuzzed) are errors naming the file.
#include <cstring>
#include <fstream>
#include <random>

#include "io/json.h"
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

std::vector<float> floats(const Tensor& t) { return cast(t, DType::float32).to_vector<float>(); }

// Bit-equal values.
void expect_same(const Tensor& a, const Tensor& b, const std::string& what = "") {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  auto x = floats(a), y = floats(b);
  ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0) << what;
}

void expect_same_weights(const nn::Layer& a, const nn::Layer& b, const std::string& what) {
  auto wa = train::weights_by_key(a), wb = train::weights_by_key(b);
  ASSERT_EQ(wa.size(), wb.size()) << what;
  for (std::size_t i = 0; i < wa.size(); ++i) {
    EXPECT_EQ(wa[i].first, wb[i].first) << what;
    expect_same(wa[i].second.value(), wb[i].second.value(), what + " " + wa[i].first);
  }
}

using Bytes = std::vector<std::byte>;

Bytes read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Bytes b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

void write_bytes(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::uint64_t get_u64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}
void put_u64(Bytes& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// The documented checksum (FNV-1a 64 of everything after the 40-byte preamble; version 1 files
// started from a mistyped basis), recomputed so that a test can change the header and still
// reach the parser.
void fix_checksum(Bytes& b) {
  if (b.size() < 40) return;
  std::uint64_t h = static_cast<unsigned char>(b[8]) == 1 ? 1469598103934665603ull : 14695981039346656037ull;
  for (std::size_t i = 40; i < b.size(); ++i) h = (h ^ static_cast<unsigned char>(b[i])) * 1099511628211ull;
  put_u64(b, 32, h);
}

// A file with `header` (JSON text) in place of its own, lengths and checksum made consistent.
Bytes with_header(const Bytes& file, const std::string& header) {
  std::uint64_t h = get_u64(file, 16);
  Bytes out(file.begin(), file.begin() + 40);
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  out.insert(out.end(), file.begin() + 40 + static_cast<long>(h), file.end());
  put_u64(out, 16, header.size());
  fix_checksum(out);
  return out;
}

std::string header_of(const Bytes& file) {
  std::uint64_t h = get_u64(file, 16);
  return std::string(reinterpret_cast<const char*>(file.data() + 40), h);
}

// A small classifier: Dense with a regularizer and a constraint, seeded Dropout, BatchNorm.
std::shared_ptr<train::Sequential> classifier() {
  auto m = make<train::Sequential>("clf");
  auto& d = m->add<nn::Dense>(8, "relu", true, "hidden");
  d.kernel_regularizer = nn::l2(0.001);
  d.kernel_constraint = nn::max_norm(3.0);
  m->add<nn::Dropout>(0.25, std::uint64_t{11}, "drop");
  m->add<nn::BatchNormalization>(0.9, 1e-3, "bn");
  m->add<nn::Dense>(3, nn::ActivationFn{}, true, "logits");
  return m;
}

void compile_classifier(train::Model& m) {
  train::CompileOptions o;
  o.optimizer = make<optim::Adam>(optim::ExponentialDecay(0.01, 5, 0.9), 0.85, 0.99, 1e-6, optim::ClipOptions{1.5, {}});
  o.loss = {train::SparseCategoricalCrossentropy(/*from_logits=*/true)};
  o.metrics = {"accuracy"};
  m.compile(o);
}

struct Data {
  Tensor x, y;
};
Data classification_data() {
  Tensor x = f32(randn({40, 5}, 1));
  auto v = floats(x);
  std::vector<float> labels;
  for (int i = 0; i < 40; ++i) labels.push_back(static_cast<float>((v[static_cast<std::size_t>(i * 5)] > 0) + (v[static_cast<std::size_t>(i * 5 + 1)] > 0.5f)));
  return {x, tensor(labels, Shape{40})};
}

}  // namespace

TEST(SaveModelJson, RealsRoundTripExactlyAndStayStrict) {
  for (double v : {0.1, 1.0, -0.0, 1e-7, 3.4028234663852886e38, 5e-324, 123456789.125, -2.5e-300}) {
    std::string text = io::json_real(v);
    io::Json j = io::parse_json(text, "test", /*allow_reals=*/true);
    ASSERT_TRUE(j.is_real()) << text;
    double back = j.real("test");
    EXPECT_EQ(std::memcmp(&back, &v, sizeof v), 0) << text;
  }
  EXPECT_EQ(io::json_real(1.0), "1.0");
  expect_error([] { io::json_real(std::nan("")); }, {"NaN"});
  expect_error([] { io::parse_json("1.5", "f"); }, {"only integers"});  // off unless asked for
  const std::string long_real = std::string(80, '1') + ".0";  // outlives the loop (a temporary's c_str() would not)
  for (const std::string& bad : {std::string("1."), std::string(".5"), std::string("1e"), std::string("01.5"),
                                 std::string("1e999"), std::string("-"), std::string("1.5e+"), long_real})
    expect_error([&] { io::parse_json(bad, "f", true); }, {"f: malformed JSON"});
  EXPECT_TRUE(io::parse_json("17", "f", true).is_int());
}

TEST(SaveModelLayers, EveryBuiltInLayerRebuildsFromItsConfig) {
  std::vector<std::shared_ptr<nn::Layer>> layers;
  auto dense = make<nn::Dense>(7, "tanh", false, "d");
  dense->bias_regularizer = nn::l1_l2(0.5, 0.25);
  dense->kernel_constraint = nn::min_max_norm(0.5, 2.0, 0.75, {0, 1});
  layers.push_back(dense);
  nn::Conv2DOptions co;
  co.strides = {2, 1};
  co.padding = "same";
  co.dilation_rate = {1, 2};
  co.activation = "elu";
  co.kernel_regularizer = nn::l1(0.125);
  co.bias_constraint = nn::non_neg();
  co.activity_regularizer = nn::l2(0.5);
  layers.push_back(make<nn::Conv2D>(4, Stride2{3, 2}, co, "c"));
  nn::Conv2DTransposeOptions to;
  to.strides = {2, 2};
  to.kernel_constraint = nn::unit_norm({0, 1, 2});
  layers.push_back(make<nn::Conv2DTranspose>(5, Stride2{3, 3}, to, "ct"));
  layers.push_back(make<nn::MaxPool2D>(Stride2{3, 3}, Stride2{1, 2}, "same", "mp"));
  layers.push_back(make<nn::AveragePooling2D>(Stride2{2, 2}, std::nullopt, "valid", "ap"));
  layers.push_back(make<nn::GlobalAveragePooling2D>("gap"));
  layers.push_back(make<nn::Flatten>("f"));
  layers.push_back(make<nn::Reshape>(Shape{-1, 4}, "r"));
  layers.push_back(make<nn::Dropout>(0.3, std::nullopt, "do"));
  layers.push_back(make<nn::Activation>("softplus", "act"));
  layers.push_back(make<nn::BatchNormalization>(0.8, 0.01, "bn"));
  layers.push_back(make<nn::LayerNormalization>(1e-5, "ln"));
  layers.push_back(make<nn::Embedding>(11, 6, "emb"));
  layers.push_back(make<nn::Add>("add"));
  layers.push_back(make<nn::Concatenate>(1, "cat"));
  layers.push_back(make<nn::Rescaling>(1.0 / 255, -0.5, "rs"));
  layers.push_back(make<nn::Normalization>(std::vector<int>{-1}, tensor({1.0f, 2.0f}), tensor({4.0f, 0.25f}), true, "norm"));
  layers.push_back(make<nn::UpSampling2D>(Stride2{2, 3}, "bilinear", "up"));
  layers.push_back(make<nn::ZeroPadding2D>(nn::Padding2D{1, 2, 3, 4}, "zp"));
  layers.push_back(make<nn::LeakyReLU>(0.125, "lr"));
  layers.push_back(make<nn::ELU>(0.7, "elu"));
  auto frozen = make<nn::Dense>(2, "linear", true, "frozen");
  frozen->set_trainable(false);
  layers.push_back(frozen);
  for (const auto& l : layers) {
    auto c = l->get_config();
    ASSERT_TRUE(c.has_value()) << l->name();
    auto rebuilt = nn::layer_from_config(*c);
    EXPECT_EQ(rebuilt->type_name(), l->type_name());
    EXPECT_EQ(rebuilt->name(), l->name());
    EXPECT_EQ(rebuilt->trainable(), l->trainable()) << l->name();
    auto again = rebuilt->get_config();
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->class_name, c->class_name);
    EXPECT_TRUE(again->config == c->config) << l->name();
  }
  // The parameters are really there (a check that could fail if a field were dropped).
  auto cc = layers[1]->get_config();
  EXPECT_EQ(cc->config.ints("dilation_rate"), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(cc->config.text("activation"), "elu");
  EXPECT_EQ(cc->config.map("kernel_regularizer").real("l1"), 0.125);
  EXPECT_TRUE(cc->config.has_value("activity_regularizer"));
  EXPECT_EQ(layers[0]->get_config()->config.map("kernel_constraint").real("rate"), 0.75);
  // A rebuilt Normalization normalizes with the saved mean and variance.
  auto norm = nn::layer_from_config(*layers[16]->get_config());
  auto y = (*norm)(tensor({{1.0f, 1.0f}}));
  ef::testing::expect_close(floats(y), {1.0f + 1.0f * 2.0f, 2.0f + 1.0f * 0.5f});
}

TEST(SaveModelLayers, ConfigErrorsSayWhatCannotBeSaved) {
  auto lambda = make<nn::Lambda>([](const Tensor& x) { return x * 2.0; }, "double_it");
  expect_error([&] { lambda->get_config(); }, {"double_it", "Lambda", "register_layer"});
  auto custom = make<nn::Dense>(2, nn::ActivationFn(std::function<Tensor(const Tensor&)>([](const Tensor& x) { return x; })), true, "custom_act");
  expect_error([&] { custom->get_config(); }, {"custom_act", "activation is a C++ function"});
  nn::LayerConfig c{"NoSuchLayer", {}};
  c.config.set("name", "mystery");
  expect_error([&] { nn::layer_from_config(c); }, {"mystery", "NoSuchLayer", "register_layer<NoSuchLayer>"});
  auto bad = *make<nn::Dense>(3)->get_config();
  bad.config.set("units", "three");
  expect_error([&] { nn::layer_from_config(bad); }, {"(Dense)", "'units' must be an integer"});
}

TEST(SaveModel, SequentialRoundTripKeepsPredictionsConfigAndCompileSettings) {
  auto dir = ef::testing::fresh_temp_dir("save_model_seq");
  random::set_seed(3);
  auto m = classifier();
  compile_classifier(*m);
  auto [x, y] = classification_data();
  train::FitOptions fo;
  fo.epochs = 2;
  fo.batch_size = 8;
  fo.verbose = 0;
  m->fit(x, y, fo);
  std::string path = (dir / "m.efmodel").string();
  save_model(*m, path);
  auto loaded = load_model(path);
  ASSERT_TRUE(std::dynamic_pointer_cast<train::Sequential>(loaded));
  EXPECT_EQ(loaded->name(), "clf");
  EXPECT_EQ(model_to_json(*loaded), model_to_json(*m));
  expect_same_weights(*m, *loaded, "after load");
  expect_same(loaded->predict(x), m->predict(x), "predictions");
  ASSERT_TRUE(loaded->compiled());
  const auto& o = loaded->compile_options();
  auto* adam = dynamic_cast<optim::Adam*>(loaded->optimizer().get());
  ASSERT_NE(adam, nullptr);
  EXPECT_EQ(adam->beta_1(), 0.85);
  EXPECT_EQ(adam->epsilon(), 1e-6);
  EXPECT_EQ(adam->clip_options().clipnorm, 1.5);
  EXPECT_EQ(adam->learning_rate(), m->optimizer()->learning_rate());  // the schedule at the same step
  ASSERT_EQ(o.loss.size(), 1u);
  EXPECT_EQ(o.loss[0].loss.name(), "sparse_categorical_crossentropy");
  // from_logits came back: the loss on logits matches the original's.
  expect_same(o.loss[0].loss(y, m->predict(x)), m->compile_options().loss[0].loss(y, m->predict(x)), "loss");
  auto ev_a = m->evaluate(x, y, 8), ev_b = loaded->evaluate(x, y, 8);
  EXPECT_EQ(ev_a.at("loss"), ev_b.at("loss"));
  EXPECT_EQ(ev_a.at("accuracy"), ev_b.at("accuracy"));
  EXPECT_EQ(loaded->optimizer()->iterations().value().item<std::int64_t>(), 10);
  // A model saved before any call: architecture only, builds on its first call.
  auto fresh = classifier();
  save_model(*fresh, (dir / "fresh.efmodel").string());
  auto fresh_loaded = load_model((dir / "fresh.efmodel").string());
  EXPECT_TRUE(fresh_loaded->weights().empty());
  EXPECT_FALSE(fresh_loaded->compiled());
  EXPECT_EQ((*fresh_loaded)(x).shape(), (Shape{40, 3}));
}

// compile()'s weighted_metrics come back from the file: the loaded model reports the same
// sample-weighted metrics as the original.
TEST(SaveModel, WeightedMetricsRoundTrip) {
  auto dir = ef::testing::fresh_temp_dir("save_model_weighted");
  random::set_seed(5);
  auto m = classifier();
  train::CompileOptions o;
  o.optimizer = make<optim::SGD>(0.05);
  o.loss = {train::SparseCategoricalCrossentropy(/*from_logits=*/true)};
  o.metrics = {"accuracy"};
  o.weighted_metrics = {"accuracy"};
  m->compile(o);
  auto [x, y] = classification_data();
  (*m)(x);
  Tensor sw = f32(abs(randn({40}, 9)));
  std::string path = (dir / "w.efmodel").string();
  save_model(*m, path);
  auto loaded = load_model(path);
  ASSERT_EQ(loaded->compile_options().weighted_metrics.size(), 1u);
  auto a = m->evaluate(x, y, 8, 0, sw), b = loaded->evaluate(x, y, 8, 0, sw);
  ASSERT_TRUE(a.count("weighted_accuracy")) << "the original reports weighted_accuracy";
  ASSERT_TRUE(b.count("weighted_accuracy")) << "the loaded model lost its weighted metric";
  EXPECT_EQ(a.at("weighted_accuracy"), b.at("weighted_accuracy"));
  EXPECT_EQ(a.at("accuracy"), b.at("accuracy"));
}

TEST(SaveModel, LoadedModelContinuesTrainingStepForStep) {
  auto dir = ef::testing::fresh_temp_dir("save_model_continue");
  random::set_seed(5);
  auto m = classifier();
  compile_classifier(*m);
  auto [x, y] = classification_data();
  train::FitOptions fo;
  fo.epochs = 2;
  fo.batch_size = 8;
  fo.verbose = 0;
  m->fit(x, y, fo);
  std::string path = (dir / "m.efmodel").string();
  save_model(*m, path);
  auto loaded = load_model(path);
  // Step by step: the same batches, the same random state before each run (dropout masks).
  std::vector<std::vector<Tensor>> original_steps;
  random::set_seed(99);
  for (int step = 0; step < 6; ++step) {
    Tensor xb = slice(x, {step * 5, 0}, {step * 5 + 5, 5}), yb = slice(y, {step * 5}, {step * 5 + 5});
    m->train_on_batch(xb, yb);
    std::vector<Tensor> w;
    for (const auto& v : m->weights()) w.push_back(v.value());
    original_steps.push_back(w);
  }
  random::set_seed(99);
  for (int step = 0; step < 6; ++step) {
    Tensor xb = slice(x, {step * 5, 0}, {step * 5 + 5, 5}), yb = slice(y, {step * 5}, {step * 5 + 5});
    loaded->train_on_batch(xb, yb);
    auto w = loaded->weights();
    ASSERT_EQ(w.size(), original_steps[static_cast<std::size_t>(step)].size());
    for (std::size_t i = 0; i < w.size(); ++i)
      expect_same(w[i].value(), original_steps[static_cast<std::size_t>(step)][i], "step " + std::to_string(step) + " " + w[i].name());
  }
  // And through fit (shuffled epochs): the same weights after 3 more epochs.
  fo.epochs = 3;
  random::set_seed(1234);
  m->fit(x, y, fo);
  random::set_seed(1234);
  loaded->fit(x, y, fo);
  expect_same_weights(*m, *loaded, "after 3 more epochs");
  EXPECT_EQ(m->optimizer()->iterations().value().item<std::int64_t>(),
            loaded->optimizer()->iterations().value().item<std::int64_t>());
  // Without the optimizer state the next step differs (the check above could fail).
  auto no_opt = load_model(path, LoadModelOptions{/*compile=*/false});
  EXPECT_FALSE(no_opt->compiled());
}

TEST(SaveModel, FunctionalWithSharedLayerNestedModelAndOpsRoundTrips) {
  auto dir = ef::testing::fresh_temp_dir("save_model_functional");
  random::set_seed(8);
  // The nested model.
  Tensor ix = train::Input({6}, DType::float32, "inner_in");
  auto inner_dense = make<nn::Dense>(6, "relu", true, "inner_dense");
  auto inner = make<train::Functional>(ix, (*inner_dense)(ix), "inner");
  // Two inputs, a shared layer applied to both, ops on Keras tensors (with constants), two
  // outputs by name.
  Tensor a = train::Input({4}, DType::float32, "a");
  Tensor b = train::Input({4}, DType::float32, "b");
  auto shared = make<nn::Dense>(6, "tanh", true, "shared");
  Tensor ha = (*shared)(a), hb = (*shared)(b);
  Tensor mixed = tanh(ha * 0.5 + hb);  // op nodes: mul by a constant, add, tanh
  Tensor deep = (*inner)(mixed);
  auto cat = make<nn::Concatenate>(-1, "cat");
  Tensor joined = (*cat)(std::vector<Tensor>{deep, ha});
  auto head_a = make<nn::Dense>(1, nn::ActivationFn{}, true, "head_a");
  auto head_b = make<nn::Dense>(2, "softmax", true, "head_b");
  auto m = make<train::Functional>(std::vector<Tensor>{a, b},
                                   std::map<std::string, Tensor>{{"reg", (*head_a)(joined)}, {"cls", (*head_b)(deep)}}, "two_heads");
  train::CompileOptions o;
  o.optimizer = make<optim::SGD>(0.05, 0.9, true);
  o.loss_by_output.emplace("reg", train::LossRef("mse"));
  o.loss_by_output.emplace("cls", train::LossRef(train::CategoricalCrossentropy(false)));
  o.loss_weights_by_output = {{"reg", 0.5}, {"cls", 2.0}};
  o.metrics_by_output["reg"] = {"mae"};
  m->compile(o);
  Tensor xa = f32(randn({16, 4}, 2)), xb = f32(randn({16, 4}, 3));
  Tensor yreg = f32(randn({16, 1}, 4));
  Tensor ycls = one_hot(tensor(std::vector<std::int64_t>(16, 1), Shape{16}), 2, DType::float32);
  train::FitOptions fo;
  fo.epochs = 1;
  fo.batch_size = 4;
  fo.verbose = 0;
  m->fit(std::vector<Tensor>{xa, xb}, std::map<std::string, Tensor>{{"reg", yreg}, {"cls", ycls}}, fo);

  std::string path = (dir / "f.efmodel").string();
  save_model(*m, path);
  auto loaded = load_model(path);
  ASSERT_NE(loaded->functional_graph(), nullptr);
  EXPECT_EQ(loaded->output_names(), m->output_names());
  EXPECT_EQ(loaded->input_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(loaded->weights().size(), m->weights().size());  // the shared layer still has one set
  expect_same_weights(*m, *loaded, "after load");
  auto pa = m->predict_outputs(std::vector<Tensor>{xa, xb}), pb = loaded->predict_outputs(std::vector<Tensor>{xa, xb});
  ASSERT_EQ(pa.size(), 2u);
  ASSERT_EQ(pb.size(), 2u);
  for (std::size_t i = 0; i < pa.size(); ++i) expect_same(pa[i], pb[i], "output " + std::to_string(i));
  EXPECT_EQ(model_to_json(*loaded), model_to_json(*m));
  // Continue: two more steps each, same weights.
  for (train::Model* model : std::vector<train::Model*>{m.get(), loaded.get()})
    for (int s = 0; s < 2; ++s)
      model->train_on_batch(std::vector<Tensor>{xa, xb}, std::map<std::string, Tensor>{{"reg", yreg}, {"cls", ycls}});
  expect_same_weights(*m, *loaded, "after 2 more steps");
  // The ops were saved as op nodes, the nested model as a layer.
  std::string json = model_to_json(*m);
  EXPECT_NE(json.find("\"op\":\"tanh\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"class_name\":\"Functional\",\"config\":{\"name\":\"inner\""), std::string::npos) << json;
}

namespace {

// A user layer with a config.
class Scale : public nn::Layer {
 public:
  explicit Scale(double factor, std::string name = "") : Layer(std::move(name)), factor_(factor) {}
  std::optional<nn::LayerConfig> get_config() const override {
    auto c = nn::base_config(*this, "TestScale");
    c.config.set("factor", factor_);
    return c;
  }

 protected:
  Tensor call(const Tensor& x) override { return x * factor_; }

 private:
  double factor_;
};

// A user layer without one.
class Opaque : public nn::Layer {
 protected:
  Tensor call(const Tensor& x) override { return x; }
};

class MyModel : public train::Model {
 public:
  MyModel() : Model("my_model") {}

 protected:
  Tensor call(const Tensor& x, bool) override { return (*dense_)(x); }

 private:
  std::shared_ptr<nn::Dense> dense_ = std::make_shared<nn::Dense>(2);
};

}  // namespace

TEST(SaveModel, ErrorsSayWhatToRegister) {
  auto dir = ef::testing::fresh_temp_dir("save_model_errors");
  std::string path = (dir / "m.efmodel").string();
  Tensor x = f32(randn({3, 4}, 1));
  {
    auto m = make<train::Sequential>("with_scale");
    m->add<Scale>(2.5, "scale");
    m->add<nn::Dense>(2);
    (*m)(x);
    expect_error([&] { save_model(*m, path); }, {"scale", "TestScale", "no factory is registered", "register_layer"});
    ef::register_layer<Scale>("TestScale", [](const nn::LayerConfig& c) {
      return std::make_shared<Scale>(c.config.real("factor"), c.config.text("name"));
    });
    save_model(*m, path);
    auto loaded = load_model(path);
    expect_same(loaded->predict(x), m->predict(x), "user layer");
  }
  {
    auto m = make<train::Sequential>("with_opaque");
    m->add<Opaque>();
    expect_error([&] { save_model(*m, path); }, {"opaque", "Opaque", "has no config", "get_config", "register_layer<Opaque>"});
  }
  {
    auto m = make<MyModel>();
    (*m)(x);
    expect_error([&] { save_model(*m, path); }, {"my_model", "subclassed Model", "MyModel", "register_layer<MyModel>"});
  }
  {
    auto m = make<train::Sequential>("with_lambda");
    m->add<nn::Lambda>([](const Tensor& t) { return t + 1.0; }, "plus_one");
    expect_error([&] { save_model(*m, path); }, {"plus_one", "Lambda", "register_layer"});
  }
  // The file saved above survived the failed saves.
  auto survivor = load_model(path);
  EXPECT_EQ(survivor->name(), "with_scale");
}

TEST(SaveModel, DamagedFilesAreErrorsNamingTheFile) {
  auto dir = ef::testing::fresh_temp_dir("save_model_damaged");
  std::string path = (dir / "m.efmodel").string();
  random::set_seed(2);
  auto m = classifier();
  compile_classifier(*m);
  auto [x, y] = classification_data();
  m->train_on_batch(x, y);
  save_model(*m, path);
  const Bytes good = read_bytes(path);
  std::string bad_path = (dir / "bad.efmodel").string();
  auto load_bytes = [&](const Bytes& b) {
    write_bytes(bad_path, b);
    return load_model(bad_path);
  };
  auto expect_load_error = [&](const Bytes& b, std::initializer_list<std::string> parts) {
    write_bytes(bad_path, b);
    std::vector<std::string> all{bad_path};
    all.insert(all.end(), parts);
    try {
      load_model(bad_path);
      ADD_FAILURE() << "expected ef::Error";
    } catch (const Error& e) {
      for (const auto& p : all) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\nmissing: " << p;
    }
  };
  EXPECT_NO_THROW(load_bytes(good));
  expect_load_error(Bytes(good.begin(), good.begin() + 20), {"truncated"});
  expect_load_error(Bytes(good.begin() + 8, good.end()), {"no EFMODEL magic"});
  expect_load_error(Bytes(good.begin(), good.end() - 3), {"truncated"});
  Bytes future = good;
  future[8] = std::byte{kModelFormatVersion + 1};
  expect_load_error(future, {"format version " + std::to_string(kModelFormatVersion + 1), "newer eagerflow"});
  Bytes flipped = good;
  flipped[good.size() - 5] ^= std::byte{0x10};
  expect_load_error(flipped, {"checksum"});
  Bytes huge = good;
  put_u64(huge, 16, std::uint64_t{1} << 62);
  expect_load_error(huge, {"do not fit"});
  std::string header = header_of(good);
  expect_load_error(with_header(good, header.substr(0, header.size() - 1)), {"malformed JSON"});
  expect_load_error(with_header(good, "{\"format\":\"eagerflow-model\",\"format\":1}"), {"duplicate key"});
  expect_load_error(with_header(good, std::string(100, '[') + std::string(100, ']')), {"nested too deeply"});
  std::string wrong_type = header;
  auto at = wrong_type.find("\"units\":8");
  ASSERT_NE(at, std::string::npos);
  wrong_type.replace(at, 9, "\"units\":\"8\"");
  expect_load_error(with_header(good, wrong_type), {"hidden", "(Dense)", "'units' must be an integer"});
  std::string big = header;
  big.replace(big.find("\"units\":8"), 9, "\"units\":800000000000");
  expect_load_error(with_header(good, big), {"more than the file's weights hold"});
  std::string unknown = header;
  unknown.replace(unknown.find("\"Dense\""), 7, "\"Dense9\"");
  expect_load_error(with_header(good, unknown), {"Dense9", "register_layer"});

  // Fuzzing: random damage to the header (checksum fixed, so the parser sees it) and to the
  // raw bytes. Every variant loads or throws ef::Error; nothing else.
  std::mt19937_64 gen(20240501);
  int loaded = 0, errors = 0;
  for (int iter = 0; iter < 300; ++iter) {
    Bytes b;
    if (iter % 2 == 0) {
      std::string h = header;
      for (int k = 0, n = 1 + static_cast<int>(gen() % 4); k < n; ++k) {
        std::size_t i = gen() % h.size();
        switch (gen() % 4) {
          case 0: h[i] = static_cast<char>(gen() % 128); break;
          case 1: h.erase(i, 1 + gen() % 8); break;
          case 2: if (h[i] >= '0' && h[i] <= '9') h[i] = static_cast<char>('0' + gen() % 10); else h.insert(i, "9"); break;
          default: h.insert(i, h.substr(gen() % h.size(), 1 + gen() % 16)); break;
        }
        if (h.empty()) h = "{";
      }
      b = with_header(good, h);
    } else {
      b = good;
      for (int k = 0, n = 1 + static_cast<int>(gen() % 6); k < n; ++k) b[gen() % b.size()] ^= static_cast<std::byte>(1u << (gen() % 8));
      if (gen() % 3 == 0) fix_checksum(b);
    }
    try {
      load_bytes(b);
      ++loaded;
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("bad.efmodel"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 100);
}

// model_from_config / model_from_json build into the model classes make_model gives (the Python
// package's own Sequential and Model), with fresh weights of the same shapes.
TEST(SaveModel, ModelFromConfigUsesMakeModel) {
  struct MySequential : train::Sequential {
    using train::Sequential::Sequential;
  };
  auto m = std::make_shared<train::Sequential>("seq");
  m->add(make<nn::Dense>(4, "relu"));
  m->add(make<nn::Dense>(2));
  Tensor x = cast(randn({3, 5}, 1), DType::float32);
  m->predict(x);
  std::vector<std::string> asked;
  LoadModelOptions o;
  o.make_model = [&](const std::string& cls, const std::string& name) -> std::shared_ptr<train::Model> {
    asked.push_back(cls + ":" + name);
    return std::make_shared<MySequential>(name);
  };
  auto copy = model_from_config(model_config(*m), o);
  EXPECT_EQ(asked, std::vector<std::string>{"Sequential:seq"});
  auto* mine = dynamic_cast<MySequential*>(copy.get());
  ASSERT_NE(mine, nullptr);
  mine->predict(x);
  ASSERT_EQ(mine->weights().size(), m->weights().size());
  for (std::size_t i = 0; i < m->weights().size(); ++i)
    EXPECT_EQ(mine->weights()[i].value().shape(), m->weights()[i].value().shape());
  ASSERT_EQ(mine->stack().size(), 2u);
  EXPECT_EQ(mine->stack()[0]->name(), m->stack()[0]->name());
  // The JSON path takes the same options; a factory that gives no Sequential is an error.
  asked.clear();
  auto again = model_from_json(model_to_json(*m), o);
  EXPECT_EQ(asked.size(), 1u);
  LoadModelOptions wrong;
  wrong.make_model = [](const std::string&, const std::string& name) { return std::make_shared<train::Model>(name); };
  expect_error([&] { model_from_config(model_config(*m), wrong); }, {"make_model", "Sequential"});
}
