// Every op traced and replayed gives the eager result bit for bit (same kernels run).
#include "test_util.h"

using namespace ef;

namespace {
using Op = std::function<Tensor(const std::vector<Tensor>&)>;

void expect_replay_equals_eager(const std::string& name, const Op& op, const std::vector<Tensor>& inputs) {
  SCOPED_TRACE(name);
  Tensor eager = op(inputs);
  auto f = function([&](const std::vector<Tensor>& xs) { return op(xs); });
  Tensor traced = f(inputs);
  Tensor replayed = f(inputs);
  ASSERT_EQ(traced.spec(), eager.spec());
  ASSERT_EQ(f.tracing_count(), 1);
  dispatch_dtype(eager.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto e = eager.to_vector<T>(), t = traced.to_vector<T>(), r = replayed.to_vector<T>();
    if constexpr (std::is_floating_point_v<T>) {
      ASSERT_EQ(e.size(), t.size());
      for (std::size_t i = 0; i < e.size(); ++i) {
        if (std::isnan(e[i])) { EXPECT_TRUE(std::isnan(t[i]) && std::isnan(r[i])); continue; }
        EXPECT_EQ(e[i], t[i]) << "at " << i;
        EXPECT_EQ(e[i], r[i]) << "at " << i;
      }
    } else {
      EXPECT_EQ(e, t);
      EXPECT_EQ(e, r);
    }
  });
}
}  // namespace

TEST(OpTrace, ReplayEqualsEagerForEveryOp) {
  random::set_seed(11);
  Tensor a = random::normal({4, 5}), b = random::normal({5}), p = abs(random::normal({4, 5})) + 0.1f;
  Tensor m = random::normal({5, 3}), big = random::normal({2, 4, 5});
  Tensor idx = tensor(std::vector<std::int64_t>{3, 0, 1});
  Tensor mask = a > 0.0f;
  std::vector<std::pair<std::string, Op>> unary = {
      {"neg", [](auto& v) { return neg(v[0]); }}, {"abs", [](auto& v) { return ef::abs(v[0]); }},
      {"exp", [](auto& v) { return ef::exp(v[0]); }}, {"square", [](auto& v) { return square(v[0]); }},
      {"relu", [](auto& v) { return relu(v[0]); }}, {"sigmoid", [](auto& v) { return sigmoid(v[0]); }},
      {"tanh", [](auto& v) { return ef::tanh(v[0]); }}, {"gelu", [](auto& v) { return gelu(v[0]); }},
      {"softmax", [](auto& v) { return softmax(v[0], 0); }}, {"log_softmax", [](auto& v) { return log_softmax(v[0]); }},
      {"sum", [](auto& v) { return sum(v[0], {1}); }}, {"mean", [](auto& v) { return mean(v[0]); }},
      {"max", [](auto& v) { return max(v[0], {0}, true); }}, {"min", [](auto& v) { return min(v[0], {-1}); }},
      {"argmax", [](auto& v) { return argmax(v[0], 1); }}, {"cast", [](auto& v) { return cast(v[0], DType::int32); }},
      {"reshape", [](auto& v) { return reshape(v[0], {-1}); }}, {"transpose", [](auto& v) { return transpose(v[0]); }},
      {"expand_dims", [](auto& v) { return expand_dims(v[0], 1); }},
      {"squeeze", [](auto& v) { return squeeze(expand_dims(v[0], 0)); }},
      {"slice", [](auto& v) { return slice(v[0], {1, 0}, {4, 5}, {2, 2}); }},
      {"concat", [](auto& v) { return concat({v[0], v[0]}, 1); }}, {"stack", [](auto& v) { return stack({v[0], v[0]}, 0); }},
  };
  for (auto& [name, op] : unary) expect_replay_equals_eager(name, op, {a});
  expect_replay_equals_eager("log", [](auto& v) { return log(v[0]); }, {p});
  expect_replay_equals_eager("sqrt", [](auto& v) { return ef::sqrt(v[0]); }, {p});
  expect_replay_equals_eager("rsqrt", [](auto& v) { return rsqrt(v[0]); }, {p});
  std::vector<std::pair<std::string, Op>> binary = {
      {"add", [](auto& v) { return v[0] + v[1]; }}, {"sub", [](auto& v) { return v[0] - v[1]; }},
      {"mul", [](auto& v) { return v[0] * v[1]; }}, {"div", [](auto& v) { return v[0] / v[1]; }},
      {"pow", [](auto& v) { return ef::pow(abs(v[0]), v[1]); }}, {"maximum", [](auto& v) { return maximum(v[0], v[1]); }},
      {"minimum", [](auto& v) { return minimum(v[0], v[1]); }}, {"less", [](auto& v) { return v[0] < v[1]; }},
      {"equal", [](auto& v) { return equal(v[0], v[1]); }},
  };
  for (auto& [name, op] : binary) expect_replay_equals_eager(name, op, {a, b});
  expect_replay_equals_eager("matmul", [](auto& v) { return matmul(v[0], v[1]); }, {a, m});
  expect_replay_equals_eager("matmul_dense", [](auto& v) { return matmul(v[0], v[1]); }, {big, m});
  expect_replay_equals_eager("where", [](auto& v) { return where(v[0], v[1], v[2]); }, {mask, a, b});
  expect_replay_equals_eager("logical", [](auto& v) { return logical_or(v[0], logical_not(v[0])); }, {mask});
  expect_replay_equals_eager("gather", [](auto& v) { return gather(v[0], v[1]); }, {a, idx});
  expect_replay_equals_eager("one_hot", [](auto& v) { return one_hot(v[0], 4); }, {idx});
}
