// Bad input never crashes: every op, given an undefined tensor or a bool/int tensor where it
// needs floats, throws ef::Error.
#include "test_util.h"

using namespace ef;

namespace {
using Op = std::function<Tensor(const Tensor&)>;

std::vector<std::pair<std::string, Op>> all_ops() {
  Tensor f = ones({2, 2});
  return {
      {"add", [=](auto& x) { return add(x, f); }}, {"sub", [=](auto& x) { return sub(f, x); }},
      {"mul", [=](auto& x) { return mul(x, f); }}, {"div", [=](auto& x) { return div(x, f); }},
      {"pow", [=](auto& x) { return ef::pow(x, f); }}, {"maximum", [=](auto& x) { return maximum(x, f); }},
      {"minimum", [=](auto& x) { return minimum(x, f); }}, {"less", [=](auto& x) { return less(x, f); }},
      {"logical_and", [](auto& x) { return logical_and(x, x); }}, {"logical_not", [](auto& x) { return logical_not(x); }},
      {"exp", [](auto& x) { return ef::exp(x); }}, {"log", [](auto& x) { return ef::log(x); }},
      {"sqrt", [](auto& x) { return ef::sqrt(x); }}, {"rsqrt", [](auto& x) { return rsqrt(x); }},
      {"sigmoid", [](auto& x) { return sigmoid(x); }}, {"tanh", [](auto& x) { return ef::tanh(x); }},
      {"gelu", [](auto& x) { return gelu(x); }}, {"softmax", [](auto& x) { return softmax(x); }},
      {"log_softmax", [](auto& x) { return log_softmax(x); }}, {"matmul", [=](auto& x) { return matmul(x, f); }},
      {"where", [=](auto& x) { return where(x, f, f); }}, {"gather", [=](auto& x) { return gather(f, x); }},
      {"one_hot", [](auto& x) { return one_hot(x, 3); }},
  };
}
}  // namespace

TEST(BadInput, UndefinedTensorsAreErrors) {
  Tensor undefined;
  for (auto& [name, op] : all_ops()) {
    SCOPED_TRACE(name);
    EXPECT_THROW(op(undefined), Error);
  }
  for (auto op : std::vector<Op>{[](auto& x) { return neg(x); }, [](auto& x) { return sum(x); },
                                 [](auto& x) { return argmax(x); }, [](auto& x) { return reshape(x, {-1}); },
                                 [](auto& x) { return transpose(x); }, [](auto& x) { return cast(x, DType::int32); },
                                 [](auto& x) { return slice(x, {0}, {1}); }, [](auto& x) { return concat({x}, 0); },
                                 [](auto& x) { return expand_dims(x, 0); }, [](auto& x) { return squeeze(x); }})
    EXPECT_THROW(op(undefined), Error);
}

TEST(BadInput, WrongDtypesAreErrorsNamingTheOp) {
  Tensor b = zeros({2, 2}, DType::bool_);
  Tensor i = zeros({2, 2}, DType::int64);
  for (auto& [name, op] : all_ops()) {
    SCOPED_TRACE(name);
    bool bool_ok = name == "logical_and" || name == "logical_not" || name == "where" || name == "less";
    bool int_ok = name == "gather" || name == "one_hot";
    if (!bool_ok) ef::testing::expect_error([&] { op(b); }, {"[" + name + "]"});
    if (!int_ok) { EXPECT_THROW(op(i), Error); }
  }
}

TEST(BadInput, FunctionsRejectUndefinedArguments) {
  auto f = function([](const Tensor& x) { return x; });
  ef::testing::expect_error([&] { f(Tensor()); }, {"[function]", "undefined"});
  auto g = function([](const std::vector<Tensor>& xs) { return xs[0]; });
  ef::testing::expect_error([&] { g(std::vector<Tensor>{Tensor()}); }, {"undefined"});
  EXPECT_EQ(f.tracing_count(), 0);
  EXPECT_EQ(g.tracing_count(), 0);
}
