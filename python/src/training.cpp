// Keras training: Model (subclassable in Python) and Sequential with compile/fit/evaluate/
// predict, optimizers and schedules, losses, metrics, callbacks (Python ones through a
// trampoline). fit, evaluate, predict and train_on_batch run with the GIL released; Python
// layers, losses, schedules and callbacks take it back when the C++ loop calls them.
#include <cctype>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "eagerflow/train/callback_list.h"
#include "eagerflow/train/checkpoint.h"
#include "eagerflow/train/functional.h"
#include "eagerflow/train/interrupt.h"
#include "py_layer.h"

namespace efpy {
namespace {

using ef::Tensor;
using ef::nn::Layer;
using namespace ef::train;
namespace optim = ef::optim;

// A Python callable held from C++ code that may copy or drop it without the GIL (a loss or a
// schedule inside a model): the reference is released with the GIL taken.
std::shared_ptr<nb::object> hold(nb::handle fn) {
  return std::shared_ptr<nb::object>(new nb::object(nb::borrow(fn)), [](nb::object* o) {
    if (!Py_IsInitialized()) return;  // leaked at interpreter exit, as nanobind does
    nb::gil_scoped_acquire gil;
    delete o;
  });
}

nb::dict logs_dict(const Logs& logs) {
  nb::dict d;
  for (const auto& [k, v] : logs) d[nb::str(k.c_str())] = v;
  return d;
}

// C stdio (where the progress bar goes through std::cout) and Python's sys.stdout keep
// separate buffers: flush each before the other writes, so lines keep their order.
void flush_c_stdout() {
  std::cout.flush();
  std::fflush(stdout);
}
void flush_py_stdout() {
  nb::object out = nb::module_::import_("sys").attr("stdout");
  if (!out.is_none()) out.attr("flush")();
}

// Python subclasses of ef.keras.callbacks.Callback: Keras' method names and arguments. A
// method the subclass does not define costs no GIL (nanobind finds no override).
class PyCallback : public Callback {
 public:
  NB_TRAMPOLINE(Callback);

  void on_train_begin() override { dispatch("on_train_begin", [](nb::handle f) { f(nb::dict()); }); }
  void on_train_end() override { dispatch("on_train_end", [](nb::handle f) { f(nb::dict()); }); }
  void on_epoch_begin(int epoch) override {
    dispatch("on_epoch_begin", [&](nb::handle f) { f(epoch, nb::dict()); });
  }
  void on_epoch_end(int epoch, const Logs& logs) override {
    dispatch("on_epoch_end", [&](nb::handle f) { f(epoch, logs_dict(logs)); });
  }
  void on_batch_begin(int batch) override {
    if (!dispatch("on_train_batch_begin", [&](nb::handle f) { f(batch, nb::dict()); }))
      dispatch("on_batch_begin", [&](nb::handle f) { f(batch, nb::dict()); });
  }
  void on_batch_end(int batch, const Logs& logs) override {
    if (!dispatch("on_train_batch_end", [&](nb::handle f) { f(batch, logs_dict(logs)); }))
      dispatch("on_batch_end", [&](nb::handle f) { f(batch, logs_dict(logs)); });
  }
  void on_test_begin() override { dispatch("on_test_begin", [](nb::handle f) { f(nb::dict()); }); }
  void on_test_end(const Logs& logs) override { dispatch("on_test_end", [&](nb::handle f) { f(logs_dict(logs)); }); }
  void on_test_batch_begin(int batch) override {
    dispatch("on_test_batch_begin", [&](nb::handle f) { f(batch, nb::dict()); });
  }
  void on_test_batch_end(int batch, const Logs& logs) override {
    dispatch("on_test_batch_end", [&](nb::handle f) { f(batch, logs_dict(logs)); });
  }
  void on_predict_begin() override { dispatch("on_predict_begin", [](nb::handle f) { f(nb::dict()); }); }
  void on_predict_end() override { dispatch("on_predict_end", [](nb::handle f) { f(nb::dict()); }); }
  void on_predict_batch_begin(int batch) override {
    dispatch("on_predict_batch_begin", [&](nb::handle f) { f(batch, nb::dict()); });
  }
  void on_predict_batch_end(int batch) override {
    dispatch("on_predict_batch_end", [&](nb::handle f) { f(batch, nb::dict()); });
  }

 private:
  template <class F>
  bool dispatch(const char* name, F&& call) {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, name, nb::detail::str_hash(name), false);
    if (!t.key.is_valid()) return false;
    flush_c_stdout();
    call(nb_trampoline.base().attr(t.key));
    flush_py_stdout();
    return true;
  }
};

// A Python dict of logs (None: none) as C++ Logs.
Logs logs_of(nb::handle h) {
  Logs logs;
  if (h.is_none()) return logs;
  for (auto [k, v] : nb::borrow<nb::dict>(h)) logs[nb::cast<std::string>(nb::str(k))] = nb::cast<double>(nb::float_(v));
  return logs;
}

// A hook called from Python (a custom loop, ef.keras.callbacks.CallbackList) runs a C++
// callback's own hook (EarlyStopping's, ProgbarLogger's); on a Python subclass the base hooks
// do nothing, so its super().on_epoch_end(...) does not come back to it.
template <class F>
void run_hook(Callback& cb, F&& hook) {
  if (dynamic_cast<PyCallback*>(&cb) != nullptr) return;
  flush_py_stdout();
  hook(cb);
  flush_c_stdout();
}

// Keras' default object names: the class name in snake_case (MyLoss -> my_loss).
std::string snake_case(const std::string& name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0 && (std::islower(static_cast<unsigned char>(name[i - 1])) ||
                    (i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1])))))
        out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string type_name_of(nb::handle h) { return nb::cast<std::string>(nb::handle(Py_TYPE(h.ptr())).attr("__name__")); }

// Python subclasses of ef.keras.metrics.Metric, Keras 3 style: update_state(y_true, y_pred,
// sample_weight=None), result(), reset_state() (default: every variable from add_variable back
// to its initial value). Called from a traced train step with the GIL released: each override
// takes it. The Python methods run at trace time only, recording ops on symbolic tensors.
class PyMetric : public Metric {
 public:
  NB_TRAMPOLINE(Metric);

  void update_state(const Tensor& y_true, const Tensor& y_pred) override {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "update_state", nb::detail::str_hash("update_state"), true);
    nb_trampoline.base().attr(t.key)(y_true, y_pred);
  }
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "update_state", nb::detail::str_hash("update_state"), true);
    nb::object f = nb_trampoline.base().attr(t.key);
    if (sample_weight.defined())
      f(y_true, y_pred, "sample_weight"_a = sample_weight);
    else
      f(y_true, y_pred);
  }
  Tensor result() const override {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "result", nb::detail::str_hash("result"), false);
    if (!t.key.is_valid()) return Metric::result();
    return to_tensor(nb_trampoline.base().attr(t.key)());
  }
  void reset_state() override {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "reset_state", nb::detail::str_hash("reset_state"), false);
    if (t.key.is_valid())
      nb_trampoline.base().attr(t.key)();
    else
      default_reset();
  }

  // Keras' Metric.reset_state: the variables back to their initial values.
  void default_reset() {
    Metric::reset_state();
    for (auto& [var, init] : variables_) var.assign(init);
  }
  ef::Variable add_variable(const ef::Shape& shape, nb::handle initializer, nb::handle dtype, const std::string& name) {
    ef::DType dt = dtype.is_none() ? ef::DType::float32 : dtype_from_py(dtype);
    Tensor init;
    ef::nn::Initializer* fn = nullptr;
    if (initializer.is_none() || (PyUnicode_Check(initializer.ptr()) && nb::cast<std::string>(initializer) == "zeros"))
      init = ef::nn::zeros_initializer()(shape, dt);
    else if (PyUnicode_Check(initializer.ptr()) && nb::cast<std::string>(initializer) == "ones")
      init = ef::nn::ones_initializer()(shape, dt);
    else if (PyUnicode_Check(initializer.ptr()))
      throw nb::value_error(("add_variable: unknown initializer '" + nb::cast<std::string>(initializer) +
                             "' (known: zeros, ones; or a number, an initializer object, a callable(shape, dtype))")
                                .c_str());
    else if (PyFloat_Check(initializer.ptr()) || PyLong_Check(initializer.ptr()))
      init = ef::nn::constant_initializer(nb::cast<double>(initializer))(shape, dt);
    else if (nb::try_cast(initializer, fn, false) && fn)
      init = (*fn)(shape, dt);
    else if (PyCallable_Check(initializer.ptr()))
      init = to_tensor(initializer(shape_tuple(shape), "dtype"_a = dtype_to_py(dt)));  // as Keras: dtype by keyword
    else
      init = to_tensor(initializer);
    if (init.dtype() != dt) init = ef::cast(init, dt);
    if (init.shape() != shape)
      throw nb::value_error(("add_variable '" + name + "': the initializer gave shape " + init.shape().tuple_str() +
                             " for a variable of shape " + shape.tuple_str())
                                .c_str());
    ef::Variable var(init, this->name() + "/" + name, /*trainable=*/false);
    variables_.emplace_back(var, init);
    return var;
  }
  std::vector<ef::Variable> variables() const {
    std::vector<ef::Variable> out;
    for (const auto& [var, init] : variables_) out.push_back(var);
    return out;
  }

 private:
  std::vector<std::pair<ef::Variable, Tensor>> variables_;  // with their initial values
};

// x, y or sample weights for fit/evaluate/predict (taken with the GIL held, before the loop
// releases it): a tensor, a list in the model's order, or a dict by input/output name.
Data data_of(nb::handle h) {
  if (h.is_none()) return {};
  if (PyDict_Check(h.ptr())) {
    std::map<std::string, Tensor> by_name;
    for (auto [k, v] : nb::borrow<nb::dict>(h)) by_name[nb::cast<std::string>(k)] = to_tensor(v);
    return Data(by_name);
  }
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    std::vector<Tensor> list;
    for (auto v : h) list.push_back(to_tensor(v));
    return Data(std::move(list));
  }
  return Data(to_tensor(h));
}

Data required(nb::handle h, const char* what) {
  if (h.is_none()) throw nb::value_error((std::string(what) + " is required").c_str());
  return data_of(h);
}

// The callbacks stay alive in the caller's list for the whole call: no ownership taken.
std::vector<std::shared_ptr<Callback>> callbacks_of(nb::handle callbacks) {
  std::vector<std::shared_ptr<Callback>> out;
  if (!callbacks.is_none())
    for (auto cb : callbacks) out.emplace_back(nb::cast<Callback*>(cb), [](Callback*) {});
  return out;
}

nb::tuple fit(Model& self, nb::handle x, nb::handle y, std::int64_t batch_size, int epochs, int initial_epoch,
              double validation_split, nb::handle validation_data, bool shuffle, nb::handle callbacks, int verbose,
              nb::handle sample_weight, nb::handle class_weight) {
  FitOptions o;
  Data xt = required(x, "x"), yt = required(y, "y");
  o.batch_size = batch_size;
  o.epochs = epochs;
  o.initial_epoch = initial_epoch;
  o.validation_split = validation_split;
  if (!validation_data.is_none()) {
    std::size_t n = nb::len(validation_data);
    if (n != 2 && n != 3)
      throw nb::value_error("validation_data must be (x_val, y_val) or (x_val, y_val, sample_weight_val)");
    o.validation_data = ValidationData(data_of(validation_data[0]), data_of(validation_data[1]),
                                       n == 3 ? data_of(validation_data[2]) : Data());
  }
  o.shuffle = shuffle;
  o.verbose = verbose;
  o.sample_weight = data_of(sample_weight);
  if (!class_weight.is_none())
    for (auto [k, v] : nb::borrow<nb::dict>(class_weight)) o.class_weight[nb::cast<std::int64_t>(k)] = nb::cast<double>(v);
  o.callbacks = callbacks_of(callbacks);
  History h;
  {
    nb::gil_scoped_release release;
    h = self.fit(xt, yt, o);
    flush_c_stdout();
  }
  drain_log_warnings();
  nb::dict history;
  for (const auto& [k, v] : h.history) history[nb::str(k.c_str())] = nb::cast(v);
  return nb::make_tuple(history, nb::cast(h.epoch));
}

// What a Python train_step/test_step sees (Keras 3): data = (x, y) or (x, y, sample_weight),
// each a tensor for one input/output, else a list in the model's order.
nb::object structure(const std::vector<Tensor>& ts) {
  if (ts.size() == 1) return nb::cast(ts[0]);
  nb::list out;
  for (const auto& t : ts) out.append(nb::cast(t));
  return out;
}

nb::object step_data(const StepData& d) {
  if (d.sample_weight.empty()) return nb::make_tuple(structure(d.x), structure(d.y));
  return nb::make_tuple(structure(d.x), structure(d.y), structure(d.sample_weight));
}

std::vector<Tensor> tensors_of(nb::handle h) {
  std::vector<Tensor> out;
  if (h.is_none()) return out;
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    for (auto v : h) out.push_back(to_tensor(v));
  } else if (PyDict_Check(h.ptr())) {
    throw nb::type_error("give a tensor or a list of tensors in the model's order (not a dict) here");
  } else {
    out.push_back(to_tensor(h));
  }
  return out;
}

// A train_step's returned dict (nested dicts, such as a metrics container's result, are
// flattened, as Keras does) to the step's logs.
void collect_logs(nb::handle result, StepLogs& out) {
  if (!PyDict_Check(result.ptr()))
    throw nb::type_error("train_step/test_step must return a dict of metric names to values");
  for (auto [k, v] : nb::borrow<nb::dict>(result)) {
    if (PyDict_Check(v.ptr())) collect_logs(v, out);
    else out[nb::cast<std::string>(k)] = to_tensor(v);
  }
}

// Models subclassed in Python: train_step, test_step and predict_step may be overridden (Keras 3).
class PyModel : public PyLayerT<Model> {
 public:
  explicit PyModel(std::string name) : PyLayerT<Model>(std::move(name)) {}

  StepLogs train_step(const StepData& d) override {
    return logs_step("train_step", d, [&] { return Model::train_step(d); });
  }
  StepLogs test_step(const StepData& d) override {
    return logs_step("test_step", d, [&] { return Model::test_step(d); });
  }
  // Keras resets every metric of model.metrics at each epoch and evaluation: the Python
  // property's list (python/eagerflow/_training.py: the compiled ones, metrics assigned as
  // attributes, or what a subclass's override gives).
  std::vector<std::shared_ptr<Metric>> metrics() const override {
    {
      nb::gil_scoped_acquire gil;
      nb::detail::ticket t(nb_trampoline, "_ef_metrics", nb::detail::str_hash("_ef_metrics"), false);
      if (t.key.is_valid()) {
        nb::object list = nb_trampoline.base().attr(t.key)();
        std::vector<std::shared_ptr<Metric>> out;
        for (nb::handle m : list) {
          std::shared_ptr<Metric> metric;
          if (!nb::try_cast(m, metric) || !metric)
            throw nb::type_error(("model.metrics must list ef.keras.metrics.Metric objects, got " +
                                  nb::cast<std::string>(nb::repr(m)))
                                     .c_str());
          out.push_back(std::move(metric));
        }
        return out;
      }
    }
    return Model::metrics();
  }
  std::vector<Tensor> predict_step(const std::vector<Tensor>& x) override {
    {
      nb::gil_scoped_acquire gil;
      nb::detail::ticket t(nb_trampoline, "predict_step", nb::detail::str_hash("predict_step"), false);
      if (t.key.is_valid()) {
        nb::object out = nb_trampoline.base().attr(t.key)(structure(x));
        if (PyDict_Check(out.ptr())) throw nb::type_error("predict_step must return a tensor or a list of tensors");
        return tensors_of(out);
      }
    }
    return Model::predict_step(x);
  }

 private:
  template <class F>
  StepLogs logs_step(const char* name, const StepData& d, F&& fallback) {
    {
      nb::gil_scoped_acquire gil;
      nb::detail::ticket t(nb_trampoline, name, nb::detail::str_hash(name), false);
      if (t.key.is_valid()) {
        StepLogs logs;
        collect_logs(nb_trampoline.base().attr(t.key)(step_data(d)), logs);
        return logs;
      }
    }
    return fallback();
  }
};

StepData step_data_of(nb::handle x, nb::handle y, nb::handle sample_weight) {
  StepData d;
  d.x = tensors_of(x);
  d.y = tensors_of(y);
  d.sample_weight = tensors_of(sample_weight);
  return d;
}

nb::dict logs_of(const StepLogs& logs) {
  nb::dict d;
  for (const auto& [k, v] : logs) d[nb::str(k.c_str())] = nb::cast(v);
  return d;
}

// Ctrl-C during fit/evaluate/predict (eagerflow/train/interrupt.h): between batches the C++
// loop runs Python's signal handlers; KeyboardInterrupt (or whatever a handler raises) leaves
// the loop as a python_error, which the binding raises again. Only Python's main thread runs
// handlers, so other threads do not take the GIL for it.
unsigned long main_thread_ident = 0;
void check_python_signals() {
  if (!Py_IsInitialized() || PyThread_get_thread_ident() != main_thread_ident) return;
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
}

// Keras' set_weights: arrays converted to each weight's dtype where that keeps their values
// (float64 into float32, integers into floats); the C++ side checks everything, then assigns.
void set_weights_from_python(Layer& layer, nb::handle values) {
  std::vector<ef::Variable> vars = layer.weights();
  std::vector<Tensor> ts;
  std::size_t i = 0;
  for (nb::handle v : values) {
    Tensor t;
    try {
      t = to_tensor(v);
    } catch (const nb::python_error&) {
      throw;
    } catch (const std::exception& e) {
      throw nb::value_error(("set_weights: value " + std::to_string(i) + " is not a numeric array (" +
                             nb::cast<std::string>(nb::repr(v)) + "): " + e.what() + " (nothing was assigned)")
                                .c_str());
    }
    if (i < vars.size() && t.dtype() != vars[i].dtype()) {
      ef::DType want = vars[i].dtype();
      bool keeps = (ef::is_floating(want) && (ef::is_floating(t.dtype()) || ef::is_integer(t.dtype()))) ||
                   (ef::is_integer(want) && ef::is_integer(t.dtype()));
      if (keeps) t = ef::cast(t, want);
    }
    ts.push_back(std::move(t));
    ++i;
  }
  try {
    ef::train::set_layer_weights(layer, ts);
  } catch (const ef::Error& e) {
    throw nb::value_error(e.what());
  }
}

}  // namespace

void init_training(nb::module_& m) {
  main_thread_ident = nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  ef::train::set_interrupt_check(&check_python_signals);
  nb::module_ t = m.def_submodule("_train");
  // A Python object whose C++ part exists (a subclass's __init__ may skip super().__init__()).
  t.def("_inst_ready", [](nb::handle h) { return nb::inst_ready(h); });

  init_optimizers(t);

  // ---------------------------------------------------------------- losses
  // Loss(fn, name): a loss from a function. Loss(name=None, reduction=..., dtype=None): the base
  // of a Python subclass (Keras 3) whose call(y_true, y_pred) gives the per-example values.
  // That loss reaches its Python object through a weak reference (a copy cannot keep it alive
  // without a cycle); compile (get_loss) wraps such objects with a strong one.
  nb::class_<Loss>(t, "Loss")
      .def("__init__",
           [](nb::pointer_and_handle<Loss> self, nb::handle fn, nb::handle name, nb::handle reduction, nb::handle dtype) {
             if (!reduction.is_none() && !(PyUnicode_Check(reduction.ptr()) &&
                                            nb::cast<std::string>(reduction) == "sum_over_batch_size"))
               throw nb::value_error("Loss: only reduction='sum_over_batch_size' (Keras' default) is supported");
             if (!dtype.is_none() && dtype_from_py(dtype) != ef::DType::float32)
               throw nb::value_error("Loss: only dtype=None or 'float32' is supported");
             if (!fn.is_none() && !PyUnicode_Check(fn.ptr())) {
               if (!PyCallable_Check(fn.ptr())) throw nb::type_error("a loss must be callable as loss(y_true, y_pred)");
               if (name.is_none()) throw nb::type_error("Loss(fn, name): give the loss a name");
               auto f = hold(fn);
               new (self.p) Loss(nb::cast<std::string>(name), [f](const Tensor& y_true, const Tensor& y_pred) {
                 nb::gil_scoped_acquire gil;
                 return to_tensor((*f)(y_true, y_pred));
               });
               return;
             }
             std::string n = !fn.is_none() ? nb::cast<std::string>(fn)
                             : !name.is_none() ? nb::cast<std::string>(name)
                                               : snake_case(type_name_of(self.h));
             auto weak = hold(nb::steal(PyWeakref_NewRef(self.h.ptr(), nullptr)));
             if (!weak->is_valid()) throw nb::python_error();
             new (self.p) Loss(n, [weak, n](const Tensor& y_true, const Tensor& y_pred) {
               nb::gil_scoped_acquire gil;
               nb::handle obj = PyWeakref_GetObject(weak->ptr());
               if (obj.is_none())
                 ef::fail(ef::ErrorCode::failed_precondition, n,
                          "this loss object no longer exists (compile keeps its own reference)");
               if (!nb::hasattr(nb::handle(Py_TYPE(obj.ptr())), "call"))
                 throw nb::type_error(("loss '" + n + "': a subclass of ef.keras.losses.Loss implements "
                                       "call(y_true, y_pred), giving the loss of each example").c_str());
               return to_tensor(obj.attr("call")(y_true, y_pred));
             });
           },
           "fn"_a = nb::none(), "name"_a = nb::none(), "reduction"_a = "sum_over_batch_size", "dtype"_a = nb::none())
      .def("__call__",
           [](const Loss& l, nb::handle y_true, nb::handle y_pred) { return l(to_tensor(y_true), to_tensor(y_pred)); },
           "y_true"_a, "y_pred"_a)
      .def_prop_ro("name", &Loss::name)
      .def("__repr__", [](const Loss& l) { return "<ef.keras.losses.Loss " + l.name() + ">"; });
  nb::class_<MeanSquaredError, Loss>(t, "MeanSquaredError").def(nb::init<>());
  nb::class_<BinaryCrossentropy, Loss>(t, "BinaryCrossentropy").def(nb::init<bool>(), "from_logits"_a = false);
  nb::class_<CategoricalCrossentropy, Loss>(t, "CategoricalCrossentropy").def(nb::init<bool>(), "from_logits"_a = false);
  nb::class_<SparseCategoricalCrossentropy, Loss>(t, "SparseCategoricalCrossentropy")
      .def(nb::init<bool>(), "from_logits"_a = false);
  nb::class_<MeanAbsoluteError, Loss>(t, "MeanAbsoluteError").def(nb::init<>());
  nb::class_<Huber, Loss>(t, "Huber").def(nb::init<double>(), "delta"_a = 1.0);
  nb::class_<LogCosh, Loss>(t, "LogCosh").def(nb::init<>());
  nb::class_<KLDivergence, Loss>(t, "KLDivergence").def(nb::init<>());
  nb::class_<CosineSimilarity, Loss>(t, "CosineSimilarity").def(nb::init<int>(), "axis"_a = -1);
  nb::class_<Hinge, Loss>(t, "Hinge").def(nb::init<>());
  nb::class_<Poisson, Loss>(t, "Poisson").def(nb::init<>());
  t.def("loss_by_name", &loss_by_name, "name"_a);

  // ---------------------------------------------------------------- metrics
  // Subclassable in Python (PyMetric): Keras 3's Metric with add_variable/add_weight. The base
  // methods below run the C++ base when called on a Python metric (super().reset_state() does
  // not call back into the override).
  auto add_variable = [](Metric& m, nb::handle shape, nb::handle initializer, nb::handle dtype,
                         std::optional<std::string> name) {
    auto* py = dynamic_cast<PyMetric*>(&m);
    if (!py) throw nb::type_error("add_variable is for metrics written in Python (subclasses of Metric)");
    std::vector<std::int64_t> dims;
    if (!shape.is_none())
      for (auto d : shape) dims.push_back(nb::cast<std::int64_t>(d));
    return py->add_variable(ef::Shape(dims), initializer, dtype,
                            name.value_or("variable_" + std::to_string(py->variables().size())));
  };
  nb::class_<Metric, PyMetric>(t, "Metric")
      .def("__init__",
           [](nb::pointer_and_handle<Metric> self, std::optional<std::string> name, nb::handle dtype) {
             if (!dtype.is_none() && dtype_from_py(dtype) != ef::DType::float32)
               throw nb::value_error("Metric: only dtype=None or 'float32' is supported");
             new (self.p) PyMetric(name.value_or(snake_case(type_name_of(self.h))));
           },
           "name"_a = nb::none(), "dtype"_a = nb::none())
      .def_prop_ro("name", &Metric::name)
      .def(
          "update_state",
          [](Metric& m, nb::handle y_true, nb::handle y_pred) {
            if (dynamic_cast<PyMetric*>(&m))
              throw nb::type_error(("metric '" + m.name() + "': a subclass of Metric implements "
                                    "update_state(y_true, y_pred, sample_weight=None)").c_str());
            m.update_state(to_tensor(y_true), to_tensor(y_pred));
          },
          "y_true"_a, "y_pred"_a)
      .def("result",
           [](Metric& m) {
             if (dynamic_cast<PyMetric*>(&m)) return m.Metric::result();
             return m.result();
           })
      .def("reset_state",
           [](Metric& m) {
             if (auto* py = dynamic_cast<PyMetric*>(&m)) return py->default_reset();
             m.reset_state();
           })
      .def(
          "add_variable",
          [add_variable](Metric& m, nb::handle shape, nb::handle initializer, nb::handle dtype, const std::string&,
                         std::optional<std::string> name) { return add_variable(m, shape, initializer, dtype, name); },
          "shape"_a, "initializer"_a = "zeros", "dtype"_a = nb::none(), "aggregation"_a = "sum", "name"_a = nb::none())
      .def(
          "add_weight",
          [add_variable](Metric& m, nb::handle shape, nb::handle initializer, nb::handle dtype,
                         std::optional<std::string> name) { return add_variable(m, shape, initializer, dtype, name); },
          "shape"_a = nb::tuple(), "initializer"_a = nb::none(), "dtype"_a = nb::none(), "name"_a = nb::none())
      // The variables of a Python metric (add_variable/add_weight), in creation order.
      .def_prop_ro("variables",
                   [](Metric& m) {
                     auto* py = dynamic_cast<PyMetric*>(&m);
                     return py ? py->variables() : std::vector<ef::Variable>{};
                   })
      // Keras: update with these values, then give the result.
      .def(
          "__call__",
          [](Metric& m, nb::handle y_true, nb::handle y_pred, nb::handle sample_weight) {
            nb::object self = nb::find(&m);
            if (sample_weight.is_none())
              self.attr("update_state")(y_true, y_pred);
            else
              self.attr("update_state")(y_true, y_pred, "sample_weight"_a = sample_weight);
            return self.attr("result")();
          },
          "y_true"_a.none(), "y_pred"_a.none(), "sample_weight"_a.none() = nb::none())
      .def("__repr__", [](const Metric& m) { return "<ef.keras.metrics.Metric " + m.name() + ">"; });
  nb::class_<Mean, Metric>(t, "Mean")
      .def(nb::init<std::string>(), "name"_a = "mean")
      .def("update_state", [](Mean& m, nb::handle values) { m.update_state(to_tensor(values)); }, "values"_a);
  nb::class_<Accuracy, Metric>(t, "Accuracy").def(nb::init<std::string>(), "name"_a = "accuracy");
  nb::class_<SparseCategoricalAccuracy, Metric>(t, "SparseCategoricalAccuracy")
      .def(nb::init<std::string>(), "name"_a = "sparse_categorical_accuracy");
  nb::class_<CategoricalAccuracy, Metric>(t, "CategoricalAccuracy")
      .def(nb::init<std::string>(), "name"_a = "categorical_accuracy");
  nb::class_<BinaryAccuracy, Metric>(t, "BinaryAccuracy")
      .def(nb::init<std::string, double>(), "name"_a = "binary_accuracy", "threshold"_a = 0.5);
  t.def("metric_by_name", &metric_by_name, "name"_a, "loss_name"_a = "");

  // ---------------------------------------------------------------- callbacks
  nb::class_<Callback, PyCallback>(t, "Callback")
      .def(nb::init<>())
      // On a Python subclass the base methods do nothing (super().on_epoch_end(...) is fine); on
      // a C++ callback they run its hooks.
      .def("on_train_begin", [](Callback& c, nb::handle) { run_hook(c, [](Callback& cb) { cb.on_train_begin(); }); },
           "logs"_a = nb::none())
      .def("on_train_end", [](Callback& c, nb::handle) { run_hook(c, [](Callback& cb) { cb.on_train_end(); }); },
           "logs"_a = nb::none())
      .def("on_epoch_begin", [](Callback& c, int e, nb::handle) { run_hook(c, [&](Callback& cb) { cb.on_epoch_begin(e); }); },
           "epoch"_a, "logs"_a = nb::none())
      .def("on_epoch_end",
           [](Callback& c, int e, nb::handle logs) { run_hook(c, [&](Callback& cb) { cb.on_epoch_end(e, logs_of(logs)); }); },
           "epoch"_a, "logs"_a = nb::none())
      .def("on_train_batch_begin",
           [](Callback& c, int b, nb::handle) { run_hook(c, [&](Callback& cb) { cb.on_train_batch_begin(b); }); }, "batch"_a,
           "logs"_a = nb::none())
      .def("on_train_batch_end",
           [](Callback& c, int b, nb::handle logs) { run_hook(c, [&](Callback& cb) { cb.on_train_batch_end(b, logs_of(logs)); }); },
           "batch"_a, "logs"_a = nb::none())
      .def("on_batch_begin", [](Callback& c, int b, nb::handle) { run_hook(c, [&](Callback& cb) { cb.on_batch_begin(b); }); },
           "batch"_a, "logs"_a = nb::none())
      .def("on_batch_end",
           [](Callback& c, int b, nb::handle logs) { run_hook(c, [&](Callback& cb) { cb.on_batch_end(b, logs_of(logs)); }); },
           "batch"_a, "logs"_a = nb::none())
      .def("on_test_begin", [](Callback& c, nb::handle) { run_hook(c, [](Callback& cb) { cb.on_test_begin(); }); },
           "logs"_a = nb::none())
      .def("on_test_end", [](Callback& c, nb::handle logs) { run_hook(c, [&](Callback& cb) { cb.on_test_end(logs_of(logs)); }); },
           "logs"_a = nb::none())
      .def("on_test_batch_begin",
           [](Callback& c, int b, nb::handle) { run_hook(c, [&](Callback& cb) { cb.on_test_batch_begin(b); }); }, "batch"_a,
           "logs"_a = nb::none())
      .def("on_test_batch_end",
           [](Callback& c, int b, nb::handle logs) { run_hook(c, [&](Callback& cb) { cb.on_test_batch_end(b, logs_of(logs)); }); },
           "batch"_a, "logs"_a = nb::none())
      .def("on_predict_begin", [](Callback& c, nb::handle) { run_hook(c, [](Callback& cb) { cb.on_predict_begin(); }); },
           "logs"_a = nb::none())
      .def("on_predict_end", [](Callback& c, nb::handle) { run_hook(c, [](Callback& cb) { cb.on_predict_end(); }); },
           "logs"_a = nb::none())
      .def("on_predict_batch_begin",
           [](Callback& c, int b, nb::handle) { run_hook(c, [&](Callback& cb) { cb.on_predict_batch_begin(b); }); }, "batch"_a,
           "logs"_a = nb::none())
      .def("on_predict_batch_end",
           [](Callback& c, int b, nb::handle) { run_hook(c, [&](Callback& cb) { cb.on_predict_batch_end(b); }); }, "batch"_a,
           "logs"_a = nb::none())
      // What fit sets on its callbacks (Keras' set_model / set_params), for a CallbackList made
      // in Python: the C++ side of a callback.
      .def("_ef_set_model", [](Callback& cb, Model* m) { cb.model = m; }, "model"_a.none())
      .def(
          "_ef_set_params",
          [](Callback& cb, int verbose, int epochs, std::optional<std::int64_t> steps) {
            cb.params = CallbackParams{verbose, epochs, steps.value_or(-1)};
          },
          "verbose"_a, "epochs"_a, "steps"_a.none());
  // Keras' ProgbarLogger; fit adds one when verbose is not 0 and the callbacks hold none.
  nb::class_<ProgbarLogger, Callback>(t, "ProgbarLogger").def(nb::init<>());
  nb::class_<EarlyStopping, Callback>(t, "EarlyStopping")
      .def("__init__",
           [](EarlyStopping* self, std::string monitor, double min_delta, int patience, int verbose, std::string mode,
              std::optional<double> baseline, bool restore_best_weights, int start_from_epoch) {
             EarlyStoppingOptions o;
             o.monitor = std::move(monitor);
             o.min_delta = min_delta;
             o.patience = patience;
             o.verbose = verbose;
             o.mode = std::move(mode);
             o.baseline = baseline;
             o.restore_best_weights = restore_best_weights;
             o.start_from_epoch = start_from_epoch;
             new (self) EarlyStopping(o);
           },
           "monitor"_a = "val_loss", "min_delta"_a = 0.0, "patience"_a = 0, "verbose"_a = 0, "mode"_a = "auto",
           "baseline"_a = nb::none(), "restore_best_weights"_a = false, "start_from_epoch"_a = 0)
      // Keras' stopped_epoch: the epoch (from 0) at which training stopped, 0 when it did not.
      .def_prop_ro("stopped_epoch", [](const EarlyStopping& e) { return std::max(0, e.stopped_epoch()); })
      .def_prop_ro("best_epoch", &EarlyStopping::best_epoch)
      .def_prop_ro("best", &EarlyStopping::best);
  nb::class_<TerminateOnNaN, Callback>(t, "TerminateOnNaN")
      .def(nb::init<>())
      .def_prop_ro("terminated", &TerminateOnNaN::terminated);
  nb::class_<CSVLogger, Callback>(t, "CSVLogger")
      .def("__init__",
           [](CSVLogger* self, std::string filename, const std::string& separator, bool append) {
             if (separator != ",") throw nb::value_error("CSVLogger: only separator=',' is supported");
             new (self) CSVLogger(std::move(filename), append);
           },
           "filename"_a, "separator"_a = ",", "append"_a = false);
  nb::class_<LearningRateScheduler, Callback>(t, "_LearningRateScheduler")
      .def("__init__",
           [](LearningRateScheduler* self, nb::handle schedule) {
             auto f = hold(schedule);
             new (self) LearningRateScheduler([f](int epoch, double rate) {
               nb::gil_scoped_acquire gil;
               return nb::cast<double>(nb::float_((*f)(epoch, rate)));
             });
           },
           "schedule"_a);
  nb::class_<ModelCheckpoint, Callback>(t, "ModelCheckpoint")
      .def("__init__",
           [](ModelCheckpoint* self, std::string filepath, std::string monitor, int verbose, bool save_best_only,
              bool save_weights_only, std::string mode, nb::handle save_freq) {
             std::int64_t every = 0;  // Keras: "epoch" or a number of batches
             if (nb::isinstance<nb::str>(save_freq)) {
               if (nb::cast<std::string>(save_freq) != "epoch")
                 throw nb::value_error("Unrecognized save_freq: expected 'epoch' or an integer number of batches");
             } else if (PyLong_Check(save_freq.ptr()) && !PyBool_Check(save_freq.ptr())) {
               every = nb::cast<std::int64_t>(save_freq);
               if (every <= 0) throw nb::value_error("ModelCheckpoint: save_freq must be a positive number of batches");
             } else {
               throw nb::value_error("Unrecognized save_freq: expected 'epoch' or an integer number of batches");
             }
             // As Keras 3: the whole model goes to a model file that load_model reads.
             auto ends_with = [&](std::string_view s) {
               return filepath.size() >= s.size() && filepath.compare(filepath.size() - s.size(), s.size(), s) == 0;
             };
             if (!save_weights_only && !ends_with(".keras") && !ends_with(".efmodel") && !ends_with(".h5"))
               throw nb::value_error(("The filepath provided must end in `.keras` or `.efmodel` (a whole-model file; "
                                      "or pass save_weights_only=True). Received: filepath=" + filepath).c_str());
             new (self) ModelCheckpoint(std::move(filepath), std::move(monitor), save_best_only, save_weights_only,
                                        std::move(mode), every);
           },
           "filepath"_a, "monitor"_a = "val_loss", "verbose"_a = 0, "save_best_only"_a = false,
           "save_weights_only"_a = false, "mode"_a = "auto", "save_freq"_a = nb::str("epoch"))
      .def_prop_ro("last_saved", &ModelCheckpoint::last_saved);

  // ---------------------------------------------------------------- models
  nb::class_<Model, Layer, PyModel>(t, "Model")
      .def(nb::init<std::string>(), "name"_a = "")
      .def(
          "_init_functional",
          [](Model& self, nb::handle inputs, nb::handle outputs, std::vector<std::string> names) {
            self.init_functional(tensors_of(inputs), tensors_of(outputs), std::move(names));
          },
          "inputs"_a, "outputs"_a, "output_names"_a)
      .def_prop_ro("_is_functional", [](const Model& self) { return self.functional_graph() != nullptr; })
      .def_prop_ro("input_names", &Model::input_names)
      .def_prop_ro("output_names", &Model::output_names)
      .def(
          "_compile",
          [](Model& self, std::shared_ptr<optim::Optimizer> optimizer, nb::handle loss, nb::handle loss_weights,
             nb::handle metrics, bool run_eagerly, nb::handle weighted_metrics) {
            // loss: a Loss, a list of them or a dict by output name (already converted in Python);
            // metrics: a list (names or objects), a list of lists or a dict by output name.
            CompileOptions o;
            o.optimizer = std::move(optimizer);
            auto metric_ref = [](nb::handle h) -> MetricRef {
              if (PyUnicode_Check(h.ptr())) return MetricRef(nb::cast<std::string>(h));
              return MetricRef(nb::cast<std::shared_ptr<Metric>>(h));
            };
            if (PyDict_Check(loss.ptr())) {
              for (auto [k, v] : nb::borrow<nb::dict>(loss)) o.loss_by_output.emplace(nb::cast<std::string>(k), nb::cast<Loss>(v));
            } else if (PyList_Check(loss.ptr())) {
              for (auto v : loss) o.loss.emplace_back(nb::cast<Loss>(v));
            } else {
              o.loss.emplace_back(nb::cast<Loss>(loss));
            }
            if (PyDict_Check(loss_weights.ptr())) {
              for (auto [k, v] : nb::borrow<nb::dict>(loss_weights)) o.loss_weights_by_output[nb::cast<std::string>(k)] = nb::cast<double>(v);
            } else if (!loss_weights.is_none()) {
              for (auto v : loss_weights) o.loss_weights.push_back(nb::cast<double>(v));
            }
            // metrics and weighted_metrics: a list (every output), a list of lists or a dict by output.
            auto metric_layout = [&](nb::handle spec, const char* what, std::vector<MetricRef>& list_out,
                                     std::map<std::string, std::vector<MetricRef>>& by_output) {
              if (PyDict_Check(spec.ptr())) {
                for (auto [k, v] : nb::borrow<nb::dict>(spec)) {
                  auto& refs = by_output[nb::cast<std::string>(k)];
                  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr()))
                    for (auto m : v) refs.push_back(metric_ref(m));
                  else
                    refs.push_back(metric_ref(v));
                }
              } else if (!spec.is_none()) {
                bool per_output = nb::len(spec) > 0 && std::all_of(spec.begin(), spec.end(), [](nb::handle m) {
                  return PyList_Check(m.ptr()) || PyTuple_Check(m.ptr());
                });
                if (per_output) {
                  std::vector<std::string> names = self.output_names();
                  if (nb::len(spec) != names.size())
                    throw nb::value_error(("compile got " + std::to_string(nb::len(spec)) + " " + what + " lists for " +
                                           std::to_string(names.size()) + " outputs")
                                              .c_str());
                  std::size_t i = 0;
                  for (auto list : spec) {
                    auto& refs = by_output[names[i++]];
                    for (auto m : list) refs.push_back(metric_ref(m));
                  }
                } else {
                  for (auto m : spec) list_out.push_back(metric_ref(m));
                }
              }
            };
            metric_layout(metrics, "metric", o.metrics, o.metrics_by_output);
            metric_layout(weighted_metrics, "weighted_metrics", o.weighted_metrics, o.weighted_metrics_by_output);
            o.run_eagerly = run_eagerly;
            self.compile(std::move(o));
          },
          "optimizer"_a, "loss"_a, "loss_weights"_a.none(), "metrics"_a.none(), "run_eagerly"_a,
          "weighted_metrics"_a.none() = nb::none())
      .def("_fit", &fit, "x"_a.none(), "y"_a.none(), "batch_size"_a, "epochs"_a, "initial_epoch"_a,
           "validation_split"_a, "validation_data"_a.none(), "shuffle"_a, "callbacks"_a.none(), "verbose"_a,
           "sample_weight"_a.none(), "class_weight"_a.none())
      .def(
          "_evaluate",
          [](Model& self, nb::handle x, nb::handle y, std::int64_t batch_size, int verbose, nb::handle sample_weight,
             nb::handle callbacks) {
            Data xt = required(x, "x"), yt = required(y, "y"), sw = data_of(sample_weight);
            EvaluateOptions o;
            o.batch_size = batch_size;
            o.verbose = verbose;
            o.sample_weight = std::move(sw);
            o.callbacks = callbacks_of(callbacks);
            Logs logs;
            {
              nb::gil_scoped_release release;
              logs = self.evaluate(xt, yt, o);
              flush_c_stdout();
            }
            drain_log_warnings();
            return logs_dict(logs);
          },
          "x"_a.none(), "y"_a.none(), "batch_size"_a, "verbose"_a, "sample_weight"_a.none(), "callbacks"_a.none() = nb::none())
      .def(
          "_predict",
          [](Model& self, nb::handle x, std::int64_t batch_size, int verbose, nb::handle callbacks) {
            Data xt = required(x, "x");
            PredictOptions o;
            o.batch_size = batch_size;
            o.verbose = verbose;
            o.callbacks = callbacks_of(callbacks);
            std::vector<Tensor> outs;
            {
              nb::gil_scoped_release release;
              outs = self.predict_outputs(xt, o);
              flush_c_stdout();
            }
            drain_log_warnings();
            return outs;
          },
          "x"_a.none(), "batch_size"_a, "verbose"_a = 0, "callbacks"_a.none() = nb::none())
      .def(
          "_train_on_batch",
          [](Model& self, nb::handle x, nb::handle y, nb::handle sample_weight, bool test) {
            Data xt = required(x, "x"), yt = required(y, "y"), sw = data_of(sample_weight);
            Logs logs;
            {
              nb::gil_scoped_release release;
              logs = test ? self.test_on_batch(xt, yt, sw) : self.train_on_batch(xt, yt, sw);
            }
            drain_log_warnings();
            return logs_dict(logs);
          },
          "x"_a.none(), "y"_a.none(), "sample_weight"_a.none(), "test"_a = false)
      .def(
          "_build_shapes",
          [](Model& self, std::vector<std::vector<std::int64_t>> shapes) {
            std::vector<ef::Shape> s;
            for (auto& dims : shapes) s.emplace_back(dims);
            self.Model::build(s);
          },
          "shapes"_a)
      .def(
          "_build_specs",
          [](Model& self, std::vector<std::vector<std::int64_t>> shapes, nb::handle dtypes) {
            // A Sequential's Input in its own dtype (an int64 Input before an Embedding).
            std::vector<ef::TensorSpec> specs;
            std::size_t i = 0;
            std::vector<nb::handle> dts;
            for (nb::handle d : dtypes) dts.push_back(d);
            for (auto& dims : shapes) {
              nb::handle d = i < dts.size() ? dts[i] : nb::none();
              specs.push_back({d.is_none() ? ef::DType::float32 : dtype_from_py(d), ef::Shape(dims), {}});
              ++i;
            }
            self.Model::build_for_specs(specs);
          },
          "shapes"_a, "dtypes"_a)
      .def(
          "train_step", [](Model& self, nb::handle data) {
            nb::sequence seq = nb::borrow<nb::sequence>(data);
            StepData d = step_data_of(seq[0], nb::len(seq) > 1 ? seq[1] : nb::none(), nb::len(seq) > 2 ? seq[2] : nb::none());
            return logs_of(self.Model::train_step(d));
          },
          "data"_a, "Keras' default train step (call it from an override with super().train_step(data)).")
      .def(
          "test_step", [](Model& self, nb::handle data) {
            nb::sequence seq = nb::borrow<nb::sequence>(data);
            StepData d = step_data_of(seq[0], nb::len(seq) > 1 ? seq[1] : nb::none(), nb::len(seq) > 2 ? seq[2] : nb::none());
            return logs_of(self.Model::test_step(d));
          },
          "data"_a)
      .def(
          "predict_step", [](Model& self, nb::handle x) { return structure(self.Model::predict_step(tensors_of(x))); },
          "x"_a)
      .def(
          "compute_loss",
          [](Model& self, nb::handle x, nb::handle y, nb::handle y_pred, nb::handle sample_weight, bool training) {
            StepData d = step_data_of(x, y, sample_weight);
            return self.compute_loss(d, tensors_of(y_pred));
          },
          "x"_a = nb::none(), "y"_a = nb::none(), "y_pred"_a = nb::none(), "sample_weight"_a = nb::none(),
          "training"_a = true,
          "The compiled losses (per output, weighted) plus the model's losses (regularizers, add_loss).")
      .def(
          "compute_metrics",
          [](Model& self, nb::handle x, nb::handle y, nb::handle y_pred, nb::handle sample_weight) {
            StepData d = step_data_of(x, y, sample_weight);
            return logs_of(self.compute_metrics(d, tensors_of(y_pred)));
          },
          "x"_a = nb::none(), "y"_a = nb::none(), "y_pred"_a = nb::none(), "sample_weight"_a = nb::none(),
          "Updates the compiled metrics; returns every metric's result (the loss from the loss tracker).")
      // The compiled metrics (the loss trackers first); Python's model.metrics adds the others.
      .def_prop_ro("_compiled_metrics", [](const Model& self) { return self.Model::metrics(); })
      .def_prop_ro("optimizer", &Model::optimizer)
      .def_rw("stop_training", &Model::stop_training)
      .def("tracing_count", &Model::tracing_count, "Traces of the train step so far (1 after any fit).")
      .def("test_tracing_count", &Model::test_tracing_count)
      .def("predict_tracing_count", &Model::predict_tracing_count)
      .def("_summary_text",
           [](const Model& self) {
             std::ostringstream os;
             self.summary(os);
             return os.str();
           })
      .def("save_weights", &Model::save_weights, "filepath"_a)
      .def("load_weights", &Model::load_weights, "filepath"_a, "skip_mismatch"_a = false);

  t.def(
      "Input",
      [](std::vector<std::optional<std::int64_t>> shape, nb::handle dtype, std::string name, std::optional<std::int64_t> batch_size) {
        std::vector<std::int64_t> dims;
        for (auto d : shape) dims.push_back(d.value_or(ef::kDynamic));
        return Input(ef::Shape(dims), dtype.is_none() ? ef::DType::float32 : dtype_from_py(dtype), std::move(name), batch_size);
      },
      "shape"_a, "dtype"_a.none(), "name"_a, "batch_size"_a.none());
  t.def("_metrics_names", [](const Model& m) { return m.metrics_names(); });
  t.def("_set_weights", &set_weights_from_python, "layer"_a, "weights"_a);
  t.def("_get_weights", [](const Layer& layer) { return ef::train::layer_weights(layer); }, "layer"_a);

  nb::class_<Sequential, Model>(t, "Sequential")
      .def(nb::init<std::string>(), "name"_a = "")
      .def("_add", [](Sequential& self, std::shared_ptr<Layer> layer) { self.add(std::move(layer)); }, "layer"_a)
      .def_prop_ro("_stack", [](const Sequential& self) {
        nb::list out;
        for (const auto& l : self.stack()) out.append(nb::cast(l));
        return out;
      });
}

}  // namespace efpy
