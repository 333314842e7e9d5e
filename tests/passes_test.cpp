// Golden printed graphs: the traced form and what the passes make of it.
#include "function/call_op.h"
#include "function/scan_op.h"
#include "test_util.h"

using namespace ef;

namespace {
std::string traced_text(const std::function<Tensor(const Tensor&)>& fn, const TensorSpec& spec, passes::PassOptions p = {}) {
  auto f = function(fn, {.passes = p});
  return f.get_concrete_function(spec)->str();
}
}  // namespace

TEST(Passes, DeadCodeIsRemovedButEffectsStay) {
  auto fn = [](const Tensor& x) {
    Tensor unused = exp(x);
    ef::print("x", x);
    return x + 1.0f;
  };
  TensorSpec s{DType::float32, {3}};
  EXPECT_EQ(traced_text(fn, s),
            "{ lambda ; a:f32[3]. let\n"
            "    print[format=\"x {}\"] a\n"
            "    b:f32[3] = add a 1.0:f32[]\n"
            "  in (b,) }");
  EXPECT_EQ(traced_text(fn, s, {.dead_code = false, .common_subexpr = false}),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = exp a\n"
            "    print[format=\"x {}\"] a\n"
            "    c:f32[3] = add a 1.0:f32[]\n"
            "  in (c,) }");
}

TEST(Passes, CommonSubexpressionsAreMerged) {
  auto fn = [](const Tensor& x) {
    Tensor first = sum(exp(x), {0});  // statements, not one expression: C++ leaves operand order open
    Tensor second = sum(exp(x), {0});
    Tensor doubled = first + second;
    return doubled + sum(exp(x), {-1}, true);
  };
  TensorSpec s{DType::float32, {2, 3}};
  EXPECT_EQ(traced_text(fn, s),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[2,3] = exp a\n"
            "    c:f32[3] = sum[axes=(0,)] b\n"
            "    d:f32[3] = add c c\n"
            "    e:f32[2,1] = sum[axes=(-1,) keepdims=True] b\n"
            "    f:f32[2,3] = add d e\n"
            "  in (f,) }");
}

TEST(Passes, OptimizedGraphComputesTheSame) {
  random::set_seed(9);
  auto fn = [](const Tensor& x) { return sum(exp(x), {0}) * sum(exp(x), {0}) - tanh(x); };
  auto opt = function(fn);
  auto plain = function(fn, {.passes = {.dead_code = false, .common_subexpr = false}});
  Tensor x = random::normal({4, 5});
  EXPECT_EQ(opt(x).to_vector<float>(), plain(x).to_vector<float>());
  EXPECT_EQ(opt(x).to_vector<float>(), fn(x).to_vector<float>());
}

TEST(Passes, VariablesPrintByName) {
  Variable w(ones({3, 2}), "model/w");
  auto f = function([&](const Tensor& x) {
    w.assign_add(ones({3, 2}));
    return matmul(x, w);
  });
  EXPECT_EQ(f.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 3}})->str(),
            "{ lambda a:f32[3,2] ; b:f32[?,3]. let\n"
            "    assign_add[var=model/w] a\n"
            "    c:f32[3,2] = read_variable[var=model/w]\n"
            "    d:f32[?,2] = matmul b c\n"
            "  in (d,) }");
}

TEST(Passes, DenseChainsFuseIntoOneOneDnnCall) {
  random::set_seed(12);
  nn::Dense relu_dense(6, "relu");
  auto f = function(relu_dense);
  Tensor x = random::normal({5, 4});
  Tensor eager = relu_dense(x);
  auto cf = f.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 4}});
  std::string k = relu_dense.kernel().name(), b = relu_dense.bias().name();
  EXPECT_EQ(cf->traced_graph().nodes.size(), 5u);  // two reads, matmul, add, relu
  // The bias joins the matmul and relu runs on ef's own kernel right after it (NaN kept).
  EXPECT_EQ(cf->str(),
            "{ lambda ; a:f32[?,4]. let\n"
            "    b:f32[?,6] = fused_dense[bias=True activation=relu] a " + k + " " + b + "\n"
            "  in (b,) }");
  EXPECT_EQ(f(x).to_vector<float>(), eager.to_vector<float>()) << "bias and relu fused: bit-equal";
  // Eager under a tape runs the composed ops (they have gradients): the same bits again.
  GradientTape tape;
  EXPECT_EQ(relu_dense(x).to_vector<float>(), eager.to_vector<float>());
  EXPECT_EQ(f(random::normal({0, 4})).shape(), Shape({0, 6}));
}

TEST(Passes, FusedDenseKeepsNaNLikeEager) {
  for (const char* act : {"relu", "sigmoid", "tanh", "gelu", "linear"}) {
    SCOPED_TRACE(act);
    nn::Dense d(4, act);
    Tensor x = tensor({{NAN, 1.0f, 2.0f}, {3.0f, 4.0f, 5.0f}});
    auto eager = d(x).to_vector<float>();
    auto traced = function(d)(x).to_vector<float>();
    for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(std::isnan(eager[i]), std::isnan(traced[i])) << i;
    EXPECT_TRUE(std::isnan(traced[0]));
  }
}

TEST(Passes, FusedActivationsEqualEagerBitForBit) {
  random::set_seed(13);
  const int threads_before = num_threads();
  // The activation runs on each finished stretch of rows inside the GEMM: widths across the
  // register tile's 16 and 32 columns, rows across its 12 and the 144-row block, 1 and 2 threads.
  struct Case {
    std::int64_t rows, in, out;
    int threads;
  };
  for (Case c : {Case{32, 24, 16, 1}, Case{150, 40, 70, 1}, Case{150, 300, 37, 2}, Case{64, 200, 512, 2}})
    for (const char* act : {"relu", "sigmoid", "tanh", "gelu"}) {
      SCOPED_TRACE(std::string(act) + " rows " + std::to_string(c.rows) + " out " + std::to_string(c.out) +
                   " threads " + std::to_string(c.threads));
      set_num_threads(c.threads);
      sync_thread_budget();
      nn::Dense d(c.out, act);
      auto f = function(d);
      Tensor x = random::normal({c.rows, c.in}, 0, 2);
      auto eager = d(x).to_vector<float>(), traced = f(x).to_vector<float>();
      EXPECT_NE(f.get_concrete_function(x.spec())->str().find(std::string("activation=") + act), std::string::npos);
      EXPECT_EQ(traced, eager);  // one set of vector routines for fused, traced and eager
      GradientTape tape;          // composed ops (not the fused kernel) under a tape: same bits
      EXPECT_EQ(d(x).to_vector<float>(), eager);
    }
  set_num_threads(threads_before);
  sync_thread_budget();
}

TEST(Passes, NoFusionWhenTheMatmulIsReadTwice) {
  Tensor w = ones({3, 2});
  auto fn = [&](const Tensor& x) {
    Tensor y = matmul(x, w);
    return std::make_pair(relu(y + ones({2})), y);
  };
  auto f = function(fn);
  auto cf = f.get_concrete_function(TensorSpec{DType::float32, {1, 3}});
  EXPECT_EQ(cf->str().find("fused_dense"), std::string::npos) << cf->str();
  auto [a, y] = f(ones({1, 3}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 3}));
}

TEST(Passes, ElementwiseRunsFuseIntoOneLoopBitEqual) {
  random::set_seed(14);
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor a = exp(x) * 0.5f;   // scalar constants ride along as inputs
    Tensor b = sigmoid(a - y);
    Tensor c = tanh(b) + a;     // `a` is read inside the run only
    return std::make_pair(c, b);  // `b` leaves the run too: a second output
  };
  auto f = function(fn);
  Tensor x = random::normal({300, 7}), y = random::normal({300, 7});
  auto cf = f.get_concrete_function(x.spec(), y.spec());
  EXPECT_EQ(cf->str(),
            "{ lambda ; a:f32[300,7] b:f32[300,7]. let\n"
            "    c:f32[300,7] d:f32[300,7] = fused_elementwise[program=(t0=exp(i0); t1=mul(t0,i1); t2=sub(t1,i2); "
            "t3=sigmoid(t2); t4=tanh(t3); t5=add(t4,t1)) out=(t3,t5)] a 0.5:f32[] b\n"
            "  in (d, c) }");
  auto [c, b] = f(x, y);
  auto [ec, eb] = fn(x, y);
  EXPECT_EQ(c.to_vector<float>(), ec.to_vector<float>());
  EXPECT_EQ(b.to_vector<float>(), eb.to_vector<float>());
}

TEST(Passes, ElementwiseFusionStopsAtBroadcastsAndKeepsDynamicBatches) {
  auto fn = [](const Tensor& x, const Tensor& row) { return relu(exp(x) + row) * 2.0f; };
  auto f = function(fn);
  std::string text = f.get_concrete_function(TensorSpec{DType::float32, {4, 3}}, TensorSpec{DType::float32, {3}})->str();
  EXPECT_NE(text.find("d:f32[4,3] = add c b"), std::string::npos) << text;  // the broadcast add is not fused
  EXPECT_NE(text.find("fused_elementwise[program=(t0=relu(i0); t1=mul(t0,i1))"), std::string::npos) << text;
  std::string dyn = f.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 3}}, TensorSpec{DType::float32, {3}})->str();
  // A dynamic batch fuses too (fit traces with one).
  EXPECT_NE(dyn.find("e:f32[?,3] = fused_elementwise[program=(t0=relu(i0); t1=mul(t0,i1))"), std::string::npos) << dyn;
  Tensor x = reshape(arange(12, DType::float32), {4, 3}) * 0.1f, row = tensor({-1.f, 0.f, 1.f});
  EXPECT_EQ(f(x, row).to_vector<float>(), fn(x, row).to_vector<float>());
  FunctionOptions dyn_batch;
  dyn_batch.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 3}}, {DType::float32, {3}}};
  auto g = function(fn, dyn_batch);
  for (std::int64_t batch : {1, 4, 7}) {
    Tensor xb = random::normal({batch, 3});
    EXPECT_EQ(g(xb, row).to_vector<float>(), fn(xb, row).to_vector<float>()) << batch;
  }
  EXPECT_EQ(g.tracing_count(), 1);
}

// Two inputs of shape [?,3] may differ at run time ([1,3] against [5,3] broadcasts): the
// fused kernel then gives what the unfused ops give.
TEST(Passes, FusedDynamicInputsThatBroadcastAtRunTime) {
  auto fn = [](const Tensor& a, const Tensor& b) { return tanh(a * b + a) - b; };
  FunctionOptions options;
  options.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 3}}, {DType::float32, {kDynamic, 3}}};
  auto f = function(fn, options);
  std::string text = f.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 3}}, TensorSpec{DType::float32, {kDynamic, 3}})->str();
  EXPECT_NE(text.find("fused_elementwise"), std::string::npos) << text;
  Tensor a = random::normal({1, 3}), b = random::normal({5, 3});
  Tensor y = f(a, b);
  EXPECT_EQ(y.shape(), (Shape{5, 3}));
  EXPECT_EQ(y.to_vector<float>(), fn(a, b).to_vector<float>());
  Tensor same = random::normal({5, 3});
  EXPECT_EQ(f(same, b).to_vector<float>(), fn(same, b).to_vector<float>());
  EXPECT_THROW(f(random::normal({2, 3}), b), Error);  // 2 against 5: no broadcast, a clear error
}

// A Dense layer's train step with a dynamic batch (how fit traces): the bias add's gradient
// needs no sum_to over the matmul's output (a [N] bias never reshapes a [?,T,N] product), so
// nothing but the add reads the product and fuse_dense takes the add in.
TEST(Passes, DenseBiasFusesInADynamicBatchTrainStep) {
  random::set_seed(21);
  nn::Dense d(8, "gelu");
  Tensor x = random::normal({4, 5, 6});
  d(x);
  auto body = [&](const Tensor& xs) {
    GradientTape tape;
    Tensor loss = mean(square(d(xs)));
    return tape.gradient(loss, d.trainable_weights());
  };
  FunctionOptions options;
  options.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 5, 6}}};
  auto f = function(body, options);
  std::string text = f.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 5, 6}})->str();
  EXPECT_NE(text.find("fused_dense[bias=True]"), std::string::npos) << text;
  for (std::int64_t batch : {1, 4, 9}) {
    Tensor xb = random::normal({batch, 5, 6});
    std::vector<Tensor> got = f(xb), want = body(xb);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) ef::testing::expect_tensor_near(got[i], want[i], 1e-6);
  }
}

// Where broadcasting may change an operand's shape, its gradient is still summed back to it:
// a [?,1] column, a [?,3] against another [?,3] (either may be 1 at run time), and a rank-1
// operand against a rank-2 one.
TEST(Passes, BinaryGradientsSumBackWhereverShapesMayBroadcast) {
  auto body = [](const Tensor& a, const Tensor& b) {
    GradientTape tape;
    tape.watch(a);
    tape.watch(b);
    Tensor y = sum(square(a * b + a - b));
    return tape.gradient(y, std::vector<Tensor>{a, b});
  };
  struct Case {
    Shape sa, sb, ra, rb;
  };
  for (const Case& c : {Case{{kDynamic, 1}, {3}, {4, 1}, {3}}, Case{{kDynamic, 3}, {kDynamic, 3}, {1, 3}, {5, 3}},
                        Case{{kDynamic, 3}, {kDynamic, 3}, {5, 3}, {1, 3}}, Case{{3}, {kDynamic, 3}, {3}, {6, 3}},
                        Case{{kDynamic, 3}, {1}, {2, 3}, {1}}}) {
    SCOPED_TRACE(c.sa.str() + " " + c.sb.str());
    FunctionOptions options;
    options.input_signature = std::vector<TensorSpec>{{DType::float32, c.sa}, {DType::float32, c.sb}};
    auto f = function(body, options);
    Tensor a = random::normal(c.ra), b = random::normal(c.rb);
    std::vector<Tensor> got = f(a, b), want = body(a, b);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape(), c.ra);
    EXPECT_EQ(got[1].shape(), c.rb);
    for (std::size_t i = 0; i < 2; ++i) ef::testing::expect_tensor_near(got[i], want[i], 1e-5);
  }
}

// Common-subexpression elimination compares typed parameters, never printed text.
TEST(Passes, CseKeepsCondsThatCaptureDifferentConstants) {
  Tensor c1 = tensor({1.0f, 2.0f}), c2 = tensor({3.0f, 4.0f});
  auto body = [&](const Tensor& x, const Tensor& p) {
    Tensor a = cond(p, [&] { return x * c1; }, [&] { return x; });
    Tensor b = cond(p, [&] { return x * c2; }, [&] { return x; });
    return a + b;
  };
  auto f = function(body);
  Tensor x = ones({2});
  EXPECT_EQ(body(x, scalar(true)).to_vector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(f(x, scalar(true)).to_vector<float>(), (std::vector<float>{4, 6}));
}

TEST(Passes, CseKeepsScalarsThatDifferPastSixDigits) {
  auto f = function([](const Tensor& x) { return x * 1.0000001f - x * 1.0000002f; });
  Tensor x = full({2}, 1e7);
  Tensor eager = x * 1.0000001f - x * 1.0000002f;
  EXPECT_NE(eager.to_vector<float>()[0], 0.0f);
  EXPECT_EQ(f(x).to_vector<float>(), eager.to_vector<float>());
  // And the printed graph shows both scalars exactly.
  std::string text = ir::to_text(f.get_concrete_function(x)->traced_graph());
  EXPECT_NE(text.find("1.0000001"), std::string::npos) << text;
  EXPECT_NE(text.find("1.0000002"), std::string::npos) << text;
}

TEST(Passes, CseStillMergesEqualPureOps) {
  FunctionOptions options;
  options.passes.fuse_elementwise = false;
  auto f = function([](const Tensor& x) { return exp(x) + exp(x); }, options);
  auto cf = f.get_concrete_function(TensorSpec{DType::float32, {4}});
  int exps = 0;
  for (const auto& n : cf->graph().nodes) exps += std::string(n.op->name()) == "exp";
  EXPECT_EQ(exps, 1);
}

// FunctionOptions::passes reach the graphs inside the function's graph: cond branches, while
// and scan bodies (and the variants a gradient derives from them), and a called function's
// graph, which follows the options of the function it was traced for.
TEST(Passes, SubGraphsHonourTheFunctionsPassOptions) {
  auto body = [](const Tensor& x) {
    Tensor c = cond(sum(x) > 0.0f, [&] { Tensor unused = exp(x); return x * 2.0f; }, [&] { return x - 1.0f; });
    std::vector<Tensor> w = while_loop([](const std::vector<Tensor>& v) { return v[1] < scalar<std::int64_t>(3); },
                                       [](const std::vector<Tensor>& v) {
                                         Tensor unused = log(v[0]);
                                         return std::vector<Tensor>{v[0] + 1.0f, v[1] + scalar<std::int64_t>(1)};
                                       },
                                       {c, scalar<std::int64_t>(0)});
    auto [h, ys] = scan([](const Tensor& acc, const Tensor& row) {
      Tensor unused = sqrt(row);
      return std::pair{acc + row, acc};
    }, scalar(0.0f), w[0]);
    return ys + h;
  };
  TensorSpec s{DType::float32, {3}};
  // Elementwise fusion off, so that the ops print as nodes of their own.
  std::string pruned = traced_text(body, s, {.fuse_elementwise = false});
  std::string kept = traced_text(body, s, {.dead_code = false, .fuse_elementwise = false});
  for (const char* op : {" = exp ", " = log ", " = sqrt "}) {
    EXPECT_EQ(pruned.find(op), std::string::npos) << op << pruned;
    EXPECT_NE(kept.find(op), std::string::npos) << op << kept;
  }
  // Fusion on: the branch's dead exp is fused into its loop, the body's dead log too.
  std::string fused = traced_text(body, s, {.dead_code = false});
  EXPECT_NE(fused.find("t0=exp(i0)"), std::string::npos) << fused;
  EXPECT_NE(fused.find("t0=log(i0)"), std::string::npos) << fused;
  EXPECT_EQ(traced_text(body, s).find("exp"), std::string::npos);

  // Under a tape the cond records its variant with residuals, made with the same options.
  auto with_tape = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(cond(sum(x) > 0.0f, [&] { return x * x; }, [&] { return sin(x); }));
    return tape.gradient(y, x);
  }, {.passes = {.dead_code = false}});
  std::size_t conds = 0;
  for (const auto& node : with_tape.get_concrete_function(s)->traced_graph().nodes)
    if (auto* c = dynamic_cast<const CondOp*>(node.op.get())) {
      ++conds;
      EXPECT_FALSE(c->then_branch().options.dead_code);
      EXPECT_FALSE(c->else_branch().options.dead_code);
    }
  EXPECT_GE(conds, 2u);  // the forward cond and its gradient's

  // A called function kept as a call node (inlining off in the caller) runs its graph
  // optimized with its own options.
  auto dead_code_in = [](const passes::PassOptions& inner_passes) {
    auto inner = function([](const Tensor& x) { Tensor unused = exp(x); return x * 2.0f; }, {.passes = inner_passes});
    auto outer = function([&](const Tensor& x) { return inner(x) + 1.0f; }, {.passes = {.inline_calls = false}});
    std::size_t calls = 0, exps = 0;
    for (const auto& node : outer.get_concrete_function(TensorSpec{DType::float32, {3}})->graph().nodes)
      if (auto* call = dynamic_cast<const CallOp*>(node.op.get())) {
        ++calls;
        for (const auto& n : call->function()->optimized().nodes) exps += std::string(n.op->name()) == "exp";
      }
    EXPECT_EQ(calls, 1u);
    return exps;
  };
  EXPECT_EQ(dead_code_in({.fuse_elementwise = false}), 0u);
  EXPECT_EQ(dead_code_in({.dead_code = false, .fuse_elementwise = false}), 1u);
}
