// The fused optimizer updates (apply_sgd, apply_momentum, apply_adam, apply_rmsprop; the
// optimizers run them): eager equals traced bit for bit, both equal the composed formulas the
// optimizers ran before (within float rounding), in float32 and float64, with clipping and
// schedules; updates happen in place without changing values anyone read; bad input is a
// clear error.
#include <thread>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
using ef::testing::randn;

namespace {

// ---------------------------------------------------------------- the composed formulas
// Keras' update rules written with ef ops, as the optimizers ran them before the fused ops:
// each optimizer below overrides update() and keeps everything else (clipping, schedules, the
// step counter, the slots).
class ComposedSGD : public optim::SGD {
 public:
  using SGD::SGD;
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) override {
    if (momentum() == 0.0) return var.assign(Tensor(var) - grad * lr);
    Variable m = slot(var, "momentum");
    m.assign(Tensor(m) * momentum() - grad * lr);
    if (nesterov()) var.assign_add(Tensor(m) * momentum() - grad * lr);
    else var.assign_add(Tensor(m));
  }
};

void composed_adam(optim::Adam& opt, const Variable& var, Variable m, Variable v, const Tensor& grad, const Tensor& lr,
                   const Tensor& step) {
  Tensor m_next = Tensor(m) * opt.beta_1() + grad * (1.0 - opt.beta_1());
  Tensor v_next = Tensor(v) * opt.beta_2() + square(grad) * (1.0 - opt.beta_2());
  Tensor bias_1 = 1.0 - pow(full_like(step, opt.beta_1()), step);
  Tensor bias_2 = 1.0 - pow(full_like(step, opt.beta_2()), step);
  Tensor alpha = lr * sqrt(bias_2) / bias_1;
  var.assign(Tensor(var) - m_next * alpha / (sqrt(v_next) + opt.epsilon()));
  m.assign(m_next);
  v.assign(v_next);
}

class ComposedAdam : public optim::Adam {
 public:
  using Adam::Adam;
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override {
    composed_adam(*this, var, slot(var, "m"), slot(var, "v"), grad, lr, step);
  }
};

class ComposedAdamW : public optim::AdamW {
 public:
  using AdamW::AdamW;
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override {
    var.assign_sub(Tensor(var) * lr * weight_decay());
    composed_adam(*this, var, slot(var, "m"), slot(var, "v"), grad, lr, step);
  }
};

class ComposedRMSprop : public optim::RMSprop {
 public:
  using RMSprop::RMSprop;
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) override {
    Variable v = slot(var, "velocity");
    v.assign(Tensor(v) * rho() + square(grad) * (1.0 - rho()));
    Tensor increment = lr * grad / sqrt(Tensor(v) + epsilon());
    if (momentum() > 0) {
      Variable m = slot(var, "momentum");
      m.assign(Tensor(m) * momentum() + increment);
      var.assign_sub(Tensor(m));
    } else {
      var.assign_sub(increment);
    }
  }
};

// One configuration: the fused optimizer and its composed twin, made alike.
struct Case {
  std::string name;
  std::function<std::shared_ptr<optim::Optimizer>(bool composed)> make;
};

std::vector<Case> cases() {
  optim::ClipOptions clip{.clipnorm = 0.5}, global{.global_clipnorm = 1.0};
  auto sched = [] { return optim::LearningRate(optim::ExponentialDecay(0.05, 2, 0.5)); };
  auto make = [](auto fused, auto composed) {
    return [fused, composed](bool c) -> std::shared_ptr<optim::Optimizer> { return c ? composed() : fused(); };
  };
#define EF_CASE(NAME, TYPE, ...)                                                                              \
  Case{NAME, make([=] { return std::make_shared<optim::TYPE>(__VA_ARGS__); },                                 \
                  [=] { return std::make_shared<Composed##TYPE>(__VA_ARGS__); })}
  std::vector<Case> out{
      EF_CASE("sgd", SGD, 0.1),
      EF_CASE("momentum_clipnorm", SGD, 0.1, 0.9, false, clip),
      EF_CASE("nesterov", SGD, 0.05, 0.8, true),
      EF_CASE("adam", Adam, 0.01),
      EF_CASE("adam_clipnorm", Adam, 0.02, 0.8, 0.95, 1e-5, clip),
      EF_CASE("adam_schedule", Adam, sched()),
      EF_CASE("adamw_global_clipnorm", AdamW, 0.01, 0.1, 0.9, 0.999, 1e-7, global),
      EF_CASE("rmsprop", RMSprop, 0.01),
      EF_CASE("rmsprop_momentum", RMSprop, 0.01, 0.8, 0.5, 1e-6),
  };
#undef EF_CASE
  return out;
}

// Variables of awkward sizes (a tail after whole registers; one large enough for two threads;
// a scalar), the same initial values for every run.
std::vector<Variable> fresh_variables(DType dtype) {
  std::vector<Variable> vars;
  std::vector<Shape> shapes{{37, 5}, {300, 150}, {}};
  for (std::size_t i = 0; i < shapes.size(); ++i)
    vars.emplace_back(cast(randn(shapes[i], 10 + i), dtype), "w" + std::to_string(i));
  return vars;
}

std::vector<std::vector<Tensor>> gradients(DType dtype, int steps) {
  std::vector<std::vector<Tensor>> out;
  for (int s = 0; s < steps; ++s) {
    std::vector<Tensor> g;
    for (const Variable& v : fresh_variables(dtype)) g.push_back(cast(randn(v.shape(), 100 + 7 * s + g.size()), dtype));
    out.push_back(g);
  }
  return out;
}

// Every variable and slot, in a fixed order, as float64.
std::vector<Tensor> state_of(const optim::Optimizer& opt, const std::vector<Variable>& vars) {
  std::vector<Tensor> out;
  for (const Variable& v : vars) {
    out.push_back(cast(Tensor(v), DType::float64));
    for (const auto& [name, slot] : opt.slots_of(v)) out.push_back(cast(Tensor(slot), DType::float64));
  }
  return out;
}

std::vector<Tensor> run_eagerly(const std::shared_ptr<optim::Optimizer>& opt, DType dtype, int steps) {
  std::vector<Variable> vars = fresh_variables(dtype);
  for (const auto& g : gradients(dtype, steps)) opt->apply_gradients(g, vars);
  return state_of(*opt, vars);
}

std::vector<Tensor> run_traced(const std::shared_ptr<optim::Optimizer>& opt, DType dtype, int steps) {
  std::vector<Variable> vars = fresh_variables(dtype);
  auto step = function([&](const std::vector<Tensor>& g) {
    opt->apply_gradients(g, vars);
    return Tensor(opt->iterations());
  });
  for (const auto& g : gradients(dtype, steps)) step(g);
  EXPECT_EQ(step.tracing_count(), 1);
  return state_of(*opt, vars);
}

}  // namespace

TEST(FusedUpdate, EagerAndTracedStepsAreBitEqual) {
  set_num_threads(2);
  for (DType dtype : {DType::float32, DType::float64})
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.name + " " + std::string(name_of(dtype)));
      std::vector<Tensor> eager = run_eagerly(c.make(false), dtype, 3), traced = run_traced(c.make(false), dtype, 3);
      ASSERT_EQ(eager.size(), traced.size());
      for (std::size_t i = 0; i < eager.size(); ++i)
        EXPECT_EQ(max(abs(eager[i] - traced[i])).item<double>(), 0.0) << "tensor " << i;
    }
}

TEST(FusedUpdate, MatchesTheComposedFormulasWithinRounding) {
  for (DType dtype : {DType::float32, DType::float64})
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.name + " " + std::string(name_of(dtype)));
      auto fused_opt = c.make(false), composed_opt = c.make(true);
      std::vector<Tensor> fused = run_eagerly(fused_opt, dtype, 4), composed = run_eagerly(composed_opt, dtype, 4);
      ASSERT_EQ(fused.size(), composed.size());
      double tol = dtype == DType::float32 ? 2e-6 : 1e-13;
      for (std::size_t i = 0; i < fused.size(); ++i) {
        double err = max(abs(fused[i] - composed[i]) / (abs(composed[i]) + 1.0)).item<double>();
        EXPECT_LE(err, tol) << "tensor " << i;
      }
      // The update moved the weights (a test that cannot pass by doing nothing).
      std::vector<Tensor> start = state_of(*fused_opt, fresh_variables(dtype));
      EXPECT_GT(max(abs(fused[0] - start[0])).item<double>(), 1e-4);
      EXPECT_EQ(Tensor(fused_opt->iterations()).item<std::int64_t>(), 4);
    }
}

TEST(FusedUpdate, TracedStepsWriteInPlaceAndKeepValuesReadBefore) {
  Variable w(randn({64, 33}, 1, DType::float32), "w");
  optim::Adam adam(0.01);
  Tensor g = cast(randn({64, 33}, 2), DType::float32);
  auto step = function([&](const Tensor& grad) {
    adam.apply_gradients({grad}, {w});
    return sum(grad);
  });
  step(g);  // the first step writes buffers of the op's own (the initial value may be anyone's)
  auto data_of = [](const Variable& v) { return Tensor(v).raw_data(); };
  Variable m = adam.slots_of(w).at("m"), v = adam.slots_of(w).at("v");
  const void *pw = data_of(w), *pm = data_of(m), *pv = data_of(v);
  for (int i = 0; i < 3; ++i) step(g);
  EXPECT_EQ(data_of(w), pw);
  EXPECT_EQ(data_of(m), pm);
  EXPECT_EQ(data_of(v), pv);
  // A value read before a step keeps its numbers: that step writes a new buffer instead.
  Tensor held = w.value();
  std::vector<float> before = held.to_vector<float>();
  step(g);
  EXPECT_EQ(held.to_vector<float>(), before);
  EXPECT_NE(Tensor(w).to_vector<float>(), before);
  EXPECT_NE(data_of(w), pw);
  // Eagerly too (no tape holding the values): in place after the first write.
  optim::SGD sgd(0.1, 0.9);
  sgd.apply_gradients({g}, {w});
  const void* eager_w = data_of(w);
  sgd.apply_gradients({g}, {w});
  EXPECT_EQ(data_of(w), eager_w);
}

TEST(FusedUpdate, NeverWritesATensorTheVariableWasAssigned) {
  // The variable holds the caller's tensor (as a NumPy array's memory in Python): the update
  // writes a buffer of its own, the caller's numbers stay.
  Tensor mine = tensor({1.0f, 2.0f, 3.0f});
  Variable w(zeros({3}), "w");
  w.assign(mine);
  optim::apply_sgd(w, tensor({1.0f, 1.0f, 1.0f}), scalar(0.5f));
  EXPECT_EQ(mine.to_vector<float>(), (std::vector<float>{1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(Tensor(w).to_vector<float>(), (std::vector<float>{0.5f, 1.5f, 2.5f}));
  // Its slice (a view of the same buffer) keeps its numbers as well.
  Tensor whole = w.value();
  Tensor part = slice(whole, {1}, {3});
  whole = Tensor();
  optim::apply_sgd(w, tensor({1.0f, 1.0f, 1.0f}), scalar(0.5f));
  EXPECT_EQ(part.to_vector<float>(), (std::vector<float>{1.5f, 2.5f}));
}

TEST(FusedUpdate, ConcurrentUpdatesOfOneVariableLoseNothing) {
  Variable w(zeros({1000}), "w");
  Tensor g = ones({1000}), lr = scalar(1.0f);
  auto work = [&] {
    for (int i = 0; i < 200; ++i) optim::apply_sgd(w, g, lr);
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(min(Tensor(w)).item<float>(), -400.0f);
  EXPECT_EQ(max(Tensor(w)).item<float>(), -400.0f);
}

TEST(FusedUpdate, PrintsAsOneNodePerVariable) {
  Variable w(zeros({2, 3}), "w");
  optim::AdamW adamw(0.01, 0.5);
  auto step = function([&](const Tensor& g) {
    adamw.apply_gradients({g}, {w});
    return Tensor(w) * 1.0f;  // a read after the update: a node, not the variable's name
  });
  std::string text = ir::to_text(step.get_concrete_function(zeros({2, 3}))->graph());
  EXPECT_NE(text.find("apply_adamw[var=w m=w/m v=w/v beta_1=0.9 beta_2=0.999 epsilon=1e-07 weight_decay=0.5]"),
            std::string::npos) << text;
  std::size_t updates = 0;
  for (const auto& n : step.get_concrete_function(zeros({2, 3}))->graph().nodes)
    updates += std::string(n.op->name()).rfind("apply_", 0) == 0;
  EXPECT_EQ(updates, 1u);
  // The read after the update is printed as a read (not as the variable's name, which stands for
  // its value when the step began).
  EXPECT_NE(text.find("= read_variable[var=w]"), std::string::npos) << text;
}

TEST(FusedUpdate, BadInputIsAClearError) {
  Variable w(zeros({2, 3}), "w"), m(zeros({2, 3}), "m"), v(zeros({2, 3}), "v");
  Tensor g = ones({2, 3}), lr = scalar(0.1f), step = scalar(1.0f);
  expect_error([&] { optim::apply_adam(w, m, m, g, lr, step); }, {"apply_adam", "'m' is passed twice"});
  expect_error([&] { optim::apply_adam(w, m, v, g, lr, scalar(0.0f)); }, {"apply_adam", "step counts from 1"});
  expect_error([&] { optim::apply_adam(w, m, v, ones({3}), lr, step); }, {"apply_adam", "gradient float32[3]", "'w'"});
  expect_error([&] { optim::apply_adam(w, m, v, g, ones({2}), step); }, {"apply_adam", "learning rate", "float32[2]"});
  expect_error([&] { optim::apply_adam(w, m, v, g, lr, step, 1.5); }, {"apply_adam", "beta_1"});
  expect_error([&] { optim::apply_adam(w, m, v, g, lr, step, 0.9, 0.999, 1e-7, -1.0); }, {"apply_adamw", "weight_decay"});
  expect_error([&] { optim::apply_sgd(w, cast(g, DType::float64), lr); }, {"apply_sgd", "float64[2,3]"});
  Variable small(zeros({3}), "small");
  expect_error([&] { optim::apply_momentum(w, small, g, lr, 0.9); }, {"apply_momentum", "slot 'small'"});
  expect_error([&] { optim::apply_rmsprop(w, v, g, lr, 0.9, 1e-7, Variable(), 0.5); }, {"apply_rmsprop", "momentum slot"});
  expect_error([&] { optim::apply_sgd(Variable(), g, lr); }, {"apply_sgd", "undefined"});
  Variable iv(zeros({2}, DType::int32), "counts");
  optim::SGD sgd(0.1);
  expect_error([&] { sgd.apply_gradients({zeros({2}, DType::int32)}, {iv}); }, {"[SGD]", "'counts'", "float32 or float64"});
  // Nothing changed on the way.
  EXPECT_EQ(max(abs(Tensor(w))).item<float>(), 0.0f);
  EXPECT_EQ(max(abs(Tensor(m))).item<float>(), 0.0f);
  // Traced, the same errors at trace time or when the graph runs.
  auto bad_step = function([&](const Tensor& s) {
    optim::apply_adam(w, m, v, g, lr, s);
    return s;
  });
  expect_error([&] { bad_step(scalar(0.0f)); }, {"apply_adam", "step counts from 1"});
  EXPECT_EQ(max(abs(Tensor(w))).item<float>(), 0.0f);
}

TEST(FusedUpdate, TransformsRefuseToRepeatAnUpdate) {
  Variable w(zeros({3}), "w");
  // vmap would update once per example.
  auto per_example = vmap([&](const Tensor& g) {
    optim::apply_sgd(w, g, scalar(0.1f));
    return g * 2.0f;
  });
  expect_error([&] { per_example(ones({4, 3})); }, {"vmap", "apply_sgd", "'w'"});
  EXPECT_EQ(max(abs(Tensor(w))).item<float>(), 0.0f);
}

TEST(FusedUpdate, SubnormalStateFlushesToZeroAsInTensorFlowAndTheCallersModeIsKept) {
  // Adam's second moment of a gradient near zero turns subnormal as a model converges, and every
  // operation on a subnormal costs about a hundred cycles: the updates flush them to zero, as
  // TensorFlow's kernels do (a float32 train step went from 2.8 to 4.7 ms over 1,000 steps).
  const float tiny = 1e-39f;  // below float32's smallest normal, 1.18e-38
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Variable w(tensor(std::vector<float>(4096, tiny)), "w");
    optim::SGD sgd(0.1);
    sgd.apply_gradients({zeros({4096})}, {w});
    std::vector<float> after = Tensor(w).to_vector<float>();
    for (float v : after) ASSERT_EQ(v, 0.0f) << threads << " threads";
    Variable m(tensor(std::vector<float>(8, 1.0f)), "m");
    optim::Adam adam(1e-3);
    adam.apply_gradients({full({8}, 1e-30)}, {m});  // v = (1 - beta_2) g^2 underflows: no NaN, no Inf
    for (float v : Tensor(m).to_vector<float>()) EXPECT_TRUE(std::isfinite(v));
  }
  // Outside the update the mode is the caller's: ops keep subnormals.
  EXPECT_EQ((tensor(std::vector<float>{tiny}) * 1.0).to_vector<float>()[0], tiny);
  volatile float x = tiny;
  EXPECT_EQ(x * 1.0f, tiny);
}
