// Saved models: what ef::save writes, ef::load (here and in another process) runs with the
// same results; damaged, unknown or newer files are clear errors; the loader is fuzzed.
#include "ef_test_paths.h"
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
}

void expect_bits_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.spec(), b.spec());
  if (a.nbytes()) { EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0); }
}

std::shared_ptr<train::Sequential> cnn() {
  auto m = std::make_shared<train::Sequential>();
  m->add<nn::Reshape>(Shape{28, 28, 1});
  m->add<nn::Conv2D>(4, Stride2{3, 3}, nn::Conv2DOptions{.activation = "relu"});
  m->add<nn::MaxPool2D>();
  m->add<nn::BatchNormalization>();
  m->add<nn::Flatten>();
  m->add<nn::Dropout>(0.5);
  m->add<nn::Dense>(10, "softmax");
  return m;
}

}  // namespace

TEST(SavedModel, MlpAndCnnGiveTheSameResultsAfterLoading) {
  for (int which = 0; which < 2; ++which) {
    SCOPED_TRACE(which ? "cnn" : "mlp");
    std::shared_ptr<train::Sequential> model;
    if (which) {
      model = cnn();
    } else {
      model = std::make_shared<train::Sequential>();
      model->add<nn::Flatten>();
      model->add<nn::Dense>(32, "gelu");
      model->add<nn::Dense>(10);
    }
    (*model)(random::uniform({5, 28, 28}));  // remembers [?,28,28]
    ASSERT_EQ(model->save_spec()->shape, Shape({kDynamic, 28, 28}));
    fs::path dir = ef::testing::fresh_temp_dir(std::string("saved_") + (which ? "cnn" : "mlp"));
    save(*model, dir.string());
    EXPECT_TRUE(fs::exists(dir / "saved_model.json"));
    EXPECT_TRUE(fs::exists(dir / "variables.safetensors"));
    SavedModel loaded = load(dir.string());
    EXPECT_EQ(loaded.signature_names(), std::vector<std::string>{"serving_default"});
    EXPECT_EQ(loaded.signature("serving_default").inputs[0].shape, Shape({kDynamic, 28, 28}));
    for (std::int64_t batch : {1, 3, 8}) {  // the batch stays dynamic
      Tensor x = random::uniform({batch, 28, 28});
      Tensor want = (*model)(x, false);
      expect_bits_equal(loaded("serving_default", {x})[0], want);
    }
    // The loaded variables are its own: changing the model does not change the loaded one.
    Tensor x = random::uniform({2, 28, 28});
    Tensor before = loaded("serving_default", {x})[0].clone();
    for (auto& w : model->weights()) w.assign(zeros_like(Tensor(w)));
    expect_bits_equal(loaded("serving_default", {x})[0], before);
    expect_error([&] { loaded("serving_default", {random::uniform({2, 27, 28})}); }, {"27"});
    expect_error([&] { loaded("other", {x}); }, {"no signature 'other'", "serving_default"});
    fs::remove_all(dir);
  }
}

TEST(SavedModel, StatefulFunctionsKeepAssignmentsAndPrints) {
  Variable counter(scalar(0.0f), "counter");
  Variable scale(tensor({2.0f, 3.0f}), "scale");
  auto step = function([&](const Tensor& x) {
    counter.assign_add(scalar(1.0f));
    ef::print("step", Tensor(counter));
    return x * Tensor(scale) + random::uniform_like(x, 0.0, 1e-30) * 0.0f + full_like(x, -0.0);
  });
  auto cf = step.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 2}});
  fs::path dir = ef::testing::fresh_temp_dir("saved_stateful");
  save({{"step", cf}, {"again", cf}}, dir.string());
  SavedModel m = load(dir.string());
  std::string printed;
  set_print_sink([&](std::string_view s) { printed += s; });
  auto y = m("step", {tensor({{1.0f, 1.0f}})})[0];
  m("again", {tensor({{1.0f, 1.0f}})});
  set_print_sink(nullptr);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2.0f, 3.0f}));
  EXPECT_EQ(printed, "step 1.0\nstep 2.0\n");  // both signatures share the restored variable
  EXPECT_EQ(m.variables().at("counter").value().item<float>(), 2.0f);
  EXPECT_EQ(counter.value().item<float>(), 0.0f) << "the original is untouched";
  fs::remove_all(dir);
}

TEST(SavedModel, CondAndWhileLoopRoundTrip) {
  // A cond reading a variable in one branch, then a loop (a tensor count, a maximum) whose
  // body holds another cond: saved, loaded, and run down both branches and several counts.
  // A second function, a cond and a loop without one inside: the loaded graph differentiates
  // like the original.
  Variable scale(tensor({1.5f, -0.5f, 2.0f}), "scale");
  auto f = function(
      [&](const Tensor& x, const Tensor& n) {
        Tensor c = cond(sum(x) > 0.0f, [&] { return x * Tensor(scale); }, [&] { return ef::exp(x) - 1.0f; });
        std::vector<Tensor> w = while_loop(
            [&](const std::vector<Tensor>& v) { return v[1] < n; },
            [&](const std::vector<Tensor>& v) {
              Tensor next = cond(sum(v[0]) > 4.0f, [&] { return v[0] * 0.5f; }, [&] { return ef::tanh(v[0]) + 1.0f; });
              return std::vector<Tensor>{next, v[1] + scalar<std::int64_t>(1)};
            },
            {c, scalar<std::int64_t>(0)}, 6);
        return std::vector<Tensor>{w[0], w[1]};
      },
      {.name = "flow"});
  auto h = function([&](const Tensor& x, const Tensor& n) {
    Tensor c = cond(sum(x) > 0.0f, [&] { return x * Tensor(scale); }, [&] { return ef::exp(x) - 1.0f; });
    return while_loop([&](const std::vector<Tensor>& v) { return v[1] < n; },
                      [&](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{ef::tanh(v[0]) * Tensor(scale), v[1] + scalar<std::int64_t>(1)};
                      },
                      {c, scalar<std::int64_t>(0)})[0];
  });
  Tensor up = tensor({1.0f, 2.0f, -0.5f}), down = tensor({-1.0f, -2.0f, 0.5f});
  fs::path dir = ef::testing::fresh_temp_dir("saved_control_flow");
  save({{"flow", f.get_concrete_function(up, scalar<std::int64_t>(3))},
        {"grad", h.get_concrete_function(up, scalar<std::int64_t>(3))}},
       dir.string());
  SavedModel m = load(dir.string());
  const std::string sig = "flow";
  for (const Tensor& x : {up, down})
    for (std::int64_t count : {0, 2, 5, 9}) {  // 9: stopped by maximum_iterations at 6
      SCOPED_TRACE(count);
      Tensor n = scalar<std::int64_t>(count);
      std::vector<Tensor> want = f(x, n), got = m(sig, {x, n});
      ASSERT_EQ(got.size(), 2u);
      EXPECT_EQ(got[1].item<std::int64_t>(), std::min<std::int64_t>(count, 6));
      ef::testing::expect_close(got[0].to_vector<float>(), want[0].to_vector<float>(), 1e-6f);
    }
  std::map<std::string, int> ops;
  for (const auto& node : m.concrete_function(sig)->traced_graph().nodes) ++ops[node.op->name()];
  EXPECT_EQ(ops["cond"], 1);
  EXPECT_EQ(ops["while"], 1);
  // Gradients through the loaded graph: the cond and the loop record their residual variants.
  auto gradient = [&](auto&& run, const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(run(x)[0]);
    return tape.gradient(y, x);
  };
  Tensor n = scalar<std::int64_t>(3);
  for (const Tensor& x : {up, down})
    ef::testing::expect_close(gradient([&](const Tensor& a) { return m("grad", {a, n}); }, x).to_vector<float>(),
                              gradient([&](const Tensor& a) { return std::vector<Tensor>{h(a, n)}; }, x).to_vector<float>(),
                              1e-5f);
  fs::remove_all(dir);
}

TEST(SavedModel, AFunctionSavesEveryTrace) {
  auto f = function([](const Tensor& x, const Tensor& y) { return ef::tanh(x) * y + 1.0f; });
  expect_error([&] { save(f, (fs::temp_directory_path() / "never").string()); }, {"no traces yet"});
  Tensor a = random::normal({3}), b = random::normal({3});
  Tensor c = random::normal({2, 2}), d = random::normal({2, 2});
  f(a, b);
  f(c, d);
  fs::path dir = ef::testing::fresh_temp_dir("saved_function");
  save(f, dir.string());
  SavedModel m = load(dir.string());
  EXPECT_EQ(m.signature_names(), (std::vector<std::string>{"serving_default", "signature_1"}));
  expect_bits_equal(m("serving_default", {a, b})[0], f(a, b));
  expect_bits_equal(m("signature_1", {c, d})[0], f(c, d));
  EXPECT_EQ(m.signature("signature_1").input_names.size(), 2u);
  expect_error([&] { m("serving_default", {c, d}); }, {"float32[2,2]"});
  fs::remove_all(dir);
}

TEST(SavedModel, RefusesUnknownNewerAndDamagedFiles) {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(3, "relu");
  (*model)(random::uniform({2, 4}));
  fs::path dir = ef::testing::fresh_temp_dir("saved_damaged");
  save(*model, dir.string());
  std::string good = read_text(dir / "saved_model.json");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    write_text(dir / "saved_model.json", s);
  };
  with("\"version\":1", "\"version\":2");
  expect_error([&] { load(dir.string()); }, {"version 2", "newer eagerflow"});
  with("\"op\":\"matmul\"", "\"op\":\"matmul_v9\"");
  expect_error([&] { load(dir.string()); }, {"unknown op 'matmul_v9'"});
  with("\"op\":\"relu\",\"attrs\":\"\"", "\"op\":\"relu\",\"attrs\":\"x=1\"");
  expect_error([&] { load(dir.string()); }, {"relu", "does not read back exactly"});
  with("{\"dtype\":\"float32\",\"shape\":[-1,3]}", "{\"dtype\":\"float32\",\"shape\":[-1,5]}");
  expect_error([&] { load(dir.string()); }, {"the file declares", "damaged"});
  with("eagerflow-saved-model", "something-else");
  expect_error([&] { load(dir.string()); }, {"not an eagerflow saved model"});
  write_text(dir / "saved_model.json", good);
  fs::remove(dir / "variables.safetensors");
  expect_error([&] { load(dir.string()); }, {"variables.safetensors"});
  auto unbuilt = std::make_shared<train::Sequential>();
  unbuilt->add<nn::Dense>(3);
  expect_error([&] { save(*unbuilt, dir.string()); }, {"no remembered input spec"});
  expect_error([&] { load((dir / "missing").string()); }, {"cannot open"});
  fs::remove_all(dir);
}

// Saved here, loaded and run by another process that has none of this code.
TEST(SavedModel, AnotherProcessLoadsAndRunsIt) {
  auto model = cnn();
  Tensor x = random::uniform({4, 28, 28});
  Tensor want = (*model)(x, false);
  fs::path dir = ef::testing::fresh_temp_dir("saved_process");
  save(*model, (dir / "model").string());
  io::save_safetensors((dir / "input.safetensors").string(), {{"x", x}});
  std::string cmd = std::string(EF_INTEROP_TOOL) + " run-saved-model " + (dir / "model").string() + " " +
                    (dir / "input.safetensors").string() + " " + (dir / "output.safetensors").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  expect_bits_equal(*io::load_safetensors((dir / "output.safetensors").string()).find("y"), want);
  fs::remove_all(dir);
}

TEST(LoaderFuzz, SavedModels) {
  random::set_seed(7);  // the same seed file on every run
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(3, "tanh");
  model->add<nn::Dense>(2);
  (*model)(random::uniform({2, 4}));
  fs::path dir = ef::testing::fresh_temp_dir("saved_fuzz");
  save(*model, dir.string());
  std::string good = read_text(dir / "saved_model.json");
  const char* s = std::getenv("EF_FUZZ_SEED");
  std::mt19937_64 gen(s ? std::strtoull(s, nullptr, 10) : 20261130);
  const char* it = std::getenv("EF_FUZZ_ITERATIONS");
  int iterations = it ? std::atoi(it) : 10000;
  int loaded = 0, rejected = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations && std::chrono::steady_clock::now() - start < std::chrono::seconds(120); ++i) {
    std::string text = good;
    switch (gen() % 4) {
      case 0: text.resize(gen() % (text.size() + 1)); break;
      case 1:
        for (int k = 0; k < 1 + static_cast<int>(gen() % 4); ++k) text[gen() % text.size()] = static_cast<char>(gen() % 128);
        break;
      case 2: {  // a number changed: ids, dims, versions, variable indices
        for (int tries = 0; tries < 64; ++tries) {
          std::size_t at = gen() % text.size();
          if (text[at] >= '0' && text[at] <= '9') {
            text[at] = static_cast<char>('0' + gen() % 10);
            if (gen() % 3 == 0) text.insert(at, gen() % 2 ? "-" : "9999999");
            break;
          }
        }
        break;
      }
      default: {  // a slice moved
        std::size_t a = gen() % text.size(), n = gen() % (text.size() - a);
        std::string cut = text.substr(a, n);
        text.erase(a, n);
        text.insert(gen() % (text.size() + 1), cut);
      }
    }
    write_text(dir / "saved_model.json", text);
    allocator::reset_largest_request();
    try {
      SavedModel m = load(dir.string());
      // Loading allocated no tensor larger than the files justify (checked below for
      // rejected files too); running may then allocate what the graph computes.
      ASSERT_LE(allocator::largest_request(), fs::file_size(dir / "variables.safetensors") + text.size())
          << "iteration " << i;
      for (const auto& name : m.signature_names()) {
        const auto& sig = m.signature(name);
        std::vector<Tensor> args;
        for (const auto& spec : sig.inputs) {
          std::vector<std::int64_t> dims = spec.shape.dims();
          for (auto& d : dims) d = d < 0 ? 2 : std::min<std::int64_t>(d, 64);
          args.push_back(zeros(Shape(dims), spec.dtype));
        }
        try {
          m(name, args);
        } catch (const Error&) {
        }
      }
      ++loaded;
    } catch (const Error&) {
      ++rejected;
      ASSERT_LE(allocator::largest_request(), fs::file_size(dir / "variables.safetensors") + text.size())
          << "iteration " << i << " (rejected)";
    } catch (const std::exception& e) {
      FAIL() << "iteration " << i << ": not an ef::Error: " << e.what() << "\n" << text;
    }
  }
  EXPECT_GT(rejected, iterations / 4);
  std::printf("fuzz: saved models %d loaded, %d rejected\n", loaded, rejected);
  fs::remove_all(dir);
}

// Every op of the op table (and the ops of its gradients) reads back from its saved form
// exactly, and a saved function of each computes what the original computes.
#include "io/op_codec.h"
#include "op_table.h"

TEST(SavedModel, EveryOpOfTheTableRoundTrips) {
  fs::path dir = ef::testing::fresh_temp_dir("saved_table");
  std::set<std::string> seen;
  for (const auto& op : ef::testing::op_table()) {
    SCOPED_TRACE(op.name);
    // Optimizer updates write variables: a saved function holds no assignments (a train step
    // is saved as its variables, tests/checkpoint_test.cpp), so there is nothing to round-trip.
    if (op.writes_variables) continue;
    std::vector<Tensor> xs = ef::testing::make_inputs(op, DType::float32, 2);
    auto fwd = function([&](const std::vector<Tensor>& ys) { return op.fn(ys); });
    auto cf = fwd.get_concrete_function(xs);
    auto with_grads = function([&](const std::vector<Tensor>& ys) {
      GradientTape tape;
      for (const auto& y : ys) if (is_floating(y.dtype())) tape.watch(y);
      Tensor out = op.fn(ys);
      std::vector<Tensor> result{out};
      std::vector<Tensor> sources;
      for (const auto& y : ys) if (is_floating(y.dtype())) sources.push_back(y);
      if (op.differentiable && is_floating(out.dtype()) && !sources.empty())
        for (const auto& g : tape.gradient(sum(out), sources)) if (g.defined()) result.push_back(g);
      return result;
    });
    for (const auto* g : {&cf->traced_graph(), &with_grads.get_concrete_function(xs)->traced_graph()})
      for (const auto& node : g->nodes) {
        std::string name = node.op->name();
        if (name == "read_variable" || name == "print") continue;
        ASSERT_TRUE(io::can_decode(name)) << name << " has no saved form";
        auto back = io::decode_op(name, node.op->attrs(), "test");
        EXPECT_EQ(back->attrs(), node.op->attrs());
        seen.insert(name);
      }
    if (op.name.rfind("random", 0) == 0) continue;  // fresh draws by design
    save({{"f", cf}}, (dir / op.name).string());
    SavedModel m = load((dir / op.name).string());
    Tensor want = op.fn(xs), got = m("f", xs)[0];
    ASSERT_EQ(got.spec(), want.spec());
    EXPECT_EQ(max(abs(cast(got, DType::float64) - cast(want, DType::float64))).item<double>(), 0.0);
  }
  EXPECT_GT(seen.size(), 40u);
  fs::remove_all(dir);
}
