// Keras 3 callbacks for ef.keras.callbacks, bound into the `_train` submodule beside the ones
// in training.cpp: ReduceLROnPlateau, LambdaCallback (Python functions called from fit),
// BackupAndRestore, and TerminateOnNaN(raise_error).
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>

#include "bindings.h"

namespace efpy {
using namespace ef;
using namespace ef::train;

namespace {

// A Python object a C++ function keeps: released with the GIL held.
std::shared_ptr<nb::object> keep(nb::handle h) {
  return std::shared_ptr<nb::object>(new nb::object(nb::borrow(h)), [](nb::object* o) {
    if (!Py_IsInitialized()) return;  // leaked at interpreter exit, as nanobind does
    nb::gil_scoped_acquire gil;
    delete o;
  });
}

nb::dict to_dict(const Logs& logs) {
  nb::dict d;
  for (const auto& [k, v] : logs) d[nb::str(k.c_str())] = v;
  return d;
}

// Calls a Python function from fit's thread: the GIL taken, C stdio flushed before and
// Python's after, so that printed lines keep their order (as training.cpp's callbacks do).
template <class... Args>
void call_python(const nb::object& f, Args&&... args) {
  nb::gil_scoped_acquire gil;
  std::cout.flush();
  std::fflush(stdout);
  f(std::forward<Args>(args)...);
  nb::object out = nb::module_::import_("sys").attr("stdout");
  if (!out.is_none()) out.attr("flush")();
}

// Keras calls on_train_begin(logs), on_epoch_begin(epoch, logs), on_epoch_end(epoch, logs),
// on_train_batch_begin(batch, logs), ...: the functions get the same arguments.
std::function<void()> no_index(nb::handle h) {
  if (h.is_none()) return nullptr;
  auto f = keep(h);
  return [f] {
    nb::gil_scoped_acquire gil;  // before making the arguments
    call_python(*f, nb::dict());
  };
}
std::function<void(int)> index_only(nb::handle h) {
  if (h.is_none()) return nullptr;
  auto f = keep(h);
  return [f](int i) {
    nb::gil_scoped_acquire gil;
    call_python(*f, i, nb::dict());
  };
}
std::function<void(int, const Logs&)> index_logs(nb::handle h) {
  if (h.is_none()) return nullptr;
  auto f = keep(h);
  return [f](int i, const Logs& logs) {
    nb::gil_scoped_acquire gil;
    call_python(*f, i, to_dict(logs));
  };
}

void check_callable(nb::handle h, const char* name) {
  if (!h.is_none() && !PyCallable_Check(h.ptr()))
    throw nb::type_error(("LambdaCallback: " + std::string(name) + " must be callable or None").c_str());
}

}  // namespace

void init_callbacks(nb::module_& m) {
  nb::module_ t = nb::borrow<nb::module_>(m.attr("_train"));

  nb::class_<ReduceLROnPlateau, Callback>(t, "ReduceLROnPlateau")
      .def("__init__",
           [](ReduceLROnPlateau* self, std::string monitor, double factor, int patience, int verbose, std::string mode,
              double min_delta, int cooldown, double min_lr) {
             ReduceLROnPlateauOptions o;
             o.monitor = std::move(monitor);
             o.factor = factor;
             o.patience = patience;
             o.verbose = verbose;
             o.mode = std::move(mode);
             o.min_delta = min_delta;
             o.cooldown = cooldown;
             o.min_lr = min_lr;
             new (self) ReduceLROnPlateau(o);
           },
           "monitor"_a = "val_loss", "factor"_a = 0.1, "patience"_a = 10, "verbose"_a = 0, "mode"_a = "auto",
           "min_delta"_a = 1e-4, "cooldown"_a = 0, "min_lr"_a = 0.0)
      .def_prop_ro("monitor", [](const ReduceLROnPlateau& r) { return r.options().monitor; })
      .def_prop_ro("factor", [](const ReduceLROnPlateau& r) { return r.options().factor; })
      .def_prop_ro("patience", [](const ReduceLROnPlateau& r) { return r.options().patience; })
      .def_prop_ro("cooldown", [](const ReduceLROnPlateau& r) { return r.options().cooldown; })
      .def_prop_ro("min_lr", [](const ReduceLROnPlateau& r) { return r.options().min_lr; })
      .def_prop_ro("min_delta", [](const ReduceLROnPlateau& r) { return r.options().min_delta; })
      .def_prop_ro("wait", &ReduceLROnPlateau::wait)
      .def_prop_ro("cooldown_counter", &ReduceLROnPlateau::cooldown_counter)
      // Keras' best: None before the first monitored epoch.
      .def_prop_ro("best",
                   [](const ReduceLROnPlateau& r) -> nb::object {
                     double b = r.best();
                     return std::isnan(b) ? nb::none() : nb::cast(b);
                   })
      .def("in_cooldown", &ReduceLROnPlateau::in_cooldown);

  nb::class_<LambdaCallback, Callback>(t, "_LambdaCallback")
      .def("__init__",
           [](LambdaCallback* self, nb::handle on_epoch_begin, nb::handle on_epoch_end, nb::handle on_train_begin,
              nb::handle on_train_end, nb::handle on_train_batch_begin, nb::handle on_train_batch_end) {
             check_callable(on_epoch_begin, "on_epoch_begin");
             check_callable(on_epoch_end, "on_epoch_end");
             check_callable(on_train_begin, "on_train_begin");
             check_callable(on_train_end, "on_train_end");
             check_callable(on_train_batch_begin, "on_train_batch_begin");
             check_callable(on_train_batch_end, "on_train_batch_end");
             LambdaCallbackFunctions f;
             f.on_epoch_begin = index_only(on_epoch_begin);
             f.on_epoch_end = index_logs(on_epoch_end);
             f.on_train_begin = no_index(on_train_begin);
             f.on_train_end = no_index(on_train_end);
             f.on_batch_begin = index_only(on_train_batch_begin);
             f.on_batch_end = index_logs(on_train_batch_end);
             new (self) LambdaCallback(std::move(f));
           },
           "on_epoch_begin"_a = nb::none(), "on_epoch_end"_a = nb::none(), "on_train_begin"_a = nb::none(),
           "on_train_end"_a = nb::none(), "on_train_batch_begin"_a = nb::none(), "on_train_batch_end"_a = nb::none());

  nb::class_<BackupAndRestore, Callback>(t, "_BackupAndRestore")
      .def(nb::init<std::string, std::string, bool>(), "backup_dir"_a, "save_freq"_a = "epoch",
           "delete_checkpoint"_a = true)
      .def_prop_ro("backup_dir", &BackupAndRestore::backup_dir)
      .def_prop_ro("backup_path", &BackupAndRestore::backup_path)
      .def_prop_ro("restored_epoch", &BackupAndRestore::restored_epoch);

  // TerminateOnNaN(raise_error=...) (Keras 3): an overload of the constructor bound in
  // training.cpp.
  // (nanobind appends a function defined in a scope under an existing name to its overloads.)
  nb::cpp_function_def([](TerminateOnNaN* self, bool raise_error) { new (self) TerminateOnNaN(raise_error); },
                       nb::scope(nb::type<TerminateOnNaN>()), nb::name("__init__"), nb::is_method(), "raise_error"_a);
}

}  // namespace efpy
