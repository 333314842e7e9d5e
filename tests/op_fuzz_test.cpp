// Property test over the op table, as a hostile user would call ops: random shapes (0-size,
// extreme but empty dims), random dtypes, values with NaN, Inf, -0 and integer extremes; each
// call runs eagerly and traced (static and dynamic signatures). It must never crash, and both
// ways must agree: equal results, or an ef::Error with the same tag. A fixed seed and a time
// bound keep it reproducible and short (EF_FUZZ_SEED, EF_FUZZ_SECONDS, EF_FUZZ_ITERATIONS).
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>

#include "op_table.h"

using namespace ef;
using ef::testing::OpInfo;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

struct Fuzzer {
  std::mt19937_64 rng;
  explicit Fuzzer(std::uint64_t seed) : rng(seed) {}
  int pick(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }

  Shape shape_like(const Shape& base) {
    if (chance(50)) return base;  // the shape the op expects: most calls should get past infer
    int rank = chance(70) ? base.rank() : pick(5);
    std::vector<std::int64_t> dims;
    for (int a = 0; a < rank; ++a) {
      static const std::int64_t sizes[] = {0, 1, 1, 2, 3, 4, 5};
      dims.push_back(sizes[pick(7)]);
    }
    // An extreme dim next to a zero: no elements, but products and strides get huge.
    if (rank >= 2 && chance(10)) {
      dims[static_cast<std::size_t>(pick(rank))] = std::int64_t{1} << (45 + pick(18));  // outputs: empty, or too large to allocate
      dims[static_cast<std::size_t>(pick(rank))] = 0;
      if (std::all_of(dims.begin(), dims.end(), [](auto d) { return d != 0; })) dims[0] = 0;
    }
    return Shape(dims);
  }

  DType dtype_like(DType base) {
    if (chance(70)) return base;
    static const DType all[] = {DType::float32, DType::float64, DType::int32, DType::int64, DType::bool_};
    return all[pick(5)];
  }

  double special_float() {
    static const double values[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40, 3e38, -3e38, 1.0, -1.0, 0.5};
    return values[pick(11)];
  }

  Tensor values(const Shape& s, DType dtype, const ef::testing::InputSpec& spec) {
    if (!spec.int_values.empty() && dtype == DType::int64 && chance(60) && s == spec.shape) return tensor(spec.int_values);
    Tensor t = Tensor::empty(dtype, s);
    std::normal_distribution<double> normal(0.0, 2.0);
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      for (T& v : t.mutable_data<T>()) {
        if constexpr (std::is_same_v<T, bool>) v = chance(50);
        else if constexpr (std::is_floating_point_v<T>) v = static_cast<T>(chance(15) ? special_float() : normal(rng));
        else {
          static const T extremes[] = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(-1), T(0)};
          v = chance(15) ? extremes[pick(4)] : static_cast<T>(pick(7) - 1);
        }
      }
    });
    return t;
  }
};

// "[gather]" from "[gather] index 7 is out of range ..."
std::string tag_of(const std::string& message) { return message.substr(0, message.find(']') + 1); }

struct Outcome {
  std::optional<Tensor> value;
  std::string error;
};

template <class Fn>
Outcome run(Fn&& fn) {
  try {
    return {fn(), {}};
  } catch (const Error& e) {
    return {std::nullopt, e.what()};
  }
}

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.spec() != b.spec()) return false;
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto x = a.data<T>(), y = b.data<T>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x[i]) && std::isnan(y[i])) continue;
      }
      if (!(x[i] == y[i])) return false;
    }
    return true;
  });
}

}  // namespace

TEST(OpFuzz, EagerAndTracedAgreeOrFailAlike) {
  std::uint64_t seed = env_or("EF_FUZZ_SEED", 20261130);
  auto budget = std::chrono::seconds(env_or("EF_FUZZ_SECONDS", 8));
  std::uint64_t max_iterations = env_or("EF_FUZZ_ITERATIONS", 3000);
  Fuzzer fz(seed);
  std::vector<OpInfo> table = ef::testing::op_table();
  auto start = std::chrono::steady_clock::now();
  std::uint64_t iterations = 0, agreed_values = 0, agreed_errors = 0;
  while (iterations < max_iterations && std::chrono::steady_clock::now() - start < budget) {
    ++iterations;
    const OpInfo& op = table[static_cast<std::size_t>(fz.pick(static_cast<int>(table.size())))];
    if (op.name.rfind("random", 0) == 0) continue;  // fresh draws by design
    std::vector<Tensor> xs;
    for (const auto& in : op.inputs) {
      DType base = in.dtype == DType::float64 ? (fz.chance(50) ? DType::float32 : DType::float64) : in.dtype;
      xs.push_back(fz.values(fz.shape_like(in.shape), fz.dtype_like(base), in));
    }
    SCOPED_TRACE("seed " + std::to_string(seed) + " iteration " + std::to_string(iterations) + " op " + op.name +
                 " inputs " + describe(xs));
    auto call_start = std::chrono::steady_clock::now();
    Outcome eager = run([&] { return op.fn(xs); });
    if (eager.value && !eager.value->defined()) continue;  // a gradient with respect to integers: none (TF's None)
    if (std::getenv("EF_FUZZ_SLOW") && std::chrono::steady_clock::now() - call_start > std::chrono::milliseconds(50))
      std::printf("slow: %s %s\n", op.name.c_str(), describe(xs).c_str());
    // Dead-code elimination stays off: an op whose result is unused fails eagerly, and must
    // fail in the graph too for the errors to be compared.
    FunctionOptions options;
    options.passes.dead_code = false;
    auto f = function([&](const std::vector<Tensor>& ys) { return op.fn(ys); }, options);
    Outcome traced = run([&] { return f(xs); });
    // The same with every dim dynamic where the rank allows it (reduce_retracing's graphs).
    std::vector<TensorSpec> specs;
    for (const auto& x : xs) {
      std::vector<std::int64_t> dims = x.shape().dims();
      for (auto& d : dims)
        if (fz.chance(50)) d = kDynamic;
      specs.push_back({x.dtype(), Shape(dims), {}});
    }
    Outcome dynamic = run([&] {
      auto cf = f.get_concrete_function(specs);
      std::vector<Tensor> out = cf->call_flat(xs);
      return out.at(0);
    });
    if (eager.value) {
      ASSERT_TRUE(traced.value) << "eager ran, traced failed: " << traced.error;
      EXPECT_TRUE(same_values(*eager.value, *traced.value)) << "eager " << eager.value->str() << "\ntraced " << traced.value->str();
      // A dynamic graph may reject what a static one accepts only with a clear error.
      if (dynamic.value) { EXPECT_TRUE(same_values(*eager.value, *dynamic.value)) << dynamic.value->str(); }
      ++agreed_values;
    } else {
      ASSERT_FALSE(traced.value) << "eager failed (" << eager.error << "), traced gave " << traced.value->str();
      // The same op fails both ways; except that a graph checks every shape and dtype while
      // tracing, before any kernel runs, so a trace-time error may come before the run-time
      // (value) error that eager execution met first.
      bool traced_at_trace_time = traced.error.find("while running function") == std::string::npos;
      if (!traced_at_trace_time || tag_of(eager.error) == tag_of(traced.error)) {
        EXPECT_EQ(tag_of(eager.error), tag_of(traced.error)) << "eager: " << eager.error << "\ntraced: " << traced.error; }
      ++agreed_errors;
    }
    EXPECT_EQ(eager.error.find("std::"), std::string::npos) << eager.error;
  }
  // The run did real work on both sides.
  EXPECT_GT(agreed_values, iterations / 10) << "values " << agreed_values << " errors " << agreed_errors;
  EXPECT_GT(agreed_errors, 0u);
  std::printf("op fuzz: %llu calls, %llu equal results, %llu equal errors (seed %llu)\n",
              static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(agreed_values),
              static_cast<unsigned long long>(agreed_errors), static_cast<unsigned long long>(seed));
}
