// ef::function: trace counts, reasons, host side effects, replay == eager, options, errors.
#include <thread>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

// The seed scenario's layer: host code counts its runs.
class EagerLayer : public nn::Layer {
 public:
  int host_runs = 0;
  Tensor call(const Tensor& x) override {
    ++host_runs;
    return dense_(x);
  }
  nn::Dense dense_{32};
};

struct LogCapture {
  std::vector<std::string> lines;
  LogLevel before = log_level();
  explicit LogCapture(LogLevel level) {
    set_log_level(level);
    set_log_sink([this](std::string_view l) { lines.emplace_back(l); });
  }
  ~LogCapture() {
    set_log_sink(nullptr);
    set_log_level(before);
  }
  bool contains(const std::string& s) const {
    for (const auto& l : lines)
      if (l.find(s) != std::string::npos) return true;
    return false;
  }
  int count(const std::string& s) const {
    int n = 0;
    for (const auto& l : lines) n += l.find(s) != std::string::npos;
    return n;
  }
};

}  // namespace

TEST(Function, SeedScenarioTracesOncePerSignature) {
  random::set_seed(0);
  Tensor x = random::uniform({60, 28, 28});
  EagerLayer layer;
  auto f = function(layer);
  Tensor y1 = f(x);
  EXPECT_EQ(layer.host_runs, 1) << "the first call must trace once, also when it creates variables";
  EXPECT_EQ(f.tracing_count(), 1);
  ASSERT_EQ(layer.weights().size(), 2u);
  EXPECT_EQ(layer.weights()[0].name(), layer.name() + "/" + layer.dense_.name() + "/kernel");
  EXPECT_EQ(layer.weights()[0].shape(), Shape({28, 32}));
  EXPECT_EQ(layer.weights()[1].shape(), Shape({32}));
  EXPECT_EQ(y1.shape(), Shape({60, 28, 32}));

  Tensor y2 = f(x);
  EXPECT_EQ(layer.host_runs, 1) << "replay must not run host code";
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_EQ(y2.to_vector<float>(), y1.to_vector<float>());

  f(random::uniform({16, 28, 28}));
  EXPECT_EQ(layer.host_runs, 2);
  ASSERT_EQ(f.tracing_count(), 2);
  auto traces = f.traces();
  EXPECT_EQ(traces[0].reason, "first call");
  EXPECT_EQ(traces[0].signature, "(inputs: float32[60,28,28])");
  EXPECT_EQ(traces[0].created_variables.size(), 2u);
  EXPECT_EQ(traces[1].reason, "arg 0 (inputs): float32[16,28,28] vs cached float32[60,28,28]");
  EXPECT_TRUE(traces[1].created_variables.empty());
  EXPECT_GT(traces[0].milliseconds, 0.0);
}

TEST(Function, ReplayEqualsEagerBitForBit) {
  random::set_seed(1);
  nn::Dense dense(16, "relu");
  auto body = [&](const Tensor& x) { return softmax(dense(x) * 2.0f - mean(x, {-1}, true), -1); };
  auto f = function(body);
  Tensor x = random::normal({8, 12});
  Tensor traced = f(x);
  Tensor replayed = f(x);
  Tensor eager = body(x);
  EXPECT_EQ(traced.to_vector<float>(), eager.to_vector<float>());
  EXPECT_EQ(replayed.to_vector<float>(), eager.to_vector<float>());
}

TEST(Function, StaticArgumentsArePartOfTheKey) {
  int runs = 0;
  auto f = function(
      [&](const Tensor& x, bool training, int scale) {
        ++runs;
        return training ? x * static_cast<float>(scale) : x;
      },
      {.arg_names = {"x", "training", "scale"}});
  Tensor x = ones({2});
  EXPECT_EQ(f(x, false, 3).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(f(x, true, 3).to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(f(x, true, 3).to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(f(x, true, 4).to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(runs, 3);
  auto t = f.traces();
  EXPECT_EQ(t[1].reason, "static arg training: true vs false");
  EXPECT_EQ(t[2].reason, "static arg scale: 4 vs 3");
  EXPECT_EQ(t[2].signature, "(x: float32[2], training: true, scale: 4)");
}

TEST(Function, DtypeChangeIsAReason) {
  auto f = function([](const Tensor& x) { return x + x; });
  f(ones({3}));
  f(ones({3}, DType::float64));
  EXPECT_EQ(f.traces()[1].reason, "arg 0: float64[3] vs cached float32[3]");
}

TEST(Function, ContainersInAndOut) {
  int runs = 0;
  auto f = function([&](const std::vector<Tensor>& xs, const std::map<std::string, Tensor>& m) {
    ++runs;
    return std::make_tuple(xs[0] + xs[1], std::vector<Tensor>{m.at("a") * 2.0f, m.at("b")},
                           std::map<std::string, Tensor>{{"sum", add(xs[0], m.at("a"))}});
  });
  std::vector<Tensor> xs{ones({2}), full({2}, 2)};
  std::map<std::string, Tensor> m{{"a", full({2}, 3)}, {"b", zeros({1})}};
  for (int i = 0; i < 2; ++i) {
    auto [s, list, dict] = f(xs, m);
    EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3, 3}));
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].to_vector<float>(), (std::vector<float>{6, 6}));
    EXPECT_EQ(list[1].shape(), Shape({1}));
    EXPECT_EQ(dict.at("sum").to_vector<float>(), (std::vector<float>{4, 4}));
  }
  EXPECT_EQ(runs, 1);
  f(std::vector<Tensor>{ones({2}), ones({2}), ones({2})}, m);
  EXPECT_EQ(f.traces()[1].reason, "arg 0: [float32[2], float32[2], float32[2]] vs cached [float32[2], float32[2]]");
  m["b"] = zeros({5});
  f(xs, m);
  EXPECT_EQ(f.traces()[2].reason, "arg 1[\"b\"]: float32[5] vs cached float32[1]");
}

TEST(Function, InputSignatureWithDynamicDims) {
  int runs = 0;
  auto f = function(
      [&](const Tensor& x) {
        ++runs;
        return sum(reshape(x, {-1, 2}), {1}) + 1.0f;
      },
      {.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 4}, "x"}}});
  EXPECT_EQ(f(reshape(arange(8, DType::float32), {2, 4})).to_vector<float>(), (std::vector<float>{2, 6, 10, 14}));
  EXPECT_EQ(f(reshape(arange(4, DType::float32), {1, 4})).to_vector<float>(), (std::vector<float>{2, 6}));
  EXPECT_EQ(f(zeros({0, 4})).shape(), Shape({0}));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(f.traces()[0].signature, "(x: float32[?,4])");
  expect_error([&] { f(zeros({2, 5})); }, {"[function", "input signature", "float32[?,4]", "float32[2,5]"});
  expect_error([&] { f(zeros({2, 4}, DType::int32)); }, {"input signature", "int32[2,4]"});
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(Function, ReduceRetracingRelaxesToDynamicDims) {
  int runs = 0;
  auto f = function(
      [&](const Tensor& x) {
        ++runs;
        return mean(x, {1, 2});
      },
      {.reduce_retracing = true, .arg_names = {"x"}});
  f(ones({60, 28, 28}));
  f(ones({16, 28, 28}));
  Tensor r = f(full({5, 28, 28}, 2));
  EXPECT_EQ(r.to_vector<float>(), std::vector<float>(5, 2.f));
  f(ones({7, 28, 28}));
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(f.traces()[1].reason, "arg 0 (x): float32[16,28,28] vs cached float32[60,28,28]; relaxed to float32[?,28,28]");
  EXPECT_EQ(f.traces()[1].signature, "(x: float32[?,28,28])");
}

TEST(Function, WarnsWhenItKeepsRetracing) {
  LogCapture log(LogLevel::warning);
  auto f = function([](const Tensor& x) { return x * 2.0f; }, {.name = "scale"});
  for (int i = 1; i <= 30; ++i) f(ones({i}));
  EXPECT_EQ(log.count("WARNING: 'scale' traced"), 2) << "warn at most twice per function";
  EXPECT_TRUE(log.contains("arg 0: float32[5] vs cached float32[4]"));
  EXPECT_TRUE(log.contains("reduce_retracing"));
}

TEST(Function, NoWarningForOccasionalRetraces) {
  LogCapture log(LogLevel::warning);
  auto f = function([](const Tensor& x) { return x * 2.0f; });
  for (int i = 1; i <= 4; ++i)
    for (int k = 0; k < 10; ++k) f(ones({i}));
  EXPECT_EQ(log.count("WARNING"), 0);
}

TEST(Function, LogsTracedCallsVariablesAndReasons) {
  LogCapture log(LogLevel::verbose);
  EagerLayer layer;
  auto f = function(layer);
  f(ones({4, 28, 28}));
  std::string path = layer.name();
  EXPECT_TRUE(log.contains("[ef.trace] " + path + ".call(inputs: float32[4,28,28]) (symbolic, builds the layer)"));
  EXPECT_TRUE(log.contains("created variable " + path + "/" + layer.dense_.name() + "/kernel float32[28,32]"));
  EXPECT_TRUE(log.contains("trace #1 (inputs: float32[4,28,28]): first call"));
}

TEST(Function, GetConcreteFunctionTracesWithoutRunning) {
  int runs = 0;
  std::vector<std::string> printed;
  set_print_sink([&](std::string_view s) { printed.emplace_back(s); });
  auto f = function([&](const Tensor& x) {
    ++runs;
    ef::print("x:", x);
    return x + 1.0f;
  });
  auto cf = f.get_concrete_function(TensorSpec{DType::float32, {kDynamic}});
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(printed.empty()) << "tracing must not run ef::print";
  EXPECT_EQ(cf->str(),
            "{ lambda ; a:f32[?]. let\n"
            "    print[format=\"x: {}\"] a\n"
            "    b:f32[?] = add a 1.0:f32[]\n"
            "  in (b,) }");
  EXPECT_NE(cf->to_dot().find("digraph"), std::string::npos);
  EXPECT_EQ(f(tensor({1.f, 2.f})).to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(runs, 1) << "the concrete function is in the cache";
  ASSERT_EQ(printed.size(), 1u);
  EXPECT_EQ(printed[0], "x: [1. 2.]\n");
  auto out = cf->call_flat(std::vector<Tensor>{tensor({5.f})});
  EXPECT_EQ(out[0].item<float>(), 6.f);
  expect_error([&] { cf->call_flat(std::vector<Tensor>{ones({2, 2})}); }, {"input 0", "float32[2,2]", "float32[?]"});
  set_print_sink(nullptr);
}

TEST(Function, PrintRunsOnEveryExecution) {
  std::vector<std::string> printed;
  set_print_sink([&](std::string_view s) { printed.emplace_back(s); });
  int host = 0;
  auto f = function([&](const Tensor& x) {
    ++host;
    ef::print("value", x);
    return x;
  });
  for (int i = 0; i < 3; ++i) f(full({2}, i));
  ef::print("eager", scalar(7));
  set_print_sink(nullptr);
  EXPECT_EQ(host, 1);
  ASSERT_EQ(printed.size(), 4u);
  EXPECT_EQ(printed[0], "value [0. 0.]\n");
  EXPECT_EQ(printed[2], "value [2. 2.]\n");
  EXPECT_EQ(printed[3], "eager 7\n");
}

TEST(Function, RunFunctionsEagerly) {
  int runs = 0;
  auto f = function([&](const Tensor& x) {
    ++runs;
    return x * 3.0f;
  });
  run_functions_eagerly(true);
  f(ones({2}));
  Tensor r = f(ones({2}));
  run_functions_eagerly(false);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(f.tracing_count(), 0);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3, 3}));
}

TEST(Function, NestedFunctionIsOneCallNodeInlinedByThePasses) {
  int inner_runs = 0;
  auto inner = function([&](const Tensor& x) {
    ++inner_runs;
    return x * 2.0f;
  });
  auto outer = function([&](const Tensor& x) { return inner(x) + 1.0f; });
  EXPECT_EQ(outer(tensor({1.f, 2.f})).to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ(outer(tensor({3.f, 4.f})).to_vector<float>(), (std::vector<float>{7, 9}));
  EXPECT_EQ(outer.tracing_count(), 1);
  // The inner function traced once, into its own cache (as TF's): called eagerly with the
  // same signature it replays, and another outer trace reuses it.
  EXPECT_EQ(inner.tracing_count(), 1);
  EXPECT_EQ(inner(tensor({5.f, 6.f})).to_vector<float>(), (std::vector<float>{10, 12}));
  auto twice = function([&](const Tensor& x) { return inner(x) * inner(x); });
  EXPECT_EQ(twice(tensor({1.f, 1.f})).to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(inner.tracing_count(), 1);
  EXPECT_EQ(inner_runs, 1);
  auto cf = outer.get_concrete_function(TensorSpec{DType::float32, {2}});
  std::size_t calls = 0;
  for (const auto& n : cf->traced_graph().nodes) calls += std::string(n.op->name()) == "call";
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(ir::to_text(cf->graph()),
            "{ lambda ; a:f32[2]. let\n"
            "    b:f32[2] = fused_elementwise[program=(t0=mul(i0,i1); t1=add(t0,i2)) out=(t1)] a 2.0:f32[] 1.0:f32[]\n"
            "  in (b,) }");
}

TEST(Function, NestedFunctionClosingOverOuterValues) {
  // The inner body uses a value of the outer trace that is not an argument: it becomes an
  // input of the call, and that trace is not cached (it belongs to this outer trace).
  auto outer = function([](const Tensor& x) {
    Tensor y = x * 3.0f;
    auto inner = function([&](const Tensor& z) { return z + y; });
    return inner(x);
  });
  EXPECT_EQ(outer(tensor({1.f, 2.f})).to_vector<float>(), (std::vector<float>{4, 8}));
  EXPECT_EQ(outer(tensor({2.f, 2.f})).to_vector<float>(), (std::vector<float>{8, 8}));
  EXPECT_EQ(outer.tracing_count(), 1);
}

TEST(Function, RecursionWithAStaticDepthInlines) {
  std::function<Tensor(const Tensor&, int)> body;
  auto f = function([&](const Tensor& x, int depth) { return body(x, depth); });
  body = [&](const Tensor& x, int depth) { return depth == 0 ? x : f(x * 2.0f, depth - 1); };
  EXPECT_EQ(f(tensor({1.f}), 3).to_vector<float>(), std::vector<float>{8.f});
}

TEST(Function, ReadingASymbolicValueExplainsTracing) {
  auto f = function([](const Tensor& x) { return scalar(x.item<float>()); });
  expect_error([&] { f(scalar(1.f)); }, {"[item]", "symbolic", "only when the graph runs", "ef::print", "ef::cond",
                                         "run_functions_eagerly"});
}

TEST(Function, FailedTraceLeavesTheCacheUnchanged) {
  int runs = 0;
  auto f = function([&](const Tensor& x) {
    ++runs;
    return matmul(x, ones({3, 2}));
  });
  expect_error([&] { f(ones({2, 4})); }, {"[matmul] inner dimensions differ"});
  EXPECT_EQ(f.tracing_count(), 0);
  EXPECT_EQ(f(ones({2, 3})).shape(), Shape({2, 2}));
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_EQ(f.traces()[0].reason, "first call");
  expect_error([&] { f(ones({2, 4})); }, {"[matmul]"});
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_EQ(f(ones({2, 3})).shape(), Shape({2, 2}));
  EXPECT_EQ(runs, 3);
}

TEST(Function, SymbolicTensorsCannotEscape) {
  Tensor leaked;
  auto f = function([&](const Tensor& x) {
    leaked = x * 2.0f;
    return x;
  });
  f(ones({2}));
  EXPECT_TRUE(leaked.is_symbolic());
  expect_error([&] { leaked + 1.0f; }, {"[add]", "symbolic tensor outside of its trace"});
  expect_error([&] { leaked.to_vector<float>(); }, {"symbolic"});
}

TEST(Function, ClosureTensorsBecomeConstants) {
  Tensor w = tensor({1.f, 2.f});
  auto f = function([&](const Tensor& x) { return x * w; });
  EXPECT_EQ(f(ones({2})).to_vector<float>(), (std::vector<float>{1, 2}));
  w = tensor({5.f, 5.f});  // rebinding the host handle does not change the traced constant
  EXPECT_EQ(f(ones({2})).to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(Function, ConcurrentFirstCallsTraceOnce) {
  std::atomic<int> runs{0};
  auto f = function([&](const Tensor& x) {
    runs++;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return x * 2.0f + 1.0f;
  });
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> results(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) results[static_cast<std::size_t>(t)] = f(full({4}, t)).to_vector<float>();
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(f.tracing_count(), 1);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(results[static_cast<std::size_t>(t)], std::vector<float>(4, 2.f * t + 1));
}

namespace {
Tensor free_function(const Tensor& x, const std::string& mode) { return mode == "double" ? x * 2.0f : x; }
}  // namespace

TEST(Function, FreeFunctionsAndStringStatics) {
  auto f = function(free_function);
  EXPECT_EQ(f(ones({1}), "double").item<float>(), 2.f);
  EXPECT_EQ(f(ones({1}), std::string("same")).item<float>(), 1.f);
  EXPECT_EQ(f(ones({1}), "double").item<float>(), 2.f);
  EXPECT_EQ(f.tracing_count(), 2);
  EXPECT_EQ(f.traces()[1].reason, "static arg 1: \"same\" vs \"double\"");
}

TEST(Function, ReplayDoesNotReachTheSystemAllocator) {
  nn::Dense dense(32, "relu");
  auto f = function([&](const Tensor& x) { return softmax(dense(x) * 0.5f + 1.0f, -1); });
  Tensor x = random::uniform({60, 28, 28});
  for (int i = 0; i < 3; ++i) f(x);  // warm the caching allocator
  std::size_t before = allocator::system_allocations();
  for (int i = 0; i < 20; ++i) f(x);
  EXPECT_EQ(allocator::system_allocations(), before) << "tensor buffers on replay come from the cache";
}

TEST(Function, EagerOnlyOpsInATraceRunOnceAsConstants) {
  // Documented: ops on host values only (here exp of a C++-side tensor) run while tracing and
  // their result becomes a constant of the graph. (Random draws are the exception: they are
  // ops with state, see random_op_test.cpp.)
  int evaluations = 0;
  auto f = function([&](const Tensor& x) {
    ++evaluations;
    return x + exp(ones({2}));
  });
  Tensor a = f(zeros({2})), b = f(zeros({2}));
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_EQ(evaluations, 1);
  EXPECT_EQ(f.get_concrete_function(TensorSpec{DType::float32, {2}})->graph().constants.size(), 1u);
}

TEST(Function, ConcurrentCallsWithDifferentSignaturesTraceOnceEach) {
  std::atomic<int> runs{0};
  auto f = function([&](const Tensor& x) {
    runs++;
    return sum(x);
  });
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::int64_t n = 1 + t % 4;  // 4 distinct shapes over 8 threads
      for (int k = 0; k < 30; ++k)
        if (f(ones({n})).item<float>() != static_cast<float>(n)) wrong++;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(runs.load(), 4);
  EXPECT_EQ(f.tracing_count(), 4);
}

TEST(Function, DotExportNamesOpsAndEdges) {
  auto f = function([](const Tensor& x) { return matmul(x, x) + 1.0f; }, {.passes = {.fuse_elementwise = false}});
  std::string dot = f.get_concrete_function(TensorSpec{DType::float32, {2, 2}})->to_dot();
  EXPECT_EQ(dot.rfind("digraph \"function\" {", 0), 0u) << dot;
  EXPECT_NE(dot.find("v0 [shape=box, label=\"a\\nf32[2,2]\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 [shape=ellipse, label=\"matmul\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("v0 -> n0 [label=\"f32[2,2]\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n1"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n1 -> out0"), std::string::npos) << dot;
}

TEST(Function, LargeGraphsAndWideNodesReplayCorrectly) {
  // More values than the executor keeps on the stack, and a node with more than 8 inputs.
  auto body = [](const Tensor& x) {
    std::vector<Tensor> parts;
    Tensor y = x;
    for (int i = 0; i < 100; ++i) {
      y = y * 1.01f + 0.5f;
      if (i % 10 == 0) parts.push_back(y);
    }
    return concat(parts, 0);
  };
  auto plain = function(body, {.passes = {.dead_code = false, .common_subexpr = false, .fuse_dense = false,
                                          .fuse_elementwise = false}});
  auto optimized = function(body);
  Tensor x = tensor({1.f, 2.f});
  Tensor eager = body(x);
  EXPECT_GT(plain.get_concrete_function(x.spec())->graph().values.size(), 64u);
  EXPECT_EQ(plain(x).to_vector<float>(), eager.to_vector<float>());
  EXPECT_EQ(plain(x).to_vector<float>(), eager.to_vector<float>());
  EXPECT_EQ(optimized(x).to_vector<float>(), eager.to_vector<float>());
  EXPECT_EQ(eager.shape(), Shape({20}));
}
