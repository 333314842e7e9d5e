// Defects found by trying the library as a careless or hostile user would (issue 7), each
// pinned: graph equals eager, bad input is an ef::Error, state is safe from many threads.
#include <atomic>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <cmath>
#include <thread>

#include "kernels/cpu/gemm_chain.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

// ---------------------------------------------------------------- graph equals eager
TEST(Hardening, ResultsAreTheCallersOwn) {
  Tensor c = tensor({1.0f, 2.0f});
  auto f = function([&](const Tensor&) { return c; });
  Tensor first = f(zeros({1}));
  first.mutable_data<float>()[0] = 42.0f;
  EXPECT_EQ(f(zeros({1})).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  // A view of a constant handed back by an op is copied too.
  auto g = function([&](const Tensor& x) { return sum_to(c, x); });
  Tensor v = g(zeros({2}));
  v.mutable_data<float>()[1] = -1.0f;
  EXPECT_EQ(g(zeros({2})).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(Hardening, CapturedTensorsAreFrozenAtTraceTime) {
  Tensor c = tensor({1.0f, 2.0f});
  auto f = function([&](const Tensor& x) { return x + c; });
  EXPECT_EQ(f(zeros({2})).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  c.mutable_data<float>()[0] = 100.0f;  // after the trace: the graph keeps what it captured
  EXPECT_EQ(f(zeros({2})).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(Hardening, StaticFloatsAreKeyedByTheirBits) {
  auto f = function([](const Tensor& x, double s) { return x * static_cast<float>(1.0 / s); });
  for (int i = 0; i < 50; ++i) f(ones({1}), NAN);
  EXPECT_EQ(f.tracing_count(), 1);
  Tensor pos = f(ones({1}), 0.0), neg = f(ones({1}), -0.0);
  EXPECT_EQ(f.tracing_count(), 3);
  EXPECT_EQ(pos.item<float>(), INFINITY);
  EXPECT_EQ(neg.item<float>(), -INFINITY);
}

TEST(Hardening, InlinedFunctionsKeepTheirInputSignature) {
  auto inner = function([](const Tensor& x) { return x * 2.0f; },
                        FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic}}}});
  auto bad_shape = function([&](const Tensor& x) { return inner(x); });
  expect_error([&] { bad_shape(zeros({2, 2})); }, {"input signature", "float32[2,2]", "float32[?]"});
  auto bad_dtype = function([&](const Tensor& x) { return inner(cast(x, DType::float64)); });
  expect_error([&] { bad_dtype(zeros({3})); }, {"input signature", "float64"});
  auto good = function([&](const Tensor& x) { return inner(x) + 1.0f; });
  EXPECT_EQ(good(ones({3})).to_vector<float>(), std::vector<float>(3, 3.0f));
}

TEST(Hardening, LeakedSymbolicTensorsAreErrors) {
  Tensor leaked;
  auto f = function([&](const Tensor& x) {
    leaked = x * 2.0f;
    return x;
  });
  f(ones({2}));
  ASSERT_TRUE(leaked.is_symbolic());
  auto g = function([](const Tensor& x) { return x + 1.0f; });
  expect_error([&] { g(leaked); }, {"function", "symbolic", "finished trace"});
  expect_error([&] { f(leaked); }, {"symbolic"});
  expect_error([&] { leaked + 1.0f; }, {"symbolic"});
}

TEST(Hardening, FusedDenseReluKeepsNaN) {
  nn::Dense d(4, "relu");
  Tensor x = tensor({{NAN, 1.0f, 2.0f}, {3.0f, 4.0f, 5.0f}});
  auto eager = d(x).to_vector<float>();
  auto traced = function(d)(x).to_vector<float>();
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(std::isnan(eager[i]), std::isnan(traced[i])) << i;
}

// ---------------------------------------------------------------- crashes and UB
TEST(Hardening, HugeAllocationsAreErrors) {
  zeros({4});  // the allocator has size classes in use
  expect_error([] { zeros({std::int64_t(1) << 46}); }, {"tensor"});
  expect_error([] { zeros({2, -3}); }, {"tensor", "negative dimension -3", "[2,-3]"});
}

TEST(Hardening, IntegerOverflowWrapsLikeTF) {
  Tensor big = tensor(std::vector<std::int64_t>{INT64_MAX, 1}, Shape{1, 2});
  Tensor ones2 = tensor(std::vector<std::int64_t>{1, 1}, Shape{2, 1});
  EXPECT_EQ(matmul(big, ones2).to_vector<std::int64_t>()[0], INT64_MIN);
  EXPECT_EQ(sum(tensor(std::vector<std::int64_t>{INT64_MAX, 1})).item<std::int64_t>(), INT64_MIN);
  Tensor i32 = tensor(std::vector<std::int32_t>{INT32_MAX, INT32_MAX}, Shape{1, 2});
  Tensor two = tensor(std::vector<std::int32_t>{2, 2}, Shape{2, 1});
  EXPECT_EQ(matmul(i32, two).to_vector<std::int32_t>()[0], static_cast<std::int32_t>(static_cast<std::uint32_t>(INT32_MAX) * 4u));
}

TEST(Hardening, OutOfRangeFloatsSaturateEverywhere) {
  EXPECT_EQ(full({1}, 1e20, DType::int32).item<std::int32_t>(), INT32_MAX);
  EXPECT_EQ(full({1}, -1e20, DType::int64).item<std::int64_t>(), INT64_MIN);
  EXPECT_EQ(full({1}, NAN, DType::int32).item<std::int32_t>(), 0);
  Tensor i = tensor(std::vector<std::int32_t>{1});
  EXPECT_EQ((i + 1e20).item<std::int32_t>(), static_cast<std::int32_t>(static_cast<std::uint32_t>(INT32_MAX) + 1u));
  EXPECT_EQ(cast(scalar(1e20f), DType::int32).item<std::int32_t>(), INT32_MAX);
  expect_error([] { arange(0.0, NAN, 1.0, DType::int32); }, {"arange", "finite"});
  expect_error([] { arange(0.0, 1e300, 1.0, DType::int64); }, {"arange", "too many"});
}

TEST(Hardening, MovedFromObjectsAreSafe) {
  auto f = function([](const Tensor& x) { return x; });
  auto g = std::move(f);
  expect_error([&] { f(ones({1})); }, {"moved-from"});
  EXPECT_EQ(g(ones({1})).item<float>(), 1.0f);
  Shape big{1, 2, 3, 4, 5, 6, 7};
  Shape taken = std::move(big);
  EXPECT_EQ(taken.rank(), 7);
  EXPECT_EQ(big.rank(), 0);  // NOLINT: a moved-from shape is the scalar shape
  EXPECT_EQ(big.str(), "[]");
}

TEST(Hardening, TracingADestroyedLayerIsAnError) {
  auto layer = std::make_unique<nn::Dense>(3);
  auto f = function(*layer);
  f(ones({2, 4}));
  layer.reset();
  EXPECT_EQ(f(ones({2, 4})).shape(), (Shape{2, 3}));  // the cached graph still runs
  expect_error([&] { f(ones({5, 4})); }, {"destroyed", "keep it alive"});
}

TEST(Hardening, VariableWritesAreChecked) {
  Variable v(zeros({2}), "v");
  expect_error([&] { v.state_ptr()->write(zeros({1000})); }, {"variable", "does not fit", "float32[1000]"});
  expect_error([&] { v.state_ptr()->write(zeros({2}, DType::float64)); }, {"variable", "float64"});
  EXPECT_EQ(Tensor(v).shape(), (Shape{2}));
}

TEST(Hardening, ThreadCountIsBounded) {
  int before = num_threads();
  expect_error([] { set_num_threads(INT_MAX); }, {"set_num_threads", "at most"});
  expect_error([] { set_num_threads(0); }, {"set_num_threads"});
  EXPECT_EQ(num_threads(), before);
}

// ---------------------------------------------------------------- concurrency
TEST(Hardening, ConcurrentAssignAddLosesNoUpdate) {
  Variable v(zeros({}), "counter");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 250; ++i) v.assign_add(ones({}));
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(Tensor(v).item<float>(), 1000.0f);
}

TEST(Hardening, ConcurrentFirstCallsBuildALayerOnce) {
  for (int round = 0; round < 5; ++round) {
    nn::Dense d(3);
    auto f1 = function(d), f2 = function(d);
    std::thread a([&] { f1(ones({2, 4})); }), b([&] { f2(ones({2, 4})); });
    a.join();
    b.join();
    EXPECT_EQ(d.weights().size(), 2u);
  }
}

namespace {
class FailingOnceLayer : public nn::Layer {
 public:
  int attempts = 0;
  void build(const Shape& s) override {
    w_ = add_weight("w", Shape{s[1], 2}, nn::zeros_initializer());
    if (++attempts == 1) fail(name(), "first build fails");
  }
  Tensor call(const Tensor& x) override { return matmul(x, w_); }
  Variable w_;
};
}  // namespace

TEST(Hardening, AFailedBuildLeavesNoWeights) {
  FailingOnceLayer layer;
  expect_error([&] { layer(ones({1, 3})); }, {"first build fails"});
  EXPECT_EQ(layer.weights().size(), 0u);
  layer(ones({1, 3}));
  EXPECT_EQ(layer.weights().size(), 1u);
}

TEST(Hardening, SinksMayCallBackIntoTheLibrary) {
  auto f = function([](const Tensor& x) { return x * 2.0f; });
  int seen = -1;
  set_log_sink([&](std::string_view) { seen = f.tracing_count(); });
  set_log_level(LogLevel::info);
  f(ones({2}));
  set_log_level(LogLevel::warning);
  set_log_sink(nullptr);
  EXPECT_EQ(seen, 1);
  std::string printed;
  set_print_sink([&](std::string_view s) {
    printed += s;
    if (printed.size() < 40) print("nested");  // a sink that prints
  });
  print("outer", scalar(1.0f));
  set_print_sink(nullptr);
  EXPECT_NE(printed.find("nested"), std::string::npos);
}

TEST(Hardening, AskingForATraceInsideItsOwnTraceIsAnError) {
  std::function<void()> inside;
  auto f = function([&](const Tensor& x) {
    if (inside) inside();
    return x;
  });
  inside = [&] { f.get_concrete_function(TensorSpec{DType::float32, {7}}); };
  expect_error([&] { f(ones({2})); }, {"own trace"});
  EXPECT_EQ(f.tracing_count(), 0);
}

// ---------------------------------------------------------------- growth
TEST(Hardening, PrimitiveCacheIsBounded) {
  for (std::int64_t n = 1; n <= 100; ++n) matmul(ones({n, 3}), ones({3, 2}));
  EXPECT_LE(allocator::cached_primitives(), 64u);
  allocator::release_cached();
  EXPECT_EQ(allocator::cached_primitives(), 0u);
  matmul(ones({1, 3}), ones({3, 2}));  // a few rows: the gemv kernel, no oneDNN primitive
  EXPECT_EQ(allocator::cached_primitives(), 0u);
  matmul(ones({16, 3}), ones({3, 2}));  // more rows: the blocked GEMM on AVX2, else oneDNN
  EXPECT_EQ(allocator::cached_primitives(), cpu::gemm_chain_applicable() ? 0u : 1u);
}

TEST(Hardening, TraceCacheIsBoundedWithALogLine) {
  std::vector<std::string> lines;
  set_log_sink([&](std::string_view s) { lines.emplace_back(s); });
  auto f = function([](const Tensor& x) { return x + 1.0f; }, FunctionOptions{.name = "bounded", .max_traces = 3});
  for (std::int64_t n = 1; n <= 5; ++n) f(ones({n}));
  set_log_sink(nullptr);
  EXPECT_EQ(f.tracing_count(), 5);
  bool evicted = false;
  for (const auto& l : lines) evicted |= l.find("evicted the oldest") != std::string::npos && l.find("bounded") != std::string::npos;
  EXPECT_TRUE(evicted);
  f(ones({1}));  // evicted: traces again, with a reason
  EXPECT_EQ(f.tracing_count(), 6);
  EXPECT_EQ(f(ones({5})).shape(), (Shape{5}));
  EXPECT_EQ(f.tracing_count(), 6);
}

// ---------------------------------------------------------------- messages and printing
namespace {
class Picker : public nn::Layer {
 public:
  Tensor indices = tensor(std::vector<std::int64_t>{0});
  Tensor call(const Tensor& x) override { return gather(x, indices, 0); }
};
}  // namespace

TEST(Hardening, ReplayErrorsNameTheLayerTheOpWasTracedIn) {
  Picker picker;
  auto f = function([&](const Tensor& x) { return picker(x); }, FunctionOptions{.name = "picking"});
  f(ones({3, 2}));
  expect_error([&] { f(ones({0, 2})); }, {"[gather]", "out of range", "function 'picking'", "layer picker"});
}

TEST(Hardening, ReplayErrorsNameTheFunctionAndLayer) {
  nn::Dense d(2, "linear", true, "scorer");
  auto f = function([&](const Tensor& x, const Tensor& idx) { return gather(d(x), idx, 0); },
                    FunctionOptions{.name = "scoring"});
  Tensor x = ones({3, 4});
  f(x, tensor(std::vector<std::int64_t>{0}));
  expect_error([&] { f(x, tensor(std::vector<std::int64_t>{7})); }, {"[gather]", "out of range", "function 'scoring'"});
}

TEST(Hardening, DotOutputIsEscaped) {
  auto f = function([](const Tensor& x) {
    print("say \"hi\"", x);
    return x;
  }, FunctionOptions{.name = "quote\"name"});
  std::string dot = f.get_concrete_function(TensorSpec{DType::float32, {2}})->to_dot();
  EXPECT_NE(dot.find("digraph \"quote\\\"name\""), std::string::npos) << dot;
  EXPECT_EQ(dot.find("\"say \"hi\"\""), std::string::npos) << dot;
  // Graphviz itself parses it, where installed (scripts/install_deps.sh installs it).
  if (std::system("command -v dot > /dev/null 2>&1") == 0) {
    std::string path = ::testing::TempDir() + "/ef_escaped.dot";
    {
      std::ofstream out(path);
      out << dot;
    }
    EXPECT_EQ(std::system(("dot -Tsvg -o /dev/null " + path).c_str()), 0) << dot;
  }
  // Every quote inside a label is escaped: the quotes that remain pair up per line.
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    int unescaped = 0;
    for (std::size_t i = 0; i < line.size(); ++i) unescaped += line[i] == '"' && (i == 0 || line[i - 1] != '\\');
    EXPECT_EQ(unescaped % 2, 0) << line;
  }
}

TEST(Hardening, MessagesSayWhatHappened) {
  auto f = function([](const Tensor& x) { return x; },
                    FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, {2}}}});
  expect_error([&] { f(ones({3})); }, {"vs the signature's float32[2]"});
  auto g = function([](const Tensor& x) { return x; });
  Tensor leaked;
  auto h = function([&](const Tensor& x) {
    leaked = x;
    return x;
  });
  h(ones({2}));
  expect_error([&] { g.get_concrete_function(TensorSpec{DType::float32, {2}})->call_flat(std::vector<Tensor>{leaked}); },
               {"symbolic"});
}

TEST(Hardening, PrintingUsesScientificNotationLikeNumPy) {
  EXPECT_EQ(scalar(1e300).str(), "Tensor(1.e+300, shape=(), dtype=float64)");
  EXPECT_EQ(tensor({1e-9f}).str(), "Tensor([1.e-09], shape=(1,), dtype=float32)");
  EXPECT_EQ(tensor({0.5f, 2.0f}).str(), "Tensor([0.5 2. ], shape=(2,), dtype=float32)");
  auto f = function([](const Tensor& x) { return x * 0.1000001f; });
  std::string text = ir::to_text(f.get_concrete_function(TensorSpec{DType::float32, {2}})->traced_graph());
  EXPECT_NE(text.find("0.1000001:f32[]"), std::string::npos) << text;
}

// ---------------------------------------------------------------- API gaps
TEST(Hardening, VariablesAsFunctionArguments) {
  Variable a(tensor({1.0f, 2.0f}), "a"), b(tensor({10.0f, 20.0f}), "b");
  auto f = function([](const Variable& v, const Tensor& x) {
    v.assign_add(x);
    return Tensor(v) * 2.0f;
  });
  EXPECT_EQ(f(a, ones({2})).to_vector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(Tensor(a).to_vector<float>(), (std::vector<float>{2, 3}));  // captured by reference
  EXPECT_EQ(f(b, ones({2})).to_vector<float>(), (std::vector<float>{22, 42}));
  EXPECT_EQ(f.tracing_count(), 2);
  EXPECT_NE(f.traces()[1].reason.find("variable 'b'"), std::string::npos) << f.traces()[1].reason;
  f(a, ones({2}));
  EXPECT_EQ(f.tracing_count(), 2);
}

TEST(Hardening, FunctionsAreCallableThroughConstReference) {
  const auto f = function([](const Tensor& x) { return x + 1.0f; });
  auto call = [f](const Tensor& x) { return f(x); };  // captured by value: a const member
  EXPECT_EQ(call(zeros({1})).item<float>(), 1.0f);
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(Hardening, InputSignatureForContainerArguments) {
  InputSignature sig{ArgSpec(std::vector<TensorSpec>{{DType::float32, {kDynamic}}, {DType::float32, {kDynamic}}}),
                     ArgSpec(std::map<std::string, TensorSpec>{{"scale", {DType::float32, {}}}})};
  auto f = function(
      [](const std::vector<Tensor>& xs, const std::map<std::string, Tensor>& m) { return (xs[0] + xs[1]) * m.at("scale"); },
      FunctionOptions{.input_signature = sig});
  std::map<std::string, Tensor> m{{"scale", scalar(2.0f)}};
  EXPECT_EQ(f(std::vector<Tensor>{ones({3}), ones({3})}, m).to_vector<float>(), std::vector<float>(3, 4.0f));
  EXPECT_EQ(f(std::vector<Tensor>{ones({5}), zeros({5})}, m).to_vector<float>(), std::vector<float>(5, 2.0f));
  EXPECT_EQ(f.tracing_count(), 1);
  expect_error([&] { f(std::vector<Tensor>{ones({3})}, m); }, {"input signature"});
  expect_error([&] { f(std::vector<Tensor>{ones({3}), ones({3}, DType::float64)}, m); }, {"input signature", "float64"});
}
