// Saving as a hostile world would test it: writers killed at random points (a saved model is
// the old one or the new one, never a mix; killed writers' temporary files are cleaned up by
// the next save, never a live writer's), checkpoints restored into another optimizer, layer
// names that collide or are built to make naming quadratic, and paths that are not regular
// files (FIFOs, devices, symbolic link loops, empty, too long).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "io/atomic_file.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
namespace fs = std::filesystem;

namespace {

// A process id that belonged to a process that is gone now (a child that exited).
pid_t dead_pid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// A temporary-sibling name of `target` as a writer with process id `pid` would make it.
std::string temp_of(const std::string& target, const char* kind, pid_t pid) {
  auto mine = io::detail::parse_temp_name(io::detail::temp_name(target, kind), target);
  EXPECT_TRUE(mine.has_value());
  std::string name = io::detail::temp_name(target, kind);
  std::string own = "-" + std::to_string(::getpid()) + "-";
  std::size_t at = name.rfind(own);
  EXPECT_NE(at, std::string::npos);
  return name.substr(0, at) + "-" + std::to_string(pid) + "-" + name.substr(at + own.size());
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Runs `fn` in a child process; true when it finished (returned or threw ef::Error) within
// `seconds`, false when it hung (the child is then killed). Keeps a hang from hanging the suite.
template <class Fn>
bool finishes(Fn&& fn, int seconds = 20) {
  pid_t child = ::fork();
  if (child == 0) {
    try {
      fn();
    } catch (const Error&) {
    }
    ::_exit(0);
  }
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    ::usleep(10'000);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  return false;
}

// Two models of different structure, traced before any fork (a child only writes files).
struct TwoModels {
  std::shared_ptr<train::Sequential> a = std::make_shared<train::Sequential>(), b = std::make_shared<train::Sequential>();
  std::shared_ptr<const ConcreteFunction> fa, fb;
  Tensor x = random::uniform({2, 64});
  std::vector<float> ya, yb;
  TwoModels() {
    a->add<nn::Dense>(256, "relu");
    a->add<nn::Dense>(4);
    b->add<nn::Dense>(128);
    b->add<nn::Dense>(128, "relu");
    b->add<nn::Dense>(4);
    ya = (*a)(x, false).to_vector<float>();
    yb = (*b)(x, false).to_vector<float>();
    fa = inference_function(*a);
    fb = inference_function(*b);
  }
  // Which model `dir` holds: 0 (a), 1 (b); the load throws for a mix.
  int which(const fs::path& dir) const {
    SavedModel m = load(dir.string());
    std::vector<float> y = m("serving_default", {x})[0].to_vector<float>();
    if (y == ya) return 0;
    if (y == yb) return 1;
    ADD_FAILURE() << "the loaded model is neither the old nor the new one";
    return -1;
  }
};

void killed_saves_leave_old_or_new(bool rename_exchange) {
  io::detail::set_rename_exchange_enabled(rename_exchange);
  TwoModels models;
  fs::path root = ef::testing::fresh_temp_dir(rename_exchange ? "kill_save_x" : "kill_save_2");
  fs::path dir = root / "model";
  save({{"serving_default", models.fa}}, dir.string());
  std::mt19937 rng(7);
  int seen[2] = {0, 0};
  for (int trial = 0; trial < 40; ++trial) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int i = 0;; ++i) save({{"serving_default", i % 2 ? models.fa : models.fb}}, dir.string());
    }
    ::usleep(std::uniform_int_distribution<int>(200, 30'000)(rng));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    int w = -1;
    try {
      w = models.which(dir);
    } catch (const Error& e) {
      ADD_FAILURE() << "trial " << trial << ": the saved model does not load after a killed save: " << e.what();
    }
    if (w >= 0) ++seen[w];
  }
  io::detail::set_rename_exchange_enabled(true);
  // The next save cleans up what the killed writers left; nothing else is in the folder.
  save({{"serving_default", models.fb}}, dir.string());
  EXPECT_EQ(models.which(dir), 1);
  EXPECT_EQ(entries(root), std::set<std::string>{"model"});
  EXPECT_EQ(entries(dir), (std::set<std::string>{"saved_model.json", "variables.safetensors"}));
  fs::remove_all(root);
}

}  // namespace

// ---------------------------------------------------------------- killed writers
TEST(SaveHardening, AKilledSaveLeavesTheOldModelOrTheNewOne) { killed_saves_leave_old_or_new(true); }

TEST(SaveHardening, AKilledSaveLeavesTheOldModelOrTheNewOneWithoutRenameExchange) {
  killed_saves_leave_old_or_new(false);
}

// A save killed between its two renames (old model aside, new one not yet in) leaves no
// folder at the target: the loader and the next save restore the old one.
TEST(SaveHardening, AKillBetweenTheTwoRenamesIsRecovered) {
  TwoModels models;
  fs::path root = ef::testing::fresh_temp_dir("kill_between");
  fs::path dir = root / "model";
  save({{"serving_default", models.fa}}, dir.string());
  pid_t gone = dead_pid();
  fs::path aside = root / temp_of("model", "old", gone);
  fs::path half_new = root / temp_of("model", "new", gone);
  fs::rename(dir, aside);
  fs::create_directories(half_new);  // a new folder, half written
  { std::ofstream(half_new / "variables.safetensors") << "partial"; }
  EXPECT_EQ(models.which(dir), 0);  // the loader restores the old model
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_FALSE(fs::exists(aside));

  // Again, and this time the next save finds it: the old model is restored, then replaced.
  fs::rename(dir, aside);
  save({{"serving_default", models.fb}}, dir.string());
  EXPECT_EQ(models.which(dir), 1);
  EXPECT_EQ(entries(root), std::set<std::string>{"model"});

  // A live writer's folders are never touched (this process's own pid: a save in progress).
  fs::path live = root / io::detail::temp_name("model", "new");
  fs::create_directories(live);
  save({{"serving_default", models.fa}}, dir.string());
  EXPECT_TRUE(fs::exists(live));
  fs::remove_all(root);
}

// Killed save_weights and Checkpoint::save calls leave temporary files; the next save removes
// the ones whose writer is gone, and nothing else.
TEST(SaveHardening, KilledWeightWritersLeaveNoTemporaryFilesBehind) {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(1024);
  (*model)(random::uniform({1, 1024}));  // 4 MB of weights
  fs::path dir = ef::testing::fresh_temp_dir("kill_weights");
  std::string path = (dir / "w.safetensors").string();
  model->save_weights(path);
  int orphans = 0;  // the most seen after a kill (each save removes the earlier killed writers')
  // Kills land at a random phase of a save: delays spread over a few save durations, measured
  // here (a save under ThreadSanitizer on a busy machine takes many times as long as in release).
  auto t0 = std::chrono::steady_clock::now();
  model->save_weights(path);
  auto save_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60 && (trial < 4 || orphans == 0); ++trial) {
    // The child says when it starts saving, so that the kill's delay does not depend on how
    // long a fork takes to get going (long under ThreadSanitizer on a busy machine).
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(ready[0]);
      char go = 1;
      if (::write(ready[1], &go, 1) != 1) ::_exit(1);
      for (;;) model->save_weights(path);
    }
    ::close(ready[1]);
    char go = 0;
    ASSERT_EQ(::read(ready[0], &go, 1), 1);
    ::close(ready[0]);
    double phase = 1.0 + 3.0 * std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    ::usleep(static_cast<useconds_t>(std::min<double>(2e5, 500.0 + phase * static_cast<double>(save_us))));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    orphans = std::max(orphans, static_cast<int>(entries(dir).size()) - 1);
  }
  EXPECT_GT(orphans, 0) << "no kill landed inside a write (the test proves nothing)";
  // Beside them: a live writer's file (a child that sleeps), another target's orphan, a name
  // that only looks like a temporary, the user's files.
  pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::pause();
    ::_exit(0);
  }
  pid_t gone = dead_pid();
  std::vector<std::string> kept = {temp_of("w.safetensors", "tmp", sleeper), temp_of("other.safetensors", "tmp", gone),
                                   ".w.safetensors.ef-tmp-x-1-2", ".w.safetensors.ef-tmp-1-2", "notes.txt",
                                   "w.safetensors.ef-tmp-0-" + std::to_string(gone) + "-0"};
  for (const auto& k : kept) std::ofstream(dir / k) << "keep";
  std::string dead_checkpoint_temp = temp_of("c.safetensors", "tmp", gone);
  std::ofstream(dir / dead_checkpoint_temp) << "orphan";

  model->save_weights(path);
  std::set<std::string> want(kept.begin(), kept.end());
  want.insert("w.safetensors");
  want.insert(dead_checkpoint_temp);  // another target's: left to that target's next save
  EXPECT_EQ(entries(dir), want);
  model->load_weights(path);

  train::Checkpoint ckpt;
  ckpt.track("model", *model);
  ckpt.save((dir / "c.safetensors").string());
  EXPECT_FALSE(fs::exists(dir / dead_checkpoint_temp));

  ::kill(sleeper, SIGKILL);
  int status = 0;
  ::waitpid(sleeper, &status, 0);
  model->save_weights(path);  // the sleeper is gone now: its file goes too
  EXPECT_FALSE(fs::exists(dir / kept[0]));
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- checkpoints
TEST(SaveHardening, ACheckpointOfOneOptimizerDoesNotRestoreIntoAnother) {
  Tensor x = random::normal({3, 2});
  auto step = [&](nn::Dense& layer, optim::Optimizer& opt) {
    GradientTape tape;
    Tensor loss = sum(square(layer(x)));
    opt.apply_gradients(tape.gradient(loss, layer.trainable_weights()), layer.trainable_weights());
  };
  nn::Dense layer(4);
  optim::SGD sgd(0.1, 0.9);
  step(layer, sgd);
  fs::path dir = ef::testing::fresh_temp_dir("ckpt_optimizer");
  std::string path = (dir / "c.safetensors").string();
  train::Checkpoint ckpt;
  ckpt.track("layer", layer).track("opt", sgd);
  ckpt.save(path);

  nn::Dense fresh(4);
  fresh(x);
  std::vector<float> before = fresh.kernel().value().to_vector<float>();
  optim::Adam adam;
  train::Checkpoint into_adam;
  into_adam.track("layer", fresh).track("opt", adam);
  expect_error([&] { into_adam.restore(path); }, {"optimizer 'opt'", "SGD", "Adam", "momentum", "nothing was loaded"});
  expect_error([&] { into_adam.restore(path, /*skip_mismatch=*/true); }, {"SGD", "Adam"});
  EXPECT_EQ(fresh.kernel().value().to_vector<float>(), before) << "a failed restore assigned weights";
  EXPECT_EQ(adam.variables().size(), 1u) << "a failed restore made slots (only the step counter exists)";
  EXPECT_EQ(adam.iterations().value().item<std::int64_t>(), 0) << "a failed restore set the step counter";

  // The same type with other slots (RMSprop with and without momentum, both stepped).
  nn::Dense l1(4), l2(4);
  optim::RMSprop with_momentum(0.01, 0.9, 0.5), plain(0.01, 0.9, 0.0);
  step(l1, with_momentum);
  step(l2, plain);
  train::Checkpoint c1;
  c1.track("layer", l1).track("opt", with_momentum);
  c1.save(path);
  train::Checkpoint c2;
  c2.track("layer", l2).track("opt", plain);
  expect_error([&] { c2.restore(path); }, {"RMSprop", "unexpected: momentum", "missing in the file: (none)"});
  // Same type and slots: restores (a fresh optimizer, whose slots are made from the file).
  optim::RMSprop again(0.01, 0.9, 0.5);
  nn::Dense l3(4);
  l3(x);
  train::Checkpoint c3;
  c3.track("layer", l3).track("opt", again);
  c3.restore(path);
  EXPECT_EQ(again.slots_of(l3.kernel()).size(), 2u);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- control flow
TEST(SaveHardening, SavingADifferentiatedCondOrLoopSaysItCannotBeSavedYet) {
  // cond and while_loop save (saved_model_test); their variants that keep a gradient's
  // values, recorded when a tape inside the function watches them, do not yet.
  auto looped = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(while_loop([](const std::vector<Tensor>& v) { return less(sum(v[0]), scalar(100.0f)); },
                              [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2.0f}; }, {x})[0]);
    return tape.gradient(y, x);
  });
  looped(ones({3}));
  fs::path dir = ef::testing::fresh_temp_dir("save_control_flow");
  expect_error([&] { save(looped, (dir / "loop").string()); }, {"differentiates an ef::while_loop", "cannot be saved yet"});
  auto branched = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(cond(greater(sum(x), scalar(0.0f)), [&] { return x * x; }, [&] { return x - 1.0f; }));
    return tape.gradient(y, x);
  });
  branched(ones({3}));
  expect_error([&] { save(branched, (dir / "cond").string()); }, {"differentiates an ef::cond", "cannot be saved yet"});
  EXPECT_FALSE(fs::exists(dir / "loop"));
  EXPECT_EQ(entries(dir), std::set<std::string>{}) << "a failed save leaves nothing behind";
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- layer names
namespace {
class TwoSame : public train::Model {
 public:
  TwoSame() : train::Model("two_same") {}
  Tensor call(const Tensor& x) override { return b_(a_(x)); }
  nn::Dense a_{4, nn::ActivationFn{}, true, "twin"}, b_{4, nn::ActivationFn{}, true, "twin"};
};
}  // namespace

TEST(SaveHardening, DuplicateLayerNamesAreReportedWhenTheModelIsBuilt) {
  auto model = std::make_shared<train::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{}, "my_model");
  model->add(std::make_shared<nn::Dense>(4, nn::ActivationFn{}, true, "hidden"));
  expect_error([&] { model->add(std::make_shared<nn::Dense>(4, nn::ActivationFn{}, true, "hidden")); },
               {"All layer names should be unique", "'hidden'", "my_model"});
  // A subclassed model: at its first call.
  TwoSame two;
  expect_error([&] { two(ones({1, 4})); }, {"All layer names should be unique", "'twin'", "two_same"});

  // Default names never collide, also with explicit names that look like them.
  auto m = std::make_shared<train::Sequential>();
  m->add(std::make_shared<nn::Dense>(2, nn::ActivationFn{}, true, "dense_1"));
  for (int i = 0; i < 3; ++i) m->add<nn::Dense>(2);
  std::vector<std::string> names;
  for (const nn::Layer* l : m->layers()) names.push_back(l->name());
  EXPECT_EQ(names, (std::vector<std::string>{"dense_1", "dense", "dense_2", "dense_3"}));
  (*m)(ones({1, 2}));
  fs::path dir = ef::testing::fresh_temp_dir("dup_names");
  m->save_weights((dir / "w.safetensors").string());

  // Nested models with the same inner names are fine: weights are keyed by path.
  auto inner = [] {
    auto s = std::make_shared<train::Sequential>();
    s->add(std::make_shared<nn::Dense>(3, nn::ActivationFn{}, true, "proj"));
    return s;
  };
  auto outer = std::make_shared<train::Sequential>();
  outer->add(inner());
  outer->add(inner());
  Tensor x = ones({1, 3});
  Tensor y = (*outer)(x);
  outer->save_weights((dir / "nested.safetensors").string());
  auto keys = train::weights_by_key(*outer);
  EXPECT_EQ(keys.size(), 4u);
  outer->load_weights((dir / "nested.safetensors").string());
  EXPECT_EQ((*outer)(x).to_vector<float>(), y.to_vector<float>());
  fs::remove_all(dir);
}

// Adding N layers of one base name costs O(N) names in all (it scanned every sibling for every
// candidate suffix: O(N^2) per add). Timing is not asserted; the names are.
TEST(SaveHardening, ManyLayersOfOneBaseNameAreNamedUniquely) {
  auto m = std::make_shared<train::Sequential>();
  const int n = 3000;
  for (int i = 0; i < n; ++i) m->add<nn::Dense>(1);
  std::set<std::string> names;
  for (const nn::Layer* l : m->layers()) names.insert(l->name());
  EXPECT_EQ(names.size(), static_cast<std::size_t>(n));
  EXPECT_TRUE(names.count("dense_" + std::to_string(n - 1)));
  // Long explicit names (100,000 characters) save and load.
  auto big = std::make_shared<train::Sequential>();
  big->add(std::make_shared<nn::Dense>(2, nn::ActivationFn{}, true, std::string(100'000, 'a')));
  big->add(std::make_shared<nn::Dense>(2, nn::ActivationFn{}, true, std::string(100'000, 'b')));
  (*big)(ones({1, 2}));
  fs::path dir = ef::testing::fresh_temp_dir("long_names");
  big->save_weights((dir / "w.safetensors").string());
  big->load_weights((dir / "w.safetensors").string());
  save(*big, (dir / "model").string());
  EXPECT_EQ(load((dir / "model").string()).variables().size(), 4u);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- paths that are not files
TEST(SaveHardening, PathsThatAreNotRegularFilesAreErrorsNotHangsOrDamage) {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(2);
  (*model)(ones({1, 2}));
  fs::path dir = ef::testing::fresh_temp_dir("odd_paths");
  std::string w = (dir / "w.safetensors").string();
  model->save_weights(w);

  // A FIFO: loading does not wait for a writer; saving does not replace it.
  fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_TRUE(finishes([&] { model->load_weights(fifo.string()); })) << "loading a FIFO hangs";
  expect_error([&] { model->load_weights(fifo.string()); }, {"not a regular file"});
  expect_error([&] { model->save_weights(fifo.string()); }, {"a FIFO", "not a regular file"});
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced by a file";
  fs::create_directories(dir / "fifo_model");
  ASSERT_EQ(::mkfifo((dir / "fifo_model" / "saved_model.json").c_str(), 0644), 0);
  EXPECT_TRUE(finishes([&] { load((dir / "fifo_model").string()); })) << "loading a FIFO saved_model.json hangs";
  expect_error([&] { load((dir / "fifo_model").string()); }, {"not a regular file"});

  // Devices are read as errors (never as an endless file), never written.
  expect_error([&] { model->load_weights("/dev/zero"); }, {"/dev/zero", "not a regular file"});
  expect_error([&] { model->load_weights("/dev/null"); }, {"/dev/null", "not a regular file"});
  expect_error([&] { io::save_safetensors("/dev/null", {{"w", ones({1})}}); }, {"/dev/null", "a device"});

  // A folder where a file is expected, and a file where a folder is.
  expect_error([&] { model->save_weights(dir.string()); }, {"a folder", "not a regular file"});
  expect_error([&] { save(*model, w); }, {"is not a folder"});
  EXPECT_TRUE(fs::is_regular_file(w));

  // Symbolic links: a loop is an error; a link to a file keeps being a link.
  fs::create_symlink(dir / "loop_b", dir / "loop_a");
  fs::create_symlink(dir / "loop_a", dir / "loop_b");
  expect_error([&] { model->save_weights((dir / "loop_a").string()); }, {"loop_a"});
  expect_error([&] { model->load_weights((dir / "loop_a").string()); }, {"loop_a"});
  expect_error([&] { save(*model, (dir / "loop_a").string()); }, {"loop_a"});
  fs::create_symlink(w, dir / "link");
  model->save_weights((dir / "link").string());
  EXPECT_TRUE(fs::is_symlink(dir / "link")) << "saving through a link replaced the link";
  model->load_weights((dir / "link").string());

  // Empty and over-long paths; a long file name (the temporary name must fit NAME_MAX too);
  // a file name with newlines.
  expect_error([&] { model->save_weights(""); }, {"empty"});
  expect_error([&] { model->load_weights(""); }, {"empty"});
  expect_error([&] { save(*model, ""); }, {"empty"});
  expect_error([&] { load(""); }, {"empty"});
  std::string too_long = (dir / std::string(PATH_MAX + 10, 'x')).string();
  expect_error([&] { model->save_weights(too_long); }, {"too long"});
  expect_error([&] { model->load_weights(too_long); }, {"too long"});
  std::string long_name = (dir / (std::string(240, 'n') + ".st")).string();
  model->save_weights(long_name);
  model->load_weights(long_name);
  save(*model, (dir / std::string(250, 'm')).string());
  load((dir / std::string(250, 'm')).string());
  std::string newline = (dir / "a\nb.safetensors").string();
  model->save_weights(newline);
  model->load_weights(newline);

  // A folder holding other files is not replaced by a saved model (its files would be lost).
  fs::create_directories(dir / "mine");
  std::ofstream(dir / "mine" / "thesis.tex") << "years of work";
  expect_error([&] { save(*model, (dir / "mine").string()); }, {"thesis.tex", "not part of a saved model"});
  EXPECT_TRUE(fs::exists(dir / "mine" / "thesis.tex"));
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- parsers
TEST(SaveHardening, HugeAndDeepHeadersAreFastOrClearErrors) {
  // 200,000 tensors in one header: the duplicate-key check was a scan per key (O(n^2)).
  std::vector<io::NamedTensor> many;
  for (int i = 0; i < 200'000; ++i) many.push_back({"t" + std::to_string(i), scalar(static_cast<float>(i))});
  auto bytes = io::serialize_safetensors(many);
  io::TensorFile f = io::parse_safetensors(bytes, "many");
  EXPECT_EQ(f.tensors.size(), many.size());
  // Nesting deeper than the limit, in a saved model's JSON.
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(2);
  (*model)(ones({1, 2}));
  fs::path dir = ef::testing::fresh_temp_dir("deep_json");
  save(*model, (dir / "m").string());
  std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  { std::ofstream(dir / "m" / "saved_model.json") << deep; }
  expect_error([&] { load((dir / "m").string()); }, {"nested too deeply"});
  { std::ofstream(dir / "m" / "saved_model.json") << "{\"format\":" + deep + "}"; }
  expect_error([&] { load((dir / "m").string()); }, {"nested too deeply"});
  // Many small values: ~40 bytes each in memory for 2 in the file (a 256 MB file of zeros took
  // ~9 GB); more than 2^23 is an error before the memory is spent.
  {
    std::string zeros = "{\"format\":\"eagerflow-saved-model\",\"version\":1,\"x\":[0";
    zeros.reserve(20'000'000);
    for (int i = 0; i < 9'000'000; ++i) zeros += ",0";
    std::ofstream(dir / "m" / "saved_model.json") << zeros << "]}";
  }
  expect_error([&] { load((dir / "m").string()); }, {"saved_model.json", "more than 8388608 values"});
  fs::remove_all(dir);
}
