// ef::scan: eagerly (a loop), traced (one scan node) and differentiated (a reverse scan over the
// values each step kept), against loops written by hand and finite differences.
#include "autodiff/vmap_internal.h"
#include "test_util.h"
#include <eagerflow/saving/onnx.h>

using namespace ef;
using ef::testing::expect_error;
using ef::testing::expect_tensor_near;
using ef::testing::randn;

namespace {

using Pair = std::pair<std::vector<Tensor>, std::vector<Tensor>>;

std::size_t count_nodes(const ir::Graph& g, const std::string& name) {
  std::size_t n = 0;
  for (const auto& node : g.nodes) n += node.op->name() == name;
  return n;
}

// Central differences of a scalar function of x (float64), one element at a time.
Tensor numeric_gradient(const std::function<double(const Tensor&)>& f, const Tensor& x, double h = 1e-6) {
  std::vector<double> v = x.to_vector<double>(), g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::vector<double> p = v, m = v;
    p[i] += h;
    m[i] -= h;
    g[i] = (f(tensor(p, x.shape())) - f(tensor(m, x.shape()))) / (2 * h);
  }
  return tensor(g, x.shape());
}

// An RNN cell h' = tanh(x W + h U + b), y = h'. Its loss: sum(ys^2) + sum(h_T).
Tensor rnn_loss_scan(const Tensor& h0, const Tensor& xs, const Tensor& w, const Tensor& u, const Tensor& b, bool reverse = false) {
  auto [h, ys] = scan(
      [&](const Tensor& carry, const Tensor& x) {
        Tensor next = tanh(matmul(x, w) + matmul(carry, u) + b);
        return std::pair{next, next};
      },
      h0, xs, ScanOptions{.reverse = reverse});
  return sum(ys * ys) + sum(h);
}

// The same, unrolled by hand.
Tensor rnn_loss_unrolled(const Tensor& h0, const Tensor& xs, const Tensor& w, const Tensor& u, const Tensor& b, bool reverse = false) {
  std::int64_t n = xs.shape()[0];
  Tensor h = h0, loss = zeros({}, xs.dtype());
  for (std::int64_t t = 0; t < n; ++t) {
    std::int64_t i = reverse ? n - 1 - t : t;
    Tensor x = reshape(slice(xs, {i}, {i + 1}), Shape{xs.shape()[1], xs.shape()[2]});
    h = tanh(matmul(x, w) + matmul(h, u) + b);
    loss = loss + sum(h * h);
  }
  return loss + sum(h);
}

struct Rnn {
  Tensor h0 = randn({2, 3}, 1), xs = randn({5, 2, 4}, 2), w = randn({4, 3}, 3) * 0.5, u = randn({3, 3}, 4) * 0.5,
         b = randn({3}, 5) * 0.1;
  std::vector<Tensor> all() const { return {h0, xs, w, u, b}; }
};

std::vector<Tensor> loss_and_grads(const std::function<Tensor(const std::vector<Tensor>&)>& loss, const std::vector<Tensor>& args) {
  GradientTape tape;
  for (const auto& a : args) tape.watch(a);
  Tensor y = loss(args);
  std::vector<GradientSource> sources(args.begin(), args.end());
  std::vector<Tensor> out{y};
  for (auto& g : tape.gradient(y, sources)) out.push_back(g);
  return out;
}

}  // namespace

TEST(Scan, CumulativeSumEagerAndTracedMatchALoop) {
  Tensor xs = randn({6, 3}, 7);
  auto cumsum = [](const Tensor& x, bool reverse) {
    return scan([](const Tensor& c, const Tensor& row) { return std::pair{c + row, c + row}; }, zeros({3}, DType::float64), x,
                ScanOptions{.reverse = reverse});
  };
  auto traced = function([&](const Tensor& x) {
    auto [f_total, f_ys] = cumsum(x, false);
    auto [b_total, b_ys] = cumsum(x, true);
    return std::vector<Tensor>{f_total, f_ys, b_total, b_ys};
  });
  std::vector<double> v = xs.to_vector<double>(), fwd(v.size()), bwd(v.size());
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 6; ++i) fwd[i * 3 + j] = s += v[i * 3 + j];
    s = 0;
    for (int i = 5; i >= 0; --i) bwd[i * 3 + j] = s += v[i * 3 + j];
  }
  Tensor want_f = tensor(fwd, Shape{6, 3}), want_b = tensor(bwd, Shape{6, 3});
  for (bool use_trace : {false, true}) {
    std::vector<Tensor> got;
    if (use_trace) {
      got = traced(xs);
    } else {
      auto [ft, fy] = cumsum(xs, false);
      auto [bt, by] = cumsum(xs, true);
      got = {ft, fy, bt, by};
    }
    expect_tensor_near(got[1], want_f, 1e-12);
    expect_tensor_near(got[0], reshape(slice(want_f, {5}, {6}), Shape{3}), 1e-12);
    expect_tensor_near(got[3], want_b, 1e-12);  // reverse: ys stay in xs' order
    expect_tensor_near(got[2], reshape(slice(want_b, {0}, {1}), Shape{3}), 1e-12);
  }
  const ir::Graph& g = traced.concrete_functions()[0]->traced_graph();
  EXPECT_EQ(count_nodes(g, "scan"), 2u);
  std::string text = ir::to_text(g);
  EXPECT_NE(text.find("scan"), std::string::npos) << text;
  EXPECT_NE(text.find("reverse=True"), std::string::npos) << text;
  EXPECT_NE(text.find("body="), std::string::npos) << text;
}

TEST(Scan, RnnGradientsMatchAnUnrolledLoopAndFiniteDifferences) {
  Rnn r;
  for (bool reverse : {false, true}) {
    auto by_scan = [&](const std::vector<Tensor>& a) { return rnn_loss_scan(a[0], a[1], a[2], a[3], a[4], reverse); };
    auto by_hand = [&](const std::vector<Tensor>& a) { return rnn_loss_unrolled(a[0], a[1], a[2], a[3], a[4], reverse); };
    std::vector<Tensor> want = loss_and_grads(by_hand, r.all());
    std::vector<Tensor> eager = loss_and_grads(by_scan, r.all());
    auto traced = function([&](const std::vector<Tensor>& a) { return loss_and_grads(by_scan, a); });
    std::vector<Tensor> got = traced(r.all());
    ASSERT_EQ(got.size(), 6u);
    for (std::size_t i = 0; i < 6; ++i) {
      expect_tensor_near(eager[i], want[i], 1e-12);
      expect_tensor_near(got[i], want[i], 1e-10);
    }
    // Finite differences, argument by argument.
    std::vector<Tensor> args = r.all();
    for (std::size_t a = 0; a < args.size(); ++a) {
      Tensor fd = numeric_gradient(
          [&](const Tensor& x) {
            std::vector<Tensor> v = args;
            v[a] = x;
            return by_hand(v).item<double>();
          },
          args[a]);
      expect_tensor_near(got[a + 1], fd, 1e-6);
    }
    // One forward scan and one backward scan: the gradient does not run the forward again.
    const ir::Graph& g = traced.concrete_functions()[0]->traced_graph();
    EXPECT_EQ(count_nodes(g, "scan"), 2u) << ir::to_text(g);
  }
}

TEST(Scan, SeveralCarriesAndSequences) {
  // carries (sum of a*b, step counter int64), xs (a, b), ys (a*b, running sum, counter).
  Tensor a = randn({4, 2}, 11), b = randn({4, 2}, 12);
  auto run = [](const Tensor& a, const Tensor& b) {
    auto [carry, ys] = scan(
        [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
          Tensor p = x[0] * x[1];
          Tensor s = c[0] + p;
          Tensor k = c[1] + scalar<std::int64_t>(1);
          return Pair{{s, k}, {p, s, k}};
        },
        {zeros({2}, DType::float64), scalar<std::int64_t>(0)}, {a, b});
    std::vector<Tensor> out = carry;
    out.insert(out.end(), ys.begin(), ys.end());
    return out;
  };
  auto traced = function(run);
  for (const auto& got : {run(a, b), traced(a, b)}) {
    ASSERT_EQ(got.size(), 5u);
    Tensor p = a * b;
    expect_tensor_near(got[2], p);
    expect_tensor_near(got[0], sum(p, {0}));
    EXPECT_EQ(got[1].item<std::int64_t>(), 4);
    EXPECT_EQ(got[4].to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2, 3, 4}));
    expect_tensor_near(reshape(slice(got[3], {3}, {4}), Shape{2}), sum(p, {0}));
  }
  // Gradients of both xs, through the float carry only.
  auto grads = function([&](const Tensor& a, const Tensor& b) {
    GradientTape tape;
    tape.watch(a);
    tape.watch(b);
    std::vector<Tensor> out = run(a, b);
    Tensor loss = sum(out[0]) + sum(out[3] * out[3]);
    auto g = tape.gradient(loss, std::vector<GradientSource>{a, b});
    return std::vector<Tensor>{g[0], g[1]};
  });
  std::vector<Tensor> g = grads(a, b);
  // d/d(a_i) of sum_j s_j^2 + s_T where s_j = sum_{i<=j} a_i b_i: b_i (1 + 2 sum_{j>=i} s_j).
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), want_a(8), want_b(8);
  for (int k = 0; k < 2; ++k) {
    std::vector<double> s(4);
    double acc = 0;
    for (int i = 0; i < 4; ++i) s[i] = acc += av[i * 2 + k] * bv[i * 2 + k];
    for (int i = 0; i < 4; ++i) {
      double tail = 0;
      for (int j = i; j < 4; ++j) tail += s[j];
      want_a[i * 2 + k] = bv[i * 2 + k] * (1 + 2 * tail);
      want_b[i * 2 + k] = av[i * 2 + k] * (1 + 2 * tail);
    }
  }
  expect_tensor_near(g[0], tensor(want_a, Shape{4, 2}), 1e-12);
  expect_tensor_near(g[1], tensor(want_b, Shape{4, 2}), 1e-12);
}

TEST(Scan, DynamicLengthKeepsOneTrace) {
  Rnn r;
  auto f = function(
      [&](const Tensor& xs) {
        return loss_and_grads([&](const std::vector<Tensor>& a) { return rnn_loss_scan(r.h0, a[0], r.w, a[1], r.b); }, {xs, r.u});
      },
      {.input_signature = std::vector<TensorSpec>{{DType::float64, {kDynamic, 2, 4}, "xs"}}});
  for (std::int64_t n : {5, 1, 9, 0}) {
    SCOPED_TRACE("steps " + std::to_string(n));
    Tensor xs = randn({n, 2, 4}, 20 + static_cast<std::uint64_t>(n));
    std::vector<Tensor> got;
    try {
      got = f(xs);
    } catch (const Error& e) {
      ADD_FAILURE() << "steps " << n << ": " << e.what();
      continue;
    }
    std::vector<Tensor> want = loss_and_grads(
        [&](const std::vector<Tensor>& a) { return rnn_loss_unrolled(r.h0, a[0], r.w, a[1], r.b); }, {xs, r.u});
    ASSERT_EQ(got.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      if (n == 0 && i > 0) {  // no steps: xs and u are unconnected, their gradients zeros
        expect_tensor_near(got[i], zeros_like(i == 1 ? xs : r.u), 1e-12);
        continue;
      }
      expect_tensor_near(got[i], want[i], 1e-10);
    }
  }
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(Scan, LengthWithoutXs) {
  // x_{t+1} = 0.5 x_t + 1, five steps, from a carry alone.
  auto run = [](const Tensor& x0) {
    return scan([](const std::vector<Tensor>& c, const std::vector<Tensor>&) {
      Tensor n = c[0] * 0.5 + 1.0;
      return Pair{{n}, {n}};
    }, {x0}, {}, ScanOptions{.length = 5});
  };
  auto traced = function([&](const Tensor& x0) {
    GradientTape tape;
    tape.watch(x0);
    auto [c, ys] = run(x0);
    return std::vector<Tensor>{c[0], ys[0], tape.gradient(sum(ys[0]), x0)};
  });
  std::vector<Tensor> got = traced(scalar<double>(2.0));
  double x = 2.0, g = 0, d = 1;
  std::vector<double> ys;
  for (int i = 0; i < 5; ++i) {
    x = 0.5 * x + 1;
    ys.push_back(x);
    d *= 0.5;
    g += d;
  }
  expect_tensor_near(got[0], scalar<double>(x));
  expect_tensor_near(got[1], tensor(ys));
  expect_tensor_near(got[2], scalar<double>(g));
  auto [ec, eys] = run(scalar<double>(2.0));
  expect_tensor_near(eys[0], tensor(ys));
}

TEST(Scan, SecondOrderGradientsAndHessian) {
  // f(w) = sum over steps of tanh(x_t w + h) chained: a Hessian through the scan, traced
  // (grad of grad in one ef::function) and eagerly, against central differences of the
  // gradient computed by the unrolled loop.
  Tensor xs = randn({4, 3}, 31), w0 = randn({3}, 32) * 0.5;
  auto loss = [&](const Tensor& w) {
    auto [h, ys] = scan([&](const Tensor& c, const Tensor& x) {
      Tensor n = tanh(sum(x * w) + c * 0.7);
      return std::pair{n, n * n};
    }, zeros({}, DType::float64), xs);
    return sum(ys) + h;
  };
  auto loss_unrolled = [&](const Tensor& w) {
    Tensor h = zeros({}, DType::float64), total = zeros({}, DType::float64);
    for (std::int64_t i = 0; i < 4; ++i) {
      h = tanh(sum(reshape(slice(xs, {i}, {i + 1}), Shape{3}) * w) + h * 0.7);
      total = total + h * h;
    }
    return total + h;
  };
  Tensor want_h = hessian(loss_unrolled)(w0);
  Tensor eager_h = hessian(loss)(w0);
  expect_tensor_near(eager_h, want_h, 1e-10);
  // grad of grad inside one trace: the Hessian row by row.
  auto traced_grad_of_grad = function([&](const Tensor& w, const Tensor& v) {
    return grad([&](const Tensor& z) { return sum(grad(loss)(z) * v); })(w);  // H v
  });
  for (int k = 0; k < 3; ++k) {
    std::vector<double> e(3, 0.0);
    e[static_cast<std::size_t>(k)] = 1.0;
    Tensor hv = traced_grad_of_grad(w0, tensor(e));
    expect_tensor_near(hv, reshape(slice(want_h, {k}, {k + 1}), Shape{3}), 1e-9);
  }
  // and the Hessian through a traced scan with ef::hessian (vmap over the scan node).
  auto traced_hessian = function([&](const Tensor& w) { return hessian(loss)(w); });
  expect_tensor_near(traced_hessian(w0), want_h, 1e-9);
  // Finite differences of the gradient, as a check of the reference itself.
  for (int k = 0; k < 3; ++k) {
    Tensor fd = numeric_gradient([&](const Tensor& w) { return grad(loss_unrolled)(w).to_vector<double>()[static_cast<std::size_t>(k)]; }, w0);
    expect_tensor_near(reshape(slice(want_h, {k}, {k + 1}), Shape{3}), fd, 1e-6);
  }
}

TEST(Scan, JacobianThroughAScan) {
  Tensor xs = randn({3, 2}, 41);
  auto ys_of = [&](const Tensor& h0) {
    return scan([](const Tensor& c, const Tensor& x) {
      Tensor n = sin(c) * x;
      return std::pair{n, n};
    }, h0, xs).second;
  };
  Tensor h0 = randn({2}, 42);
  Tensor want = jacrev([&](const Tensor& h) {
    Tensor c = h;
    std::vector<Tensor> rows;
    for (std::int64_t i = 0; i < 3; ++i) {
      c = sin(c) * reshape(slice(xs, {i}, {i + 1}), Shape{2});
      rows.push_back(c);
    }
    return stack(rows, 0);
  })(h0);
  expect_tensor_near(jacrev(ys_of)(h0), want, 1e-12);
  expect_tensor_near(jacfwd(ys_of)(h0), want, 1e-12);
  auto traced = function([&](const Tensor& h) { return std::vector<Tensor>{jacrev(ys_of)(h), jacfwd(ys_of)(h)}; });
  std::vector<Tensor> got = traced(h0);
  expect_tensor_near(got[0], want, 1e-12);
  expect_tensor_near(got[1], want, 1e-12);
}

TEST(Scan, EachStepsDrawIsDifferentiatedAtThatDraw) {
  // acc <- acc + sum(r_t * x), r_t drawn in the body: dy/dx = sum_t r_t; with x = 1,
  // y = sum(dy/dx). A gradient that ran the body again would see other draws.
  auto f = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    auto [acc, ys] = scan([&](const std::vector<Tensor>& c, const std::vector<Tensor>&) {
      return Pair{{c[0] + sum(random::uniform({32}) * x)}, {}};
    }, {scalar<float>(0.0f)}, {}, ScanOptions{.length = 4});
    return std::vector<Tensor>{acc[0], tape.gradient(acc[0], x)};
  });
  auto out = f(ones({32}));
  EXPECT_NEAR(out[0].item<float>(), sum(out[1]).item<float>(), 1e-3);
  EXPECT_GT(max(out[1]).item<float>() - min(out[1]).item<float>(), 0.2f);
  auto again = f(ones({32}));
  EXPECT_NE(again[0].item<float>(), out[0].item<float>());  // a draw per call and step
}

TEST(Scan, VariablesReadInTheBodyGetGradients) {
  Variable w(randn({3}, 51), "w");
  Tensor xs = randn({4, 3}, 52);
  auto loss = [&] {
    auto [c, ys] = scan([&](const Tensor& c, const Tensor& x) {
      Tensor n = c + sum(x * w.value());
      return std::pair{n, n};
    }, zeros({}, DType::float64), xs);
    return sum(ys);
  };
  auto step = [&] {
    GradientTape tape;
    Tensor y = loss();
    return tape.gradient(y, w);
  };
  // d/dw sum_t sum_{i<=t} x_i w = sum_i (4 - i) x_i.
  std::vector<double> xv = xs.to_vector<double>(), want(3, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) want[j] += (4 - i) * xv[i * 3 + j];
  expect_tensor_near(step(), tensor(want), 1e-12);
  auto traced = function(step);
  expect_tensor_near(traced(), tensor(want), 1e-12);
  // A new value of the variable is read at the next call, not baked into the trace.
  w.assign(w.value() * 2.0);
  expect_tensor_near(traced(), tensor(want), 1e-12);
  EXPECT_EQ(traced.tracing_count(), 1);
}

TEST(Scan, BadInputsAreClearErrors) {
  Tensor xs = zeros({4, 3});
  auto grow = [](const Tensor& c, const Tensor& x) { return std::pair{concat({c, x}, 0), x}; };
  expect_error([&] { scan(grow, zeros({3}), xs); }, {"scan", "keep each carry's dtype and shape", "float32[6]", "float32[3]", "step 0"});
  auto traced_grow = function([&](const Tensor& x) { return scan(grow, zeros({3}), x).first; });
  expect_error([&] { traced_grow(xs); }, {"scan", "keep each carry's dtype and shape", "float32[6]"});
  auto to_double = [](const Tensor& c, const Tensor& x) { return std::pair{cast(c, DType::float64), x}; };
  expect_error([&] { scan(to_double, zeros({3}), xs); }, {"scan", "float64[3]", "float32[3]"});
  auto id = [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) { return Pair{c, x}; };
  expect_error([&] { scan(id, {zeros({3})}, {zeros({4, 3}), zeros({5, 3})}); }, {"scan", "leading dim", "float32[4,3]", "float32[5,3]"});
  expect_error([&] { scan(id, {zeros({3})}, {}); }, {"scan", "length"});
  expect_error([&] { scan(id, {zeros({3})}, {zeros({4, 3})}, ScanOptions{.length = 3}); }, {"scan", "length is 3", "4 rows"});
  expect_error([&] { scan(id, {zeros({3})}, {scalar<float>(1)}); }, {"scan", "scalar"});
  expect_error([&] { scan(id, {zeros({3})}, {}, ScanOptions{.length = -1}); }, {"scan", "length must be >= 0"});
  expect_error([&] { scan(ScanBody{}, {zeros({3})}, {xs}); }, {"scan", "empty"});
  // An error inside the body names the step (eagerly) or the body's specs (traced).
  auto bad_at_2 = [](const Tensor& c, const Tensor& x) {
    if (x.item<float>() == 2.0f) return std::pair{c, matmul(c, zeros({5, 5}))};
    return std::pair{c, c};
  };
  expect_error([&] { scan(bad_at_2, zeros({1, 3}), tensor({0.0f, 1.0f, 2.0f, 3.0f})); }, {"scan", "step 2 of 4", "matmul"});
  auto bad = [](const Tensor& c, const Tensor& x) { return std::pair{c, matmul(c, x)}; };
  auto traced_bad = function([&](const Tensor& x) { return scan(bad, zeros({2, 3}), x).second; });
  expect_error([&] { traced_bad(zeros({4, 5, 5})); }, {"scan", "tracing the body", "float32[2,3]", "float32[5,5]", "matmul"});
  // The ys must keep their shapes from step to step (eagerly; traced they are one spec).
  auto varying = [](const Tensor& c, const Tensor& x) {
    return std::pair{c, x.item<float>() > 0.5f ? zeros({2}) : zeros({3})};
  };
  expect_error([&] { scan(varying, zeros({}), tensor({0.0f, 1.0f})); }, {"scan", "ys changed", "step 1"});
}

TEST(Scan, GradientOfAScanInsideATracedFunctionCalledUnderATape) {
  // A traced function containing a scan, differentiated from outside (the call op's split
  // records the scan's residual variant).
  Rnn r;
  auto f = function([&](const Tensor& u) { return rnn_loss_scan(r.h0, r.xs, r.w, u, r.b); });
  GradientTape tape;
  tape.watch(r.u);
  Tensor y = f(r.u);
  Tensor g = tape.gradient(y, r.u);
  std::vector<Tensor> want = loss_and_grads([&](const std::vector<Tensor>& a) { return rnn_loss_unrolled(r.h0, r.xs, r.w, a[0], r.b); }, {r.u});
  expect_tensor_near(y, want[0], 1e-12);
  expect_tensor_near(g, want[1], 1e-10);
}

TEST(Scan, SavedFunctionWithAScanLoadsAndRuns) {
  // An RNN over a dynamic number of steps, its weights variables (read in the body) and a
  // reverse scan with a constant: saved, loaded, and run with other lengths.
  Variable w(randn({4, 3}, 61) * 0.5, "w"), u(randn({3, 3}, 62) * 0.5, "u");
  Tensor scale = randn({3}, 63);
  auto f = function(
      [&](const Tensor& xs) {
        auto [h, hs] = scan([&](const Tensor& c, const Tensor& x) {
          Tensor n = tanh(matmul(x, w.value()) + matmul(c, u.value()));
          return std::pair{n, n * scale};
        }, zeros({2, 3}, DType::float64), xs);
        auto [total, partial] = scan([](const Tensor& c, const Tensor& y) { return std::pair{c + y, c + y}; },
                                     zeros({2, 3}, DType::float64), hs, ScanOptions{.reverse = true});
        return std::vector<Tensor>{h, partial};
      },
      {.input_signature = std::vector<TensorSpec>{{DType::float64, {kDynamic, 2, 4}, "xs"}}, .name = "rnn"});
  auto dir = ef::testing::fresh_temp_dir("scan_saved");
  f.get_concrete_function(TensorSpec{DType::float64, {kDynamic, 2, 4}, {}});
  save(f, (dir / "rnn").string());
  SavedModel loaded = load((dir / "rnn").string());
  for (std::int64_t n : {3, 7}) {
    Tensor xs = randn({n, 2, 4}, 70 + static_cast<std::uint64_t>(n));
    std::vector<Tensor> want = f(xs);
    std::vector<Tensor> got = loaded(loaded.signature_names().at(0), {xs});
    ASSERT_EQ(got.size(), 2u);
    expect_tensor_near(got[0], want[0], 1e-12);
    expect_tensor_near(got[1], want[1], 1e-12);
  }
  std::size_t scans = 0;
  for (const auto& node : loaded.concrete_function(loaded.signature_names().at(0))->traced_graph().nodes)
    scans += node.op->name() == std::string("scan");
  EXPECT_EQ(scans, 2u);
  // A loaded model sees the variables as saved: its own copies.
  EXPECT_EQ(loaded.variables().size(), 2u);
}

TEST(Scan, EffectsInTheBodyRunEveryStepAndAreNeverDropped) {
  // The scan's outputs are unused: an effect inside keeps it (passes never drop effects), and
  // replays run the print and the assignment once per step.
  Variable counter(zeros({}, DType::int64), "counter");
  std::vector<std::string> lines;
  set_print_sink([&](std::string_view line) { lines.emplace_back(line); });
  auto f = function([&](const Tensor& xs) {
    scan([&](const Tensor& c, const Tensor& x) {
      print("step", x);
      counter.assign_add(scalar<std::int64_t>(1));
      return std::pair{c, x};
    }, zeros({}), xs);
    return sum(xs);
  });
  f(tensor({1.0f, 2.0f, 3.0f}));
  f(tensor({4.0f, 5.0f}));
  set_print_sink(nullptr);
  EXPECT_EQ(counter.value().item<std::int64_t>(), 5);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find("step"), std::string::npos);
  EXPECT_NE(lines[4].find('5'), std::string::npos);
  EXPECT_EQ(f.tracing_count(), 2);  // two static lengths
  EXPECT_EQ(count_nodes(f.concrete_functions()[0]->graph(), "scan"), 1u);  // the optimized graph keeps it
}

TEST(Scan, NestedScansDifferentiateInATrace) {
  // For each row of a [3, 4] matrix, an inner scan accumulates c <- tanh(c * w + x); the outer
  // carry sums the inner finals. Gradients w.r.t. w and the matrix, traced vs unrolled.
  Tensor m = randn({3, 4}, 81), w = scalar<double>(0.8);
  auto by_scan = [](const std::vector<Tensor>& a) {
    auto [total, finals] = scan([&](const Tensor& acc, const Tensor& row) {
      auto [c, cs] = scan([&](const Tensor& c, const Tensor& x) {
        Tensor n = tanh(c * a[1] + x);
        return std::pair{n, n};
      }, zeros({}, DType::float64), row);
      return std::pair{acc + c, sum(cs)};
    }, zeros({}, DType::float64), a[0]);
    return total + sum(finals * finals);
  };
  auto by_hand = [](const std::vector<Tensor>& a) {
    Tensor total = zeros({}, DType::float64), extra = zeros({}, DType::float64);
    for (std::int64_t i = 0; i < 3; ++i) {
      Tensor c = zeros({}, DType::float64), cs = zeros({}, DType::float64);
      for (std::int64_t j = 0; j < 4; ++j) {
        c = tanh(c * a[1] + reshape(slice(a[0], {i, j}, {i + 1, j + 1}), Shape{}));
        cs = cs + c;
      }
      total = total + c;
      extra = extra + cs * cs;
    }
    return total + extra;
  };
  std::vector<Tensor> want = loss_and_grads(by_hand, {m, w});
  auto traced = function([&](const Tensor& m, const Tensor& w) { return loss_and_grads(by_scan, {m, w}); });
  std::vector<Tensor> got = traced(m, w);
  for (std::size_t i = 0; i < 3; ++i) expect_tensor_near(got[i], want[i], 1e-10);
  std::vector<Tensor> eager = loss_and_grads(by_scan, {m, w});
  for (std::size_t i = 0; i < 3; ++i) expect_tensor_near(eager[i], want[i], 1e-12);
}

TEST(Scan, VmapRunsOneScanOverTheVmappedBody) {
  // Per-example RNN losses over a batch of sequences, with a shared and a per-example initial
  // state: one scan (no per-example fallback), eagerly and traced, vs a loop over examples.
  Rnn r;
  Tensor batch_xs = randn({3, 5, 2, 4}, 91), batch_h0 = randn({3, 2, 3}, 92);
  auto loss = [&](const Tensor& xs, const Tensor& h0) { return rnn_loss_scan(h0, xs, r.w, r.u, r.b); };
  auto shared_h0 = [&](const Tensor& xs) { return rnn_loss_scan(r.h0, xs, r.w, r.u, r.b, true); };
  std::vector<Tensor> want_a, want_b;
  for (std::int64_t i = 0; i < 3; ++i) {
    Tensor xs = reshape(slice(batch_xs, {i}, {i + 1}), Shape{5, 2, 4});
    want_a.push_back(rnn_loss_unrolled(reshape(slice(batch_h0, {i}, {i + 1}), Shape{2, 3}), xs, r.w, r.u, r.b));
    want_b.push_back(rnn_loss_unrolled(r.h0, xs, r.w, r.u, r.b, true));
  }
  detail::take_vmap_fallback_log();
  auto traced = function([&](const Tensor& xs, const Tensor& h0) {
    return std::vector<Tensor>{vmap(loss)(xs, h0), vmap(shared_h0)(xs)};
  });
  for (const auto& got : {std::vector<Tensor>{vmap(loss)(batch_xs, batch_h0), vmap(shared_h0)(batch_xs)}, traced(batch_xs, batch_h0)}) {
    expect_tensor_near(got[0], stack(want_a, 0), 1e-12);
    expect_tensor_near(got[1], stack(want_b, 0), 1e-12);
  }
  EXPECT_EQ(detail::take_vmap_fallback_log(), std::vector<std::string>{});
  EXPECT_EQ(count_nodes(traced.concrete_functions()[0]->traced_graph(), "scan"), 2u);
  // Per-example gradients through the batched scan.
  Tensor g = vmap(grad([&](const Tensor& u, const Tensor& xs) { return rnn_loss_scan(r.h0, xs, r.w, u, r.b); }),
                  {not_batched, 0})(r.u, batch_xs);
  for (std::int64_t i = 0; i < 3; ++i) {
    Tensor xs = reshape(slice(batch_xs, {i}, {i + 1}), Shape{5, 2, 4});
    Tensor want = grad([&](const Tensor& u) { return rnn_loss_unrolled(r.h0, xs, r.w, u, r.b); })(r.u);
    expect_tensor_near(reshape(slice(g, {i}, {i + 1}), Shape{3, 3}), want, 1e-10);
  }
}

TEST(Scan, TokenIdsThroughAnEmbeddingGetTheTableItsGradient) {
  // xs are int64 token ids; the body looks rows up in a captured table (gather): the table
  // gets its gradient (scatter-add per step), the ids none.
  Tensor table = randn({5, 3}, 101);
  Tensor ids = tensor(std::vector<std::int64_t>{4, 1, 1, 0, 3, 4}, Shape{3, 2});  // 3 steps, batch 2
  auto by_scan = [&](const std::vector<Tensor>& a) {
    auto [h, hs] = scan([&](const Tensor& c, const Tensor& tok) {
      Tensor n = tanh(c * 0.5 + gather(a[0], tok, 0));
      return std::pair{n, n};
    }, zeros({2, 3}, DType::float64), ids);
    return sum(hs * hs);
  };
  auto by_hand = [&](const std::vector<Tensor>& a) {
    Tensor c = zeros({2, 3}, DType::float64), total = zeros({}, DType::float64);
    for (std::int64_t t = 0; t < 3; ++t) {
      c = tanh(c * 0.5 + gather(a[0], reshape(slice(ids, {t}, {t + 1}), Shape{2}), 0));
      total = total + sum(c * c);
    }
    return total;
  };
  std::vector<Tensor> want = loss_and_grads(by_hand, {table});
  auto traced = function([&](const Tensor& t) { return loss_and_grads(by_scan, {t}); });
  std::vector<Tensor> got = traced(table);
  expect_tensor_near(got[0], want[0], 1e-12);
  expect_tensor_near(got[1], want[1], 1e-10);
  EXPECT_GT(max(abs(got[1])).item<double>(), 0.0);
  EXPECT_EQ(max(abs(reshape(slice(got[1], {2}, {3}), Shape{3}))).item<double>(), 0.0);  // token 2 never appears
}

TEST(Scan, OnnxExportPassesTheCheckerOrNamesWhatIsMissing) {
  // Numbers are compared with onnxruntime in python/tests/test_scan.py; here the checker
  // accepts the Scan (forward and reverse), and a scan without xs is a named error.
  auto dir = ef::testing::fresh_temp_dir("scan_onnx");
  Tensor w = randn({4, 3}, 111, DType::float32);
  for (bool reverse : {false, true}) {
    auto f = function([&](const Tensor& xs) {
      auto [h, hs] = scan([&](const Tensor& c, const Tensor& x) {
        Tensor n = tanh(matmul(x, w) + c);
        return std::pair{n, n};
      }, zeros({2, 3}), xs, ScanOptions{.reverse = reverse});
      return hs;
    });
    onnx::export_model(*f.get_concrete_function(TensorSpec{DType::float32, {5, 2, 4}, {}}), (dir / "scan.onnx").string());
    EXPECT_GT(std::filesystem::file_size(dir / "scan.onnx"), 0u);
  }
  auto no_xs = function([](const Tensor& x0) {
    return scan([](const std::vector<Tensor>& c, const std::vector<Tensor>&) { return Pair{{c[0] * 2.0f}, {}}; }, {x0}, {},
                ScanOptions{.length = 3}).first[0];
  });
  expect_error([&] { onnx::export_model(*no_xs.get_concrete_function(TensorSpec{DType::float32, {2}, {}}), (dir / "no.onnx").string()); },
               {"onnx", "scan", "without xs"});
}

TEST(Scan, PrintsLikeAJaxprWithItsBodyIndented) {
  auto f = function([](const Tensor& xs) {
    auto [c, ys] = scan([](const Tensor& c, const Tensor& x) { return std::pair{c + x, c * x}; }, zeros({3}), xs,
                        ScanOptions{.reverse = true});
    return std::vector<Tensor>{c, ys};
  });
  std::string text = ir::to_text(f.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 3}, {}})->traced_graph());
  EXPECT_EQ(text,
            "{ lambda a:f32[3] ; b:f32[?,3]. let\n"
            "    c:f32[3] d:f32[?,3] = scan[reverse=True carries=1 xs=1\n"
            "      body={ lambda ; a:f32[3] b:f32[3]. let\n"
            "          c:f32[3] d:f32[3] = fused_elementwise[program=(t0=add(i0,i1); t1=mul(i0,i1)) out=(t0,t1)] a b\n"
            "        in (c, d) }] a b\n"
            "  in (c, d) }");
}

TEST(Scan, DynamicBatchAndLengthTogether) {
  // xs [?, ?, 4]: the carry's batch dim is dynamic too (made from the first row at run time).
  Rnn r;
  auto f = function(
      [&](const Tensor& xs) {
        return loss_and_grads(
            [&](const std::vector<Tensor>& a) {
              Tensor h0 = zeros_like(matmul(reshape(slice(a[0], {0}, {1}), Shape{-1, 4}), r.w));
              return rnn_loss_scan(h0, a[0], r.w, a[1], r.b);
            },
            {xs, r.u});
      },
      {.input_signature = std::vector<TensorSpec>{{DType::float64, {kDynamic, kDynamic, 4}, "xs"}}});
  for (auto [n, batch] : {std::pair<std::int64_t, std::int64_t>{4, 2}, {2, 5}}) {
    Tensor xs = randn({n, batch, 4}, 120 + static_cast<std::uint64_t>(n));
    Tensor h0 = zeros({batch, 3}, DType::float64);
    std::vector<Tensor> want = loss_and_grads(
        [&](const std::vector<Tensor>& a) { return rnn_loss_unrolled(h0, a[0], r.w, a[1], r.b); }, {xs, r.u});
    std::vector<Tensor> got = f(xs);
    for (std::size_t i = 0; i < 3; ++i) expect_tensor_near(got[i], want[i], 1e-10);
  }
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(Scan, NoCarryIsAMapAndItsGradient) {
  Tensor xs = randn({4, 3}, 131);
  auto f = function([](const Tensor& xs) {
    GradientTape tape;
    tape.watch(xs);
    auto [carry, ys] = scan([](const std::vector<Tensor>&, const std::vector<Tensor>& x) {
      return Pair{{}, {x[0] * x[0] * x[0]}};
    }, {}, {xs});
    EXPECT_TRUE(carry.empty());
    return std::vector<Tensor>{ys[0], tape.gradient(sum(ys[0]), xs)};
  });
  std::vector<Tensor> got = f(xs);
  expect_tensor_near(got[0], xs * xs * xs, 1e-12);
  expect_tensor_near(got[1], xs * xs * 3.0, 1e-12);
}
