// Host calls (eagerflow/ops/host_call.h) and the assert op (eagerflow/ops/checks.h): effects that
// run on every call of a traced function, with that call's values.
#include <gtest/gtest.h>

#include <atomic>

#include "eagerflow/eagerflow.h"
#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/host_call.h"
#include "eagerflow/ops/op_observer.h"
#include "test_util.h"

namespace {

using ef::Shape;
using ef::Tensor;
using ef::testing::expect_error;

std::shared_ptr<ef::HostFunction> doubling(std::atomic<int>& calls) {
  auto f = std::make_shared<ef::HostFunction>();
  f->name = "host:double";
  f->outputs = {{ef::DType::float32, Shape{ef::kDynamic}, {}}};
  f->fn = [&calls](const std::vector<Tensor>& xs) {
    ++calls;
    return std::vector<Tensor>{ef::mul(xs[0], ef::scalar(2.0f))};
  };
  f->vjp = [](const std::vector<Tensor>&, const std::vector<Tensor>& cots) {
    return std::vector<Tensor>{ef::mul(cots[0], ef::scalar(2.0f))};
  };
  return f;
}

TEST(HostCall, RunsEagerlyAndOnEveryCallOfATrace) {
  std::atomic<int> calls = 0;
  auto f = doubling(calls);
  EXPECT_EQ(ef::host_call(f, {ef::tensor({1.0f, 2.0f})})[0].to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ(calls, 1);
  auto traced = ef::function([&](const Tensor& x) { return ef::add(ef::host_call(f, {x})[0], ef::scalar(1.0f)); });
  EXPECT_EQ(traced(ef::tensor({1.0f, 2.0f})).to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ(traced(ef::tensor({5.0f, 0.5f})).to_vector<float>(), (std::vector<float>{11, 2}));  // replayed: called again
  EXPECT_EQ(traced.tracing_count(), 1);
  EXPECT_EQ(calls, 3);  // (not at trace time: the trace records the call)
  // A result unused by the graph still runs: it may have effects.
  auto unused = ef::function([&](const Tensor& x) {
    ef::host_call(f, {x});
    return x;
  });
  unused(ef::tensor({1.0f}));
  unused(ef::tensor({1.0f}));
  EXPECT_EQ(calls, 5);
}

TEST(HostCall, ItsGradientIsAHostCallToo) {
  std::atomic<int> calls = 0;
  auto f = doubling(calls);
  Tensor x = ef::tensor({1.0f, 3.0f});
  ef::GradientTape tape;
  tape.watch(x);
  Tensor y = ef::sum(ef::mul(ef::host_call(f, {x})[0], x));  // 2x^2: gradient 4x
  EXPECT_EQ(tape.gradient(y, x).to_vector<float>(), (std::vector<float>{4, 12}));
  auto step = ef::function([&](const Tensor& v) {
    ef::GradientTape t;
    t.watch(v);
    Tensor out = ef::sum(ef::host_call(f, {v})[0]);
    return t.gradient(out, v);
  });
  EXPECT_EQ(step(x).to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(HostCall, ResultsOtherThanDeclaredAreErrors) {
  auto f = std::make_shared<ef::HostFunction>();
  f->name = "host:wrong";
  f->outputs = {{ef::DType::float32, Shape{2}, {}}};
  f->fn = [](const std::vector<Tensor>&) { return std::vector<Tensor>{ef::tensor({1.0f, 2.0f, 3.0f})}; };
  expect_error([&] { ef::host_call(f, {}); }, {"host:wrong", "result 0", "float32[3]", "float32[2]"});
  f->fn = [](const std::vector<Tensor>&) { return std::vector<Tensor>{}; };
  expect_error([&] { ef::host_call(f, {}); }, {"host:wrong", "returned 0 values", "1 were declared"});
  f->fn = [](const std::vector<Tensor>&) -> std::vector<Tensor> { throw ef::Error("broken"); };
  expect_error([&] { ef::host_call(f, {}); }, {"broken"});
  // Not differentiable without a vjp: the tape stops there.
  f->fn = [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{ef::mul(xs[0], xs[0])}; };
  Tensor x = ef::tensor({1.0f, 2.0f});
  ef::GradientTape tape;
  tape.watch(x);
  Tensor y = ef::sum(ef::host_call(f, {x})[0]);
  EXPECT_FALSE(tape.gradient(y, x).defined());
}

TEST(Assert, FailsWithTheMessageAndTheFirstValues) {
  ef::assert_that(ef::tensor(std::vector<bool>{true, true}), {});
  try {
    ef::assert_that(ef::tensor(std::vector<bool>{true, false}), {ef::tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f})}, "x > 0", 3);
    FAIL() << "a false condition passed";
  } catch (const ef::Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code(), ef::ErrorCode::invalid_argument);
    EXPECT_NE(what.find("x > 0"), std::string::npos) << what;
    EXPECT_NE(what.find("[1. 2. 3....]"), std::string::npos) << what;
  }
  expect_error([] { ef::assert_that(ef::tensor({1.0f}), {}); }, {"assert", "bool"});
}

TEST(Assert, ChecksEveryCallOfATrace) {
  auto checked = ef::function([](const Tensor& x) {
    ef::assert_that(ef::greater(x, ef::scalar(0.0f)), {x}, "x must be positive");
    return ef::sqrt(x);
  });
  EXPECT_EQ(checked(ef::tensor({4.0f})).to_vector<float>(), (std::vector<float>{2}));
  expect_error([&] { checked(ef::tensor({-4.0f})); }, {"x must be positive", "-4"});
  EXPECT_EQ(checked.tracing_count(), 1);
}

}  // namespace

namespace {

TEST(ProgramWideChecks, CheckNumericsNamesTheOpEagerAndTraced) {
  Tensor x = ef::tensor({1.0f, 0.0f});
  ef::debug::enable_check_numerics(true);
  struct Off {
    ~Off() { ef::debug::enable_check_numerics(false); }
  } off;
  expect_error([&] { ef::log(x); }, {"Detected Infinity or NaN in output 0 of op 'log'", "float32"});
  auto traced = ef::function([](const Tensor& v) { return ef::sqrt(ef::sub(v, ef::scalar(2.0f))); });
  expect_error([&] { traced(x); }, {"Detected Infinity or NaN", "while running function"});  // (sub and sqrt fused)
  EXPECT_EQ(ef::log(ef::tensor({1.0f})).to_vector<float>(), (std::vector<float>{0}));
}

}  // namespace
