#pragma once
// The op table (PyTorch's OpInfo): one entry per public op, with inputs it accepts and
// whether gradients flow through it. It drives the gradient checks, the traced-vs-eager
// gradient tests and the coverage test that fails when an op class is left out.
#include <functional>
#include <string>
#include <vector>

#include "eagerflow/nn/cross_entropy.h"
#include "eagerflow/ops/complex.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/linalg.h"
#include "eagerflow/ops/random_dists.h"
#include "eagerflow/ops/scatter_nd.h"
#include "test_util.h"

namespace ef::testing {

enum class Domain { any, positive, away_from_zero };

struct InputSpec {
  Shape shape;
  DType dtype = DType::float64;  // float64 means "floating: the dtype under test"
  Domain domain = Domain::any;
  std::vector<std::int64_t> int_values;  // for integer inputs (indices)
};

struct OpInfo {
  std::string name;
  std::vector<InputSpec> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  bool differentiable = true;
  double tolerance = 1e-6;  // relative, for the float64 gradient check
  double eps = 1e-6;        // central-difference step
  bool float32_only = false;  // oneDNN-only ops: checked in float32 (with a larger step)
  bool writes_variables = false;  // effects on variables: vmap refuses them, saved functions cannot hold them
};

inline void PrintTo(const OpInfo& op, std::ostream* os) { *os << op.name; }

inline InputSpec f(Shape s, Domain d = Domain::any) { return {std::move(s), DType::float64, d, {}}; }
inline InputSpec boolean(Shape s) { return {std::move(s), DType::bool_, Domain::any, {}}; }
inline InputSpec indices(std::vector<std::int64_t> v) {
  return {Shape{static_cast<std::int64_t>(v.size())}, DType::int64, Domain::any, std::move(v)};
}

// Random inputs for an entry, floating ones in `dtype`.
inline std::vector<Tensor> make_inputs(const OpInfo& op, DType dtype, std::uint64_t seed) {
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const InputSpec& in = op.inputs[i];
    Tensor r = random::stateless_normal(in.shape, seed * 131 + i, 0.0, 1.0, DType::float64);
    if (in.domain == Domain::positive) r = abs(r) + 0.5;
    if (in.domain == Domain::away_from_zero) r = r + where(r < 0.0, scalar<double>(-0.5), scalar<double>(0.5));
    if (in.dtype == DType::bool_) xs.push_back(r > 0.0);
    else if (in.dtype == DType::int64) xs.push_back(tensor(in.int_values));
    else xs.push_back(cast(r, dtype));
  }
  return xs;
}

inline Tensor sum_all(const Tensor& x) { return sum(x); }

inline std::vector<OpInfo> op_table() {
  using V = const std::vector<Tensor>&;
  std::vector<OpInfo> t;
  auto unary = [&](std::string name, Tensor (*fn)(const Tensor&), Domain d = Domain::any) {
    t.push_back({name, {f({3, 4}, d)}, [fn](V x) { return fn(x[0]); }});
  };
  unary("neg", neg);
  unary("abs", abs, Domain::away_from_zero);
  unary("exp", exp);
  unary("log", log, Domain::positive);
  unary("sqrt", sqrt, Domain::positive);
  unary("rsqrt", rsqrt, Domain::positive);
  unary("square", square);
  unary("relu", relu, Domain::away_from_zero);
  unary("sigmoid", sigmoid);
  unary("tanh", tanh);
  unary("gelu", gelu);
  unary("erf", erf);
  unary("sin", sin);
  unary("cos", cos);
  unary("atan", atan);
  unary("sinh", sinh);
  unary("cosh", cosh);
  unary("asinh", asinh);
  unary("expm1", expm1);
  unary("erfc", erfc);
  // Functions of a bounded domain, on inputs mapped into it.
  t.push_back({"tan", {f({3, 4})}, [](V x) { return tan(tanh(x[0])); }});
  t.push_back({"asin", {f({3, 4})}, [](V x) { return asin(tanh(x[0]) * 0.9); }});
  t.push_back({"acos", {f({3, 4})}, [](V x) { return acos(tanh(x[0]) * 0.9); }});
  t.push_back({"atanh", {f({3, 4})}, [](V x) { return atanh(tanh(x[0]) * 0.9); }});
  t.push_back({"acosh", {f({3, 4}, Domain::positive)}, [](V x) { return acosh(x[0] + 1.0); }});
  // The one-pass activation gradients (relu_grad, gelu_grad): relu's and gelu's gradients for a
  // cotangent x[1], differentiated again in both arguments (second order).
  auto activation_grad = [&](std::string name, Tensor (*fn)(const Tensor&)) {
    t.push_back({name, {f({3, 4}, Domain::away_from_zero), f({3, 4})}, [fn](V x) {
                   Tensor in = x[0] * 1.0;
                   GradientTape tape;
                   tape.watch(in);
                   return tape.gradient(fn(in), in, GradientOptions{UnconnectedGradients::none, x[1] * 1.0});
                 }});
  };
  activation_grad("relu_grad", relu);
  activation_grad("gelu_grad", gelu);
  // Binary ops, broadcasting in every direction.
  t.push_back({"add", {f({3, 4}), f({4})}, [](V x) { return x[0] + x[1]; }});
  t.push_back({"sub", {f({3, 1}), f({1, 4})}, [](V x) { return x[0] - x[1]; }});
  t.push_back({"mul", {f({2, 3, 4}), f({3, 1})}, [](V x) { return x[0] * x[1]; }});
  t.push_back({"div", {f({3, 4}), f({4}, Domain::away_from_zero)}, [](V x) { return x[0] / x[1]; }});
  t.push_back({"pow", {f({3, 4}, Domain::positive), f({4})}, [](V x) { return pow(x[0], x[1]); }});
  t.push_back({"maximum", {f({3, 4}), f({3, 4})}, [](V x) { return maximum(x[0], x[1]); }});
  t.push_back({"minimum", {f({3, 4}), f({4})}, [](V x) { return minimum(x[0], x[1]); }});
  t.push_back({"where", {boolean({3, 4}), f({3, 4}), f({4})}, [](V x) { return where(x[0], x[1], x[2]); }});
  t.push_back({"cast", {f({3, 4})}, [](V x) { return cast(cast(x[0], DType::float32), x[0].dtype()); }, true, 1e-5, 1e-2});
  t.push_back({"identity", {f({3, 4})}, [](V x) { return identity(x[0]); }});
  // Not differentiable: their results are bool or int, or they stop gradients.
  auto compare = [&](std::string name, Tensor (*fn)(const Tensor&, const Tensor&)) {
    t.push_back({name, {f({3, 4}), f({4})}, [fn](V x) { return fn(x[0], x[1]); }, false});
  };
  compare("equal", equal);
  compare("not_equal", not_equal);
  compare("less", less);
  compare("less_equal", less_equal);
  compare("greater", greater);
  compare("greater_equal", greater_equal);
  t.push_back({"logical_and", {boolean({3, 4}), boolean({4})}, [](V x) { return logical_and(x[0], x[1]); }, false});
  t.push_back({"logical_or", {boolean({3, 4}), boolean({4})}, [](V x) { return logical_or(x[0], x[1]); }, false});
  t.push_back({"logical_not", {boolean({3, 4})}, [](V x) { return logical_not(x[0]); }, false});
  t.push_back({"stop_gradient", {f({3, 4})}, [](V x) { return stop_gradient(x[0]); }, false});
  t.push_back({"argmax", {f({3, 4})}, [](V x) { return argmax(x[0], -1); }, false});
  t.push_back({"one_hot", {indices({2, 0, 1})}, [](V x) { return one_hot(x[0], 4, DType::float64); }, false});
  t.push_back({"check_numerics", {f({3, 4})}, [](V x) { return check_numerics(x[0], "checked"); }});
  t.push_back({"class_indices", {indices({2, 0, 1})}, [](V x) { return class_indices(x[0], 3, "labels"); }, false});
  t.push_back({"shape", {f({3, 4})}, [](V x) { return shape(x[0]); }, false});
  t.push_back({"size", {f({3, 4})}, [](V x) { return size(x[0]); }, false});
  t.push_back({"random_uniform_like", {f({3, 4})}, [](V x) { return random::uniform_like(x[0]); }, false});
  // Reductions, with negative axes and keepdims.
  t.push_back({"sum", {f({3, 4, 2})}, [](V x) { return sum(x[0], {1}); }});
  t.push_back({"sum_all", {f({3, 4})}, [](V x) { return sum(x[0]); }});
  t.push_back({"mean", {f({3, 4, 2})}, [](V x) { return mean(x[0], {0, -1}, true); }});
  t.push_back({"mean_all", {f({3, 4})}, [](V x) { return mean(x[0]); }});
  t.push_back({"max", {f({3, 4})}, [](V x) { return max(x[0], {-1}); }});
  t.push_back({"min", {f({3, 4})}, [](V x) { return min(x[0], {0}, true); }});
  t.push_back({"softmax", {f({3, 4})}, [](V x) { return softmax(x[0], -1); }});
  t.push_back({"log_softmax", {f({3, 4})}, [](V x) { return log_softmax(x[0], 0); }});
  // matmul: 2-D, batched with broadcast batch dims, rank-N x 2-D.
  t.push_back({"matmul", {f({3, 4}), f({4, 5})}, [](V x) { return matmul(x[0], x[1]); }});
  t.push_back({"matmul_batched", {f({2, 3, 4}), f({1, 4, 5})}, [](V x) { return matmul(x[0], x[1]); }});
  t.push_back({"matmul_rank_n_2d", {f({2, 3, 4}), f({4, 5})}, [](V x) { return matmul(x[0], x[1]); }});
  t.push_back({"matmul_transpose_a", {f({4, 3}), f({4, 5})}, [](V x) { return matmul(x[0], x[1], true, false); }});
  t.push_back({"matmul_transpose_b", {f({2, 3, 4}), f({5, 4})}, [](V x) { return matmul(x[0], x[1], false, true); }});
  t.push_back({"matmul_transpose_both", {f({2, 4, 3}), f({1, 5, 4})}, [](V x) { return matmul(x[0], x[1], true, true); }});
  // Fused attention (eagerflow/nn/attention.h): plain; masked and causal; its gradient op as a
  // function of q, k, v and the cotangent (second order through the gradient op's own rule).
  t.push_back({"scaled_dot_product_attention", {f({2, 2, 5, 3}), f({2, 2, 7, 3}), f({2, 2, 7, 4})},
               [](V x) { return nn::scaled_dot_product_attention(x[0], x[1], x[2]); }});
  t.push_back({"scaled_dot_product_attention_masked_causal", {f({1, 2, 5, 3}), f({1, 2, 6, 3}), f({1, 2, 6, 2}), boolean({1, 1, 5, 6})},
               [](V x) {
                 nn::AttentionOptions o;
                 o.mask = logical_not(x[3]);  // computed in the program; an undefined mask means "none"
                 o.causal = true;
                 o.scale = 0.7;
                 return nn::scaled_dot_product_attention(x[0], x[1], x[2], o);
               }});
  t.push_back({"scaled_dot_product_attention_bshd", {f({2, 5, 2, 3}), f({2, 6, 2, 3}), f({2, 6, 2, 4}), boolean({2, 1, 1, 6})},
               [](V x) {
                 nn::AttentionOptions o;
                 o.mask = logical_not(x[3]);
                 o.causal = true;
                 o.bshd = true;  // [batch, seq, heads, dim]
                 return nn::scaled_dot_product_attention(x[0], x[1], x[2], o);
               }});
  t.push_back({"scaled_dot_product_attention_grad", {f({1, 2, 4, 3}), f({1, 2, 5, 3}), f({1, 2, 5, 2}), f({1, 2, 4, 2})},
               [](V x) {
                 Tensor q = identity(x[0]), k = identity(x[1]), v = identity(x[2]);
                 GradientTape tape;
                 tape.watch(std::vector<Tensor>{q, k, v});
                 nn::AttentionOptions o;
                 o.causal = true;
                 Tensor y = nn::scaled_dot_product_attention(q, k, v, o);
                 std::vector<Tensor> g = tape.gradient(y, std::vector<Tensor>{q, k, v},
                                                       GradientOptions{UnconnectedGradients::none, x[3] * 1.0});
                 return concat({reshape(g[0], {-1}), reshape(g[1], {-1}), reshape(g[2], {-1})}, 0);
               }});
  // Fused layer normalization (eagerflow/nn/normalization.h) and its gradient op as a function
  // of x, gamma, beta and the cotangent (second order through the gradient op's own rule).
  t.push_back({"layer_norm", {f({2, 3, 5}), f({5}), f({5})}, [](V x) { return nn::layer_norm(x[0], x[1], x[2], 1e-3); }});
  t.push_back({"layer_norm_grad", {f({2, 4}), f({4}), f({4}), f({2, 4})},
               [](V x) {
                 Tensor a = identity(x[0]), g = identity(x[1]), b = identity(x[2]);
                 GradientTape tape;
                 tape.watch(std::vector<Tensor>{a, g, b});
                 Tensor y = nn::layer_norm(a, g, b, 1e-2);
                 std::vector<Tensor> d = tape.gradient(y, std::vector<Tensor>{a, g, b},
                                                       GradientOptions{UnconnectedGradients::none, x[3] * 1.0});
                 return concat({reshape(d[0], {-1}), reshape(d[1], {-1}), reshape(d[2], {-1})}, 0);
               }});
  // Fused sparse softmax cross-entropy from logits (eagerflow/nn/cross_entropy.h) and its
  // gradient op as a function of the logits and the cotangent (second order through its rule).
  t.push_back({"sparse_softmax_cross_entropy", {f({4, 5}), indices({0, 4, 2, 2})},
               [](V x) { return nn::sparse_softmax_cross_entropy_with_logits(x[1], x[0]); }});
  t.push_back({"sparse_softmax_cross_entropy_grad", {f({3, 4}), indices({3, 0, 1}), f({3})},
               [](V x) {
                 Tensor z = identity(x[0]);
                 GradientTape tape;
                 tape.watch(z);
                 Tensor loss = nn::sparse_softmax_cross_entropy_with_logits(x[1], z);
                 return tape.gradient(sum(loss * x[2]), z);
               }});
  // Shapes.
  t.push_back({"reshape", {f({3, 4})}, [](V x) { return reshape(x[0], {2, -1}); }});
  t.push_back({"reshape_like", {f({3, 4}), f({6, 2})}, [](V x) { return reshape_like(x[0], x[1]); }});
  t.push_back({"transpose", {f({2, 3, 4})}, [](V x) { return transpose(x[0], {1, 0, 2}); }});
  t.push_back({"expand_dims", {f({3, 4})}, [](V x) { return expand_dims(x[0], -1); }});
  t.push_back({"squeeze", {f({3, 1, 4})}, [](V x) { return squeeze(x[0]); }});
  t.push_back({"concat", {f({3, 2}), f({3, 4})}, [](V x) { return concat({x[0], x[1]}, -1); }});
  t.push_back({"stack", {f({3, 4}), f({3, 4})}, [](V x) { return stack({x[0], x[1]}, 1); }});
  t.push_back({"slice", {f({5, 4})}, [](V x) { return slice(x[0], {4, 1}, {0, 4}, {-2, 1}); }});
  t.push_back({"gather", {f({5, 3}), indices({4, 0, 4, 2})}, [](V x) { return gather(x[0], x[1], 0); }});
  t.push_back({"gather_axis1", {f({2, 5}), indices({1, 1, 3})}, [](V x) { return gather(x[0], x[1], -1); }});
  t.push_back({"gather_nd", {f({4, 3}), indices({3, 1, 0, 2, 3, 1})}, [](V x) { return gather_nd(x[0], reshape(x[1], Shape{3, 2})); }});
  t.push_back({"gather_nd_rows", {f({4, 3}), indices({2, 0, 2})}, [](V x) { return gather_nd(x[0], reshape(x[1], Shape{3, 1})); }});
  t.push_back({"tensor_scatter_nd_update", {f({4, 3}), indices({2, 0}), f({2, 3})},
               [](V x) { return tensor_scatter_nd_update(x[0], reshape(x[1], Shape{2, 1}), x[2]); }});
  t.push_back({"tensor_scatter_nd_add", {f({4, 3}), indices({2, 0, 2}), f({3, 3})},
               [](V x) { return tensor_scatter_nd_add(x[0], reshape(x[1], Shape{3, 1}), x[2]); }});
  t.push_back({"tensor_scatter_nd_sub", {f({4, 3}), indices({1, 3}), f({2, 3})},
               [](V x) { return tensor_scatter_nd_sub(x[0], reshape(x[1], Shape{2, 1}), x[2]); }});
  t.push_back({"tensor_scatter_nd_min", {f({4, 3}), indices({2, 0}), f({2, 3})},
               [](V x) { return tensor_scatter_nd_min(x[0], reshape(x[1], Shape{2, 1}), x[2]); }});
  // Linear algebra: inputs shaped into the domain each decomposition needs (symmetric positive
  // definite, well-conditioned, triangular), outputs chosen to be smooth (eigenvector signs cancel).
  auto well_conditioned = [](const Tensor& x) { return x + linalg::diag(ones(Shape{x.shape()[x.rank() - 1]}, x.dtype()) * 3.0); };
  auto spd = [](const Tensor& x) { return matmul(x, x, false, true) + linalg::diag(ones(Shape{x.shape()[x.rank() - 1]}, x.dtype()) * 2.0); };
  t.push_back({"cholesky", {f({2, 3, 3})}, [spd](V x) { return linalg::cholesky(spd(x[0])); }});
  t.push_back({"matrix_solve", {f({3, 3}), f({3, 2})}, [well_conditioned](V x) { return linalg::solve(well_conditioned(x[0]), x[1]); }});
  t.push_back({"matrix_solve_adjoint", {f({2, 3, 3}), f({2, 3, 1})},
               [well_conditioned](V x) { return linalg::solve(well_conditioned(x[0]), x[1], /*adjoint=*/true); }});
  t.push_back({"triangular_solve", {f({3, 3}), f({3, 2})},
               [well_conditioned](V x) { return linalg::triangular_solve(well_conditioned(x[0]), x[1]); }});
  t.push_back({"triangular_solve_upper_adjoint", {f({3, 3}), f({3, 2})},
               [well_conditioned](V x) { return linalg::triangular_solve(well_conditioned(x[0]), x[1], false, true); }});
  t.push_back({"slogdet", {f({2, 3, 3})}, [well_conditioned](V x) { return linalg::slogdet(well_conditioned(x[0])).second; }});
  t.push_back({"eigh", {f({3, 3})}, [](V x) {
                 auto [e, v] = linalg::eigh(x[0] + transpose(x[0], {1, 0}));
                 return concat({e, reshape(v * v, Shape{9})}, 0);
               }});
  t.push_back({"svd_values", {f({4, 3})}, [](V x) { return linalg::svd(x[0]).s; }});
  t.push_back({"qr", {f({4, 3})}, [](V x) {
                 auto [q, r] = linalg::qr(x[0]);
                 return concat({reshape(q, Shape{12}), reshape(r, Shape{9})}, 0);
               }});
  t.push_back({"lu", {f({2, 3, 3})}, [well_conditioned](V x) { return linalg::lu(well_conditioned(x[0])).first; }, false});
  t.push_back({"sqrtm", {f({2, 3, 3})}, [spd](V x) { return linalg::sqrtm(spd(x[0])); }});
  t.push_back({"tridiagonal_solve", {f({2, 3, 4}), f({2, 4, 2})}, [](V x) {
                 Tensor main = reshape(cast(tensor(std::vector<double>{0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0}), x[0].dtype()), Shape{3, 4});
                 return linalg::tridiagonal_solve(x[0] + main, x[1]);
               }});
  t.push_back({"tridiagonal_solve_no_pivoting", {f({3, 4}), f({4, 1})}, [](V x) {
                 Tensor main = reshape(cast(tensor(std::vector<double>{0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0}), x[0].dtype()), Shape{3, 4});
                 return linalg::tridiagonal_solve(x[0] + main, x[1], /*partial_pivoting=*/false);
               }});
  t.push_back({"tensor_scatter_nd_max", {f({4, 3}), indices({3, 1}), f({2, 3})},
               [](V x) { return tensor_scatter_nd_max(x[0], reshape(x[1], Shape{2, 1}), x[2]); }});
  t.push_back({"zeros_like", {f({3, 4})}, [](V x) { return zeros_like(x[0]) + x[0]; }});
  t.push_back({"ones_like", {f({3, 4})}, [](V x) { return ones_like(x[0]) * x[0]; }});
  t.push_back({"full_like", {f({3, 4})}, [](V x) { return full_like(x[0], 2.5) * x[0]; }});
  t.push_back({"broadcast_to", {f({3, 1})}, [](V x) { return broadcast_to(x[0], {2, 3, 4}); }});
  t.push_back({"broadcast_like", {f({4}), f({3, 4})}, [](V x) { return broadcast_like(x[0], x[1]); }});
  t.push_back({"sum_to", {f({2, 3, 4}), f({3, 1})}, [](V x) { return sum_to(x[0], x[1]); }});
  // Issue 18's ops for sequence models (tests/sequence_ops_test.cpp checks their values).
  t.push_back({"tril", {f({2, 3, 4})}, [](V x) { return tril(x[0]); }});
  t.push_back({"triu_offset", {f({4, 3})}, [](V x) { return triu(x[0], -1); }});
  t.push_back({"clip", {f({3, 4})}, [](V x) { return clip(x[0], -1.2, 0.9); }});
  t.push_back({"floor", {f({3, 4})}, [](V x) { return floor(x[0] * 3.0); }, false});
  t.push_back({"ceil", {f({3, 4})}, [](V x) { return ceil(x[0] * 3.0); }, false});
  t.push_back({"round", {f({3, 4})}, [](V x) { return round(x[0] * 3.0); }, false});
  t.push_back({"any", {boolean({3, 4})}, [](V x) { return any(x[0], {1}); }, false});
  t.push_back({"all", {boolean({2, 3, 4})}, [](V x) { return all(x[0], {0, -1}, true); }, false});
  t.push_back({"equal_scalar", {f({3, 4})}, [](V x) { return round(x[0]) == 0.0; }, false});
  t.push_back({"not_equal_scalar", {f({3, 4})}, [](V x) { return 1 != round(x[0]); }, false});
  t.push_back({"where_scalar", {boolean({3, 4}), f({4})}, [](V x) { return where(x[0], x[1], -2.0) + where(x[0], 0.5, x[1]); }});
  t.push_back({"pad", {f({2, 3})}, [](V x) { return pad(x[0], {{1, 2}, {0, 1}}, "constant", 1.5); }});
  t.push_back({"pad_reflect", {f({3, 4})}, [](V x) { return pad(x[0], {{2, 1}, {3, 0}}, "reflect"); }});
  t.push_back({"pad_symmetric", {f({3, 4})}, [](V x) { return pad(x[0], {{0, 3}, {2, 4}}, "symmetric"); }});
  t.push_back({"tile", {f({2, 3})}, [](V x) { return tile(x[0], {2, 3}); }});
  t.push_back({"repeat", {f({2, 3})}, [](V x) { return repeat(x[0], 2, 1); }});
  t.push_back({"repeat_counts", {f({3, 2})}, [](V x) { return repeat(x[0], std::vector<std::int64_t>{2, 0, 3}, 0); }});
  t.push_back({"repeat_flat", {f({2, 3})}, [](V x) { return repeat(x[0], 2); }});
  t.push_back({"pad_grad", {f({6, 4})}, [](V x) {
                 Tensor base = zeros({3, 3}, x[0].dtype());
                 GradientTape tape;
                 tape.watch(base);
                 Tensor y = pad(base, {{1, 2}, {1, 0}}, "reflect");
                 return tape.gradient(y, base, GradientOptions{UnconnectedGradients::none, x[0] * 1.0});
               }});
  t.push_back({"cumsum", {f({3, 4})}, [](V x) { return cumsum(x[0], 1); }});
  t.push_back({"cumsum_exclusive_reverse", {f({3, 4})}, [](V x) { return cumsum(x[0], 0, true, true); }});
  t.push_back({"cumprod", {f({3, 4}, Domain::positive)}, [](V x) { return cumprod(x[0], -1); }});
  t.push_back({"cumprod_exclusive_reverse", {f({4, 3}, Domain::positive)}, [](V x) { return cumprod(x[0], 0, true, true); }});
  t.push_back({"cumprod_with_zeros", {f({3, 5})}, [](V x) { return cumprod(relu(x[0]), 1); }});
  t.push_back({"cumprod_grad", {f({3, 4}, Domain::positive), f({3, 4})}, [](V x) {
                 GradientTape tape;
                 tape.watch(x[0]);
                 Tensor y = cumprod(x[0], 1, true);
                 return tape.gradient(y, x[0], GradientOptions{UnconnectedGradients::none, x[1] * 1.0});
               }});
  t.push_back({"cumprod_jvp", {f({3, 4}, Domain::positive), f({3, 4})}, [](V x) {
                 // The gradient of cumprod_grad in its cotangent (tests/sequence_ops_test.cpp: at zeros).
                 Tensor base = x[0] * 1.0, g = zeros_like(x[1]);
                 GradientTape outer;
                 outer.watch(g);
                 GradientTape inner;
                 inner.watch(base);
                 Tensor r = inner.gradient(cumprod(base, 1, false, true), base, GradientOptions{UnconnectedGradients::none, g});
                 return outer.gradient(r, g, GradientOptions{UnconnectedGradients::none, x[1] * 1.0});
               }});
  t.push_back({"einsum_matmul", {f({3, 4}), f({4, 5})}, [](V x) { return einsum("ij,jk->ik", x[0], x[1]); }});
  t.push_back({"einsum_attention", {f({2, 3, 2, 4}), f({2, 5, 2, 4})}, [](V x) { return einsum("bqhd,bkhd->bhqk", x[0], x[1]); }});
  t.push_back({"einsum_ellipsis", {f({2, 3, 4}), f({4})}, [](V x) { return einsum("...i,i->...", x[0], x[1]); }});
  t.push_back({"einsum_implicit", {f({3, 4}), f({2, 3})}, [](V x) { return einsum("ij,ki", x[0], x[1]); }});
  t.push_back({"einsum_three", {f({2, 3}), f({3, 4}), f({4, 2})}, [](V x) { return einsum("ab,bc,cd->da", {x[0], x[1], x[2]}); }});
  t.push_back({"einsum_sum", {f({2, 3, 4})}, [](V x) { return einsum("abc->ca", x[0]); }});
  t.push_back({"sort", {f({3, 5})}, [](V x) { return sort(x[0]); }});
  t.push_back({"sort_descending_axis0", {f({4, 3})}, [](V x) { return sort(x[0], 0, true); }});
  t.push_back({"argsort", {f({3, 5})}, [](V x) { return argsort(x[0], 1, true); }, false});
  t.push_back({"top_k", {f({3, 6})}, [](V x) { return top_k(x[0], 3).values; }});
  t.push_back({"take_along_axis", {f({5}), indices({4, 0, 4, 2})}, [](V x) { return take_along_axis(x[0], x[1], 0); }});
  t.push_back({"scatter_add_along_axis", {f({4})}, [](V x) {
                 Tensor base = zeros({5}, x[0].dtype());
                 GradientTape tape;
                 tape.watch(base);
                 Tensor y = take_along_axis(base, tensor(std::vector<std::int64_t>{4, 0, 4, 2}), 0);
                 return tape.gradient(y, base, GradientOptions{UnconnectedGradients::none, x[0] * 1.0});
               }});
  t.push_back({"random_categorical", {f({2, 5})}, [](V x) { return random::categorical(x[0], 3); }, false});
  // Draws: their gradients are checked statistically and against TF's values (random_extra_test).
  t.push_back({"random_poisson", {f({3}, Domain::positive)},
               [](V x) { return random::stateless_poisson({2, 3}, 7, x[0], x[0].dtype()); }, false});
  t.push_back({"random_gamma_grad", {f({3}, Domain::positive), f({3}, Domain::positive)},
               [](V x) { return random::random_gamma_grad(x[0], x[1]); }, false});
  t.push_back({"random_candidate_sampler", {indices({1, 3})}, [](V x) {
                 return random::log_uniform_candidate_sampler(reshape(x[0], Shape{2, 1}), 1, 3, true, 5, 11).true_expected_count;
               }, false});
  // The scatters that gradients of slice and gather emit, as linear functions of the cotangent.
  t.push_back({"slice_grad", {f({2, 3})}, [](V x) {
                 Tensor base = zeros({5, 4}, x[0].dtype());
                 GradientTape tape;
                 tape.watch(base);
                 Tensor y = slice(base, {4, 1}, {0, 4}, {-2, 1});
                 return tape.gradient(y, base, GradientOptions{UnconnectedGradients::none, x[0] * 1.0});
               }});
  t.push_back({"gather_grad", {f({4, 3}), indices({4, 0, 4, 2})}, [](V x) {
                 Tensor base = zeros({5, 3}, x[0].dtype());
                 GradientTape tape;
                 tape.watch(base);
                 Tensor y = gather(base, x[1], 0);
                 return tape.gradient(y, base, GradientOptions{UnconnectedGradients::none, x[0] * 1.0});
               }});
  // Convolution and pooling (oneDNN, float32): linear in each argument, so central
  // differences with a large step are exact up to float32 rounding.
  auto f32 = [&](std::string name, std::vector<InputSpec> in, std::function<Tensor(V)> fn) {
    OpInfo op{std::move(name), std::move(in), std::move(fn)};
    op.float32_only = true;
    op.tolerance = 2e-3;
    op.eps = 1e-2;
    t.push_back(op);
  };
  f32("conv2d", {f({2, 5, 6, 3}), f({3, 2, 3, 4})}, [](V x) { return conv2d(x[0], x[1]); });
  // Image resize computes in float32 and returns float32 for any input (as TF's), linear in the
  // image; cast back here so that the storage-dtype tables compare like with like.
  f32("image_resize_bilinear", {f({2, 4, 5, 2})}, [](V x) { return cast(image::resize(x[0], 6, 3), x[0].dtype()); });
  f32("conv2d_same_strided", {f({1, 7, 6, 2}), f({3, 3, 2, 3})}, [](V x) { return conv2d(x[0], x[1], {2, 2}, "same"); });
  f32("conv2d_dilated", {f({1, 7, 7, 2}), f({2, 2, 2, 2})}, [](V x) { return conv2d(x[0], x[1], {1, 1}, "valid", {2, 2}); });
  f32("max_pool2d", {f({2, 6, 6, 3})}, [](V x) { return max_pool2d(x[0]); });
  t.back().eps = 1e-3;  // piecewise linear: a small step keeps each window's maximum
  f32("avg_pool2d_same", {f({1, 5, 5, 2})}, [](V x) { return avg_pool2d(x[0], {3, 3}, Stride2{2, 2}, "same"); });
  // Second-order: the backprop ops differentiated as functions of the cotangent.
  f32("conv2d_backprop_input", {f({1, 3, 4, 2})}, [](V x) {
    Tensor in = ones({1, 5, 6, 3}), w = cast(reshape(arange(54, DType::float32), {3, 3, 3, 2}), DType::float32) * 0.1f;
    GradientTape tape;
    tape.watch(in);
    return tape.gradient(conv2d(in, w), in, GradientOptions{UnconnectedGradients::none, x[0] * 1.0});
  });
  f32("conv2d_backprop_filter", {f({1, 3, 4, 2})}, [](V x) {
    Tensor in = cast(reshape(arange(30 * 3, DType::float32), {1, 5, 6, 3}), DType::float32) * 0.01f, w = ones({3, 3, 3, 2});
    GradientTape tape;
    tape.watch(w);
    return tape.gradient(conv2d(in, w), w, GradientOptions{UnconnectedGradients::none, x[0] * 1.0});
  });
  f32("avg_pool2d_grad", {f({1, 2, 2, 2})}, [](V x) {
    Tensor in = ones({1, 4, 4, 2});
    GradientTape tape;
    tape.watch(in);
    return tape.gradient(avg_pool2d(in), in, GradientOptions{UnconnectedGradients::none, x[0] * 1.0});
  });
  // The fused LSTM / GRU (oneDNN, eagerflow/nn/recurrent.h): every output, with initial states,
  // forwards and reversed. Their gradient ops (lstm_grad, gru_grad) are checked in
  // tests/recurrent_test.cpp against the unrolled path.
  f32("lstm", {f({2, 3, 4}), f({4, 12}), f({3, 12}), f({12}), f({2, 3}), f({2, 3})}, [](V x) {
    LstmOutputs o = lstm(x[0], x[1] * 0.5, x[2] * 0.5, x[3], x[4] * 1.0, x[5] * 1.0);  // (undefined states are zeros)
    return concat({reshape(o.sequence, {2, 9}), o.h, o.c}, 1);
  });
  f32("gru", {f({2, 3, 4}), f({4, 9}), f({3, 9}), f({2, 9}), f({2, 3})}, [](V x) {
    GruOutputs o = gru(x[0], x[1] * 0.5, x[2] * 0.5, x[3], x[4] * 1.0, true);
    return concat({reshape(o.sequence, {2, 9}), o.h}, 1);
  });
  // The fused optimizer updates (eagerflow/optim/optimizer.h) on variables set from the inputs
  // (variable, slots, then the gradient): each returns the variable and its slots after one
  // update, stacked, so that eager and traced runs compare. Effects, not differentiable.
  using Update = std::function<void(const Variable&, const std::vector<Variable>&, const Tensor&)>;
  auto update = [&](std::string name, int slots, Update apply) {
    std::vector<InputSpec> in{f({3, 4})};
    for (int k = 0; k < slots; ++k) in.push_back(f({3, 4}, Domain::positive));  // second moments are >= 0
    in.push_back(f({3, 4}));
    t.push_back({name, in, [slots, apply](V x) {
                   auto made_from = [](const Tensor& value) {
                     Variable v(zeros(value.shape(), value.dtype()), "updated", /*trainable=*/false);
                     v.assign(value);
                     return v;
                   };
                   Variable w = made_from(x[0]);
                   std::vector<Variable> s;
                   for (int k = 0; k < slots; ++k) s.push_back(made_from(x[static_cast<std::size_t>(k + 1)]));
                   apply(w, s, x.back());
                   std::vector<Tensor> out{Tensor(w)};
                   for (const auto& v : s) out.push_back(Tensor(v));
                   return stack(out, 0);
                 }, false});
    t.back().writes_variables = true;
  };
  update("apply_sgd", 0, [](auto& w, auto&, auto& g) { optim::apply_sgd(w, g, scalar(0.1f)); });
  update("apply_momentum_nesterov", 1, [](auto& w, auto& s, auto& g) { optim::apply_momentum(w, s[0], g, scalar(0.1f), 0.9, true); });
  update("apply_adam", 2, [](auto& w, auto& s, auto& g) { optim::apply_adam(w, s[0], s[1], g, scalar(0.01f), scalar(3.0f)); });
  update("apply_adamw", 2, [](auto& w, auto& s, auto& g) {
    optim::apply_adam(w, s[0], s[1], g, scalar(0.01f), scalar(std::int64_t{2}), 0.8, 0.99, 1e-7, 0.1);
  });
  update("apply_rmsprop_momentum", 2, [](auto& w, auto& s, auto& g) {
    optim::apply_rmsprop(w, s[0], g, scalar(0.01f), 0.9, 1e-7, s[1], 0.5);
  });
  // Complex ops (eagerflow/ops/complex.h) between real inputs and real outputs: the central
  // differences check TF's convention for complex gradients through every rule on the way.
  auto parts = [](const Tensor& z) { return concat({real(z), imag(z)}, 0); };
  t.push_back({"complex_arithmetic", {f({3}), f({3}), f({3}, Domain::away_from_zero), f({3}, Domain::away_from_zero)},
               [parts](V x) {
                 Tensor z = complex(x[0], x[1]), w = complex(x[2], x[3]);
                 return parts(add(sub(mul(z, w), div(z, w)), pow(w, z)));
               }});
  t.push_back({"complex_functions", {f({4}), f({4}, Domain::away_from_zero)}, [parts](V x) {
                 Tensor z = complex(x[0], x[1]);  // (imaginary parts away from 0: angle's cut)
                 Tensor r = add(mul(exp(z), conj(z)), add(tanh(z), div(ones_like(z), z)));
                 return concat({parts(add(r, mul(sin(z), log(z)))), abs(z), angle(z)}, 0);
               }});
  t.push_back({"complex_matmul", {f({2, 3}), f({2, 3}), f({3, 2}), f({3, 2})}, [parts](V x) {
                 Tensor a = complex(x[0], x[1]), b = complex(x[2], x[3]);
                 Tensor p = add(matmul(a, b), matmul_conj(b, a, true, true, true, false));
                 return parts(reshape(p, {4}));
               }});
  t.push_back({"fft", {f({2, 5}), f({2, 5})}, [parts](V x) {
                 Tensor z = complex(x[0], x[1]);
                 return parts(reshape(add(signal::fft(z), signal::ifft2d(z)), {10}));
               }});
  t.push_back({"rfft_irfft", {f({2, 6}), f({2, 4})}, [parts](V x) {
                 Tensor spectrum = signal::rfft(x[0], {8});            // cropped/padded inputs too
                 Tensor back = signal::irfft(complex(x[1], x[1] * 0.5), {5});
                 return concat({reshape(parts(spectrum), {20}), reshape(back, {10})}, 0);
               }});
  return t;
}

}  // namespace ef::testing
