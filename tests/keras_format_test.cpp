// The pieces of Keras' `.keras` format: ZIP archives (src/io/zip_archive.h) and Keras 3's
// serialization of models (model_to_keras_json / model_from_json, src/io/keras_config.h):
// round trips keep the architecture and the predictions, Keras' own forms (regularizer objects,
// Keras 2's inbound nodes) are read, and damaged archives are ef::Errors.
#include <zlib.h>

#include <cstring>
#include <random>

#include "eagerflow/saving/model.h"
#include "io/json.h"
#include "io/zip_archive.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
using ef::testing::randn;

namespace {

using Bytes = std::vector<std::byte>;

Bytes bytes_of(const std::string& s) {
  Bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::string text_of(const Bytes& b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

// A raw-deflate member (as zip tools other than Keras write), with zlib.
Bytes deflated(const Bytes& in) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&z, static_cast<uLong>(in.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void put(Bytes& b, std::size_t at, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// Turns the stored member `name` of a one-member archive into a deflated one (method 8).
Bytes with_deflated_member(const std::string& name, const Bytes& content) {
  Bytes packed = deflated(content);
  Bytes zip = io::zip_archive({{name, packed}});  // the packed bytes stored, then relabelled
  std::uint32_t crc = static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(content.data()), static_cast<uInt>(content.size())));
  // Local header: method at 8, crc at 14, sizes at 18/22. Central record follows the data.
  put(zip, 8, 8, 2);
  put(zip, 14, crc, 4);
  put(zip, 22, content.size(), 4);
  std::size_t central = 30 + name.size() + packed.size();
  put(zip, central + 10, 8, 2);
  put(zip, central + 16, crc, 4);
  put(zip, central + 24, content.size(), 4);
  return zip;
}

Tensor f32(const Tensor& t) { return cast(t, DType::float32); }

void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  auto x = f32(a).to_vector<float>(), y = f32(b).to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << what << " at " << i;
}

}  // namespace

TEST(ZipArchive, MembersRoundTripInOrder) {
  std::vector<io::ZipMember> members{{"metadata.json", bytes_of("{\"a\": 1}")}, {"config.json", bytes_of("{}")},
                                     {"empty", {}}, {"model.weights.h5", Bytes(70000, std::byte{7})}};
  Bytes zip = io::zip_archive(members);
  EXPECT_TRUE(io::looks_like_zip(zip));
  auto back = io::unzip_archive(zip, "t.keras");
  ASSERT_EQ(back.size(), members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    EXPECT_EQ(back[i].name, members[i].name);
    EXPECT_EQ(back[i].bytes, members[i].bytes);
  }
  EXPECT_TRUE(io::unzip_archive(io::zip_archive({}), "empty.keras").empty());
}

TEST(ZipArchive, ReadsDeflatedMembers) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "layer " + std::to_string(i % 17) + ",";
  Bytes zip = with_deflated_member("config.json", bytes_of(text));
  auto back = io::unzip_archive(zip, "d.keras");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(text_of(back[0].bytes), text);
  // A member that claims more than it inflates to, or a zip bomb over the limit, is refused.
  expect_error([&] { (void)io::unzip_archive(zip, "d.keras", 100); }, {"declares"});
  Bytes lying = zip;
  std::size_t central = 30 + std::string("config.json").size() + deflated(bytes_of(text)).size();
  put(lying, central + 24, text.size() + 1, 4);
  expect_error([&] { (void)io::unzip_archive(lying, "d.keras"); }, {"does not inflate"});
}

TEST(ZipArchive, DamagedArchivesAreErrorsNamingTheFile) {
  Bytes zip = io::zip_archive({{"config.json", bytes_of("{\"class_name\": \"Sequential\"}")}, {"w", Bytes(300, std::byte{1})}});
  expect_error([&] { (void)io::unzip_archive(bytes_of("EFMODEL"), "x.keras"); }, {"x.keras: not a ZIP archive"});
  Bytes truncated(zip.begin(), zip.begin() + static_cast<std::ptrdiff_t>(zip.size() / 2));
  expect_error([&] { (void)io::unzip_archive(truncated, "x.keras"); }, {"x.keras: damaged ZIP archive"});
  Bytes flipped = zip;
  flipped[30 + 11 + 3] ^= std::byte{0x10};  // inside the first member's data: its CRC no longer matches
  expect_error([&] { (void)io::unzip_archive(flipped, "x.keras"); }, {"CRC-32"});
  // Fuzz: every mutation reads the same members or is an ef::Error.
  std::mt19937 gen(34);
  int errors = 0;
  for (int round = 0; round < 3000; ++round) {
    Bytes b = zip;
    int kind = static_cast<int>(gen() % 4);
    if (kind == 0) {
      for (int i = 0, n = 1 + static_cast<int>(gen() % 6); i < n; ++i) b[gen() % b.size()] ^= static_cast<std::byte>(1u << (gen() % 8));
    } else if (kind == 1) {
      b.resize(gen() % b.size());
    } else if (kind == 2) {  // a field set to an extreme value
      std::size_t at = gen() % (b.size() - 4);
      put(b, at, gen() % 2 ? 0xffffffffu : 0x7fffffffu, 4);
    } else {
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(gen() % b.size()), static_cast<std::byte>(gen()));
    }
    try {
      (void)io::unzip_archive(b, "fuzz.keras", std::size_t{1} << 24);
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("fuzz.keras"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 1000);
}

TEST(KerasJson, FunctionalModelRoundTripsThroughKerasSerialization) {
  random::set_seed(3);
  Tensor a = train::Input({4}, DType::float32, "a");
  Tensor b = train::Input({4}, DType::float32, "b");
  auto shared = std::make_shared<nn::Dense>(6, "tanh", true, "shared");
  Tensor ha = (*shared)(a), hb = (*shared)(b);
  Tensor mixed = tanh(ha * 0.5 + hb);
  auto cat = std::make_shared<nn::Concatenate>(-1, "cat");
  Tensor joined = (*cat)(std::vector<Tensor>{mixed, ha});
  auto head = std::make_shared<nn::Dense>(2, "softmax", true, "head");
  auto m = std::make_shared<train::Functional>(std::vector<Tensor>{a, b}, std::map<std::string, Tensor>{{"out", (*head)(joined)}},
                                               "two_inputs");
  std::string json = model_to_keras_json(*m);
  // Keras' forms: objects with modules, InputLayers among the layers, keras_history references,
  // the op nodes as Keras operations with their constants inline.
  EXPECT_NE(json.find("\"class_name\":\"InputLayer\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"keras_history\":[\"shared\",1,0]"), std::string::npos) << json;  // the second call
  EXPECT_NE(json.find("\"class_name\":\"Multiply\""), std::string::npos) << json;
  EXPECT_NE(json.find("0.5"), std::string::npos) << json;
  auto back = std::dynamic_pointer_cast<train::Model>(model_from_json(json));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(model_to_json(*back), model_to_json(*m));
  back->set_weights(m->get_weights());
  Tensor xa = f32(randn({5, 4}, 1)), xb = f32(randn({5, 4}, 2));
  auto pa = m->predict_outputs(std::vector<Tensor>{xa, xb}), pb = back->predict_outputs(std::vector<Tensor>{xa, xb});
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) expect_close(pa[i], pb[i], "output");
}

TEST(KerasJson, SequentialKeepsRegularizersConstraintsAndBuildInput) {
  auto m = std::make_shared<train::Sequential>("seq");
  auto d = std::make_shared<nn::Dense>(3, "relu", true, "d");
  d->kernel_regularizer = nn::l1_l2(0.5, 0.25);
  d->kernel_constraint = nn::max_norm(2.0, {0});
  m->add(d);
  m->add(std::make_shared<nn::Dense>(2, nn::ActivationFn{}, true, "out"));
  m->build(Shape{kDynamic, 5});
  std::string json = model_to_keras_json(*m);
  EXPECT_NE(json.find("{\"module\":\"keras.regularizers\",\"class_name\":\"L1L2\",\"config\":{\"l1\":0.5,\"l2\":0.25}"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"class_name\":\"MaxNorm\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"batch_shape\":[null,5]"), std::string::npos) << json;
  auto back = std::dynamic_pointer_cast<train::Model>(model_from_json(json));
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->built());
  EXPECT_EQ(model_to_json(*back), model_to_json(*m));
}

TEST(KerasJson, ReadsKeras2FunctionalConfigs) {
  // The form of tf.keras' model_config (legacy .h5 files): batch_input_shape and inbound nodes
  // as [[layer, node, tensor, kwargs]].
  const std::string keras2 = R"({"class_name": "Functional", "module": "keras", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 3], "dtype": "float32", "name": "in"},
     "name": "in", "inbound_nodes": []},
    {"class_name": "Dense", "config": {"name": "d1", "units": 4, "activation": "relu", "use_bias": true, "dtype": "float32"},
     "name": "d1", "inbound_nodes": [[["in", 0, 0, {}]]]},
    {"class_name": "Dense", "config": {"name": "d2", "units": 2, "activation": "linear", "use_bias": true, "dtype": "float32"},
     "name": "d2", "inbound_nodes": [[["d1", 0, 0, {}]]]},
    {"class_name": "Add", "config": {"name": "add", "dtype": "float32"},
     "name": "add", "inbound_nodes": [[["d2", 0, 0, {}], ["d2", 0, 0, {}]]]}],
    "input_layers": [["in", 0, 0]], "output_layers": [["add", 0, 0]]}})";
  auto m = std::dynamic_pointer_cast<train::Model>(model_from_json(keras2));
  ASSERT_NE(m, nullptr);
  Tensor x = f32(randn({2, 3}, 5));
  Tensor y = m->predict(x);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  auto w = m->get_weights();
  ASSERT_EQ(w.size(), 4u);
  // add(d2, d2) == 2 * d2(relu(d1(x))).
  Tensor h = relu(matmul(x, w[0]) + w[1]);
  expect_close(y, (matmul(h, w[2]) + w[3]) * 2.0f, "keras 2 graph");
  // A graph that never makes a referenced node is an error, not a hang.
  std::string broken = keras2;
  broken.replace(broken.find("[[[\"d1\", 0, 0, {}]]]"), 20, "[[[\"d9\", 0, 0, {}]]]");
  expect_error([&] { (void)model_from_json(broken); }, {"never made"});
}

TEST(KerasFile, SaveAndLoadKeepPredictionsAndTrainingStepForStep) {
  auto dir = ef::testing::fresh_temp_dir("keras_file");
  random::set_seed(11);
  auto m = std::make_shared<train::Sequential>("mlp");
  m->add(std::make_shared<nn::Dense>(8, "relu", true, "hidden"));
  m->add(std::make_shared<nn::BatchNormalization>(0.9, 1e-3, "bn"));
  m->add(std::make_shared<nn::Dense>(3, "softmax", true, "out"));
  m->compile(std::make_shared<optim::Adam>(0.01), train::LossRef("categorical_crossentropy"), {"accuracy"});
  Tensor x = f32(randn({16, 5}, 1));
  Tensor y = one_hot(tensor(std::vector<std::int64_t>{0, 1, 2, 1, 0, 2, 2, 1, 0, 0, 1, 2, 1, 1, 0, 2}, Shape{16}), 3, DType::float32);
  for (int s = 0; s < 3; ++s) m->train_on_batch(x, y);
  std::string path = (dir / "m.keras").string();
  save_model(*m, path);
  // A ZIP holding what Keras writes.
  auto members = io::unzip_archive(io::read_file(path), path);
  std::vector<std::string> names;
  for (const auto& mem : members) names.push_back(mem.name);
  EXPECT_EQ(names, (std::vector<std::string>{"metadata.json", "config.json", "model.weights.h5"}));
  std::string config = text_of(members[1].bytes);
  EXPECT_NE(config.find("\"compile_config\""), std::string::npos);
  EXPECT_NE(config.find("\"class_name\":\"Adam\""), std::string::npos) << config;
  auto loaded = load_model(path);
  expect_close(loaded->predict(x), m->predict(x), "predictions");
  for (int s = 0; s < 2; ++s) {
    m->train_on_batch(x, y);
    loaded->train_on_batch(x, y);
  }
  auto wa = m->get_weights(), wb = loaded->get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) expect_close(wa[i], wb[i], "weight " + std::to_string(i) + " after 2 steps");
}

TEST(KerasFile, DamagedFilesAreErrorsAndAFailedSaveKeepsTheOldFile) {
  auto dir = ef::testing::fresh_temp_dir("keras_file_bad");
  auto m = std::make_shared<train::Sequential>("s");
  m->add(std::make_shared<nn::Dense>(2, nn::ActivationFn{}, true, "d"));
  m->build(Shape{kDynamic, 3});
  std::string path = (dir / "m.keras").string();
  save_model(*m, path);
  Bytes good = io::read_file(path);
  // A model with an op the .keras format cannot hold fails before the file is touched.
  Tensor in = train::Input({3}, DType::float32, "in");
  auto odd = std::make_shared<train::Functional>(in, reshape(in, Shape{-1, 3, 1}), "odd");
  expect_error([&] { save_model(*odd, path); }, {"reshape"});
  EXPECT_EQ(io::read_file(path), good);
  std::mt19937 gen(7);
  int errors = 0;
  for (int round = 0; round < 400; ++round) {
    Bytes b = good;
    if (round % 3 == 0) b.resize(gen() % b.size());
    else
      for (int i = 0, n = 1 + static_cast<int>(gen() % 4); i < n; ++i) b[gen() % b.size()] ^= static_cast<std::byte>(1u << (gen() % 8));
    std::string p = (dir / "fuzz.keras").string();
    io::write_file_atomically(p, b);
    try {
      auto back = load_model(p);
      EXPECT_EQ(back->predict(f32(randn({1, 3}, 2))).shape(), (Shape{1, 2}));
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("fuzz.keras"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 100);
}

TEST(KerasLayers, BatchNormalizationTakesKerasAxisCenterAndScale) {
  // channels_first statistics (axis 1), no beta: Keras' BatchNormalization(axis=1, center=False).
  nn::BatchNormalizationOptions o;
  o.axis = 1;
  o.center = false;
  o.epsilon = 0.5;
  auto bn = std::make_shared<nn::BatchNormalization>(o, "bn");
  Tensor x = f32(randn({4, 3, 2, 2}, 9));
  Tensor y = (*bn)(x, true);
  ASSERT_EQ(bn->weights().size(), 3u);  // gamma, moving_mean, moving_variance
  Tensor m = mean(x, std::vector<int>{0, 2, 3}, true), v = mean(square(x - m), std::vector<int>{0, 2, 3}, true);
  Tensor want = (x - m) * rsqrt(v + 0.5);
  auto a = y.to_vector<float>(), b = want.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << i;
  auto c = bn->get_config();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config.integer("axis"), 1);
  EXPECT_FALSE(c->config.flag("center"));
  auto again = nn::layer_from_config(*c, "test");
  (void)(*again)(x, false);
  EXPECT_EQ(again->weights().size(), 3u);
}
