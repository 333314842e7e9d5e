// ef.data.Dataset: the C++ pipeline (eagerflow/data/dataset.h) from Python.
//
// Functions given to map and filter are traced once, when the pipeline is built, through
// ef::function: the Python body runs then (with the GIL), and the pipeline's threads replay the
// graph without Python. Generators (from_generator) and functions run eagerly (under
// ef.run_functions_eagerly) are Python on every element: the worker threads take the GIL for
// them, so they run one at a time. Iteration releases the GIL while it waits for an element,
// and an iterator is closed (its threads joined) with the GIL released.
//
// Interpreter exit: an atexit hook (run before CPython finalizes, while every thread may still
// take the GIL) closes every live iterator, the ones a daemon thread is waiting in included;
// after that, worker threads refuse the GIL and waiting threads never return into Python
// (interpreter_exit.h), so a script may end with pipelines running.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <eagerflow/data/dataset.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <set>

#include "bindings.h"
#include "convert.h"
#include "interpreter_exit.h"

namespace efpy {
namespace {

using ef::Tensor;
using ef::data::Dataset;
using ef::data::Element;
using ef::data::ElementSpec;
using ef::data::Structure;


nb::object element_to_py(const Element& e) {
  switch (e.structure()) {
    case Structure::tensor: return nb::cast(e.values()[0]);
    case Structure::tuple: {
      nb::list l;
      for (const auto& t : e.values()) l.append(nb::cast(t));
      return nb::tuple(l);
    }
    case Structure::map: {
      nb::dict d;
      for (std::size_t i = 0; i < e.size(); ++i) d[nb::str(e.keys()[i].c_str())] = nb::cast(e.values()[i]);
      return d;
    }
  }
  return nb::none();
}

Element element_from_py(nb::handle h) {
  if (PyDict_Check(h.ptr())) {
    std::map<std::string, Tensor> m;
    for (auto [k, v] : nb::borrow<nb::dict>(h)) m[nb::cast<std::string>(nb::str(k))] = to_tensor(v);
    return Element(m);
  }
  if (PyTuple_Check(h.ptr())) {
    std::vector<Tensor> v;
    for (auto x : h) v.push_back(to_tensor(x));
    return Element(std::move(v));
  }
  return Element(to_tensor(h));
}

// Python values into the declared dtypes (a Python int into int32, a float64 array into
// float32): within a kind (integers, floats) as TF converts generator values; across kinds
// the element is left to fail the spec check with its index.
Element conformed(Element e, const ElementSpec& spec) {
  if (e.size() != spec.specs.size()) return e;
  for (std::size_t i = 0; i < e.size(); ++i) {
    Tensor& t = e.values()[i];
    ef::DType want = spec.specs[i].dtype;
    if (t.dtype() != want && t.dtype() != ef::DType::bool_ && want != ef::DType::bool_ &&
        ef::is_integer(t.dtype()) == ef::is_integer(want))
      t = ef::cast(t, want);
  }
  return e;
}

ElementSpec spec_from_py(nb::handle h) {
  ElementSpec s;
  auto one = [](nb::handle x) {
    ef::TensorSpec* p = nullptr;
    if (!nb::try_cast(x, p, false) || !p) throw nb::type_error("output_signature takes ef.TensorSpec values (a spec, a tuple or a dict of them)");
    return *p;
  };
  if (PyDict_Check(h.ptr())) {
    s.structure = Structure::map;
    for (auto [k, v] : nb::borrow<nb::dict>(h)) {
      s.keys.push_back(nb::cast<std::string>(nb::str(k)));
      s.specs.push_back(one(v));
    }
  } else if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    s.structure = Structure::tuple;
    for (auto v : h) s.specs.push_back(one(v));
  } else {
    s.specs.push_back(one(h));
  }
  return s;
}

nb::object spec_to_py(const ElementSpec& s) {
  auto one = [](const ef::TensorSpec& t) { return nb::cast(ef::TensorSpec{t.dtype, t.shape, {}}); };
  if (s.structure == Structure::tensor && s.specs.size() == 1) return one(s.specs[0]);
  if (s.structure == Structure::map) {
    nb::dict d;
    for (std::size_t i = 0; i < s.specs.size(); ++i) d[nb::str(s.keys[i].c_str())] = one(s.specs[i]);
    return d;
  }
  nb::list l;
  for (const auto& t : s.specs) l.append(one(t));
  return nb::tuple(l);
}

// Calls a Python function with an element as tf.data does: a tuple's parts as positional
// arguments, a dict or a tensor as one argument.
nb::object call_with(const nb::object& fn, const Element& e) {
  if (e.structure() == Structure::tuple) {
    nb::list args;
    for (const auto& t : e.values()) args.append(nb::cast(t));
    return fn(*nb::tuple(args));
  }
  return fn(element_to_py(e));
}

[[noreturn]] void rethrow_python(nb::python_error& e) {
  std::string msg = e.what();
  throw ef::Error(kind_of_python(e), msg);
}

// One Python iterator's pass, shared with the registry of live passes that the exit hook closes.
// Python calls next() on one thread at a time, but close() may come from another (the hook, or
// a garbage collection while a daemon thread waits in next()).
class Pass {
 public:
  explicit Pass(ef::data::Iterator it) : it_(std::make_unique<ef::data::Iterator>(std::move(it))) {}

  // nullopt at the end or once closed. Called with the GIL released.
  std::optional<Element> next() {
    {
      std::lock_guard lk(mu_);
      if (closed_ || !it_) return std::nullopt;
      ++busy_;
    }
    struct Leave {
      Pass& p;
      ~Leave() {
        std::lock_guard lk(p.mu_);
        --p.busy_;
        p.idle_.notify_all();
      }
    } leave{*this};
    return it_->next();
  }

  // Ends the pass: wakes a next() waiting on another thread, waits for it to leave, and joins
  // the pipeline's threads. With `patience`, false when the next() did not leave in time (an
  // element stuck in user code): the pass must then be kept alive, not destroyed, since that
  // thread still uses it. Called with the GIL released.
  bool close(std::optional<std::chrono::milliseconds> patience = std::nullopt) {
    std::unique_ptr<ef::data::Iterator> it;
    {
      std::unique_lock lk(mu_);
      if (closed_ && it_) return busy_ == 0;  // another close is under way or gave up
      if (!it_) return true;
      closed_ = true;
      it_->cancel();
      auto left = [&] { return busy_ == 0; };
      if (patience) {
        if (!idle_.wait_for(lk, *patience, left)) return false;
      } else {
        idle_.wait(lk, left);
      }
      it = std::move(it_);
    }
    it.reset();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  std::unique_ptr<ef::data::Iterator> it_;
  int busy_ = 0;
  bool closed_ = false;
};

std::mutex g_passes_mu;
std::set<std::shared_ptr<Pass>>& live_passes() {
  static auto* s = new std::set<std::shared_ptr<Pass>>();  // never destroyed: used at exit
  return *s;
}

// Runs the call with the GIL released when this thread holds it.
template <class F>
void without_gil(F&& f) {
  if (PyGILState_Check()) {
    ReleasedGil release;
    f();
  } else {
    f();
  }
}

class PyIterator {
 public:
  explicit PyIterator(const Dataset& ds) {
    {
      ReleasedGil release;
      pass_ = std::make_shared<Pass>(ds.iterator());
    }
    std::lock_guard lk(g_passes_mu);
    live_passes().insert(pass_);
  }
  ~PyIterator() { close(); }
  // The next element; nullopt past the end (the pass is closed then).
  std::optional<nb::object> try_next() {
    if (!pass_) return std::nullopt;
    std::shared_ptr<Pass> p = pass_;  // close() on another thread may let go of pass_ meanwhile
    std::optional<Element> e;
    {
      ReleasedGil release;
      e = p->next();
    }
    if (!e) {
      close();
      return std::nullopt;
    }
    return element_to_py(*e);
  }
  nb::object next() {
    if (auto r = try_next()) return std::move(*r);
    throw nb::stop_iteration();
  }
  // tf.data's iterator.get_next(): OUT_OF_RANGE past the end.
  nb::object get_next() {
    if (auto r = try_next()) return std::move(*r);
    throw ef::Error(ef::ErrorCode::out_of_range, "[data] get_next: end of sequence (the dataset has no more elements)");
  }
  void close() {
    if (!pass_) return;
    std::shared_ptr<Pass> p = std::move(pass_);
    {
      std::lock_guard lk(g_passes_mu);
      live_passes().erase(p);
    }
    without_gil([&] { p->close(); });  // the workers may need the GIL to finish their element
  }

 private:
  std::shared_ptr<Pass> pass_;
};

// The exit hook: every live pass ends while the interpreter is still whole.
void close_live_passes() {
  std::vector<std::shared_ptr<Pass>> passes;
  {
    std::lock_guard lk(g_passes_mu);
    passes.assign(live_passes().begin(), live_passes().end());
    live_passes().clear();
  }
  without_gil([&] {
    for (auto& p : passes)
      if (!p->close(std::chrono::seconds(2))) new std::shared_ptr<Pass>(p);  // still in use: kept, never freed
  });
}

Dataset::MapFn map_fn(nb::handle fn) {
  if (!PyCallable_Check(fn.ptr())) throw nb::type_error("map needs a callable");
  auto held = hold_py(fn);
  return [held](const Element& e) -> Element {
    WorkerGil gil;
    try {
      return element_from_py(call_with(*held, e));
    } catch (nb::python_error& err) {
      rethrow_python(err);
    }
  };
}

ef::train::Callback* callback_of(nb::handle cb) { return nb::cast<ef::train::Callback*>(cb); }

nb::dict logs_to_py(const ef::train::Logs& logs) {
  nb::dict d;
  for (const auto& [k, v] : logs) d[nb::str(k.c_str())] = v;
  return d;
}

void flush_c() {
  std::cout.flush();
  std::fflush(stdout);
}

}  // namespace

void init_dataset(nb::module_& m) {
  nb::module_ d = m.def_submodule("_data", "ef.data.Dataset (C++ pipelines)");
  d.attr("INFINITE") = ef::data::kInfiniteCardinality;
  d.attr("UNKNOWN") = ef::data::kUnknownCardinality;
  d.attr("AUTOTUNE") = ef::data::kAutotune;
  note_main_thread();
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] {
    close_live_passes();
    close_gil_to_other_threads();
  }));
  d.def("_close_live_iterators", &close_live_passes, "Closes every live Dataset iterator (the exit hook).");

  nb::class_<PyIterator>(d, "DatasetIterator")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", &PyIterator::next)
      .def("get_next", &PyIterator::get_next,
           "The next element, as tf.data's iterator.get_next(): past the end ef.errors.OutOfRangeError (next() "
           "raises StopIteration).")
      .def("close", &PyIterator::close, "Stops the pipeline's threads now (as the end of iteration does).");

  nb::class_<Dataset>(d, "Dataset", nb::dynamic_attr())  // (Keras sets class_names, file_paths)
      .def_static("from_tensor_slices", [](nb::handle t) { return Dataset::from_tensor_slices(element_from_py(t)); }, "tensors"_a)
      .def_static("from_tensors", [](nb::handle t) { return Dataset::from_tensors(element_from_py(t)); }, "tensors"_a)
      .def_static(
          "range",
          [](std::int64_t a, std::optional<std::int64_t> b, std::int64_t step, nb::handle dtype) {
            ef::DType dt = dtype.is_none() ? ef::DType::int64 : dtype_from_py(dtype);
            return b ? Dataset::range(a, *b, step, dt) : Dataset::range(0, a, step, dt);
          },
          "start"_a, "stop"_a = nb::none(), "step"_a = 1, "dtype"_a = nb::none())
      .def_static(
          "from_generator",
          [](nb::handle generator, nb::handle output_signature) {
            if (!PyCallable_Check(generator.ptr()))
              throw nb::type_error("from_generator takes a callable that returns an iterator (a generator function)");
            ElementSpec spec = spec_from_py(output_signature);
            auto gen = hold_py(generator);
            return Dataset::from_generator(
                [gen, spec]() -> Dataset::Generator {
                  WorkerGil gil;
                  std::shared_ptr<nb::object> it;
                  try {
                    it = hold_py(nb::iter((*gen)()));
                  } catch (nb::python_error& e) {
                    rethrow_python(e);
                  }
                  return [it, spec]() -> std::optional<Element> {
                    WorkerGil gil;
                    PyObject* item = PyIter_Next(it->ptr());
                    if (!item) {
                      if (PyErr_Occurred()) {
                        nb::python_error e;
                        rethrow_python(e);
                      }
                      return std::nullopt;
                    }
                    nb::object obj = nb::steal(item);
                    try {
                      return conformed(element_from_py(obj), spec);
                    } catch (nb::python_error& e) {
                      rethrow_python(e);
                    }
                  };
                },
                spec);
          },
          "generator"_a, "output_signature"_a)
      .def_static(
          "text_line",
          [](std::vector<std::string> files, std::optional<std::int64_t> max_line_bytes) {
            ef::data::TextLineOptions o;
            if (max_line_bytes) {
              if (*max_line_bytes < 1) throw nb::value_error("text_line: max_line_bytes must be positive");
              o.max_line_bytes = static_cast<std::size_t>(*max_line_bytes);
            }
            return Dataset::text_line(std::move(files), o);
          },
          "filenames"_a, "max_line_bytes"_a = nb::none())
      .def_static(
          "tfrecord",
          [](std::vector<std::string> files, const std::string& compression) {
            ef::data::RecordCompression c = ef::data::RecordCompression::none;
            if (compression == "GZIP") c = ef::data::RecordCompression::gzip;
            else if (compression == "ZLIB") c = ef::data::RecordCompression::zlib;
            else if (!compression.empty())
              throw nb::value_error(("compression_type must be '', 'GZIP' or 'ZLIB', got '" + compression + "'").c_str());
            return Dataset::tfrecord(std::move(files), c);
          },
          "filenames"_a, "compression_type"_a = "")
      .def_static(
          "csv",
          [](std::vector<std::string> files, std::optional<std::vector<nb::handle>> column_types, bool header,
             const std::string& delimiter, std::optional<std::vector<std::optional<double>>> column_defaults) {
            ef::data::CsvOptions o;
            if (column_types)
              for (auto t : *column_types) o.column_types.push_back(dtype_from_py(t));
            o.header = header;
            if (delimiter.size() != 1) throw nb::value_error("csv: the delimiter is one character");
            o.delimiter = delimiter[0];
            if (column_defaults) o.column_defaults = *column_defaults;
            return Dataset::csv(std::move(files), o);
          },
          "filenames"_a, "column_types"_a = nb::none(), "header"_a = true, "delimiter"_a = ",", "column_defaults"_a = nb::none())
      .def_static(
          "image_folder",
          [](const std::string& dir, int channels, std::optional<std::pair<std::int64_t, std::int64_t>> image_size) {
            return Dataset::image_folder(dir, {.channels = channels, .image_size = image_size});
          },
          "directory"_a, "channels"_a = 0, "image_size"_a = nb::none())
      .def_static("image_folder_classes", &Dataset::image_folder_classes, "directory"_a)
      .def_static("zip", [](std::vector<Dataset> ds) { return Dataset::zip(ds); }, "datasets"_a)
      .def(
          "map",
          [](const Dataset& self, nb::handle fn, std::optional<std::int64_t> num_parallel_calls, std::optional<bool> deterministic) {
            return self.map(map_fn(fn), num_parallel_calls.value_or(0), deterministic.value_or(true));
          },
          "map_func"_a, "num_parallel_calls"_a = nb::none(), "deterministic"_a = nb::none())
      .def(
          "filter",
          [](const Dataset& self, nb::handle fn) {
            auto f = map_fn(fn);
            return self.filter([f](const Element& e) { return f(e).values().at(0); });
          },
          "predicate"_a)
      .def("shuffle", &Dataset::shuffle, "buffer_size"_a, "seed"_a = nb::none(), "reshuffle_each_iteration"_a = true)
      .def("batch", &Dataset::batch, "batch_size"_a, "drop_remainder"_a = false)
      .def(
          "padded_batch",
          [](const Dataset& self, std::int64_t batch_size, nb::handle padded_shapes, nb::handle padding_values, bool drop_remainder) {
            std::vector<ef::Shape> shapes;
            std::vector<double> values;
            auto shape_of = [](nb::handle s) {
              return ef::Shape(dims_arg(s, "padded_batch: padded_shapes"));
            };
            const bool one = self.element_spec().structure == Structure::tensor;
            if (!padded_shapes.is_none()) {
              if (one) shapes.push_back(shape_of(padded_shapes));
              else
                for (auto s : padded_shapes) shapes.push_back(shape_of(s));
            }
            if (!padding_values.is_none()) {
              if (one || PyFloat_Check(padding_values.ptr()) || PyLong_Check(padding_values.ptr()))
                values.assign(one ? 1 : self.element_spec().specs.size(),
                              float_arg(padding_values, "padded_batch: padding_values"));
              else
                for (auto v : padding_values) values.push_back(float_arg(v, "padded_batch: padding_values"));
            }
            return self.padded_batch(batch_size, shapes, values, drop_remainder);
          },
          "batch_size"_a, "padded_shapes"_a = nb::none(), "padding_values"_a = nb::none(), "drop_remainder"_a = false)
      .def("prefetch", &Dataset::prefetch, "buffer_size"_a)
      .def("repeat", [](const Dataset& self, std::optional<std::int64_t> count) { return self.repeat(count.value_or(-1)); },
           "count"_a = nb::none())
      .def("take", &Dataset::take, "count"_a)
      .def("skip", &Dataset::skip, "count"_a)
      .def("cache", &Dataset::cache, "filename"_a = "")
      .def(
          "interleave",
          [](const Dataset& self, nb::handle fn, std::optional<std::int64_t> cycle_length, std::int64_t block_length) {
            if (!PyCallable_Check(fn.ptr())) throw nb::type_error("interleave needs a callable returning a Dataset");
            auto held = hold_py(fn);
            return self.interleave(
                [held](const Element& e) -> Dataset {
                  WorkerGil gil;
                  try {
                    nb::object r = call_with(*held, e);
                    Dataset* ds = nullptr;
                    if (!nb::try_cast(r, ds, false) || !ds)
                      throw ef::Error(ef::kWrongType, "[data] interleave: the function must return an ef.data.Dataset");
                    return *ds;
                  } catch (nb::python_error& err) {
                    rethrow_python(err);
                  }
                },
                cycle_length.value_or(ef::data::kAutotune), block_length);
          },
          "map_func"_a, "cycle_length"_a = nb::none(), "block_length"_a = 1)
      .def("enumerate", &Dataset::enumerate, "start"_a = 0)
      .def("cardinality", &Dataset::cardinality)
      .def_prop_ro("element_spec", [](const Dataset& self) { return spec_to_py(self.element_spec()); })
      .def("__iter__", [](const Dataset& self) { return new PyIterator(self); }, nb::rv_policy::take_ownership)
      .def("__len__",
           [](const Dataset& self) {
             std::int64_t n = self.cardinality();
             if (n == ef::data::kInfiniteCardinality) throw nb::type_error("The dataset is infinite.");
             if (n == ef::data::kUnknownCardinality) throw nb::type_error("The dataset length is unknown.");
             return n;
           })
      .def("__repr__", [](const Dataset& self) { return "<ef.data.Dataset element_spec=" + self.element_spec().str() + ">"; });

  // Model.fit / evaluate / predict over a Dataset (python/eagerflow/_training.py calls these).
  d.def(
      "_fit",
      [](ef::train::Model& model, const Dataset& ds, int epochs, int initial_epoch, std::int64_t steps_per_epoch,
         nb::handle validation_data, std::int64_t validation_steps, nb::handle callbacks, int verbose) {
        ef::train::FitOptions o;
        o.epochs = epochs;
        o.initial_epoch = initial_epoch;
        o.steps_per_epoch = steps_per_epoch;
        o.validation_steps = validation_steps;
        o.verbose = verbose;
        if (!validation_data.is_none()) {
          Dataset* vd = nullptr;
          if (nb::try_cast(validation_data, vd, false) && vd) {
            o.validation_data = ef::train::ValidationData(*vd);
          } else {
            nb::sequence seq = nb::borrow<nb::sequence>(validation_data);
            if (nb::len(seq) != 2) throw nb::value_error("validation_data must be a Dataset or (x_val, y_val)");
            o.validation_data = ef::train::ValidationData(ef::train::Data(to_tensor(seq[0])), ef::train::Data(to_tensor(seq[1])));
          }
        }
        if (!callbacks.is_none())
          for (auto cb : callbacks) o.callbacks.emplace_back(callback_of(cb), [](ef::train::Callback*) {});
        ef::train::History h;
        {
          ReleasedGil release;
          h = model.fit(ds, o);
          flush_c();
        }
        drain_log_warnings();
        nb::dict history;
        for (const auto& [k, v] : h.history) history[nb::str(k.c_str())] = nb::cast(v);
        return nb::make_tuple(history, nb::cast(h.epoch));
      },
      "model"_a, "dataset"_a, "epochs"_a, "initial_epoch"_a, "steps_per_epoch"_a, "validation_data"_a.none(),
      "validation_steps"_a, "callbacks"_a.none(), "verbose"_a);
  d.def(
      "_evaluate",
      [](ef::train::Model& model, const Dataset& ds, int verbose, std::int64_t steps, nb::handle callbacks) {
        ef::train::EvaluateOptions o;
        o.verbose = verbose;
        o.steps = steps;
        if (!callbacks.is_none())
          for (auto cb : callbacks) o.callbacks.emplace_back(callback_of(cb), [](ef::train::Callback*) {});
        ef::train::Logs logs;
        {
          ReleasedGil release;
          logs = model.evaluate(ds, o);
          flush_c();
        }
        drain_log_warnings();
        return logs_to_py(logs);
      },
      "model"_a, "dataset"_a, "verbose"_a, "steps"_a, "callbacks"_a.none() = nb::none());
  d.def(
      "_predict",
      [](ef::train::Model& model, const Dataset& ds, std::int64_t steps) {
        std::vector<Tensor> outs;
        {
          ReleasedGil release;
          outs = model.predict_outputs(ds, steps);
        }
        drain_log_warnings();
        return outs;
      },
      "model"_a, "dataset"_a, "steps"_a);
}

}  // namespace efpy
