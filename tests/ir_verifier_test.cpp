// The IR verifier (src/trace/verify.h): a hand-broken graph for each invariant, each an
// ef::Error naming the pass and the node; a broken pass named by the pass manager; and the
// real pass pipeline, verified after every pass, over a handful of real programs.
#include <map>
#include <set>

#include "function/call_op.h"
#include "passes/pipeline.h"
#include "test_util.h"
#include "trace/verify.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

const TensorSpec kVec3{DType::float32, {3}};

// relu(x * 2) + 1 as traced: nodes mul, relu, add; two scalar constants.
ir::Graph small_graph() {
  auto f = function([](const Tensor& x) { return relu(x * 2.0f) + 1.0f; });
  ir::Graph g = f.get_concrete_function(kVec3)->traced_graph();
  EXPECT_EQ(g.nodes.size(), 3u);
  return g;
}

void verify_test(const ir::Graph& g) { ir::verify(g, "after pass 'test'"); }

int first_constant(const ir::Graph& g) {
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ir::ValueKind::constant) return static_cast<int>(v);
  ADD_FAILURE() << "no constant";
  return -1;
}

// Every graph reachable from `g` through Primitive::subgraphs(), and how many nodes of each op
// holding sub-graphs they have.
std::map<std::string, int> nested_ops(const ir::Graph& g) {
  std::map<std::string, int> count;
  std::vector<const ir::Graph*> todo{&g};
  std::set<const ir::Graph*> seen;
  while (!todo.empty()) {
    const ir::Graph* h = todo.back();
    todo.pop_back();
    if (!seen.insert(h).second) continue;
    for (const auto& node : h->nodes) {
      auto subs = node.op->subgraphs();
      if (!subs.empty()) ++count[node.op->name()];
      for (const auto& s : subs) todo.push_back(s.graph);
    }
  }
  return count;
}

// Breaks the sub-graph whose role contains `role` of the first `op` node of `g` (an output that does not exist),
// expects the verifier of `g` to name the node, the role and the break, and mends it.
void expect_broken_subgraph_found(const ir::Graph& g, const std::string& op, const std::string& role) {
  SCOPED_TRACE(op + ": " + role);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].op->name() != op) continue;
    for (const SubGraphRef& ref : g.nodes[n].op->subgraphs()) {
      if (ref.role.find(role) == std::string::npos) continue;
      auto& sub = const_cast<ir::Graph&>(*ref.graph);  // this test's own function: mended below
      sub.outputs.push_back(12345);
      expect_error([&] { verify_test(g); }, {"[verify] after pass 'test'", "node " + std::to_string(n) + " (" + op + ")",
                                             role, "is value 12345, which does not exist"});
      sub.outputs.pop_back();
      verify_test(g);
      return;
    }
  }
  ADD_FAILURE() << "no " << op << " node with a sub-graph '" << role << "'";
}

}  // namespace

TEST(IrVerifier, ATracedGraphIsValid) {
  ir::Graph g = small_graph();
  verify_test(g);
  EXPECT_EQ(std::string(g.nodes[0].op->name()), "mul");
  EXPECT_EQ(std::string(g.nodes[1].op->name()), "relu");
  EXPECT_EQ(std::string(g.nodes[2].op->name()), "add");
}

TEST(IrVerifier, AnInputUsedBeforeItIsDefined) {
  ir::Graph g = small_graph();
  g.nodes[0].inputs[0] = g.nodes[1].outputs[0];  // mul reads relu's output
  expect_error([&] { verify_test(g); },
               {"[verify] after pass 'test'", "graph '", "node 0 (mul)", "is used before it is defined (by node 1)"});
}

TEST(IrVerifier, DanglingValueIds) {
  ir::Graph g = small_graph();
  g.nodes[1].inputs[0] = 99;
  expect_error([&] { verify_test(g); }, {"node 1 (relu)", "input 0 (value 99) does not exist"});
  g = small_graph();
  g.nodes[2].outputs[0] = -1;
  expect_error([&] { verify_test(g); }, {"does not list it"});  // its value still names node 2
  g = small_graph();
  g.inputs[0] = 77;
  expect_error([&] { verify_test(g); }, {"says it is input 0, but it is not that input"});
}

TEST(IrVerifier, GraphOutputsMustExist) {
  ir::Graph g = small_graph();
  g.outputs.push_back(42);
  expect_error([&] { verify_test(g); }, {"[verify] after pass 'test'", "output 1 is value 42, which does not exist"});
}

TEST(IrVerifier, OutputTypesMustAgreeWithTheOpsShapeRule) {
  ir::Graph g = small_graph();
  g.values[static_cast<std::size_t>(g.nodes[1].outputs[0])].spec.dtype = DType::int32;
  expect_error([&] { verify_test(g); },
               {"node 1 (relu)", "its outputs are typed (int32[3])", "shape rule (infer) gives (float32[3])", "(float32[3])"});
  g = small_graph();
  g.values[static_cast<std::size_t>(g.nodes[0].outputs[0])].spec.shape = Shape{4};
  expect_error([&] { verify_test(g); }, {"node 0 (mul)", "typed (float32[4])", "gives (float32[3])"});
  // A dynamic dim where the rule knows it is fine (a graph traced with a dynamic batch).
  g = small_graph();
  g.values[static_cast<std::size_t>(g.nodes[0].outputs[0])].spec.shape = Shape{kDynamic};
  verify_test(g);
  // One output too many.
  g = small_graph();
  int extra = static_cast<int>(g.values.size());
  g.values.push_back({kVec3, ir::ValueKind::node_output, 1});
  g.nodes[1].outputs.push_back(extra);
  expect_error([&] { verify_test(g); }, {"node 1 (relu)", "typed (float32[3], float32[3])", "gives (float32[3])"});
  // Inputs the rule rejects.
  g = small_graph();
  g.nodes[2].inputs.push_back(g.inputs[0]);
  expect_error([&] { verify_test(g); }, {"node 2 (add)", "its shape rule (infer) rejects its inputs"});
}

TEST(IrVerifier, ValuesMustSayTrulyWhereTheyComeFrom) {
  ir::Graph g = small_graph();
  g.values[static_cast<std::size_t>(g.nodes[2].outputs[0])].index = 0;  // add's output claims mul made it
  expect_error([&] { verify_test(g); }, {"says it is an output of node 0, which does not list it"});
  g = small_graph();
  g.values[static_cast<std::size_t>(g.inputs[0])].index = 1;
  expect_error([&] { verify_test(g); }, {"says it is input 1"});
  g = small_graph();
  int c = first_constant(g);
  g.values[static_cast<std::size_t>(c)].spec.shape = Shape{2};
  expect_error([&] { verify_test(g); }, {"value " + std::to_string(c) + " is typed float32[2] but its constant is float32[]"});
  g = small_graph();
  g.values[static_cast<std::size_t>(c)].index = 9;
  expect_error([&] { verify_test(g); }, {"says it is constant 9 of"});
}

TEST(IrVerifier, EachValueIsDefinedOnceAndEachNodeHasAnOp) {
  ir::Graph g = small_graph();
  g.nodes[1].outputs.push_back(g.nodes[1].outputs[0]);
  expect_error([&] { verify_test(g); }, {"node 1 (relu)", "is defined twice"});
  g = small_graph();
  g.nodes[1].op = nullptr;
  expect_error([&] { verify_test(g); }, {"node 1 (no op)", "the node has no op"});
}

TEST(IrVerifier, SubGraphsAreVerifiedToo) {
  passes::PassOptions keep_calls;
  keep_calls.inline_calls = false;
  auto inner = function([](const Tensor& x) { return tanh(x) * 3.0f; });
  auto f = function(
      [&](const Tensor& x) {
        Tensor c = cond(sum(x) > 0.0f, [&] { return x * 2.0f; }, [&] { return x - 1.0f; });
        std::vector<Tensor> w = while_loop([](const std::vector<Tensor>& v) { return v[1] < scalar<std::int64_t>(3); },
                                           [](const std::vector<Tensor>& v) {
                                             return std::vector<Tensor>{v[0] * 0.5f, v[1] + scalar<std::int64_t>(1)};
                                           },
                                           {c, scalar<std::int64_t>(0)});
        auto [total, partial] = scan([](const Tensor& acc, const Tensor& row) { return std::pair{acc + row, acc * row}; },
                                     scalar(0.0f), w[0]);
        return inner(total + partial);
      },
      {.passes = keep_calls});
  auto cf = f.get_concrete_function(kVec3);
  const ir::Graph& g = cf->graph();
  verify_test(g);
  EXPECT_EQ(nested_ops(g), (std::map<std::string, int>{{"call", 1}, {"cond", 1}, {"scan", 1}, {"while", 1}}));
  expect_broken_subgraph_found(g, "cond", "then branch (optimized)");
  expect_broken_subgraph_found(g, "cond", "else branch (traced)");
  expect_broken_subgraph_found(g, "while", "condition (optimized)");
  expect_broken_subgraph_found(g, "while", "body (traced)");
  expect_broken_subgraph_found(g, "scan", "body (optimized)");
  expect_broken_subgraph_found(g, "call", "' (optimized)");  // "function '<its name>' (optimized)"
}

TEST(IrVerifier, ThePassManagerNamesThePassThatBrokeTheGraph) {
  ASSERT_TRUE(passes::verify_passes()) << "the test programs verify every pass (tests/verify_passes_on.cpp)";
  ir::Graph g = small_graph();
  passes::detail::Pass copy{"copies", [](const ir::Graph& in) { return std::make_shared<ir::Graph>(in); }};
  // A rewrite that drops a node without renumbering: its output's value still names it.
  passes::detail::Pass drop{"drops_relu", [](const ir::Graph& in) {
                              auto out = std::make_shared<ir::Graph>(in);
                              out->nodes.erase(out->nodes.begin() + 1);
                              return out;
                            }};
  passes::detail::Pass nothing{"nothing_to_do", [](const ir::Graph&) { return std::shared_ptr<ir::Graph>(); }};
  EXPECT_EQ(passes::detail::run_passes(g, {copy, nothing, copy})->nodes.size(), 3u);
  expect_error([&] { passes::detail::run_passes(g, {copy, drop, copy}); },
               {"[verify] after pass 'drops_relu': graph '", "says it is an output of node 1, which does not list it"});
  // A broken graph handed to the passes is reported before the first one.
  ir::Graph bad = g;
  bad.outputs.push_back(99);
  expect_error([&] { passes::optimize(bad); }, {"[verify] before the passes", "output 1 is value 99"});
  // Switched off, nothing is checked (release builds, outside the tests).
  passes::set_verify_passes(false);
  EXPECT_EQ(passes::detail::run_passes(g, {drop})->nodes.size(), 2u);
  passes::set_verify_passes(true);
}

// The real pipeline, verified after every pass (verify_passes is on in the test programs):
// an MLP trained by fit, a conv net's train step, cond and while with gradients, a scan with
// gradients and a call op. Each trace runs the verifier after every pass of every graph it
// makes (the gradient split's too); the finished graphs are verified once more here.
TEST(IrVerifier, RealProgramsPassTheVerifierAfterEveryPass) {
  ASSERT_TRUE(passes::verify_passes());
  auto verify_all = [](const auto& fn) {
    for (const auto& cf : fn.concrete_functions()) {
      ir::verify(cf->traced_graph(), "as traced");
      ir::verify(cf->graph(), "as optimized");
    }
  };
  {  // An MLP trained by fit: Dense layers, Adam, a loss and a metric, a dynamic batch.
    random::set_seed(2);
    data::Digits d = data::synthetic_digits(200, 3);
    auto model = std::make_shared<train::Sequential>();
    model->add<nn::Flatten>();
    model->add<nn::Dense>(16, "relu");
    model->add<nn::Dense>(10);
    model->compile(std::make_shared<optim::Adam>(1e-3), train::SparseCategoricalCrossentropy(true), {"accuracy"});
    ef::testing::CaptureStdout quiet;
    auto h = model->fit(d.images, d.labels, {.batch_size = 64, .epochs = 1, .verbose = 0});
    EXPECT_EQ(h.history["loss"].size(), 1u);
  }
  {  // A conv net's train step (the conv fusion pass rewrites it).
    std::vector<Tensor> a{random::stateless_uniform({2, 8, 8, 2}, 1, -1, 1), random::stateless_uniform({3, 3, 2, 4}, 2, -1, 1),
                          random::stateless_uniform({4}, 3, -1, 1)};
    auto step = function([](const std::vector<Tensor>& w) {
      GradientTape tape;
      for (const Tensor& t : w) tape.watch(t);
      Tensor loss = sum(square(max_pool2d(relu(conv2d(w[0], w[1]) + w[2]))));
      return tape.gradient(loss, w);
    });
    EXPECT_EQ(step(a).size(), 3u);
    EXPECT_NE(step.concrete_functions()[0]->str().find("fused_conv2d"), std::string::npos);
    verify_all(step);
  }
  {  // cond and while differentiated inside the trace.
    auto f = function([](const Tensor& x) {
      GradientTape tape;
      tape.watch(x);
      Tensor c = cond(sum(x) > 0.0f, [&] { return x * x; }, [&] { return sin(x); });
      std::vector<Tensor> w = while_loop([](const std::vector<Tensor>& v) { return v[1] < scalar<std::int64_t>(2); },
                                         [](const std::vector<Tensor>& v) {
                                           return std::vector<Tensor>{tanh(v[0]), v[1] + scalar<std::int64_t>(1)};
                                         },
                                         {c, scalar<std::int64_t>(0)});
      Tensor y = sum(w[0]);
      return std::vector<Tensor>{y, tape.gradient(y, x)};
    });
    auto out = f(tensor({0.5f, 1.0f, -0.25f}));
    EXPECT_EQ(out[1].shape(), (Shape{3}));
    auto ops = nested_ops(f.concrete_functions()[0]->traced_graph());
    EXPECT_GE(ops["cond"], 2);  // the forward cond and its gradient's
    EXPECT_EQ(ops["while"], 1);
    verify_all(f);
  }
  {  // A scan with its gradient (a reverse scan).
    auto f = function([](const Tensor& xs, const Tensor& w) {
      GradientTape tape;
      tape.watch(w);
      auto [h, ys] = scan([&](const Tensor& c, const Tensor& x) {
        Tensor next = tanh(x * w + c);
        return std::pair{next, next};
      }, zeros({3}), xs);
      Tensor loss = sum(ys) + sum(h);
      return std::vector<Tensor>{loss, tape.gradient(loss, w)};
    });
    f(random::stateless_uniform({4, 3}, 5, -1, 1), random::stateless_uniform({3}, 6, -1, 1));
    EXPECT_GE(nested_ops(f.concrete_functions()[0]->traced_graph())["scan"], 1);
    verify_all(f);
  }
  {  // A call op: a function called inside another's trace, kept as a call and differentiated.
    auto inner = function([](const Tensor& x) { return sum(exp(x) * x); });
    passes::PassOptions keep_calls;
    keep_calls.inline_calls = false;
    auto outer = function([&](const Tensor& x) {
      GradientTape tape;
      tape.watch(x);
      Tensor y = inner(x * 2.0f);
      return std::vector<Tensor>{y, tape.gradient(y, x)};
    }, {.passes = keep_calls});
    auto inlined = function([&](const Tensor& x) { return inner(x) + 1.0f; });
    Tensor x = tensor({0.1f, -0.2f, 0.3f});
    outer(x);
    inlined(x);
    EXPECT_GE(nested_ops(outer.concrete_functions()[0]->graph())["call"], 1);
    verify_all(outer);
    verify_all(inlined);
  }
}
