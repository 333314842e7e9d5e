// ef.function over Python callables: the C++ signature cache (detail::FunctionCore) keyed by
// a flat description of the Python arguments. python/eagerflow/_function.py flattens the
// arguments and rebuilds them around symbolic tensors when a trace is needed; this file owns
// the cache lookups, the trace (GIL taken for the Python body) and the replay (GIL released).
#include <unordered_map>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"
#include "eagerflow/trace/context.h"

namespace efpy {
namespace {

using ef::ArgSignature;
using ef::Signature;
using ef::Tensor;

ef::TensorSpec spec_from(nb::handle shape, nb::handle dtype, const std::string& name) {
  std::vector<std::int64_t> dims;
  if (!shape.is_none()) dims = dims_arg(shape, "TensorSpec: shape");
  return {dtype.is_none() ? ef::DType::float32 : dtype_from_py(dtype), ef::Shape(dims), name};
}

ef::StaticValue static_of(nb::handle v) {
  if (v.is_none()) return std::monostate{};
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (!overflow) return static_cast<std::int64_t>(x);
  }
  if (PyFloat_Check(v.ptr())) return PyFloat_AsDouble(v.ptr());
  return nb::cast<std::string>(nb::str(v));  // a key the Python side made (repr of a structure)
}

class PyFunction {
 public:
  // The Python Function is passed to each call (not stored: a stored reference would make a
  // cycle Function -> FunctionCore -> Function that Python's collector cannot see).
  PyFunction(const std::string& name, std::vector<std::string> arg_names,
             std::optional<std::vector<ef::TensorSpec>> input_signature, bool reduce_retracing) {
    ef::FunctionOptions options;
    options.name = name;
    options.arg_names = std::move(arg_names);
    options.reduce_retracing = reduce_retracing;
    if (input_signature) options.input_signature = ef::InputSignature(*input_signature);
    core_ = std::make_shared<ef::detail::FunctionCore>(std::move(options));
  }

  // Fast path: every argument is a tensor (positional), e.g. f(x).
  nb::object call_tensors(nb::handle owner, nb::tuple args) {
    std::size_t n = args.size();
    if (n > 8) return call(owner, nb::none(), args, args, nb::dict());
    Tensor flat[8];
    std::uint64_t hash = n;
    for (std::size_t i = 0; i < n; ++i) {
      flat[i] = nb::cast<const Tensor&>(args[i]);
      ef::detail::check_tensor_arg(flat[i]);
      ef::detail::ArgTraits<Tensor>::hash(flat[i], hash);
    }
    std::span<const Tensor> inputs(flat, n);
    if (ef::trace::current()) {
      Signature sig;
      for (std::size_t i = 0; i < n; ++i) sig.push_back(ef::detail::ArgTraits<Tensor>::signature(flat[i]));
      return call_inside(owner, sig, inputs, args, nb::dict());
    }
    std::shared_ptr<const ef::ConcreteFunction> cf;
    {
      nb::gil_scoped_release release;
      cf = core_->find(hash, [&](const Signature& s) {
        if (s.size() != n) return false;
        for (std::size_t i = 0; i < n; ++i)
          if (!ef::detail::ArgTraits<Tensor>::matches(s[i], flat[i])) return false;
        return true;
      });
    }
    if (!cf) {
      Signature sig;
      for (std::size_t i = 0; i < n; ++i) sig.push_back(ef::detail::ArgTraits<Tensor>::signature(flat[i]));
      cf = trace(owner, sig, args, nb::dict());
    }
    return run(cf, inputs);
  }

  // General path: `desc` describes each argument (see _function.py), `tensors` are the
  // tensors in order, `args`/`kwargs` the call's own arguments (used only when tracing).
  nb::object call(nb::handle owner, nb::handle desc, nb::handle tensors_h, nb::handle args, nb::handle kwargs) {
    std::vector<Tensor> tensors;
    for (auto t : tensors_h) tensors.push_back(nb::cast<const Tensor&>(t));
    Signature sig = signature_of(desc, tensors);
    if (ef::trace::current()) return call_inside(owner, sig, tensors, args, kwargs);
    std::uint64_t hash = ef::signature_hash(sig);
    std::shared_ptr<const ef::ConcreteFunction> cf;
    {
      nb::gil_scoped_release release;
      cf = core_->find(hash, [&](const Signature& s) { return ef::signature_accepts(s, sig); });
    }
    if (!cf) cf = trace(owner, sig, args, kwargs);
    return run(cf, tensors);
  }

  std::shared_ptr<const ef::ConcreteFunction> get_concrete_function(nb::handle owner, nb::handle desc, nb::handle specs, nb::handle args,
                                                                     nb::handle kwargs) {
    std::vector<ef::TensorSpec> sp;
    for (auto s : specs) sp.push_back(nb::cast<ef::TensorSpec>(s));
    Signature sig = signature_of_specs(desc, sp);
    return trace(owner, sig, args, kwargs);
  }

  // True while this function's body traces on this thread: a call from its own body inlines.
  bool tracing_here() const { return core_->tracing_on_this_thread(); }
  int tracing_count() const { return core_->tracing_count(); }
  std::vector<ef::TraceRecord> traces() const { return core_->traces(); }
  std::vector<std::shared_ptr<const ef::ConcreteFunction>> concrete_functions() const {
    return core_->concrete_functions();
  }
  const std::string& name() const { return core_->name(); }

 private:
  static Signature signature_of(nb::handle desc, const std::vector<Tensor>& tensors) {
    Signature sig;
    std::size_t next = 0;
    auto take = [&]() -> const Tensor& {
      if (next >= tensors.size()) throw nb::value_error("eagerflow: argument description and tensors disagree");
      ef::detail::check_tensor_arg(tensors[next]);
      return tensors[next++];
    };
    if (desc.is_none()) {
      for (const auto& t : tensors) sig.push_back(ef::detail::ArgTraits<Tensor>::signature(t));
      return sig;
    }
    for (auto d : desc) {
      auto kind = nb::cast<std::string>(d[0]);
      if (kind == "T") {
        sig.push_back(ef::detail::ArgTraits<Tensor>::signature(take()));
      } else if (kind == "L") {
        ArgSignature a{ArgSignature::Kind::tensor_list, {}, {}, {}, {}};
        auto n = nb::cast<std::size_t>(d[1]);
        for (std::size_t i = 0; i < n; ++i) a.specs.push_back(take().spec());
        sig.push_back(std::move(a));
      } else if (kind == "M") {
        ArgSignature a{ArgSignature::Kind::tensor_map, {}, {}, {}, {}};
        for (auto k : d[1]) {
          a.keys.push_back(nb::cast<std::string>(k));
          a.specs.push_back(take().spec());
        }
        sig.push_back(std::move(a));
      } else {
        sig.push_back(ArgSignature{ArgSignature::Kind::static_value, {}, {}, static_of(d[1]), {}});
      }
    }
    if (next != tensors.size()) throw nb::value_error("eagerflow: argument description and tensors disagree");
    return sig;
  }

  static Signature signature_of_specs(nb::handle desc, const std::vector<ef::TensorSpec>& specs) {
    Signature sig;
    std::size_t next = 0;
    auto take = [&]() -> const ef::TensorSpec& {
      if (next >= specs.size()) throw nb::value_error("eagerflow: argument description and specs disagree");
      return specs[next++];
    };
    if (desc.is_none()) {
      for (const auto& s : specs) sig.push_back(ArgSignature{ArgSignature::Kind::tensor, {s}, {}, {}, {}});
      return sig;
    }
    for (auto d : desc) {
      auto kind = nb::cast<std::string>(d[0]);
      if (kind == "T") {
        sig.push_back(ArgSignature{ArgSignature::Kind::tensor, {take()}, {}, {}, {}});
      } else if (kind == "L") {
        ArgSignature a{ArgSignature::Kind::tensor_list, {}, {}, {}, {}};
        for (std::size_t i = 0, n = nb::cast<std::size_t>(d[1]); i < n; ++i) a.specs.push_back(take());
        sig.push_back(std::move(a));
      } else if (kind == "M") {
        ArgSignature a{ArgSignature::Kind::tensor_map, {}, {}, {}, {}};
        for (auto k : d[1]) a.keys.push_back(nb::cast<std::string>(k)), a.specs.push_back(take());
        sig.push_back(std::move(a));
      } else {
        sig.push_back(ArgSignature{ArgSignature::Kind::static_value, {}, {}, static_of(d[1]), {}});
      }
    }
    return sig;
  }

  // Traces (under the cache's lock, GIL released so that other Python threads can reach the
  // cache; the body takes the GIL back). A Python exception in the body propagates unchanged
  // and the cache stays as it was (FunctionCore adds nothing for a trace that throws).
  std::shared_ptr<const ef::ConcreteFunction> trace(nb::handle owner, const Signature& sig, nb::handle args,
                                                     nb::handle kwargs, std::vector<Tensor>* captures = nullptr) {
    std::shared_ptr<const ef::ConcreteFunction> cf;
    {
      nb::gil_scoped_release release;
      auto body = [&](ef::trace::TraceContext& ctx, const Signature& final_sig, ef::detail::OutputStructure&) {
        nb::gil_scoped_acquire gil;
        nb::list symbolic;
        for (const auto& a : final_sig)
          for (const auto& spec : a.specs) symbolic.append(nb::cast(ctx.add_input(spec)));
        nb::object result = owner.attr("_trace")(args, kwargs, symbolic);
        nb::handle outs = result[0];
        std::vector<Tensor> outputs;
        for (auto o : outs) outputs.push_back(to_tensor(o));
        ctx.set_outputs(outputs);
        // Stored before the entry is published (GIL held): another thread may replay it as
        // soon as get_or_trace releases the cache's lock.
        out_trees_[ctx.graph().get()] = nb::borrow(result[1]);
      };
      if (captures) {
        auto nested = core_->get_or_trace_inside(sig, body);
        cf = nested.function;
        *captures = std::move(nested.captures);
      } else {
        cf = core_->get_or_trace(sig, body);
      }
    }
    drain_log_warnings();  // a retracing warning becomes a Python warning here, at the caller
    return cf;
  }

  // A call inside another function's trace: one call node holding this function's own trace
  // (cached as any other, unless the body used values of the enclosing trace).
  nb::object call_inside(nb::handle owner, const Signature& sig, std::span<const Tensor> inputs, nb::handle args,
                         nb::handle kwargs) {
    std::vector<Tensor> captures;
    auto cf = trace(owner, sig, args, kwargs, &captures);
    std::vector<Tensor> all(inputs.begin(), inputs.end());
    all.insert(all.end(), captures.begin(), captures.end());
    auto it = out_trees_.find(&cf->traced_graph());
    if (it == out_trees_.end()) throw nb::value_error("eagerflow: no output structure for a cached trace");
    std::vector<Tensor> outs = cf->call(all);
    nb::handle tree = it->second;
    if (tree.is_none()) return nb::cast(std::move(outs.at(0)));
    return nb::make_tuple(tree, nb::cast(std::move(outs)));
  }

  nb::object run(const std::shared_ptr<const ef::ConcreteFunction>& cf, std::span<const Tensor> inputs) {
    auto it = out_trees_.find(&cf->traced_graph());
    if (it == out_trees_.end()) throw nb::value_error("eagerflow: no output structure for a cached trace");
    std::vector<Tensor> outs;
    if (ef::detail::tapes_recording()) {
      outs = cf->call(inputs);  // one call op, which the tape records with its residuals
    } else {
      outs.resize(cf->num_outputs());
      nb::gil_scoped_release release;
      cf->run(inputs, outs);
    }
    nb::handle tree = it->second;
    if (tree.is_none()) return nb::cast(std::move(outs.at(0)));  // a single tensor
    return nb::make_tuple(tree, nb::cast(std::move(outs)));
  }

  std::shared_ptr<ef::detail::FunctionCore> core_;
  // The Python structure of each trace's results (None: one tensor). Touched with the GIL held.
  // Keyed by the traced graph (known inside the trace body, before the entry exists).
  std::unordered_map<const ef::ir::Graph*, nb::object> out_trees_;
};

}  // namespace

void init_function(nb::module_& m) {
  nb::class_<ef::TensorSpec>(m, "TensorSpec")
      .def("__init__",
           [](ef::TensorSpec* self, nb::handle shape, nb::handle dtype, const std::string& name) {
             new (self) ef::TensorSpec(spec_from(shape, dtype, name));
           },
           nb::arg("shape") = nb::none(), nb::arg("dtype") = nb::none(), nb::arg("name") = "")
      .def_prop_ro("dtype", [](const ef::TensorSpec& s) { return s.dtype; })
      .def_prop_ro("shape",
                   [](const ef::TensorSpec& s) {
                     nb::list out;
                     for (auto d : s.shape) out.append(d == ef::kDynamic ? nb::none() : nb::cast(d));
                     return nb::tuple(out);
                   })
      .def_prop_ro("name", [](const ef::TensorSpec& s) { return s.name; })
      .def("__repr__", [](const ef::TensorSpec& s) { return "ef.TensorSpec(" + s.str() + ")"; })
      .def("__eq__", [](const ef::TensorSpec& a, const ef::TensorSpec& b) { return a == b; });

  nb::class_<ef::TraceRecord>(m, "TraceRecord")
      .def_ro("number", &ef::TraceRecord::number)
      .def_ro("signature", &ef::TraceRecord::signature)
      .def_ro("reason", &ef::TraceRecord::reason)
      .def_ro("milliseconds", &ef::TraceRecord::milliseconds)
      .def_ro("created_variables", &ef::TraceRecord::created_variables)
      .def("__repr__", [](const ef::TraceRecord& r) {
        return "TraceRecord(number=" + std::to_string(r.number) + ", signature='" + r.signature + "', reason='" +
               r.reason + "')";
      });

  nb::class_<ef::ConcreteFunction>(m, "ConcreteFunction")
      .def_prop_ro("name", &ef::ConcreteFunction::name)
      .def_prop_ro("signature", &ef::ConcreteFunction::signature_str)
      .def_prop_ro("graph", &ef::ConcreteFunction::str, "The graph that runs (after the passes), jaxpr-like.")
      .def_prop_ro("traced_graph", [](const ef::ConcreteFunction& cf) { return ef::ir::to_text(cf.traced_graph()); })
      .def("to_dot", &ef::ConcreteFunction::to_dot)
      .def("__str__", &ef::ConcreteFunction::str)
      .def("__repr__", [](const ef::ConcreteFunction& cf) {
        return "<ef.ConcreteFunction " + cf.name() + cf.signature_str() + ">";
      })
      .def("__call__", [](const ef::ConcreteFunction& cf, nb::args args) {
        std::vector<Tensor> inputs;
        for (auto a : args) inputs.push_back(to_tensor(a));
        std::vector<Tensor> outs;
        {
          nb::gil_scoped_release release;
          outs = cf.call_flat(inputs);
        }
        return outs;
      });

  nb::class_<PyFunction>(m, "FunctionCore")
      .def(nb::init<const std::string&, std::vector<std::string>, std::optional<std::vector<ef::TensorSpec>>, bool>(),
           nb::arg("name"), nb::arg("arg_names"), nb::arg("input_signature").none(),
           nb::arg("reduce_retracing"))
      .def("call_tensors", &PyFunction::call_tensors)
      .def("call", &PyFunction::call)
      .def("get_concrete_function", &PyFunction::get_concrete_function)
      .def("tracing_count", &PyFunction::tracing_count)
      .def("tracing_here", &PyFunction::tracing_here)
      .def("traces", &PyFunction::traces)
      .def("concrete_functions", &PyFunction::concrete_functions)
      .def_prop_ro("name", &PyFunction::name);

  m.def("_in_trace", [] { return ef::trace::current() != nullptr; });
  // tf.init_scope: a context manager that hides any active trace (ops run eagerly inside it).
  struct InitScope {
    std::optional<ef::trace::EagerScope> scope;
  };
  nb::class_<InitScope>(m, "_InitScope")
      .def(nb::init<>())
      .def("__enter__", [](InitScope& s) { s.scope.emplace(); })
      .def("__exit__", [](InitScope& s, nb::args) { s.scope.reset(); return false; });
  m.def("run_functions_eagerly", &ef::run_functions_eagerly, nb::arg("enable"));
  m.def("functions_run_eagerly", &ef::functions_run_eagerly);
}

}  // namespace efpy
