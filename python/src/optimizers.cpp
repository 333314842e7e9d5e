// Keras' optimizers and learning-rate schedules (ef::optim) as _core._train classes. A Python
// subclass of LearningRateSchedule is a schedule the C++ optimizers call: its __call__(step)
// runs at trace time (or every eager step) with the GIL taken back.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <tuple>
#include <typeinfo>

#include "bindings.h"

namespace efpy {
namespace {

using ef::Tensor;
namespace optim = ef::optim;

// A learning rate computed by Python: a keras LearningRateSchedule written in Python (called
// with the step, a float32 scalar) or a callable of no arguments (Keras accepts both). It runs
// at trace time, or at every eager step, with the GIL taken back.
class PythonSchedule : public optim::LearningRateSchedule {
 public:
  PythonSchedule(nb::object fn, bool takes_step) : fn_(std::move(fn)), takes_step_(takes_step) {}
  ~PythonSchedule() override {
    if (!Py_IsInitialized()) {  // at interpreter exit: the object is gone with the interpreter
      fn_.release();
      return;
    }
    nb::gil_scoped_acquire gil;
    fn_.reset();
  }
  Tensor operator()(const Tensor& step) const override {
    nb::gil_scoped_acquire gil;
    nb::object out = takes_step_ ? fn_(step) : fn_();
    Tensor rate = nb::isinstance<Tensor>(out) ? nb::cast<Tensor>(out) : to_tensor(out);
    if (rate.rank() != 0) throw ef::Error("learning_rate: the schedule returned " + rate.spec().str() + ", not a scalar");
    return rate.dtype() == ef::DType::float32 ? rate : ef::cast(rate, ef::DType::float32);
  }
  const nb::object& object() const { return fn_; }

 private:
  nb::object fn_;
  bool takes_step_;
};

optim::LearningRate learning_rate_of(nb::handle h) {
  // Python schedules (keras.optimizers.schedules' Python base marks them, and a C++ schedule's
  // Python subclass that computes its own rate) take the step.
  if (nb::hasattr(h, "_ef_schedule_takes_step") && nb::cast<bool>(h.attr("_ef_schedule_takes_step")))
    return optim::LearningRate(std::make_shared<PythonSchedule>(nb::borrow(h), true));
  // A built-in schedule is copied: the optimizer computes it in C++ and save_model can rebuild it.
  optim::LearningRateSchedule* builtin = nullptr;
  if (nb::try_cast(h, builtin, false) && builtin)
    if (auto copy = optim::copy_builtin_schedule(*builtin)) return optim::LearningRate(std::move(copy));
  if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr())) return optim::LearningRate(nb::cast<double>(h));
  try {
    return optim::LearningRate(nb::cast<double>(h));  // numpy scalars, 0-d tensors with __float__
  } catch (const nb::cast_error&) {
    if (PyCallable_Check(h.ptr())) return optim::LearningRate(std::make_shared<PythonSchedule>(nb::borrow(h), false));
    throw nb::type_error("learning_rate must be a number or a keras.optimizers.schedules.LearningRateSchedule");
  }
}

// Keras' base-optimizer arguments, as the Python classes (keras/optimizers.py) pass them.
struct BaseArgs {
  std::optional<double> clipnorm, global_clipnorm, clipvalue, weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<std::int64_t> ema_overwrite_frequency;
};

optim::ClipOptions clip_of(const BaseArgs& b) {
  optim::ClipOptions c;
  c.clipnorm = b.clipnorm;
  c.global_clipnorm = b.global_clipnorm;
  c.clipvalue = b.clipvalue;
  c.weight_decay = b.weight_decay;
  c.use_ema = b.use_ema;
  c.ema_momentum = b.ema_momentum;
  c.ema_overwrite_frequency = b.ema_overwrite_frequency;
  return c;
}

// Binds optimizer class T whose constructor takes (LearningRate, Args..., ClipOptions), with
// Keras' argument names (`args`, after learning_rate) and the base arguments last
// (`_weight_decay` is Keras' base weight_decay; AdamW's own is among its args).
template <class T, class Base, class... Args>
void bind_optimizer(nb::module_& t, const char* name, double default_lr, std::array<nb::arg_v, sizeof...(Args)> args) {
  nb::class_<T, Base> cls(t, name);
  auto init = [](T* self, nb::handle lr, Args... a, std::optional<double> clipnorm, std::optional<double> global_clipnorm,
                 std::optional<double> clipvalue, std::optional<double> weight_decay, bool use_ema, double ema_momentum,
                 std::optional<std::int64_t> ema_overwrite_frequency) {
    BaseArgs b{clipnorm, global_clipnorm, clipvalue, weight_decay, use_ema, ema_momentum, ema_overwrite_frequency};
    new (self) T(learning_rate_of(lr), a..., clip_of(b));
  };
  std::apply(
      [&](auto&... a) {
        cls.def("__init__", init, nb::arg("learning_rate") = default_lr, a..., nb::arg("clipnorm") = nb::none(),
                nb::arg("global_clipnorm") = nb::none(), nb::arg("clipvalue") = nb::none(),
                nb::arg("_weight_decay") = nb::none(), nb::arg("use_ema") = false, nb::arg("ema_momentum") = 0.99,
                nb::arg("ema_overwrite_frequency") = nb::none());
      },
      args);
}

}  // namespace

void init_optimizers(nb::module_& t) {
  nb::class_<optim::LearningRateSchedule>(t, "LearningRateSchedule")
      .def("__call__", [](const optim::LearningRateSchedule& s, nb::handle step) {
        return s(ef::cast(to_tensor(step), ef::DType::float32));
      });
  nb::class_<optim::ExponentialDecay, optim::LearningRateSchedule>(t, "ExponentialDecay")
      .def(nb::init<double, double, double, bool>(), "initial_learning_rate"_a, "decay_steps"_a, "decay_rate"_a,
           "staircase"_a = false)
      .def_prop_ro("initial_learning_rate", &optim::ExponentialDecay::initial)
      .def_prop_ro("decay_steps", &optim::ExponentialDecay::decay_steps)
      .def_prop_ro("decay_rate", &optim::ExponentialDecay::decay_rate)
      .def_prop_ro("staircase", &optim::ExponentialDecay::staircase);
  nb::class_<optim::CosineDecay, optim::LearningRateSchedule>(t, "CosineDecay")
      .def(nb::init<double, double, double, std::optional<double>, double>(), "initial_learning_rate"_a, "decay_steps"_a,
           "alpha"_a = 0.0, "warmup_target"_a = nb::none(), "warmup_steps"_a = 0.0)
      .def_prop_ro("initial_learning_rate", &optim::CosineDecay::initial)
      .def_prop_ro("decay_steps", &optim::CosineDecay::decay_steps)
      .def_prop_ro("alpha", &optim::CosineDecay::alpha)
      .def_prop_ro("warmup_target", &optim::CosineDecay::warmup_target)
      .def_prop_ro("warmup_steps", &optim::CosineDecay::warmup_steps);
  nb::class_<optim::PiecewiseConstantDecay, optim::LearningRateSchedule>(t, "PiecewiseConstantDecay")
      .def(nb::init<std::vector<double>, std::vector<double>>(), "boundaries"_a, "values"_a);
  nb::class_<optim::PolynomialDecay, optim::LearningRateSchedule>(t, "PolynomialDecay")
      .def(nb::init<double, double, double, double, bool>(), "initial_learning_rate"_a, "decay_steps"_a,
           "end_learning_rate"_a = 1e-4, "power"_a = 1.0, "cycle"_a = false);
  nb::class_<optim::InverseTimeDecay, optim::LearningRateSchedule>(t, "InverseTimeDecay")
      .def(nb::init<double, double, double, bool>(), "initial_learning_rate"_a, "decay_steps"_a, "decay_rate"_a,
           "staircase"_a = false);
  nb::class_<optim::CosineDecayRestarts, optim::LearningRateSchedule>(t, "CosineDecayRestarts")
      .def(nb::init<double, double, double, double, double>(), "initial_learning_rate"_a, "first_decay_steps"_a,
           "t_mul"_a = 2.0, "m_mul"_a = 1.0, "alpha"_a = 0.0);

  nb::class_<optim::Optimizer>(t, "Optimizer")
      .def_prop_ro("name", &optim::Optimizer::name)
      .def_prop_rw("learning_rate", &optim::Optimizer::learning_rate, &optim::Optimizer::set_learning_rate)
      .def_prop_ro("iterations", [](optim::Optimizer& o) { return o.get_or_create_iterations(); },
                   "Completed steps: an int64 scalar Variable, as Keras'.")
      .def_prop_ro("variables", &optim::Optimizer::variables)
      .def("_build", &optim::Optimizer::build, "variables"_a)
      .def("scale_loss", &optim::Optimizer::scale_loss, "loss"_a,
           "The loss to differentiate: the loss itself, or times the loss scale (LossScaleOptimizer).")
      .def("_hyperparameters", &optim::Optimizer::hyperparameters)
      .def("_slots_of", &optim::Optimizer::slots_of, "variable"_a, "The slots made so far for `variable`, by name.")
      .def("_clip_options",
           [](const optim::Optimizer& o) {
             const auto& c = o.clip_options();
             return nb::make_tuple(c.clipnorm, c.global_clipnorm, c.clipvalue, c.weight_decay, c.use_ema,
                                   c.ema_momentum, c.ema_overwrite_frequency);
           })
      .def("_keras_class_name", [](const optim::Optimizer& o) { return optim::keras_class_name(o); })
      .def("_learning_rate_setting",
           [](const optim::Optimizer& o) -> nb::object {
             const auto& lr = o.learning_rate_setting();
             if (!lr.schedule()) return nb::float_(lr.value());
             if (auto* py = dynamic_cast<const PythonSchedule*>(lr.schedule().get())) return py->object();
             return nb::cast(lr.schedule());
           })
      .def(
          "apply_gradients",
          [](optim::Optimizer& o, nb::iterable grads_and_vars) {
            std::vector<Tensor> grads;
            std::vector<ef::Variable> vars;
            for (auto pair : grads_and_vars) {
              nb::handle g = pair[0];
              grads.push_back(g.is_none() ? Tensor() : to_tensor(g));
              vars.push_back(nb::cast<ef::Variable>(pair[1]));
            }
            o.apply_gradients(grads, vars);
          },
          "grads_and_vars"_a, "Keras' apply_gradients(zip(grads, variables)); a None gradient skips its variable.");

  bind_optimizer<optim::SGD, optim::Optimizer, double, bool>(t, "SGD", 0.01, {"momentum"_a = 0.0, "nesterov"_a = false});
  bind_optimizer<optim::Adam, optim::Optimizer, double, double, double>(
      t, "Adam", 0.001, {"beta_1"_a = 0.9, "beta_2"_a = 0.999, "epsilon"_a = 1e-7});
  bind_optimizer<optim::AdamW, optim::Adam, double, double, double, double>(
      t, "AdamW", 0.001, {"weight_decay"_a = 0.004, "beta_1"_a = 0.9, "beta_2"_a = 0.999, "epsilon"_a = 1e-7});
  bind_optimizer<optim::RMSprop, optim::Optimizer, double, double, double>(
      t, "RMSprop", 0.001, {"rho"_a = 0.9, "momentum"_a = 0.0, "epsilon"_a = 1e-7});
  bind_optimizer<optim::Adagrad, optim::Optimizer, double, double>(
      t, "Adagrad", 0.001, {"initial_accumulator_value"_a = 0.1, "epsilon"_a = 1e-7});
  bind_optimizer<optim::Adadelta, optim::Optimizer, double, double>(t, "Adadelta", 0.001, {"rho"_a = 0.95, "epsilon"_a = 1e-7});
  bind_optimizer<optim::Adamax, optim::Optimizer, double, double, double>(
      t, "Adamax", 0.001, {"beta_1"_a = 0.9, "beta_2"_a = 0.999, "epsilon"_a = 1e-7});
  bind_optimizer<optim::Nadam, optim::Optimizer, double, double, double>(
      t, "Nadam", 0.001, {"beta_1"_a = 0.9, "beta_2"_a = 0.999, "epsilon"_a = 1e-7});
  bind_optimizer<optim::Ftrl, optim::Optimizer, double, double, double, double, double, double>(
      t, "Ftrl", 0.001,
      {"learning_rate_power"_a = -0.5, "initial_accumulator_value"_a = 0.1, "l1_regularization_strength"_a = 0.0,
       "l2_regularization_strength"_a = 0.0, "l2_shrinkage_regularization_strength"_a = 0.0, "beta"_a = 0.0});
  bind_optimizer<optim::Lion, optim::Optimizer, double, double>(t, "Lion", 0.001, {"beta_1"_a = 0.9, "beta_2"_a = 0.99});
  bind_optimizer<optim::Lamb, optim::Optimizer, double, double, double>(
      t, "Lamb", 0.001, {"beta_1"_a = 0.9, "beta_2"_a = 0.999, "epsilon"_a = 1e-7});
  bind_optimizer<optim::Adafactor, optim::Optimizer, double, double, double, double, bool>(
      t, "Adafactor", 0.001,
      {"beta_2_decay"_a = -0.8, "epsilon_1"_a = 1e-30, "epsilon_2"_a = 1e-3, "clip_threshold"_a = 1.0,
       "relative_step"_a = true});

  bind_optimizer<optim::ScheduleFreeAdamW, optim::Optimizer, double, double, double, std::int64_t>(
      t, "ScheduleFreeAdamW", 0.0025, {"beta_1"_a = 0.9, "beta_2"_a = 0.999, "epsilon"_a = 1e-8, "warmup_steps"_a = 0});
  nb::class_<optim::Muon, optim::Optimizer>(t, "Muon").def(
      "__init__",
      [](optim::Muon* self, nb::handle lr, double adam_beta_1, double adam_beta_2, double adam_weight_decay,
         double epsilon, double weight_decay, bool exclude_embeddings, double muon_a, double muon_b, double muon_c,
         double adam_lr_ratio, double momentum, std::int64_t ns_steps, bool nesterov, std::optional<double> rms_rate,
         std::optional<double> clipnorm, std::optional<double> global_clipnorm, std::optional<double> clipvalue,
         bool use_ema, double ema_momentum, std::optional<std::int64_t> ema_overwrite_frequency) {
        optim::Muon::Options o{adam_beta_1, adam_beta_2, adam_weight_decay, epsilon, weight_decay, exclude_embeddings,
                               muon_a,      muon_b,      muon_c,            adam_lr_ratio, momentum, ns_steps,
                               nesterov,    rms_rate};
        BaseArgs b{clipnorm, global_clipnorm, clipvalue, std::nullopt, use_ema, ema_momentum, ema_overwrite_frequency};
        new (self) optim::Muon(learning_rate_of(lr), o, clip_of(b));
      },
      "learning_rate"_a = 0.001, "adam_beta_1"_a = 0.9, "adam_beta_2"_a = 0.999, "adam_weight_decay"_a = 0.004,
      "epsilon"_a = 1e-7, "weight_decay"_a = 0.004, "exclude_embeddings"_a = true, "muon_a"_a = 3.4445,
      "muon_b"_a = -4.7750, "muon_c"_a = 2.0315, "adam_lr_ratio"_a = 1.0, "momentum"_a = 0.95, "ns_steps"_a = 5,
      "nesterov"_a = true, "rms_rate"_a = 0.2, "clipnorm"_a = nb::none(), "global_clipnorm"_a = nb::none(),
      "clipvalue"_a = nb::none(), "use_ema"_a = false, "ema_momentum"_a = 0.99, "ema_overwrite_frequency"_a = nb::none());

  nb::class_<optim::LossScaleOptimizer, optim::Optimizer>(t, "LossScaleOptimizer")
      .def(nb::init<std::shared_ptr<optim::Optimizer>, double, std::int64_t>(), "inner_optimizer"_a,
           "initial_scale"_a = 32768.0, "dynamic_growth_steps"_a = 2000)
      .def_prop_ro("inner_optimizer", &optim::LossScaleOptimizer::inner_optimizer)
      .def_prop_ro("dynamic_scale", &optim::LossScaleOptimizer::dynamic_scale)
      .def_prop_ro("step_counter", &optim::LossScaleOptimizer::step_counter)
      .def_prop_ro("initial_scale", &optim::LossScaleOptimizer::initial_scale)
      .def_prop_ro("dynamic_growth_steps", &optim::LossScaleOptimizer::dynamic_growth_steps);
}

}  // namespace efpy
