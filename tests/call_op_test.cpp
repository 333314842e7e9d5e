// The call op: traced functions under tapes and loaded saved models run as one node whose
// gradient is derived from its graph, from forward values the call kept.
#include <algorithm>
#include <filesystem>
#include <thread>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<train::Sequential> mlp() {
  auto m = std::make_shared<train::Sequential>();
  m->add<nn::Dense>(16, "tanh");
  m->add<nn::Dense>(3);
  return m;
}

// Weights by their path below the model ("dense/kernel"), as a saved model keys them.
std::map<std::string, std::vector<float>> by_key(const std::vector<Variable>& vars, const std::string& prefix) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& v : vars) {
    std::string key = v.name().rfind(prefix, 0) == 0 ? v.name().substr(prefix.size()) : v.name();
    out[key] = v.value().to_vector<float>();
  }
  return out;
}

}  // namespace

TEST(CallOp, FunctionUnderATapeKeepsItsRandomDraw) {
  // y = sum(r * x) with r drawn inside the function: dy/dx is r, the draw that made y. A
  // gradient that ran the function again would see another draw.
  auto f = function([](const Tensor& x) { return sum(random::uniform({64}) * x); });
  Tensor x = ones({64});
  f(x);  // traced outside the tape first
  GradientTape tape;
  tape.watch(x);
  Tensor y = f(x);
  Tensor g = tape.gradient(y, x);
  EXPECT_NEAR(y.item<float>(), sum(g).item<float>(), 1e-4);
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(CallOp, GradientOfGradientThroughAFunction) {
  auto cube = function([](const Tensor& x) { return sum(x * x * x); });
  Tensor x = tensor<double>({0.5, -1.0, 2.0});
  Tensor h = grad([&](const Tensor& z) { return sum(grad(cube)(z)); })(x);  // d/dx sum(3x^2) = 6x
  expect_close(cast(h, DType::float32).to_vector<float>(), {3.0f, -6.0f, 12.0f});
  EXPECT_EQ(cube.tracing_count(), 1);
}

TEST(CallOp, LoadedModelIsDifferentiable) {
  auto model = mlp();
  Tensor x = random::stateless_normal({4, 5}, 1);
  (*model)(x);
  fs::path dir = ef::testing::fresh_temp_dir("call_grad");
  save(*model, dir.string());
  SavedModel loaded = load(dir.string());

  auto loss_of = [](const Tensor& y) { return sum(y * y); };
  GradientTape want_tape;
  want_tape.watch(x);
  Tensor want_loss = loss_of((*model)(x, false));
  auto want = want_tape.gradient(want_loss, std::vector<GradientSource>{x, model->weights()[0], model->weights()[1],
                                                                        model->weights()[2], model->weights()[3]});
  // The loaded model's variables in the same order, by key.
  std::vector<GradientSource> sources{x};
  for (const char* key : {"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"})
    sources.emplace_back(loaded.variables().at(key));
  GradientTape tape;  // watches the trainable variables it sees read
  tape.watch(x);
  Tensor loss = loss_of(loaded("serving_default", {x})[0]);
  auto got = tape.gradient(loss, sources);
  EXPECT_NEAR(loss.item<float>(), want_loss.item<float>(), 1e-5);
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].defined()) << i;
    EXPECT_GT(max(abs(got[i])).item<float>(), 0.0f) << "gradient " << i << " is all zeros";
    expect_close(got[i].to_vector<float>(), want[i].to_vector<float>(), 1e-5f);
  }
  EXPECT_EQ(tape.watched_variables().size(), 4u);
}

TEST(CallOp, LoadedModelInsideAFunctionTracesOneCallNode) {
  auto model = mlp();
  Tensor x = random::stateless_normal({4, 5}, 2);
  (*model)(x);
  fs::path dir = ef::testing::fresh_temp_dir("call_in_fn");
  save(*model, dir.string());
  SavedModel loaded = load(dir.string());
  auto step = function([&](const Tensor& in) {
    GradientTape tape;
    tape.watch(in);
    Tensor y = loaded("serving_default", {in})[0];
    Tensor l = sum(y * y);
    return std::vector<Tensor>{l, tape.gradient(l, in)};
  });
  auto got = step(x);
  auto got2 = step(random::stateless_normal({7, 5}, 3));  // another batch size traces again
  (void)got2;
  GradientTape tape;
  tape.watch(x);
  Tensor l = sum(square(loaded("serving_default", {x})[0]));
  Tensor want = tape.gradient(l, x);
  EXPECT_NEAR(got[0].item<float>(), l.item<float>(), 1e-5);
  expect_close(got[1].to_vector<float>(), want.to_vector<float>(), 1e-5f);
  std::string text = step.concrete_functions()[0]->traced_graph().name;
  std::size_t calls = 0;
  for (const auto& n : step.concrete_functions()[0]->traced_graph().nodes) calls += std::string(n.op->name()) == "call";
  EXPECT_EQ(calls, 2u) << "one call for the forward pass, one for its gradient";
  // A call that does not fit the signature is an error at trace time.
  expect_error([&] { step(random::uniform({2, 6})); }, {"serving_default", "float32[2,6]", "float32[?,5]"});
}

TEST(CallOp, LoadedModelFineTunesLikeTheOriginal) {
  auto original = mlp();
  Tensor x = random::stateless_normal({32, 5}, 4);
  Tensor y = cast(random::stateless_uniform({32}, 5, 0.0, 3.0), DType::int64);
  (*original)(x);
  fs::path dir = ef::testing::fresh_temp_dir("call_fit");
  save(*original, dir.string());

  auto loaded_layer = std::make_shared<nn::SavedModelLayer>(dir.string());
  train::Sequential tuned({loaded_layer});
  ASSERT_EQ(tuned.trainable_weights().size(), 4u);
  train::FitOptions options;
  options.batch_size = 8;
  options.epochs = 3;
  options.shuffle = false;
  options.verbose = 0;
  original->compile(std::make_shared<optim::Adam>(0.01), train::SparseCategoricalCrossentropy(true));
  tuned.compile(std::make_shared<optim::Adam>(0.01), train::SparseCategoricalCrossentropy(true));
  auto h1 = original->fit(x, y, options);
  auto h2 = tuned.fit(x, y, options);
  EXPECT_EQ(tuned.tracing_count(), 1);
  for (std::size_t e = 0; e < h1.history["loss"].size(); ++e)
    EXPECT_NEAR(h1.history["loss"][e], h2.history["loss"][e], 1e-5) << "epoch " << e;
  auto want = by_key(original->weights(), original->name() + "/");
  auto got = by_key(loaded_layer->weights(), original->name() + "/");
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [key, w] : want) {
    ASSERT_TRUE(got.count(key)) << key;
    expect_close(got[key], w, 1e-5f);
  }
  // The fine-tuned model saves again (its call is saved as the ops it calls) and reloads.
  fs::path again = ef::testing::fresh_temp_dir("call_fit_again");
  save(tuned, again.string());
  SavedModel reloaded = load(again.string());
  expect_close(reloaded("serving_default", {x})[0].to_vector<float>(), tuned(x, false).to_vector<float>(), 1e-6f);
  expect_close(reloaded("serving_default", {x})[0].to_vector<float>(), (*original)(x, false).to_vector<float>(), 1e-4f);
  // Frozen, it does not move.
  auto frozen = std::make_shared<nn::SavedModelLayer>(dir.string(), "serving_default", /*trainable=*/false);
  EXPECT_EQ(frozen->trainable_weights().size(), 0u);
  expect_error([&] { nn::SavedModelLayer(dir.string(), "nope"); }, {"nope", "serving_default"});
}

TEST(CallOp, CondGradientUsesTheDrawOfTheBranch) {
  // y = sum(r * x) with r drawn in the taken branch: dy/dx must be that r (a gradient that
  // ran the branch again would draw another r).
  auto f = function([](const Tensor& x, const Tensor& p) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = cond(
        p, [&] { return sum(random::uniform({256}) * x); }, [&] { return sum(x * 2.0f); });
    return std::vector<Tensor>{y, tape.gradient(y, x)};
  });
  Tensor x = ones({256});
  for (int i = 0; i < 3; ++i) {
    auto taken = f(x, scalar<bool>(true));
    EXPECT_NEAR(taken[0].item<float>(), sum(taken[1]).item<float>(), 1e-3);
    EXPECT_GT(max(taken[1]).item<float>() - min(taken[1]).item<float>(), 0.5f) << "a draw, not a constant";
    auto other = f(x, scalar<bool>(false));
    expect_close(other[1].to_vector<float>(), std::vector<float>(256, 2.0f));
  }
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(CallOp, CallsAreInlinedWhenOptimized) {
  auto model = mlp();
  Tensor x = random::stateless_normal({4, 5}, 6);
  (*model)(x);
  fs::path dir = ef::testing::fresh_temp_dir("call_inline");
  save(*model, dir.string());
  SavedModel loaded = load(dir.string());
  auto f = function([&](const Tensor& in) { return loaded("serving_default", {in})[0]; });
  Tensor y = f(x);
  expect_close(y.to_vector<float>(), (*model)(x, false).to_vector<float>(), 1e-6f);
  auto cf = f.concrete_functions().at(0);
  auto count = [](const ir::Graph& g, const std::string& op) {
    std::size_t n = 0;
    for (const auto& node : g.nodes) n += op == node.op->name();
    return n;
  };
  EXPECT_EQ(count(cf->traced_graph(), "call"), 1u);
  EXPECT_EQ(count(cf->graph(), "call"), 0u);
  EXPECT_GE(count(cf->graph(), "fused_dense"), 1u) << cf->str();  // the loaded layers fuse like the original's
  // Switched off, the call stays.
  FunctionOptions keep;
  keep.passes.inline_calls = false;
  auto g = function([&](const Tensor& in) { return loaded("serving_default", {in})[0]; }, keep);
  expect_close(g(x).to_vector<float>(), y.to_vector<float>(), 0.0f);
  EXPECT_EQ(count(g.concrete_functions().at(0)->graph(), "call"), 1u);
}

TEST(CallOp, EffectsRunOncePerCallUnderATape) {
  // A function that prints and counts its calls, called under a tape: the gradient comes from
  // kept values, so neither the print nor the assignment runs again for it.
  Variable calls(scalar<float>(0.0f), "calls", /*trainable=*/false);
  auto f = function([&](const Tensor& x) {
    print("step", x);
    calls.assign_add(scalar<float>(1.0f));
    return sum(x * x);
  });
  Tensor x = tensor({1.0f, 2.0f});
  ef::testing::CaptureStdout out;
  f(x);
  GradientTape tape;
  tape.watch(x);
  Tensor y = f(x);
  Tensor g = tape.gradient(y, x);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{2.0f, 4.0f}));
  EXPECT_EQ(calls.value().item<float>(), 2.0f);
  std::string text = out.text();
  std::size_t prints = 0;
  for (std::size_t at = text.find("step"); at != std::string::npos; at = text.find("step", at + 1)) ++prints;
  EXPECT_EQ(prints, 2u) << text;
}

TEST(CallOp, PassThroughAndIntegerOutputs) {
  // Outputs: x itself, an integer argmax, and x * w. Each output's gradient reaches its inputs.
  auto f = function([](const Tensor& x, const Tensor& w) {
    return std::vector<Tensor>{x, argmax(x, 0), x * w};
  });
  Tensor x = tensor({1.0f, 3.0f, 2.0f}), w = tensor({2.0f, 2.0f, 2.0f});
  f(x, w);
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  tape.watch(w);
  auto out = f(x, w);
  EXPECT_EQ(out[1].item<std::int64_t>(), 1);
  EXPECT_EQ(tape.gradient(sum(out[0]), x).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(tape.gradient(sum(out[2]), w).to_vector<float>(), (std::vector<float>{1, 3, 2}));
  auto both = tape.gradient(sum(out[0]) + sum(out[2]), std::vector<Tensor>{x, w});
  EXPECT_EQ(both[0].to_vector<float>(), (std::vector<float>{3, 3, 3}));
}

TEST(CallOp, ThreadsDifferentiateOneLoadedModelAtOnce) {
  auto model = mlp();
  Tensor x = random::stateless_normal({4, 5}, 7);
  (*model)(x);
  fs::path dir = ef::testing::fresh_temp_dir("call_threads");
  save(*model, dir.string());
  SavedModel loaded = load(dir.string());  // its first gradient is made by whichever thread comes first
  std::vector<std::vector<float>> grads(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < grads.size(); ++t)
    threads.emplace_back([&, t] {
      GradientTape tape;
      Tensor l = sum(square(loaded("serving_default", {x})[0]));
      grads[t] = tape.gradient(l, loaded.variables().at("dense/kernel")).to_vector<float>();
    });
  for (auto& th : threads) th.join();
  for (std::size_t t = 1; t < grads.size(); ++t) EXPECT_EQ(grads[t], grads[0]);
  EXPECT_GT(*std::max_element(grads[0].begin(), grads[0].end()), 0.0f);
}
