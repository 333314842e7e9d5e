// Checkpoints: the safetensors codec, model weights, Checkpoint objects that resume training
// exactly, atomic writes (a killed writer leaves the previous file), ModelCheckpoint.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// A file as another writer would lay it out: header length, JSON, data.
std::vector<std::byte> handmade(const std::string& header, const std::vector<std::byte>& data) {
  std::vector<std::byte> out(8);
  std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  auto h = bytes_of(header);
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::shared_ptr<train::Sequential> small_mlp() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(16, "relu");
  model->add<nn::Dense>(3);
  return model;
}

void expect_same_weights(const nn::Layer& a, const nn::Layer& b) {
  auto wa = train::weights_by_key(a), wb = train::weights_by_key(b);
  ASSERT_EQ(wa.size(), wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) {
    EXPECT_EQ(wa[i].first, wb[i].first);
    Tensor x = wa[i].second.value(), y = wb[i].second.value();
    ASSERT_EQ(x.nbytes(), y.nbytes());
    if (x.nbytes()) { EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0) << wa[i].first << " differs"; }
  }
}

}  // namespace

TEST(Safetensors, RoundTripsEveryDtypeAndShape) {
  std::vector<io::NamedTensor> in = {
      {"f32", random::normal({3, 4})},
      {"f64", tensor(std::vector<double>{1.5, -2.25, 1e300})},
      {"i32", tensor(std::vector<std::int32_t>{-7, 0, 2147483647})},
      {"i64", tensor(std::vector<std::int64_t>{INT64_MIN, 42})},
      {"bool", tensor(std::vector<bool>{true, false, true})},
      {"scalar", scalar(3.5f)},
      {"empty", zeros({0, 5})},
      {"nan", tensor({NAN, -INFINITY, -0.0f})},
      {"name with \"quotes\" and / slashes", ones({2})},
  };
  auto bytes = io::serialize_safetensors(in, {{"format", "test"}, {"note", "line\nbreak"}});
  std::uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u) << "data starts 8-byte aligned";
  io::TensorFile out = io::parse_safetensors(bytes, "memory");
  ASSERT_EQ(out.tensors.size(), in.size());
  EXPECT_EQ(out.metadata.at("note"), "line\nbreak");
  for (const auto& t : in) {
    const Tensor* got = out.find(t.name);
    ASSERT_NE(got, nullptr) << t.name;
    EXPECT_EQ(got->spec(), t.value.spec()) << t.name;
    if (t.value.nbytes()) { EXPECT_EQ(std::memcmp(got->raw_data(), t.value.raw_data(), t.value.nbytes()), 0) << t.name; }
  }
  expect_error([&] { io::serialize_safetensors({{"a", ones({1})}, {"a", ones({1})}}); }, {"'a'", "twice"});
  expect_error([&] { io::serialize_safetensors({{"", ones({1})}}); }, {"empty name"});
}

TEST(Safetensors, ReadsFilesLaidOutByOtherWriters) {
  // As Python's safetensors writes it: sorted keys, no padding, an F32 and an I64.
  std::vector<std::byte> data(8 + 16);
  float f[2] = {1.0f, -2.0f};
  std::int64_t i[2] = {5, -6};
  std::memcpy(data.data(), f, 8);
  std::memcpy(data.data() + 8, i, 16);
  auto file = handmade(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I64","shape":[1,2],"data_offsets":[8,24]}})", data);
  io::TensorFile t = io::parse_safetensors(file, "handmade");
  EXPECT_EQ(t.find("a")->to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(t.find("b")->shape(), Shape({1, 2}));
  EXPECT_EQ(t.find("b")->to_vector<std::int64_t>(), (std::vector<std::int64_t>{5, -6}));
}

TEST(Safetensors, RejectsDamagedFilesWithClearErrors) {
  std::vector<std::byte> eight(8);
  auto parse = [](const std::vector<std::byte>& b) { return io::parse_safetensors(b, "bad.safetensors"); };
  expect_error([&] { parse(bytes_of("abc")); }, {"bad.safetensors", "shorter"});
  std::vector<std::byte> huge(8);
  std::uint64_t n = 1ull << 40;
  std::memcpy(huge.data(), &n, 8);
  expect_error([&] { parse(huge); }, {"header length", "does not fit"});
  expect_error([&] { parse(handmade("{\"a\":", {})); }, {"malformed JSON"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", eight)); }, {"F8_E4M3", "not supported"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight)); }, {"'a'", "8 data bytes", "needs 12"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", eight)); }, {"negative"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,99]}})", eight)); }, {"outside"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", eight)); },
               {"more than the file holds"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight)); },
               {"overlap or hole"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight)); }, {"4 bytes after"});
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight)); },
               {"duplicate key"});
  std::vector<std::byte> two{std::byte{2}};
  expect_error([&] { parse(handmade(R"({"a":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}})", two)); }, {"BOOL"});
  std::string deep(100, '[');
  expect_error([&] { parse(handmade(deep, {})); }, {"nested too deeply"});
  expect_error([] { io::load_safetensors("/nonexistent/dir/x.safetensors"); }, {"cannot open", "/nonexistent/dir/x.safetensors"});
}

TEST(Checkpoint, ModelWeightsLoadIntoAModelOfAnotherName) {
  auto a = small_mlp(), b = small_mlp();
  Tensor x = random::normal({5, 4});
  Tensor ya = (*a)(x);
  (*b)(x);
  ASSERT_NE(a->name(), b->name());  // sequential vs sequential_1: keys are below the model
  fs::path dir = ef::testing::fresh_temp_dir("ckpt_names");
  a->save_weights((dir / "w.safetensors").string());
  io::TensorFile f = io::load_safetensors((dir / "w.safetensors").string());
  EXPECT_NE(f.find("dense/kernel"), nullptr);
  EXPECT_NE(f.find("dense_1/bias"), nullptr);
  b->load_weights((dir / "w.safetensors").string());
  EXPECT_EQ((*b)(x).to_vector<float>(), ya.to_vector<float>());
  fs::remove_all(dir);
}

TEST(Checkpoint, MismatchesAreReportedTogetherAndNothingIsAssigned) {
  auto a = small_mlp();
  auto other = std::make_shared<train::Sequential>();
  other->add<nn::Dense>(8, "relu");  // different units: every shape differs
  other->add<nn::Dense>(3);
  other->add<nn::Dense>(2);          // and one layer more
  Tensor x = random::normal({2, 4});
  (*a)(x);
  (*other)(x);
  fs::path dir = ef::testing::fresh_temp_dir("ckpt_mismatch");
  std::string path = (dir / "w.safetensors").string();
  a->save_weights(path);
  Tensor before = other->weights()[0].value().clone();
  expect_error([&] { other->load_weights(path); },
               {"load_weights", "mismatch", "'dense/kernel'", "float32[4,16]", "float32[4,8]", "missing in the file: 'dense_2/kernel'"});
  EXPECT_EQ(other->weights()[0].value().to_vector<float>(), before.to_vector<float>()) << "nothing assigned";
  // skip_mismatch loads what fits (dense_1/bias has shape [3] in both).
  other->load_weights(path, /*skip_mismatch=*/true);
  EXPECT_EQ(Tensor(other->weights()[3]).to_vector<float>(), Tensor(a->weights()[3]).to_vector<float>());
  auto unbuilt = small_mlp();
  expect_error([&] { unbuilt->load_weights(path); }, {"no weights yet"});
  fs::remove_all(dir);
}

// Train 2 epochs straight; or train 1, save, let the process draw on (`in_between`), restore
// into fresh objects and train 1 more: the two runs must end with the same weights bit for bit.
namespace {
void expect_resumed_equals_straight(
    const std::function<std::shared_ptr<train::Sequential>()>& make, const Tensor& x, const Tensor& y,
    std::uint64_t seed, const std::function<void()>& in_between, std::int64_t expected_steps_at_save) {
  random::set_seed(seed);
  auto straight = make();
  straight->fit(x, y, {.batch_size = 20, .epochs = 2, .verbose = 0});

  fs::path dir = ef::testing::fresh_temp_dir("ckpt_resume");
  std::string path = (dir / "ckpt.safetensors").string();
  random::set_seed(seed);
  auto first = make();
  first->fit(x, y, {.batch_size = 20, .epochs = 1, .verbose = 0});
  train::Checkpoint save;
  save.track("model", *first).track("optimizer", *first->optimizer());
  save.save(path);
  in_between();

  auto resumed = make();
  (*resumed)(zeros({1, x.dim(1)}));  // built, but its optimizer has no slots yet
  train::Checkpoint restore;
  restore.track("model", *resumed).track("optimizer", *resumed->optimizer());
  restore.restore(path);
  EXPECT_EQ(resumed->optimizer()->iterations().value().item<std::int64_t>(), expected_steps_at_save);
  resumed->fit(x, y, {.batch_size = 20, .epochs = 2, .initial_epoch = 1, .verbose = 0});
  expect_same_weights(*straight, *resumed);
  EXPECT_EQ(straight->optimizer()->iterations().value().item<std::int64_t>(),
            resumed->optimizer()->iterations().value().item<std::int64_t>());
  fs::remove_all(dir);
}
}  // namespace

// Adam's slots and step and the shuffling generator are all restored.
TEST(Checkpoint, ResumedFitEqualsUninterruptedFitBitForBit) {
  data::Digits d = data::synthetic_digits(96, 3);
  auto make = [] {
    auto m = std::make_shared<train::Sequential>();
    m->add<nn::Dense>(32, "relu");
    m->add<nn::Dropout>(0.2);
    m->add<nn::Dense>(10);
    m->compile(std::make_shared<optim::Adam>(1e-2), train::SparseCategoricalCrossentropy(true));
    return m;
  };
  // The process goes on drawing after the save: the checkpoint must undo that.
  expect_resumed_equals_straight(make, reshape(d.images, {96, 784}), d.labels, 5, [] { random::normal({100}); }, 5);
}

// A seeded Dropout's sequence is part of the run: a resumed fit draws the masks the
// uninterrupted fit would have drawn, even after another run restarted that seed's sequence.
TEST(Checkpoint, ResumedFitWithASeededDropoutEqualsUninterruptedFit) {
  data::Digits d = data::synthetic_digits(60, 7);
  auto make = [] {
    auto m = std::make_shared<train::Sequential>();
    m->add<nn::Dense>(16, "relu");
    m->add<nn::Dropout>(0.5, 1234);
    m->add<nn::Dense>(10);
    m->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true));
    return m;
  };
  auto in_between = [] {
    random::set_seed(77);
    random::uniform({4}, 0.0, 1.0, DType::float32, 1234);
  };
  expect_resumed_equals_straight(make, reshape(d.images, {60, 784}), d.labels, 8, in_between, 3);
}

TEST(Checkpoint, CustomLoopStateAndBadCheckpoints) {
  nn::Dense layer(4);
  Variable step(scalar(std::int64_t{7}), "step");
  optim::SGD opt(0.1, 0.9);
  Tensor x = random::normal({3, 2});
  {
    GradientTape tape;
    Tensor loss = sum(square(layer(x)));
    opt.apply_gradients(tape.gradient(loss, layer.trainable_weights()), layer.trainable_weights());
  }
  fs::path dir = ef::testing::fresh_temp_dir("ckpt_custom");
  std::string path = (dir / "c.safetensors").string();
  train::Checkpoint ckpt;
  ckpt.track("layer", layer).track("opt", opt).track("step", step);
  ckpt.save(path);
  io::TensorFile f = io::load_safetensors(path);
  EXPECT_NE(f.find("opt/slots/layer/kernel/momentum"), nullptr);
  EXPECT_NE(f.find("opt/iterations"), nullptr);
  EXPECT_NE(f.find("rng/counter"), nullptr);
  EXPECT_EQ(f.metadata.at("format"), "eagerflow-checkpoint");

  nn::Dense fresh(4);
  fresh(x);
  Variable fresh_step(scalar(std::int64_t{0}), "step");
  optim::SGD fresh_opt(0.1, 0.9);
  train::Checkpoint back;
  back.track("layer", fresh).track("opt", fresh_opt).track("step", fresh_step);
  back.restore(path);
  EXPECT_EQ(fresh_step.value().item<std::int64_t>(), 7);
  EXPECT_EQ(fresh.kernel().value().to_vector<float>(), layer.kernel().value().to_vector<float>());
  EXPECT_EQ(fresh_opt.slots_of(fresh.kernel()).at("momentum").value().to_vector<float>(),
            opt.slots_of(layer.kernel()).at("momentum").value().to_vector<float>());

  nn::Dense wrong(5);
  wrong(x);
  train::Checkpoint bad;
  bad.track("layer", wrong).track("opt", fresh_opt);
  expect_error([&] { bad.restore(path); }, {"Checkpoint.restore", "'layer/kernel'", "float32[2,5]", "not in the model: 'step'"});
  expect_error([&] { train::Checkpoint().track("a/b", layer); }, {"without '/'"});
  expect_error([&] { train::Checkpoint().track("x", layer).track("x", opt); }, {"tracked twice"});
  train::Checkpoint untracked_owner;
  untracked_owner.track("opt", opt);
  expect_error([&] { untracked_owner.save(path); }, {"slots for variables this checkpoint does not track"});
  fs::remove_all(dir);
}

// A writer killed at a random moment: the file on disk is always a whole checkpoint, the old
// one or the new one.
TEST(Checkpoint, AKilledWriterLeavesThePreviousFileIntact) {
  fs::path dir = ef::testing::fresh_temp_dir("ckpt_kill");
  std::string path = (dir / "big.safetensors").string();
  Tensor original = full({1 << 20}, 1.0f);
  io::save_safetensors(path, {{"w", original}});
  for (int trial = 0; trial < 6; ++trial) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int i = 0; i < 1000; ++i) io::save_safetensors(path, {{"w", full({1 << 20}, 2.0f + static_cast<float>(i))}});
      ::_exit(0);
    }
    ::usleep(static_cast<useconds_t>(2000 + trial * 7000));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    io::TensorFile f = io::load_safetensors(path);  // whole, or this throws
    std::vector<float> v = f.find("w")->to_vector<float>();
    ASSERT_EQ(v.size(), std::size_t{1} << 20);
    EXPECT_EQ(v.front(), v.back()) << "a torn file";
  }
  // A write that fails (the target is a folder) leaves what was there.
  fs::create_directories(dir / "folder");
  expect_error([&] { io::save_safetensors((dir / "folder").string(), {{"w", ones({1})}}); }, {"cannot replace", "unchanged"});
  expect_error([&] { io::save_safetensors((dir / "missing" / "x.safetensors").string(), {{"w", ones({1})}}); },
               {"cannot create a temporary file"});
  fs::remove_all(dir);
}

TEST(Checkpoint, ModelCheckpointSavesEveryEpochOrTheBest) {
  data::Digits d = data::synthetic_digits(60, 4);
  Tensor x = reshape(d.images, {60, 784});
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(10);
  model->compile(std::make_shared<optim::SGD>(0.05), train::SparseCategoricalCrossentropy(true));
  fs::path dir = ef::testing::fresh_temp_dir("ckpt_mc");
  auto every = std::make_shared<train::ModelCheckpoint>((dir / "e{epoch:02d}.safetensors").string(), "loss");
  auto best = std::make_shared<train::ModelCheckpoint>((dir / "best-{loss:.3f}.safetensors").string(), "loss", true);
  auto full_state = std::make_shared<train::ModelCheckpoint>((dir / "full.safetensors").string(), "loss", false, false);
  auto h = model->fit(x, d.labels, {.batch_size = 20, .epochs = 3, .callbacks = {every, best, full_state}, .verbose = 0});
  for (const char* name : {"e01.safetensors", "e02.safetensors", "e03.safetensors", "full.safetensors"})
    EXPECT_TRUE(fs::exists(dir / name)) << name;
  EXPECT_EQ(every->last_saved(), (dir / "e03.safetensors").string());
  EXPECT_NE(best->last_saved().find("best-"), std::string::npos);
  auto reloaded = std::make_shared<train::Sequential>();
  reloaded->add<nn::Dense>(10);
  (*reloaded)(zeros({1, 784}));
  reloaded->load_weights(every->last_saved());
  expect_same_weights(*model, *reloaded);
  EXPECT_NE(io::load_safetensors((dir / "full.safetensors").string()).find("optimizer/iterations"), nullptr);
  expect_error([&] { train::ModelCheckpoint((dir / "{epoch:s}").string()); }, {"unsupported field"});
  auto missing = std::make_shared<train::ModelCheckpoint>((dir / "m.safetensors").string(), "val_accuracy", true);
  expect_error([&] { model->fit(x, d.labels, {.batch_size = 20, .epochs = 1, .callbacks = {missing}, .verbose = 0}); },
               {"val_accuracy", "not in the logs"});
  fs::remove_all(dir);
}

TEST(Checkpoint, ALearningRateThatCannotTrainIsRefused) {
  nn::Dense layer(2);
  layer(zeros({1, 3}));
  optim::SGD opt(0.1);
  fs::path dir = ef::testing::fresh_temp_dir("ckpt_bad_lr");
  std::string path = (dir / "c.safetensors").string();
  io::save_safetensors(path, {{"layer/kernel", zeros({3, 2})}, {"layer/bias", zeros({2})},
                              {"opt/learning_rate", scalar(NAN)}, {"opt/iterations", scalar(std::int64_t{0})},
                              {"rng/seed", scalar(std::int64_t{1})}, {"rng/counter", scalar(std::int64_t{0})}},
                       {{"format", "eagerflow-checkpoint"}});
  train::Checkpoint ckpt;
  ckpt.track("layer", layer).track("opt", opt);
  expect_error([&] { ckpt.restore(path); }, {"opt/learning_rate", "not a rate that trains"});
  try {
    ckpt.restore(path, /*skip_mismatch=*/true);
  } catch (const Error&) {
  }
  EXPECT_NEAR(opt.learning_rate(), 0.1, 1e-7);
  fs::remove_all(dir);
}
