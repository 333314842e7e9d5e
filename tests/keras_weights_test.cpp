// Keras' HDF5 weight files: Keras 3's layout (groups and datasets where Keras keeps each
// layer's variables), round trips with the optimizer's state, legacy Keras 2 files, and damaged
// or hostile files (every one an ef::Error, never a crash).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "eagerflow/saving/keras_weights.h"
#include "io/hdf5_file.h"
#include "io/keras_weights_layout.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ef_keras_weights_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::shared_ptr<train::Sequential> mixed_model() {
  auto m = std::make_shared<train::Sequential>();
  m->add<nn::LSTM>(5, nn::RNNOptions{.return_sequences = true});
  m->add<nn::GRU>(4);
  m->add<nn::Dense>(6, "relu");
  m->add<nn::BatchNormalization>();
  m->add<nn::Dense>(3);
  m->build({kDynamic, 7, 3});
  return m;
}

void expect_same_values(const std::vector<Variable>& a, const std::vector<Variable>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    Tensor x = a[i].value(), y = b[i].value();
    ASSERT_EQ(x.shape(), y.shape()) << a[i].name();
    ASSERT_EQ(x.nbytes(), y.nbytes());
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0) << a[i].name() << " differs";
  }
}

template <class Fn>
ErrorKind kind_of_call(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "expected ef::Error";
  return ErrorCode::unknown;
}

// Fewer under sanitizers; EF_FUZZ_ITERATIONS / EF_FUZZ_SEED run longer campaigns by hand.
int fuzz_iterations(int normal) {
  if (const char* n = std::getenv("EF_FUZZ_ITERATIONS")) return std::atoi(n);
  return std::getenv("EF_SANITIZED") ? normal / 5 : normal;
}
unsigned fuzz_seed(unsigned normal) {
  const char* s = std::getenv("EF_FUZZ_SEED");
  return s ? static_cast<unsigned>(std::atoi(s)) : normal;
}

std::vector<std::string> entry_paths(const nn::Layer& m) {
  std::vector<std::string> out;
  for (const auto& e : io::keras::model_entries(m)) out.push_back(e.path + ":" + std::to_string(e.vars.size()));
  return out;
}

}  // namespace

TEST(KerasWeights, SnakeCaseIsKeras) {
  EXPECT_EQ(io::keras::snake_case("PReLU"), "p_re_lu");
  EXPECT_EQ(io::keras::snake_case("Conv2DTranspose"), "conv2d_transpose");
  EXPECT_EQ(io::keras::snake_case("LSTM"), "lstm");
  EXPECT_EQ(io::keras::snake_case("BatchNormalization"), "batch_normalization");
  EXPECT_EQ(io::keras::snake_case("SimpleRNN"), "simple_rnn");
  EXPECT_EQ(io::keras::snake_case("MultiHeadAttention"), "multi_head_attention");
}

TEST(KerasWeights, LayoutIsKeras3s) {
  auto m = mixed_model();
  // As Keras 3.15 writes this model (python/tests/interop/test_keras_weights_interop.py checks
  // the real files): RNN weights in the layer's `cell`, repeated classes numbered.
  std::vector<std::string> want = {":0",
                                   "layers/lstm:0",
                                   "layers/lstm/cell:3",
                                   "layers/gru:0",
                                   "layers/gru/cell:3",
                                   "layers/dense:2",
                                   "layers/batch_normalization:4",
                                   "layers/dense_1:2"};
  EXPECT_EQ(entry_paths(*m), want);
  // BatchNormalization: gamma, beta (trainable) then the moving statistics.
  auto entries = io::keras::model_entries(*m);
  ASSERT_EQ(entries[6].vars.size(), 4u);
  EXPECT_NE(entries[6].vars[0].name().find("gamma"), std::string::npos);
  EXPECT_NE(entries[6].vars[3].name().find("moving_variance"), std::string::npos);
}

TEST(KerasWeights, FunctionalAndNestedModelsNameTheirLayersByClass) {
  auto inner = std::make_shared<train::Sequential>();
  inner->add<nn::Dense>(3);
  inner->add<nn::Dense>(3);
  Tensor x = train::Input({4});
  Tensor h = (*std::make_shared<nn::Dense>(4))(x);
  h = (*inner)(h);
  auto mha = std::make_shared<nn::MultiHeadAttention>(2, 2);
  Tensor s = train::Input({3, 4});
  Tensor a = (*mha)(s, s);
  auto m = std::make_shared<train::Functional>(std::vector<Tensor>{x, s}, std::vector<Tensor>{h, a});
  std::vector<std::string> want = {":0",
                                   "layers/input_layer:0",
                                   "layers/input_layer_1:0",
                                   "layers/dense:2",
                                   "layers/sequential:0",
                                   "layers/sequential/layers/dense:2",
                                   "layers/sequential/layers/dense_1:2",
                                   "layers/multi_head_attention:0",
                                   "layers/multi_head_attention/query_dense:2",
                                   "layers/multi_head_attention/key_dense:2",
                                   "layers/multi_head_attention/value_dense:2",
                                   "layers/multi_head_attention/output_dense:2"};
  EXPECT_EQ(entry_paths(*m), want) << ::testing::PrintToString(entry_paths(*m));
}

TEST(KerasWeights, RoundTripsModelsThroughAFileAndBytes) {
  random::set_seed(1);
  auto a = mixed_model();
  random::set_seed(2);
  auto b = mixed_model();
  Tensor x = random::normal({2, 7, 3});
  std::string path = temp_path("mixed.weights.h5");
  save_keras_weights(*a, path);
  EXPECT_TRUE(is_hdf5_file(path));
  EXPECT_FALSE(is_legacy_h5_file(path));
  load_keras_weights(*b, path);
  expect_same_values(a->weights(), b->weights());
  ef::testing::expect_close((*a)(x).to_vector<float>(), (*b)(x).to_vector<float>(), 0.0f);

  random::set_seed(3);
  auto c = mixed_model();
  keras_weights_from_bytes(*c, keras_weights_to_bytes(*a, nullptr), nullptr, "bytes");
  expect_same_values(a->weights(), c->weights());
}

TEST(KerasWeights, ModelSaveWeightsPicksTheFormatByName) {
  auto a = mixed_model();
  auto b = mixed_model();
  std::string path = temp_path("by_name.weights.h5");
  a->save_weights(path);
  EXPECT_TRUE(is_hdf5_file(path));
  b->load_weights(path);
  expect_same_values(a->weights(), b->weights());
  // Keras 3 writes HDF5 weights only under .weights.h5.
  expect_error([&] { a->save_weights(temp_path("plain.h5")); }, {"must end in `.weights.h5`"});
}

TEST(KerasWeights, OptimizerStateRoundTripsAndTrainingContinuesTheSame) {
  Tensor x = random::normal({8, 7, 3});
  Tensor y = random::normal({8, 3});
  random::set_seed(5);
  auto a = mixed_model();
  a->compile(std::make_shared<optim::Adam>(1e-2), train::MeanSquaredError());
  a->train_on_batch(x, y);
  a->train_on_batch(x, y);
  std::string path = temp_path("trained.weights.h5");
  a->save_weights(path);

  random::set_seed(6);
  auto b = mixed_model();
  b->compile(std::make_shared<optim::Adam>(1e-2), train::MeanSquaredError());
  b->load_weights(path);  // b's optimizer has no slots yet: they are made, then loaded
  expect_same_values(a->weights(), b->weights());
  expect_same_values(io::keras::optimizer_entry(*a->optimizer(), a->trainable_weights()).vars,
                     io::keras::optimizer_entry(*b->optimizer(), b->trainable_weights()).vars);
  EXPECT_EQ(b->optimizer()->iterations().value().item<std::int64_t>(), 2);

  a->train_on_batch(x, y);
  b->train_on_batch(x, y);
  expect_same_values(a->weights(), b->weights());
}

TEST(KerasWeights, OptimizerLayoutFollowsKerasOrder) {
  auto m = mixed_model();
  auto vars = m->trainable_weights();
  optim::RMSprop rms(1e-3, 0.9, /*momentum=*/0.5);
  rms.build(vars);
  io::keras::Entry e = io::keras::optimizer_entry(rms, vars);
  // iterations, learning_rate, every velocity, then every momentum (two add_optimizer_variables calls).
  ASSERT_EQ(e.vars.size(), 2 + 2 * vars.size());
  EXPECT_EQ(e.vars[0].dtype(), DType::int64);
  EXPECT_NE(e.vars[2].name().find("velocity"), std::string::npos);
  EXPECT_NE(e.vars[2 + vars.size()].name().find("momentum"), std::string::npos);
  optim::Adam adam;
  adam.build(vars);
  io::keras::Entry ea = io::keras::optimizer_entry(adam, vars);
  EXPECT_EQ(ea.name, "adam");
  // Adam interleaves: m and v of the first variable, then of the second.
  EXPECT_EQ(ea.vars[2].name(), vars[0].name() + "/m");
  EXPECT_EQ(ea.vars[3].name(), vars[0].name() + "/v");
  EXPECT_EQ(ea.vars[4].name(), vars[1].name() + "/m");
}

TEST(KerasWeights, MismatchesAreNamedAndNothingIsLoaded) {
  auto a = mixed_model();
  std::string path = temp_path("mismatch.weights.h5");
  save_keras_weights(*a, path);
  auto b = std::make_shared<train::Sequential>();
  b->add<nn::LSTM>(5, nn::RNNOptions{.return_sequences = true});
  b->add<nn::GRU>(4);
  b->add<nn::Dense>(7, "relu");  // 7 units where the file has 6
  b->add<nn::BatchNormalization>();
  b->add<nn::Dense>(3);
  b->build({kDynamic, 7, 3});
  Tensor before = b->weights()[0].value();
  expect_error([&] { load_keras_weights(*b, path); }, {"layers/dense/vars/0' has shape [4,6], but variable"});
  Tensor after = b->weights()[0].value();
  EXPECT_EQ(std::memcmp(before.raw_data(), after.raw_data(), before.nbytes()), 0);
  // skip_mismatch loads the layers that fit.
  load_keras_weights(*b, path, nullptr, KerasWeightsLoadOptions{true});
  expect_same_values({a->weights()[0]}, {b->weights()[0]});

  auto c = std::make_shared<train::Sequential>();
  c->add<nn::Dense>(3);
  c->build({kDynamic, 4});
  expect_error([&] { load_keras_weights(*c, path); }, {"layers/dense"});
}

TEST(KerasWeights, BadFilesAreErrors) {
  auto m = mixed_model();
  EXPECT_EQ(kind_of_call([&] { load_keras_weights(*m, temp_path("missing.weights.h5")); }).code, ErrorCode::not_found);
  std::string text = temp_path("text.weights.h5");
  std::ofstream(text) << "not hdf5 at all";
  expect_error([&] { load_keras_weights(*m, text); }, {"not an HDF5 file"});
  std::string good = temp_path("good.weights.h5");
  save_keras_weights(*m, good);
  auto bytes = io::read_file(good);
  std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  EXPECT_THROW(keras_weights_from_bytes(*m, truncated, nullptr, "truncated"), Error);
}

TEST(KerasWeights, HostileDatasetsAreRefusedBeforeAllocating) {
  io::h5::Lock lock;
  io::h5::File f = io::h5::File::create("hostile.h5");
  io::h5::Group root = f.root();
  root.write_dataset("ok", random::normal({2, 3}));
  root.write_dataset("str_rank", zeros({1, 1, 1}, DType::int8));
  auto image = f.image();
  io::h5::File g = io::h5::File::open_image(image, "hostile.h5");
  EXPECT_EQ(g.root().members(), (std::vector<std::string>{"ok", "str_rank"}));
  // No creation order tracked (as h5py writes): by name.
  EXPECT_EQ(g.root().members(100, io::h5::Group::Order::creation), (std::vector<std::string>{"ok", "str_rank"}));
  expect_error([&] { g.root().members(1); }, {"the group has 2 members (at most 1)"});
  EXPECT_EQ(g.root().dataset_spec("ok").shape, Shape({2, 3}));
  expect_error([&] { g.root().read_dataset("absent"); }, {"hostile.h5: 'absent': no such dataset"});
  expect_error([&] { g.root().group("ok"); }, {"'ok': is not a group"});
  expect_error([&] { g.root().read_dataset("../ok"); }, {"not a member name"});
}

TEST(KerasWeights, EveryDtypeRoundTrips) {
  io::h5::Lock lock;
  io::h5::File f = io::h5::File::create("dtypes.h5");
  io::h5::Group root = f.root();
  std::vector<DType> dtypes = {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int8,
                               DType::int16,   DType::int32,   DType::int64,   DType::uint8,    DType::bool_};
  std::vector<Tensor> values;
  for (DType d : dtypes) {
    Tensor t = d == DType::bool_ ? greater(random::normal({3, 2}), scalar(0.0f)) : cast(random::normal({3, 2}) * 10.0f, d);
    values.push_back(t);
    root.write_dataset(std::string(name_of(d)), t);
  }
  root.set_string_attr("vlen", "héllo");
  root.set_fixed_string_array_attr("fixed", {"dense", "batch_normalization", ""});
  auto image = f.image();
  io::h5::File g = io::h5::File::open_image(image, "dtypes.h5");
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    Tensor t = g.root().read_dataset(std::string(name_of(dtypes[i])));
    ASSERT_EQ(t.dtype(), dtypes[i]);
    ASSERT_EQ(t.shape(), values[i].shape());
    EXPECT_EQ(std::memcmp(t.raw_data(), values[i].raw_data(), t.nbytes()), 0) << name_of(dtypes[i]);
  }
  EXPECT_EQ(g.root().string_attr("vlen"), "héllo");
  EXPECT_EQ(*g.root().string_list_attr("fixed"), (std::vector<std::string>{"dense", "batch_normalization", ""}));
}

namespace {

std::shared_ptr<train::Sequential> legacy_model() {
  auto m = std::make_shared<train::Sequential>();
  m->add<nn::Dense>(4);
  m->add<nn::BatchNormalization>();
  m->add<nn::Dense>(2);
  m->build({kDynamic, 3});
  return m;
}

// A legacy whole-model file as Keras 2 lays it out: model_weights with layer_names, each
// layer's weight_names (trainable first), datasets at nested paths.
void write_legacy_file(const train::Sequential& a, const std::string& path) {
  io::h5::Lock lock;
  io::h5::File f = io::h5::File::create("legacy.h5");
  io::h5::Group root = f.root();
  root.set_string_attr("keras_version", "2.15.0");
  root.set_string_attr("backend", "tensorflow");
  root.set_string_attr("model_config", "{\"class_name\": \"Sequential\"}");
  io::h5::Group mw = root.create_group("model_weights");
  std::vector<std::string> names = {"dense", "batch_normalization", "dropout", "dense_1"};
  mw.set_fixed_string_array_attr("layer_names", names);
  std::vector<nn::Layer*> layers = {a.stack()[0].get(), a.stack()[1].get(), nullptr, a.stack()[2].get()};
  for (std::size_t i = 0; i < names.size(); ++i) {
    io::h5::Group lg = mw.create_group(names[i]);
    std::vector<std::string> wn;
    if (layers[i]) {
      io::h5::Group inner = lg.create_group(names[i]);
      for (const Variable& v : layers[i]->weights()) {
        std::string leaf = v.name().substr(v.name().rfind('/') + 1) + ":0";
        wn.push_back(names[i] + "/" + leaf);
        inner.write_dataset(leaf, v.value());
      }
    }
    lg.set_fixed_string_array_attr("weight_names", wn);
  }
  f.save(path);
}

}  // namespace

TEST(KerasWeights, LegacyKeras2FilesLoadInLayerOrder) {
  random::set_seed(7);
  auto a = legacy_model();
  std::string path = temp_path("legacy.h5");
  write_legacy_file(*a, path);
  EXPECT_TRUE(is_legacy_h5_file(path));
  auto attrs = legacy_h5_attributes(path);
  EXPECT_EQ(attrs["keras_version"], "2.15.0");
  EXPECT_EQ(attrs.count("training_config"), 0u);
  random::set_seed(8);
  auto b = legacy_model();
  b->load_weights(path);
  expect_same_values(a->weights(), b->weights());
  // The Keras 3 loader points at the legacy one.
  expect_error([&] { load_keras_weights(*b, path); }, {"legacy Keras 2 HDF5 file"});
  auto c = std::make_shared<train::Sequential>();
  c->add<nn::Dense>(4);
  c->build({kDynamic, 3});
  expect_error([&] { load_legacy_h5_weights(*c, path); }, {"containing 3 layers with weights, loaded into a model with 1"});
}

TEST(KerasWeights, FuzzedFilesAreErrorsNeverCrashes) {
  random::set_seed(9);
  auto m = mixed_model();
  m->compile(std::make_shared<optim::Adam>(), train::MeanSquaredError());
  m->train_on_batch(random::normal({4, 7, 3}), random::normal({4, 3}));
  std::vector<std::byte> good = keras_weights_to_bytes(*m, m->optimizer().get());
  int iterations = fuzz_iterations(1500);
  std::mt19937 rng(fuzz_seed(1234));
  int loaded = 0, errors = 0;
  for (int i = 0; i < iterations; ++i) {
    std::vector<std::byte> bytes = good;
    int kind = static_cast<int>(rng() % 4);
    if (kind == 0) {  // flip a few bits
      int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) bytes[rng() % bytes.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    } else if (kind == 1) {  // truncate
      bytes.resize(rng() % bytes.size());
    } else if (kind == 2) {  // overwrite a run with random bytes
      std::size_t at = rng() % bytes.size(), n = 1 + rng() % 16;
      for (std::size_t k = at; k < std::min(bytes.size(), at + n); ++k) bytes[k] = static_cast<std::byte>(rng());
    } else {  // a large value in a random 8-byte word (sizes, addresses, dims)
      std::size_t at = rng() % (bytes.size() - 8);
      std::uint64_t v = (rng() % 2) ? ~std::uint64_t{0} >> (rng() % 40) : rng();
      std::memcpy(bytes.data() + at, &v, 8);
    }
    try {
      keras_weights_from_bytes(*m, bytes, m->optimizer().get(), "fuzzed");
      ++loaded;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_EQ(loaded + errors, iterations);
  EXPECT_GT(errors, 0);
}

TEST(KerasWeights, FuzzedLegacyFilesAreErrorsNeverCrashes) {
  auto m = legacy_model();
  std::string good_path = temp_path("legacy_good.h5");
  write_legacy_file(*m, good_path);
  std::vector<std::byte> good = io::read_file(good_path);
  std::string path = temp_path("legacy_fuzzed.h5");
  int iterations = fuzz_iterations(600);
  std::mt19937 rng(fuzz_seed(99));
  int errors = 0;
  for (int i = 0; i < iterations; ++i) {
    std::vector<std::byte> bytes = good;
    if (i % 3 == 2) {
      bytes.resize(8 + rng() % (bytes.size() - 8));
    } else {
      int flips = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < flips; ++k) bytes[rng() % bytes.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    io::write_file_atomically(path, bytes);
    try {
      legacy_h5_attributes(path);
      load_legacy_h5_weights(*m, path);
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}
