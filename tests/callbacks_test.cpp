// Keras 3 callbacks: ReduceLROnPlateau (Keras' rule epoch by epoch, the rate taking effect in
// the traced step without a retrace), LambdaCallback, EarlyStopping's and TerminateOnNaN's
// messages, and BackupAndRestore: a fit killed with SIGKILL (mid-epoch and mid-backup) and
// restarted ends with the uninterrupted run's weights, bit for bit; damaged backups are errors.
#include "ef_test_paths.h"
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "test_util.h"

extern char** environ;

using namespace ef;
using ef::testing::expect_error;
namespace fs = std::filesystem;

namespace {

struct Data {
  Tensor x, y;
};

Data small_data(std::int64_t n = 96) {
  Tensor x = cast(ef::testing::randn({n, 8}, 11), DType::float32);
  Tensor y = cast(greater(sum(x, {1}), scalar(0.0f)), DType::int64);
  return {x, y};
}

std::shared_ptr<train::Sequential> small_model(std::shared_ptr<optim::Optimizer> opt = nullptr, bool dropout = true) {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(16, "relu");
  if (dropout) model->add<nn::Dropout>(0.25);
  // Probabilities: the loss by name takes from_logits=false as Keras does (raw logits there
  // made training erratic, and at times froze it within an epoch).
  model->add<nn::Dense>(2, "softmax");
  (*model)(zeros({1, 8}));
  model->compile(opt ? opt : std::make_shared<optim::Adam>(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

std::vector<Tensor> weight_values(const train::Model& m) {
  std::vector<Tensor> out;
  for (const Variable& v : m.weights()) out.push_back(Tensor(v).clone());
  return out;
}

void expect_bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].spec().str(), b[i].spec().str()) << "weight " << i;
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()), 0) << "weight " << i << " differs";
  }
}

// NaN counts as the largest difference (std::max would drop it and report 0).
double max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double d = max(abs(cast(a[i], DType::float64) - cast(b[i], DType::float64))).item<double>();
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

// Captures ef's log lines (warnings) for a scope.
struct CaptureLog {
  std::vector<std::string> lines;
  CaptureLog() { set_log_sink([this](std::string_view l) { lines.emplace_back(l); }); }
  ~CaptureLog() { set_log_sink(nullptr); }
  std::string all() const {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }
};

}  // namespace

// ---------------------------------------------------------------- ReduceLROnPlateau

// Keras 3's trace for this sequence (patience 2, cooldown 1, factor 0.5, min_lr 0.02, from
// 0.1): reductions at epochs 4, 6 and 9 (printed from 1), the last one clamped to min_lr; then
// the float32 rate 0.02 is not above min_lr and nothing changes.
TEST(CallbacksReduceLROnPlateau, FollowsKerasRuleEpochByEpoch) {
  auto opt = std::make_shared<optim::SGD>(0.1);
  auto model = small_model(opt);
  train::ReduceLROnPlateauOptions o;
  o.factor = 0.5;
  o.patience = 2;
  o.cooldown = 1;
  o.min_lr = 0.02;
  o.min_delta = 0.0;
  o.verbose = 1;
  train::ReduceLROnPlateau cb(o);
  cb.model = model.get();
  cb.on_train_begin();
  std::vector<double> loss{1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85};
  std::vector<double> want{0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.025, 0.02, 0.02, 0.02};
  std::vector<int> want_wait{0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 2};
  ef::testing::CaptureStdout out;
  for (std::size_t e = 0; e < loss.size(); ++e) {
    cb.on_epoch_end(static_cast<int>(e), {{"loss", loss[e]}, {"val_loss", loss[e]}});
    EXPECT_FLOAT_EQ(static_cast<float>(opt->learning_rate()), static_cast<float>(want[e])) << "after epoch " << e;
    EXPECT_EQ(cb.wait(), want_wait[e]) << "after epoch " << e;
  }
  EXPECT_EQ(out.text(),
            "\nEpoch 4: ReduceLROnPlateau reducing learning rate to 0.05000000074505806.\n"
            "\nEpoch 6: ReduceLROnPlateau reducing learning rate to 0.02500000037252903.\n"
            "\nEpoch 9: ReduceLROnPlateau reducing learning rate to 0.02.\n");
}

TEST(CallbacksReduceLROnPlateau, ModeAndMonitorAsKeras) {
  auto opt = std::make_shared<optim::SGD>(0.1);
  auto model = small_model(opt);
  // "accuracy" is maximized in auto mode: rising accuracy never reduces the rate.
  train::ReduceLROnPlateauOptions o;
  o.monitor = "val_accuracy";
  o.patience = 0;
  train::ReduceLROnPlateau up(o);
  up.model = model.get();
  up.on_train_begin();
  for (int e = 0; e < 4; ++e) up.on_epoch_end(e, {{"val_accuracy", 0.5 + 0.1 * e}});
  EXPECT_FLOAT_EQ(static_cast<float>(opt->learning_rate()), 0.1f);
  up.on_epoch_end(4, {{"val_accuracy", 0.1}});  // falls: patience 0 reduces at once
  EXPECT_FLOAT_EQ(static_cast<float>(opt->learning_rate()), 0.01f);
  // A missing monitor warns (naming what is there, with learning_rate as Keras adds it) and
  // changes nothing.
  train::ReduceLROnPlateau missing;
  missing.model = model.get();
  missing.on_train_begin();
  CaptureLog log;
  missing.on_epoch_end(0, {{"loss", 1.0}});
  missing.on_epoch_end(1, {{"loss", 1.0}});
  ASSERT_EQ(log.lines.size(), 1u) << log.all();
  EXPECT_NE(log.all().find("Learning rate reduction is conditioned on metric `val_loss` which is not available. "
                           "Available metrics are: learning_rate,loss."),
            std::string::npos)
      << log.all();
  expect_error([] { train::ReduceLROnPlateauOptions b; b.factor = 1.0; train::ReduceLROnPlateau r(b); },
               {"ReduceLROnPlateau does not support a factor >= 1.0. Received factor=1.0"});
  expect_error([] { train::ReduceLROnPlateauOptions b; b.factor = 0.0; train::ReduceLROnPlateau r(b); }, {"factor"});
  expect_error([] { train::ReduceLROnPlateauOptions b; b.mode = "sideways"; train::ReduceLROnPlateau r(b); }, {"mode"});
}

// In fit: the rate changes between epochs inside the one traced train step. A factor of 1e-3
// after the second epoch makes (SGD's) later epochs move the weights about 1000 times less,
// which only happens if the step reads the new rate.
TEST(CallbacksReduceLROnPlateau, TakesEffectInTheTracedStepWithoutRetracing) {
  Data d = small_data();
  auto opt = std::make_shared<optim::SGD>(0.5);
  auto model = small_model(opt, /*dropout=*/false);
  train::ReduceLROnPlateauOptions o;
  o.monitor = "loss";
  o.min_delta = 1e9;  // nothing improves enough: the second epoch reduces (patience 1)
  o.patience = 1;
  o.factor = 1e-3;
  auto reduce = std::make_shared<train::ReduceLROnPlateau>(o);
  std::vector<std::vector<Tensor>> after;
  std::vector<double> rates;
  auto record = std::make_shared<train::LambdaCallback>(nullptr, [&](int, const train::Logs&) {
    after.push_back(weight_values(*model));
    rates.push_back(opt->learning_rate());
  });
  auto h = model->fit(d.x, d.y, {.batch_size = 16, .epochs = 4, .shuffle = false, .callbacks = {reduce, record}, .verbose = 0});
  ASSERT_EQ(after.size(), 4u);
  EXPECT_EQ(model->tracing_count(), 1);
  EXPECT_FLOAT_EQ(static_cast<float>(rates[0]), 0.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(rates[1]), 0.5e-3f);
  double moved_before = max_abs_diff(after[0], after[1]);
  double moved_after = max_abs_diff(after[2], after[3]);
  EXPECT_GT(moved_before, 1e-4);
  EXPECT_LT(moved_after, moved_before * 0.02) << "the reduced rate did not reach the traced step";
  EXPECT_GT(moved_after, 0.0) << "the rate is small, not zero";
}

// ---------------------------------------------------------------- LambdaCallback

TEST(CallbacksLambda, CallsEachFunctionInFitsOrder) {
  Data d = small_data(40);
  auto model = small_model();
  std::vector<std::string> events;
  auto cb = std::make_shared<train::LambdaCallback>(
      [&](int e) { events.push_back("epoch_begin " + std::to_string(e)); },
      [&](int e, const train::Logs& l) { events.push_back("epoch_end " + std::to_string(e) + (l.count("loss") ? " loss" : "")); },
      [&](int b) { events.push_back("batch_begin " + std::to_string(b)); },
      [&](int b, const train::Logs& l) { events.push_back("batch_end " + std::to_string(b) + (l.count("loss") ? " loss" : "")); },
      [&] { events.push_back("train_begin"); }, [&] { events.push_back("train_end"); });
  model->fit(d.x, d.y, {.batch_size = 20, .epochs = 2, .callbacks = {cb}, .verbose = 0});
  std::vector<std::string> want{"train_begin",      "epoch_begin 0",    "batch_begin 0",    "batch_end 0 loss",
                                "batch_begin 1",    "batch_end 1 loss", "epoch_end 0 loss", "epoch_begin 1",
                                "batch_begin 0",    "batch_end 0 loss", "batch_begin 1",    "batch_end 1 loss",
                                "epoch_end 1 loss", "train_end"};
  EXPECT_EQ(events, want);
  // Only some functions: the others are skipped; a callback may stop training.
  train::LambdaCallbackFunctions f;
  int ends = 0;
  f.on_epoch_end = [&](int, const train::Logs&) {
    if (++ends == 2) model->stop_training = true;
  };
  auto partial = std::make_shared<train::LambdaCallback>(f);
  auto h = model->fit(d.x, d.y, {.batch_size = 20, .epochs = 5, .callbacks = {partial}, .verbose = 0});
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1}));
}

// ---------------------------------------------------------------- EarlyStopping, TerminateOnNaN

TEST(CallbacksEarlyStopping, KerasMessagesAndAMissingMonitorWarns) {
  Data d = small_data();
  auto model = small_model();
  train::EarlyStoppingOptions o;
  o.monitor = "loss";
  o.min_delta = 1e9;
  o.patience = 2;
  o.verbose = 1;
  o.restore_best_weights = true;
  auto stop = std::make_shared<train::EarlyStopping>(o);
  std::vector<std::vector<Tensor>> after;
  auto record = std::make_shared<train::LambdaCallback>(nullptr, [&](int, const train::Logs&) { after.push_back(weight_values(*model)); });
  ef::testing::CaptureStdout out;
  auto h = model->fit(d.x, d.y, {.batch_size = 16, .epochs = 10, .callbacks = {record, stop}, .verbose = 0});
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(out.text(), "Epoch 3: early stopping\nRestoring model weights from the end of the best epoch: 1.\n");
  ASSERT_EQ(after.size(), 3u);
  expect_bitwise_equal(weight_values(*model), after[0]);

  // start_from_epoch: epochs before it are not monitored (Keras: the first monitored epoch
  // is the best so far, so stopping comes patience epochs after it).
  train::EarlyStoppingOptions s;
  s.monitor = "loss";
  s.min_delta = 1e9;
  s.patience = 1;
  s.start_from_epoch = 2;
  auto late = std::make_shared<train::EarlyStopping>(s);
  h = model->fit(d.x, d.y, {.batch_size = 16, .epochs = 10, .callbacks = {late}, .verbose = 0});
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(late->best_epoch(), 2);

  // A monitor that is not in the logs: Keras warns and trains on.
  auto missing = std::make_shared<train::EarlyStopping>("val_loss", 0);
  CaptureLog log;
  h = model->fit(d.x, d.y, {.batch_size = 16, .epochs = 3, .callbacks = {missing}, .verbose = 0});
  EXPECT_EQ(h.epoch.size(), 3u);
  ASSERT_EQ(log.lines.size(), 1u) << log.all();
  EXPECT_NE(log.all().find("Early stopping conditioned on metric `val_loss` which is not available. Available metrics "
                           "are: accuracy,loss"),
            std::string::npos)
      << log.all();
}

TEST(CallbacksTerminateOnNaN, KerasMessageOrRaiseError) {
  Data d = small_data(64);
  auto model = small_model(std::make_shared<optim::SGD>(0.1), false);
  std::vector<float> xs = d.x.to_vector<float>();
  for (std::size_t i = 32 * 8; i < xs.size(); ++i) xs[i] = NAN;  // the third batch of 16 is NaN
  Tensor bad = tensor(xs, d.x.shape());
  auto stop = std::make_shared<train::TerminateOnNaN>();
  {
    ef::testing::CaptureStdout out;
    auto h = model->fit(bad, d.y, {.batch_size = 16, .epochs = 3, .shuffle = false, .callbacks = {stop}, .verbose = 0});
    EXPECT_EQ(out.text(), "Batch 2: Invalid loss, terminating training\n");
    EXPECT_TRUE(stop->terminated());
    EXPECT_EQ(h.epoch, (std::vector<int>{0}));
  }
  auto raise = std::make_shared<train::TerminateOnNaN>(/*raise_error=*/true);
  auto fresh = small_model(std::make_shared<optim::SGD>(0.1), false);
  expect_error([&] { fresh->fit(bad, d.y, {.batch_size = 16, .epochs = 3, .shuffle = false, .callbacks = {raise}, .verbose = 0}); },
               {"NaN or Inf loss encountered at batch 2. Loss value: nan. Terminating training immediately."});
}

// ---------------------------------------------------------------- BackupAndRestore, in process

namespace {

// Throws at the start of one epoch: an interrupted fit (Keras' own example).
class InterruptAt : public train::Callback {
 public:
  explicit InterruptAt(int epoch) : epoch_(epoch) {}
  void on_epoch_begin(int epoch) override {
    if (epoch == epoch_) throw std::runtime_error("interrupting");
  }

 private:
  int epoch_;
};

}  // namespace

// Interrupted at epoch 3 of 6 and resumed in a fresh model with a fresh optimizer (no slots
// yet) and another random state: fit runs epochs 3..5 only and ends with the uninterrupted
// run's weights, bit for bit; the backup is gone afterwards.
TEST(CallbacksBackupAndRestore, ResumesAtTheNextEpochExactly) {
  Data d = small_data();
  fs::path dir = ef::testing::fresh_temp_dir("backup_resume") / "backup";
  train::FitOptions o{.batch_size = 16, .epochs = 6, .verbose = 0};

  random::set_seed(7);
  auto reference = small_model();
  reference->fit(d.x, d.y, o);

  random::set_seed(7);
  auto first = small_model();
  auto backup = std::make_shared<train::BackupAndRestore>(dir.string());
  o.callbacks = {backup, std::make_shared<InterruptAt>(3)};
  EXPECT_THROW(first->fit(d.x, d.y, o), std::runtime_error);
  EXPECT_TRUE(fs::exists(backup->backup_path()));
  EXPECT_EQ(backup->backup_path(), (dir / "latest.safetensors").string());

  random::set_seed(99);  // a restarted process: other weights, other random state
  auto second = small_model();
  EXPECT_EQ(second->optimizer()->variables().size(), 1u);  // the step counter only: no slots yet
  o.callbacks = {backup};
  auto h = second->fit(d.x, d.y, o);
  EXPECT_EQ(backup->restored_epoch(), 3);
  EXPECT_EQ(h.epoch, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(second->tracing_count(), 1);
  expect_bitwise_equal(weight_values(*second), weight_values(*reference));
  EXPECT_FALSE(fs::exists(dir)) << "delete_checkpoint removes the backup (and its emptied folder)";

  // delete_checkpoint=false keeps it; a finished backup makes the next fit run no epochs.
  auto keep = std::make_shared<train::BackupAndRestore>(dir.string(), "epoch", false);
  o.callbacks = {keep};
  o.epochs = 2;
  second->fit(d.x, d.y, o);
  EXPECT_TRUE(fs::exists(keep->backup_path()));
  h = second->fit(d.x, d.y, o);
  EXPECT_EQ(keep->restored_epoch(), 2);
  EXPECT_TRUE(h.epoch.empty());
  fs::remove_all(dir.parent_path());
}

TEST(CallbacksBackupAndRestore, Refusals) {
  expect_error([] { train::BackupAndRestore b(""); }, {"BackupAndRestore", "Empty `backup_dir`"});
  expect_error([] { train::BackupAndRestore b("/tmp/x", "100"); }, {"save_freq='100'", "only 'epoch'"});
  // A backup exists but the model is not built: Keras' error, naming the file.
  Data d = small_data();
  fs::path dir = ef::testing::fresh_temp_dir("backup_unbuilt");
  auto built = small_model();
  auto keep = std::make_shared<train::BackupAndRestore>(dir.string(), "epoch", false);
  built->fit(d.x, d.y, {.batch_size = 32, .epochs = 1, .callbacks = {keep}, .verbose = 0});
  auto unbuilt = std::make_shared<train::Sequential>();
  unbuilt->add<nn::Dense>(2);
  unbuilt->compile(std::make_shared<optim::Adam>(0.01), "sparse_categorical_crossentropy");
  train::BackupAndRestore again(dir.string());
  again.model = unbuilt.get();
  expect_error([&] { again.on_train_begin(); }, {"must be built before you call fit()", "latest.safetensors"});
  // Another model's backup: the mismatch is an error and nothing is assigned.
  auto other = std::make_shared<train::Sequential>();
  other->add<nn::Dense>(5);
  (*other)(zeros({1, 8}));
  other->compile(std::make_shared<optim::Adam>(0.01), "sparse_categorical_crossentropy");
  auto before = weight_values(*other);
  again.model = other.get();
  expect_error([&] { again.on_train_begin(); }, {"latest.safetensors", "mismatch"});
  expect_bitwise_equal(weight_values(*other), before);
  EXPECT_EQ(other->resume_epoch, -1);
  fs::remove_all(dir);
}

// Truncated or flipped bytes: restoring is an ef::Error naming the file, or (a flip that
// changes nothing read, such as header padding) the exact saved state; never a crash, never
// silently other numbers (backups carry a checksum); the message is printable text.
TEST(CallbacksBackupAndRestore, DamagedBackupsAreErrorsNamingTheFile) {
  Data d = small_data();
  fs::path dir = ef::testing::fresh_temp_dir("backup_fuzz");
  random::set_seed(3);
  auto model = small_model();
  auto keep = std::make_shared<train::BackupAndRestore>(dir.string(), "epoch", false);
  model->fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .callbacks = {keep}, .verbose = 0});
  std::string path = keep->backup_path();
  std::vector<char> good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(good.size(), 100u);
  auto saved = weight_values(*model);
  auto write = [&](const std::vector<char>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  random::set_seed(4);
  auto fresh = small_model();
  train::BackupAndRestore cb(dir.string());
  cb.model = fresh.get();
  int errors = 0, clean = 0;
  auto attempt = [&](const std::vector<char>& bytes, const std::string& what) {
    write(bytes);
    fresh->resume_epoch = -1;
    try {
      cb.on_train_begin();
      ++clean;
      expect_bitwise_equal(weight_values(*fresh), saved);
      EXPECT_EQ(fresh->resume_epoch, 1) << what;
    } catch (const Error& e) {
      ++errors;
      std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << what << ": " << msg;
      // Valid text whatever the file held (Python decodes messages as UTF-8).
      for (unsigned char ch : msg) EXPECT_TRUE((ch >= 0x20 && ch < 0x7f) || ch == '\n') << what << ": " << msg;
      EXPECT_EQ(fresh->resume_epoch, -1) << what;
    }
  };
  for (std::size_t len : {std::size_t{0}, std::size_t{4}, std::size_t{8}, std::size_t{9}, std::size_t{64}, good.size() / 2,
                          good.size() - 1})
    attempt(std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len)), "truncated to " + std::to_string(len));
  std::mt19937 rng(5);
  std::uint64_t header = 0;
  std::memcpy(&header, good.data(), 8);
  for (int i = 0; i < 300; ++i) {
    std::vector<char> bad = good;
    // Half the flips in the 8-byte length and JSON header, half in the data.
    std::size_t at = i % 2 ? rng() % (8 + header) : 8 + header + rng() % (good.size() - 8 - header);
    bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
    attempt(bad, "bit flipped at " + std::to_string(at));
  }
  EXPECT_GE(errors, 290) << "clean restores: " << clean;
  write(good);  // and the intact file still restores
  cb.on_train_begin();
  EXPECT_EQ(fresh->resume_epoch, 1);
  expect_bitwise_equal(weight_values(*fresh), saved);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- BackupAndRestore, killed

namespace {

// tests/tools/fit_with_backup, its stdout on a pipe.
struct Child {
  pid_t pid = -1;
  int out = -1;
  std::string text;  // read so far
};

Child spawn_tool(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  std::vector<std::string> all{EF_FIT_WITH_BACKUP_TOOL};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child c;
  int rc = posix_spawn(&c.pid, EF_FIT_WITH_BACKUP_TOOL, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) throw std::runtime_error(std::string("posix_spawn failed: ") + std::strerror(rc));
  c.out = fds[0];
  return c;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Reads until `line` has appeared `times` times in the output (true) or the output ends (false).
bool read_until(Child& c, const std::string& line, std::size_t times = 1) {
  char buf[4096];
  while (occurrences(c.text, line) < times) {
    ssize_t n = read(c.out, buf, sizeof buf);
    if (n <= 0) return false;
    c.text.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

// Waits for the child (reading the rest of its output); its wait status.
int finish(Child& c) {
  read_until(c, "\x01never");
  close(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  return status;
}

bool orphan_temp_files(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(".latest.safetensors.", 0) == 0) return true;
  return false;
}

std::vector<char> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// The key property of BackupAndRestore: a fit killed with SIGKILL at random moments, several
// times (mid-epoch, and right as a backup is being written), and started again each time,
// ends with exactly the weights of a run that was never interrupted.
TEST(CallbacksBackupAndRestore, SurvivesSigkillAnywhereBitForBit) {
  fs::path dir = ef::testing::fresh_temp_dir("backup_kill");
  const std::string epochs = "6";
  fs::path ref_out = dir / "reference.safetensors", out = dir / "resumed.safetensors", backup = dir / "backup";

  auto t0 = std::chrono::steady_clock::now();
  Child ref = spawn_tool({"-", ref_out.string(), epochs});
  int status = finish(ref);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ref.text;
  double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::random_device rd;
  unsigned seed = rd();
  SCOPED_TRACE("kill seed " + std::to_string(seed) + ", reference run " + std::to_string(run_ms) + " ms");
  std::mt19937 rng(seed);
  int killed_mid_run = 0, resumed_from_backup = 0, mid_write = 0;
  std::string log;
  // A run can finish before a random kill (the reference run is timed once, and the machine's
  // load changes): then it starts over from nothing with shorter delays, so that every attempt
  // still counts and the kills that the test is about happen.
  double delay_scale_ms = run_ms;
  for (int attempt = 0; attempt < 8; ++attempt) {
    Child c = spawn_tool({backup.string(), out.string(), epochs});
    if (attempt % 2 == 0) {
      // Anywhere: after a random delay within the run's length.
      auto bound = static_cast<unsigned>(std::max(1.0, delay_scale_ms * 1000));
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(rng() % bound)));
    } else {
      // As a backup is written: the tool prints "epoch N saving" just before the write. The
      // first time at the second backup of the run, so that one backup surely exists.
      read_until(c, "saving", attempt == 1 ? 2 : 1 + rng() % 2);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 4000));  // into the write
    }
    kill(c.pid, SIGKILL);
    status = finish(c);
    log += "attempt " + std::to_string(attempt) + ":\n" + c.text;
    if (c.text.find("resumed at epoch") != std::string::npos) ++resumed_from_backup;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      // Inside fit: after it started, before it finished.
      if (c.text.find("training") != std::string::npos && c.text.find("finished") == std::string::npos) ++killed_mid_run;
      if (orphan_temp_files(backup)) ++mid_write;
    } else {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
      // It finished before the kill: start over.
      fs::remove_all(backup);
      fs::remove(out);
      delay_scale_ms /= 2;
    }
  }
  Child last = spawn_tool({backup.string(), out.string(), epochs});
  status = finish(last);
  log += "last:\n" + last.text;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  std::cout << "[ kills ] " << killed_mid_run << " inside fit (" << mid_write << " left a half-written backup), "
            << resumed_from_backup << " restarts resumed from a backup\n";
  EXPECT_GE(killed_mid_run, 1) << log;
  if (last.text.find("resumed at epoch") != std::string::npos) ++resumed_from_backup;
  EXPECT_GE(resumed_from_backup, 1) << log;
  io::TensorFile a = io::load_safetensors(ref_out.string()), b = io::load_safetensors(out.string());
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    ASSERT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(std::memcmp(a.tensors[i].value.raw_data(), b.tensors[i].value.raw_data(), a.tensors[i].value.nbytes()), 0)
        << a.tensors[i].name << " differs from the uninterrupted run\n" << log;
  }
  EXPECT_EQ(file_bytes(ref_out), file_bytes(out));
  EXPECT_FALSE(fs::exists(backup / "latest.safetensors")) << "the completed fit deletes its backup";
  fs::remove_all(dir);
}

// ModelCheckpoint to a ".efmodel" / ".keras" path writes the whole model (Keras 3), which
// load_model reads back with the weights and optimizer state of that epoch.
TEST(CallbacksModelCheckpoint, ModelFilePathsSaveTheWholeModel) {
  auto dir = ef::testing::fresh_temp_dir("ckpt_model_file");
  Data d = small_data();
  auto model = small_model(std::make_shared<optim::SGD>(0.1), /*dropout=*/false);
  auto cb = std::make_shared<train::ModelCheckpoint>((dir / "m{epoch}.keras").string(), "loss", false, /*save_weights_only=*/false);
  model->fit(d.x, d.y, {.batch_size = 16, .epochs = 2, .shuffle = false, .callbacks = {cb}, .verbose = 0});
  ASSERT_EQ(cb->last_saved(), (dir / "m2.keras").string());
  auto loaded = load_model(cb->last_saved());
  ASSERT_EQ(loaded->weights().size(), model->weights().size());
  expect_bitwise_equal(weight_values(*loaded), weight_values(*model));
  EXPECT_EQ(loaded->optimizer()->iterations().value().item<std::int64_t>(), 12);
}
