// ef::train::TensorBoard: Keras' runs, tags and steps, read back with our own reader (the
// tensorboard package reads the same files in python/tests/test_tensorboard.py).
#include <filesystem>
#include <map>

#include "eagerflow/summary/event_file.h"
#include "eagerflow/train/tensorboard.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
namespace fs = std::filesystem;

namespace {

std::vector<summary::Event> events_in(const fs::path& dir) {
  std::vector<summary::Event> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    for (auto& e : summary::read_events(f.string())) out.push_back(std::move(e));
  return out;
}

// tag -> [(step, value)] of the scalars.
std::map<std::string, std::vector<std::pair<std::int64_t, float>>> scalars(const std::vector<summary::Event>& events) {
  std::map<std::string, std::vector<std::pair<std::int64_t, float>>> out;
  for (const auto& e : events)
    for (const auto& v : e.values)
      if (v.kind == summary::SummaryValue::Kind::simple_value) out[v.tag].emplace_back(e.step, v.simple_value);
  return out;
}

std::shared_ptr<train::Sequential> model_for_logs() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(16, "relu");
  model->add<nn::Dense>(2, "softmax");
  (*model)(zeros({1, 8}));
  model->compile(std::make_shared<optim::Adam>(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

}  // namespace

TEST(TensorBoardCallback, KerasRunsTagsAndSteps) {
  // python/tests/test_tensorboard.py runs this test with EF_TB_TEST_LOGDIR set and reads the
  // logs with the tensorboard package.
  const char* keep = std::getenv("EF_TB_TEST_LOGDIR");
  fs::path dir = keep ? fs::path(keep) : ef::testing::fresh_temp_dir("tb_callback");
  Tensor x = cast(ef::testing::randn({96, 8}, 5), DType::float32);
  Tensor y = cast(greater(sum(x, {1}), scalar(0.0f)), DType::int64);
  auto model = model_for_logs();
  auto tb = std::make_shared<train::TensorBoard>(dir.string(), /*histogram_freq=*/2, /*write_graph=*/true, /*update_freq=*/2);
  // 72 training examples in batches of 16: 5 batches per epoch, 15 in all.
  auto h = model->fit(x, y, {.batch_size = 16, .epochs = 3, .validation_split = 0.25, .shuffle = false, .callbacks = {tb}, .verbose = 0});
  ASSERT_TRUE(fs::is_directory(dir / "train"));
  ASSERT_TRUE(fs::is_directory(dir / "validation"));
  auto train_events = events_in(dir / "train"), val_events = events_in(dir / "validation");
  auto ts = scalars(train_events), vs = scalars(val_events);
  // Epoch scalars: the History's numbers at steps 0, 1, 2; validation ones in their own run.
  for (const std::string name : {"loss", "accuracy"}) {
    ASSERT_EQ(ts["epoch_" + name].size(), 3u) << name;
    ASSERT_EQ(vs["epoch_" + name].size(), 3u) << name;
    for (int e = 0; e < 3; ++e) {
      EXPECT_EQ(ts["epoch_" + name][static_cast<std::size_t>(e)].first, e);
      EXPECT_EQ(ts["epoch_" + name][static_cast<std::size_t>(e)].second, static_cast<float>(h.history.at(name)[static_cast<std::size_t>(e)]));
      EXPECT_EQ(vs["epoch_" + name][static_cast<std::size_t>(e)].second,
                static_cast<float>(h.history.at("val_" + name)[static_cast<std::size_t>(e)]));
    }
  }
  EXPECT_EQ(vs.count("epoch_val_loss"), 0u);
  EXPECT_EQ(ts.count("epoch_val_loss"), 0u);
  ASSERT_EQ(ts["epoch_learning_rate"].size(), 3u);
  EXPECT_FLOAT_EQ(ts["epoch_learning_rate"][0].second, 0.01f);
  // Batch scalars every 2 batches of the whole fit: global steps 2, 4, ..., 14.
  ASSERT_EQ(ts["batch_loss"].size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(ts["batch_loss"][i].first, static_cast<std::int64_t>(2 * (i + 1)));
  EXPECT_EQ(vs.count("batch_loss"), 0u);
  // Weight histograms at epochs 0 and 2, tagged by the weight's path.
  std::map<std::string, std::vector<std::int64_t>> histos;
  std::int64_t kernel_values = 0;
  for (const auto& e : train_events)
    for (const auto& v : e.values)
      if (v.kind == summary::SummaryValue::Kind::histogram) {
        histos[v.tag].push_back(e.step);
        if (v.tag.find("kernel") != std::string::npos && e.step == 2) kernel_values += static_cast<std::int64_t>(v.num);
      }
  std::vector<std::string> want_tags;
  for (const auto& w : model->weights()) want_tags.push_back(w.name() + "/histogram");
  ASSERT_EQ(histos.size(), want_tags.size());
  for (const auto& tag : want_tags) EXPECT_EQ(histos[tag], (std::vector<std::int64_t>{0, 2})) << tag;
  EXPECT_EQ(kernel_values, 8 * 16 + 16 * 2);
  // The train step's graph (once: it traced once) and its trace reason as text.
  int graphs = 0;
  std::string reasons;
  for (const auto& e : train_events) {
    if (!e.graph_def.empty()) {
      ++graphs;
      auto nodes = summary::parse_graph_def(e.graph_def);
      std::set<std::string> ops;
      for (const auto& n : nodes) ops.insert(n.op);
      EXPECT_TRUE(ops.count("matmul")) << nodes.size();
      EXPECT_TRUE(ops.count("Placeholder"));
      EXPECT_TRUE(ops.count("assign_variable") || ops.count("assign_sub") || ops.size() > 10);
      bool scoped = false;
      for (const auto& n : nodes) scoped = scoped || n.name.find("dense") != std::string::npos;
      EXPECT_TRUE(scoped) << "layer scopes name the nodes";
      // The optimizer's and the metrics' variable updates fold under variables/<path>.
      bool iterations = false;
      for (const auto& n : nodes) iterations = iterations || n.name.rfind("variables/Adam/iterations/", 0) == 0;
      EXPECT_TRUE(iterations);
    }
    for (const auto& v : e.values)
      if (v.tag == "train_step/trace_reasons") reasons += v.string_val.at(0);
  }
  EXPECT_EQ(model->tracing_count(), 1);
  EXPECT_EQ(graphs, 1);
  EXPECT_NE(reasons.find("first call"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("trace 1"), std::string::npos) << reasons;
}

TEST(TensorBoardCallback, EpochOnlyNoGraphAndASecondFit) {
  fs::path dir = ef::testing::fresh_temp_dir("tb_callback_epoch");
  Tensor x = cast(ef::testing::randn({40, 8}, 7), DType::float32);
  Tensor y = cast(greater(sum(x, {1}), scalar(0.0f)), DType::int64);
  auto model = model_for_logs();
  auto tb = std::make_shared<train::TensorBoard>(dir.string(), 0, /*write_graph=*/false);
  model->fit(x, y, {.batch_size = 16, .epochs = 2, .callbacks = {tb}, .verbose = 0});
  std::string first = tb->train_file();
  model->fit(x, y, {.batch_size = 16, .epochs = 1, .callbacks = {tb}, .verbose = 0});
  EXPECT_NE(tb->train_file(), first);  // a new file in the same run, as Keras after a fit ends
  EXPECT_FALSE(fs::exists(dir / "validation"));
  auto events = events_in(dir / "train");
  auto ts = scalars(events);
  EXPECT_EQ(ts["epoch_loss"].size(), 3u);
  EXPECT_EQ(ts.count("batch_loss"), 0u);
  for (const auto& e : events) {
    EXPECT_TRUE(e.graph_def.empty());
    for (const auto& v : e.values) EXPECT_NE(v.kind, summary::SummaryValue::Kind::histogram);
  }
}

TEST(TensorBoardCallback, BadOptionsAreErrors) {
  expect_error([] { train::TensorBoard("logs", 0, true, "sometimes"); }, {"TensorBoard", "update_freq", "sometimes"});
  expect_error([] { train::TensorBoard("logs", 0, true, 0); }, {"TensorBoard", "update_freq"});
  expect_error([] { train::TensorBoard("logs", -1); }, {"TensorBoard", "histogram_freq"});
  expect_error([] { train::TensorBoard(""); }, {"TensorBoard", "log_dir"});
  // Called outside fit: nothing happens (no writer, no crash).
  train::TensorBoard tb("unused_dir");
  tb.on_epoch_end(0, {{"loss", 1.0}});
  tb.on_batch_end(0, {{"loss", 1.0}});
  EXPECT_EQ(tb.train_file(), "");
}
