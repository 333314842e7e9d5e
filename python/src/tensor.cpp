// ef.Tensor: dtype, shape, NumPy interop (numpy() copies, np.asarray views read-only), operators, indexing, repr.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace efpy {
namespace {

nb::dlpack::dtype to_dl(ef::DType d) {
  switch (d) {
    case ef::DType::float32: return nb::dtype<float>();
    case ef::DType::float64: return nb::dtype<double>();
    case ef::DType::int32: return nb::dtype<std::int32_t>();
    case ef::DType::int64: return nb::dtype<std::int64_t>();
    case ef::DType::bool_: return nb::dtype<bool>();
    case ef::DType::bfloat16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
    case ef::DType::float16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case ef::DType::string: break;  // no DLPack form: NumPy gets an object array of bytes (view_numpy)
    case ef::DType::uint8: return nb::dtype<std::uint8_t>();
    case ef::DType::int8: return nb::dtype<std::int8_t>();
    case ef::DType::int16: return nb::dtype<std::int16_t>();
    case ef::DType::uint16: return nb::dtype<std::uint16_t>();
    case ef::DType::uint32: return nb::dtype<std::uint32_t>();
    case ef::DType::uint64: return nb::dtype<std::uint64_t>();
    case ef::DType::complex64: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Complex), 64, 1};
    case ef::DType::complex128: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Complex), 128, 1};
  }
  return nb::dtype<float>();
}

const char* numpy_name(ef::DType d) {
  switch (d) {
    case ef::DType::float32: return "float32";
    case ef::DType::float64: return "float64";
    case ef::DType::int32: return "int32";
    case ef::DType::int64: return "int64";
    case ef::DType::bool_: return "bool";
    case ef::DType::bfloat16: return "bfloat16";
    case ef::DType::float16: return "float16";
    case ef::DType::string: return "string";
    case ef::DType::uint8: return "uint8";
    case ef::DType::int8: return "int8";
    case ef::DType::int16: return "int16";
    case ef::DType::uint16: return "uint16";
    case ef::DType::uint32: return "uint32";
    case ef::DType::uint64: return "uint64";
    case ef::DType::complex64: return "complex64";
    case ef::DType::complex128: return "complex128";
  }
  return "float32";
}

// NumPy has no bfloat16 of its own: arrays of bfloat16 use ml_dtypes' (the type JAX and
// TensorFlow use) when it is installed; without it, .numpy() of a bfloat16 tensor is an error
// that says to install it or cast to float32.
nb::object ml_dtypes_bfloat16() {
  static nb::object* t = nullptr;
  if (!t) {
    try {
      t = new nb::object(nb::module_::import_("ml_dtypes").attr("bfloat16"));  // leaked, as numpy()
    } catch (nb::python_error&) {
      return nb::none();
    }
  }
  return *t;
}

// TF's DType.min / .max: NumPy's iinfo (Python ints, uint64's exact) or finfo; bool has none.
nb::object dtype_limit(ef::DType d, const char* which) {
  if (d == ef::DType::bool_)
    throw nb::type_error((std::string("Cannot find ") + (which[1] == 'i' ? "minimum" : "maximum") + " value of bool.").c_str());
  if (ef::is_integer(d)) return nb::int_(numpy_module().attr("iinfo")(numpy_name(d)).attr(which));
  if (d == ef::DType::bfloat16) {
    nb::object bf16 = ml_dtypes_bfloat16();
    if (bf16.is_none())
      ef::fail(ef::ErrorCode::failed_precondition, "dtype", "bfloat16's limits need ml_dtypes (pip install ml_dtypes)");
    return nb::module_::import_("ml_dtypes").attr("finfo")(bf16).attr(which);
  }
  return numpy_module().attr("finfo")(numpy_name(d)).attr(which);
}

std::string shape_tuple(const ef::Shape& s) {
  std::string out = "(";
  for (int i = 0; i < s.rank(); ++i) {
    if (i) out += ", ";
    out += s[i] == ef::kDynamic ? std::string("None") : std::to_string(s[i]);
  }
  if (s.rank() == 1) out += ",";
  return out + ")";
}

[[noreturn]] void symbolic_value_error(const ef::Tensor& t, const char* what) {
  // TF raises NotImplementedError for NumPy's view of a symbolic tensor, TypeError for bool(),
  // int(), float() and indexing with one (OperatorNotAllowedInGraphError is a TypeError).
  const ef::ErrorKind kind{ef::ErrorCode::failed_precondition,
                           std::string_view(what).find("numpy") != std::string_view::npos
                               ? ef::PythonBuiltin::not_implemented_error
                               : ef::PythonBuiltin::type_error};
  if (t.is_keras_tensor())
    ef::fail(kind, "tensor",
             std::string("cannot use a Keras tensor ") + t.spec().str() + " as a Python " + what +
                 ": it is a placeholder of the functional API (ef.keras.Input and the layers called on it). "
                 "Build a model with ef.keras.Model(inputs, outputs) and call it on data");
  ef::fail(kind, "tensor",
           std::string("cannot use a symbolic tensor ") + t.spec().str() + " as a Python " + what +
               " inside ef.function: its value exists only when the graph runs, while Python code runs "
               "once at trace time. Use ef.cond(pred, true_fn, false_fn) (or ef.where) for data-dependent "
               "branches, and ef.print(...) to print values at every call");
}

// A read-only NumPy view of the tensor's memory (the array keeps the tensor's storage alive):
// tensors are immutable, and a writable view would let `np.asarray(t)[0] = 1` change t, every
// tensor sharing its storage and a Variable's current value behind the variable's back.
nb::object view_numpy(const ef::Tensor& t) {
  if (t.is_symbolic() || t.is_keras_tensor()) symbolic_value_error(t, "value (.numpy())");
  const auto& shape = t.shape();
  std::vector<std::size_t> dims(shape.begin(), shape.end());
  if (t.dtype() == ef::DType::string) {  // NumPy holds no views of bytes: an object array of bytes, as TF's
    nb::list items;
    for (std::string_view v : t.data<std::string_view>()) items.append(nb::bytes(v.data(), v.size()));
    nb::object flat = numpy_module().attr("empty")(items.size(), "dtype"_a = "object");
    if (items.size()) flat[nb::slice(nb::none(), nb::none(), nb::none())] = items;
    nb::list dims_list;
    for (auto d : dims) dims_list.append(d);
    nb::object out = flat.attr("reshape")(nb::tuple(dims_list));
    out.attr("setflags")("write"_a = false);
    return out;
  }
  auto* keep = new ef::Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<ef::Tensor*>(p); });
  void* data = const_cast<void*>(t.raw_data());
  nb::object out;
  if (t.dtype() == ef::DType::bfloat16) {
    nb::object bf16 = ml_dtypes_bfloat16();
    if (bf16.is_none())
      ef::fail(ef::ErrorCode::failed_precondition, "tensor",
               "a bfloat16 tensor becomes a NumPy array of ml_dtypes.bfloat16 (NumPy has no bfloat16): "
               "pip install ml_dtypes, or cast to float32 first (x.astype(ef.float32))");
    nb::ndarray<nb::numpy, nb::ro> bits(data, dims.size(), dims.data(), owner, nullptr, nb::dtype<std::uint16_t>());
    out = nb::cast(bits, nb::rv_policy::reference).attr("view")(bf16);
  } else {
    nb::ndarray<nb::numpy, nb::ro> arr(data, dims.size(), dims.data(), owner, nullptr, to_dl(t.dtype()));
    out = nb::cast(arr, nb::rv_policy::reference);
    // DLPack's 64-bit integers arrive as NumPy's long long ('q', 'Q'), whose scalars are not
    // np.int64 / np.uint64 (long, 'l', 'L', on Linux): viewed as NumPy's own names, as TF's are.
    if (t.dtype() == ef::DType::int64 || t.dtype() == ef::DType::uint64) out = out.attr("view")(numpy_name(t.dtype()));
  }
  out.attr("setflags")("write"_a = false);
  return out;
}

// .numpy(): a copy the caller owns and may write (as TF's numpy() is), so writing to
// `v.numpy()` never changes a Variable and `model.predict(x)` results can be edited in place.
// A scalar's is a NumPy scalar (np.float32(6.0)), as TF's is.
nb::object to_numpy(const ef::Tensor& t) {
  nb::object a = view_numpy(t).attr("copy")();
  return t.rank() == 0 ? nb::object(a[nb::tuple()]) : a;
}

// TF's text of a tensor's values: NumPy's str of the array (its repr for a repr), a scalar as
// NumPy prints it ("2.2", "True"); values spanning lines start on a line of their own.
std::string numpy_text(const ef::Tensor& t, bool is_repr) {
  nb::object a = view_numpy(t);
  nb::object values = t.rank() == 0 ? nb::object(a[nb::tuple()]) : a;
  nb::str text_py = t.rank() == 0 || !is_repr ? nb::str(values) : nb::repr(values);
  std::string text = nb::cast<std::string>(text_py);
  return text.find('\n') == std::string::npos ? text : "\n" + text;
}

ef::Tensor operand(nb::handle h, const ef::Tensor& like) { return to_tensor(h, &like); }

[[noreturn]] void bad_index(nb::handle key) {
  throw nb::type_error(("only integers, slices (`:`), ellipsis (`...`), None (a new axis) and integer tensors or "
                        "lists of integers are valid indices, got " + describe(key)).c_str());
}

// Python-style indexing: ints, slices, None, Ellipsis (a tuple of them); a tensor or list of
// ints gathers along axis 0.
ef::Tensor getitem(const ef::Tensor& x, nb::handle key) {
  bool symbolic_scalar = nb::isinstance<ef::Tensor>(key) && nb::cast<ef::Tensor>(key).is_symbolic() &&
                         nb::cast<ef::Tensor>(key).rank() == 0;
  if (symbolic_scalar) return getitem(x, nb::make_tuple(key));  // an index of axis 0 (negatives count from the end)
  if (nb::isinstance<ef::Tensor>(key) || PyList_Check(key.ptr()) || nb::hasattr(key, "__array_interface__")) {
    ef::Tensor idx = to_tensor(key);
    if (!ef::is_integer(idx.dtype())) bad_index(key);
    return ef::gather(x, ef::is_index_dtype(idx.dtype()) ? idx : ef::cast(idx, ef::DType::int64), 0);
  }
  std::vector<nb::handle> items;
  nb::tuple tup;
  if (PyTuple_Check(key.ptr())) {
    tup = nb::borrow<nb::tuple>(key);
    for (auto it : tup) items.push_back(it);
  } else {
    items.push_back(key);
  }
  int consumed = 0;
  for (auto it : items)
    if (!it.is_none() && it.ptr() != Py_Ellipsis) ++consumed;
  std::vector<std::int64_t> begin, end, strides;
  std::vector<int> squeeze_axes, new_axes;  // axes of the sliced tensor / of the result
  // A symbolic integer scalar as the index of an axis (x[i, :] inside ef.function, AutoGraph's
  // loops): the axis is kept whole by the slice and gathered at i afterwards.
  std::vector<std::pair<int, ef::Tensor>> gathered;
  int axis = 0, out_axis = 0;
  bool any_stride = false;
  for (auto it : items) {
    if (it.ptr() == Py_Ellipsis) {
      int skip = x.rank() - consumed;
      for (int k = 0; k < skip; ++k, ++axis, ++out_axis) {
        begin.push_back(0), end.push_back(std::numeric_limits<std::int64_t>::max()), strides.push_back(1);
      }
      continue;
    }
    if (it.is_none()) {
      new_axes.push_back(out_axis++);
      continue;
    }
    if (axis >= x.rank()) throw nb::index_error("too many indices for tensor");
    if (PySlice_Check(it.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(it.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      if (step != 1) any_stride = true;
      begin.push_back(start), end.push_back(stop), strides.push_back(step);
      ++axis, ++out_axis;
    } else if (nb::isinstance<ef::Tensor>(it) && nb::cast<ef::Tensor>(it).is_symbolic()) {
      ef::Tensor idx = nb::cast<ef::Tensor>(it);
      if (idx.rank() != 0 || !ef::is_integer(idx.dtype())) bad_index(it);
      if (!ef::is_index_dtype(idx.dtype())) idx = ef::cast(idx, ef::DType::int64);
      std::int64_t n = x.dim(axis);
      if (n != ef::kDynamic)  // a negative index counts from the end, as TF's strided_slice
        idx = ef::where(ef::less(idx, ef::zeros_like(idx)), ef::add(idx, ef::full_like(idx, static_cast<double>(n))), idx);
      gathered.emplace_back(axis, idx);
      begin.push_back(0), end.push_back(std::numeric_limits<std::int64_t>::max()), strides.push_back(1);
      ++axis;
    } else {
      if (!PyIndex_Check(it.ptr())) bad_index(it);
      std::int64_t i = int_arg(it, "index");
      std::int64_t n = x.dim(axis);
      if (i < -n || i >= n) throw nb::index_error(("index " + std::to_string(i) + " is out of bounds for axis " +
                                                   std::to_string(axis) + " with size " + std::to_string(n)).c_str());
      if (i < 0) i += n;
      begin.push_back(i), end.push_back(i + 1), strides.push_back(1);
      squeeze_axes.push_back(axis);
      ++axis;
    }
  }
  ef::Tensor y = ef::slice(x, begin, end, any_stride ? strides : std::vector<std::int64_t>{});
  if (!gathered.empty()) {
    // Each removed axis, from the last: an int's is squeezed, a symbolic index's gathered.
    std::vector<std::pair<int, ef::Tensor>> removals = gathered;
    for (int a : squeeze_axes) removals.emplace_back(a, ef::Tensor());
    std::sort(removals.begin(), removals.end(), [](const auto& p, const auto& q) { return p.first > q.first; });
    for (const auto& [a, idx] : removals) y = idx.defined() ? ef::gather(y, idx, a) : ef::squeeze(y, {a});
  } else if (!squeeze_axes.empty()) {
    y = ef::squeeze(y, squeeze_axes);
  }
  for (int a : new_axes) y = ef::expand_dims(y, a);
  return y;
}

}  // namespace

std::string tensor_values_text(const ef::Tensor& t, bool is_repr) { return numpy_text(t, is_repr); }

ef::Tensor true_divide(const ef::Tensor& x, const ef::Tensor& y) {
  // TF's truediv: integer operands divide as float64 (tf.constant([1, 2]) / 2 is [0.5, 1.0]).
  // 8- and 16-bit integers divide as float32 (TF's truediv table).
  if (ef::is_integer(x.dtype()) && ef::is_integer(y.dtype())) {
    ef::DType f = ef::size_of(x.dtype()) <= 2 && x.dtype() == y.dtype() ? ef::DType::float32 : ef::DType::float64;
    return ef::div(ef::cast(x, f), ef::cast(y, f));
  }
  return ef::div(x, y);
}

ef::DType dtype_from_py(nb::handle h) {
  ef::DType d;
  if (nb::try_cast(h, d)) return d;
  if (nb::isinstance<nb::str>(h) && (nb::cast<std::string>(h) == "bfloat16" || nb::cast<std::string>(h) == "bf16"))
    return ef::DType::bfloat16;  // (NumPy itself has no bfloat16)
  if (nb::isinstance<nb::str>(h) && nb::cast<std::string>(h) == "string") return ef::DType::string;
  std::string name = nb::cast<std::string>(nb::str(numpy_module().attr("dtype")(h)));
  if (name == "float32") return ef::DType::float32;
  if (name == "float64") return ef::DType::float64;
  if (name == "int32") return ef::DType::int32;
  if (name == "int64") return ef::DType::int64;
  if (name == "bool") return ef::DType::bool_;
  if (name == "bfloat16") return ef::DType::bfloat16;
  if (name == "float16") return ef::DType::float16;
  if (name == "object") return ef::DType::string;
  if (name.rfind("<U", 0) == 0 || name.rfind("|S", 0) == 0 || name == "bytes" || name == "str") return ef::DType::string;
  if (auto t = ef::dtype_named(name); t && name == ef::name_of(*t)) return *t;  // uint8 .. uint64
  throw nb::type_error(("eagerflow has no dtype " + name).c_str());
}

nb::object dtype_to_py(ef::DType d) { return nb::cast(d); }

void init_tensor(nb::module_& m) {
  nb::enum_<ef::DType>(m, "DType")
      .value("float32", ef::DType::float32)
      .value("float64", ef::DType::float64)
      .value("int32", ef::DType::int32)
      .value("int64", ef::DType::int64)
      .value("bool", ef::DType::bool_)
      .value("bfloat16", ef::DType::bfloat16)
      .value("float16", ef::DType::float16)
      .value("string", ef::DType::string)
      .value("uint8", ef::DType::uint8)
      .value("int8", ef::DType::int8)
      .value("int16", ef::DType::int16)
      .value("uint16", ef::DType::uint16)
      .value("uint32", ef::DType::uint32)
      .value("uint64", ef::DType::uint64)
      .value("complex64", ef::DType::complex64)
      .value("complex128", ef::DType::complex128)
      .def_prop_ro("name", [](ef::DType d) { return std::string(numpy_name(d)); })
      .def_prop_ro("is_floating", [](ef::DType d) { return ef::is_floating(d); })
      .def_prop_ro("is_integer", [](ef::DType d) { return ef::is_integer(d); })
      .def_prop_ro("is_unsigned", [](ef::DType d) { return ef::is_unsigned(d); })
      .def_prop_ro("is_complex", [](ef::DType d) { return ef::is_complex(d); })
      .def_prop_ro("real_dtype", [](ef::DType d) { return ef::real_dtype_of(d); })
      .def_prop_ro("is_bool", [](ef::DType d) { return d == ef::DType::bool_; })
      .def_prop_ro("size", [](ef::DType d) { return ef::size_of(d); })
      .def_prop_ro("min", [](ef::DType d) { return dtype_limit(d, "min"); })
      .def_prop_ro("max", [](ef::DType d) { return dtype_limit(d, "max"); })
      .def_prop_ro("as_numpy_dtype",
                   [](ef::DType d) {
                     if (d == ef::DType::bfloat16) {
                       nb::object bf16 = ml_dtypes_bfloat16();
                       if (bf16.is_none())
                         ef::fail(ef::ErrorCode::failed_precondition, "dtype",
                                  "bfloat16 as a NumPy dtype needs ml_dtypes (pip install ml_dtypes)");
                       return numpy_module().attr("dtype")(bf16);
                     }
                     if (d == ef::DType::string) return numpy_module().attr("dtype")("object");  // as TF's
                     return numpy_module().attr("dtype")(numpy_name(d));
                   })
      .def("__str__", [](ef::DType d) { return std::string("<dtype: '") + numpy_name(d) + "'>"; });

  nb::class_<ef::Tensor> cls(m, "Tensor",
                             "An n-dimensional array: concrete (with values) or, inside ef.function, symbolic.");
  cls.def("__init__", [](ef::Tensor* self, nb::handle value) { new (self) ef::Tensor(to_tensor(value)); },
          nb::arg("value").none())
      .def_prop_ro("dtype", [](const ef::Tensor& t) { return t.dtype(); })
      .def_prop_ro("_shape_tuple",
                   [](const ef::Tensor& t) {
                     const auto& s = t.shape();
                     nb::list out;
                     for (auto d : s) out.append(d == ef::kDynamic ? nb::none() : nb::cast(d));
                     return nb::tuple(out);
                   })
      .def_prop_ro("ndim", [](const ef::Tensor& t) { return t.rank(); })
      .def_prop_ro("size", [](const ef::Tensor& t) { return t.num_elements(); })
      .def_prop_ro("is_symbolic", [](const ef::Tensor& t) { return t.is_symbolic(); })
      .def_prop_ro("is_keras_tensor", [](const ef::Tensor& t) { return t.is_keras_tensor(); })
      .def("__len__",
           [](const ef::Tensor& t) {
             if (t.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.dim(0);
           })
      .def("numpy", &to_numpy, "The values as a NumPy array of its own (a copy, writable, as in TF).")
      .def(
          "__array__",
          [](const ef::Tensor& t, nb::handle dtype, nb::handle copy) {
            // np.asarray(t): a read-only view, no copy; np.array(t) and copy=True: a copy.
            nb::object a = view_numpy(t);
            if (!dtype.is_none()) a = a.attr("astype")(dtype, "copy"_a = false);
            if (!copy.is_none() && nb::cast<bool>(copy)) a = a.attr("copy")();
            return a;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__repr__",
           [](const ef::Tensor& t) {
             if (t.is_symbolic())
               return "<ef.Tensor shape=" + shape_tuple(t.shape()) + ", dtype=" + numpy_name(t.dtype()) + " (symbolic)>";
             if (t.is_keras_tensor())
               return "<KerasTensor shape=" + shape_tuple(t.shape()) + ", dtype=" + numpy_name(t.dtype()) + ">";
             // TF's, so that printed output reads as a TF user expects.
             return "<tf.Tensor: shape=" + shape_tuple(t.shape()) + ", dtype=" + numpy_name(t.dtype()) +
                    ", numpy=" + numpy_text(t, /*is_repr=*/true) + ">";
           })
      .def("__str__",
           [](const ef::Tensor& t) {
             if (t.is_symbolic() || t.is_keras_tensor()) return t.str();
             return "tf.Tensor(" + numpy_text(t, /*is_repr=*/false) + ", shape=" + shape_tuple(t.shape()) +
                    ", dtype=" + numpy_name(t.dtype()) + ")";
           })
      .def("__bool__",
           [](const ef::Tensor& t) -> bool {  // not vector<bool>'s proxy reference
             if (t.is_symbolic() || t.is_keras_tensor()) symbolic_value_error(t, "bool (`if tensor:`, `while tensor:`, `and`/`or`)");
             if (t.num_elements() != 1)
               throw nb::value_error("the truth value of a tensor with more than one element is ambiguous");
             return ef::cast(t, ef::DType::bool_).to_vector<bool>()[0];
           })
      .def("__float__",
           [](const ef::Tensor& t) {
             if (t.is_symbolic() || t.is_keras_tensor()) symbolic_value_error(t, "float");
             return ef::cast(t, ef::DType::float64).item<double>();
           })
      .def("__int__",
           [](const ef::Tensor& t) {
             if (t.is_symbolic() || t.is_keras_tensor()) symbolic_value_error(t, "int");
             return ef::cast(t, ef::DType::int64).item<std::int64_t>();
           })
      .def("__index__",
           [](const ef::Tensor& t) {
             if (t.is_symbolic() || t.is_keras_tensor()) symbolic_value_error(t, "index");
             if (!ef::is_integer(t.dtype())) throw nb::type_error("only integer tensors can be used as an index");
             return ef::cast(t, ef::DType::int64).item<std::int64_t>();
           })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<std::intptr_t>(self.ptr()); })
      .def("__getitem__", &getitem, nb::arg("key").none())
      .def("__iter__",
           [](const ef::Tensor& t) {
             if (t.rank() == 0) throw nb::type_error("iteration over a 0-d tensor");
             nb::list out;
             for (std::int64_t i = 0; i < t.dim(0); ++i) out.append(getitem(t, nb::int_(i)));
             return nb::iter(out);
           })
      .def("astype", [](const ef::Tensor& t, nb::handle d) { return ef::cast(t, dtype_from_py(d)); })
      .def("clone", &ef::Tensor::clone)
      .def("_same_as", &ef::Tensor::same_as)
      .def("_data_ptr", [](const ef::Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.raw_data()); })
      .def("__neg__", [](const ef::Tensor& a) { return ef::neg(a); })
      .def("__pos__", [](const ef::Tensor& a) { return a; })
      .def("__abs__", [](const ef::Tensor& a) { return ef::abs(a); })
      .def("__invert__", [](const ef::Tensor& a) { return ef::logical_not(a); });

  // Binary operators: the other operand may be a tensor, an array or a Python number; a number
  // takes the tensor's dtype (TF's weak typing), so `x * 2` keeps float64 and int32 alike.
#define EFPY_BINARY(py, rpy, fn)                                                                       \
  cls.def(py, [](const ef::Tensor& a, nb::handle b) { return fn(a, operand(b, a)); });                 \
  cls.def(rpy, [](const ef::Tensor& a, nb::handle b) { return fn(operand(b, a), a); });
  EFPY_BINARY("__add__", "__radd__", ef::add)
  EFPY_BINARY("__sub__", "__rsub__", ef::sub)
  EFPY_BINARY("__mul__", "__rmul__", ef::mul)
  EFPY_BINARY("__truediv__", "__rtruediv__", true_divide)
  EFPY_BINARY("__pow__", "__rpow__", ef::pow)
  EFPY_BINARY("__matmul__", "__rmatmul__", [](const ef::Tensor& x, const ef::Tensor& y) { return ef::matmul(x, y); })
  EFPY_BINARY("__and__", "__rand__", ef::logical_and)
  EFPY_BINARY("__or__", "__ror__", ef::logical_or)
#undef EFPY_BINARY
  cls.def("__lt__", [](const ef::Tensor& a, nb::handle b) { return ef::less(a, operand(b, a)); });
  cls.def("__le__", [](const ef::Tensor& a, nb::handle b) { return ef::less_equal(a, operand(b, a)); });
  cls.def("__gt__", [](const ef::Tensor& a, nb::handle b) { return ef::greater(a, operand(b, a)); });
  cls.def("__ge__", [](const ef::Tensor& a, nb::handle b) { return ef::greater_equal(a, operand(b, a)); });
  cls.def("__eq__", [](const ef::Tensor& a, nb::handle b) { return ef::equal(a, operand(b, a)); });
  cls.def("__ne__", [](const ef::Tensor& a, nb::handle b) { return ef::not_equal(a, operand(b, a)); });

  m.def(
      "constant",
      [](nb::handle value, nb::handle dtype, nb::handle shape, nb::handle /*name: a graph's node name in TF 1; eager TF ignores it*/) {
        ef::Tensor t;
        if (dtype.is_none()) {
          t = to_tensor(value);
        } else {
          ef::DType d = dtype_from_py(dtype);
          t = to_tensor_as(value, d);  // refuses what d cannot hold
          if (d != t.dtype()) t = ef::cast(t, d);  // a tensor argument: cast like tf.constant
        }
        if (!shape.is_none()) {
          ef::Shape s(dims_arg(shape, "ef.constant: shape", /*allow_unknown=*/false));
          if (t.rank() == 0 && s.is_static() && s.num_elements() != 1) t = ef::broadcast_to(t, s);
          else t = ef::reshape(t, s);
        }
        return t;
      },
      nb::arg("value").none(), nb::arg("dtype") = nb::none(), nb::arg("shape") = nb::none(), nb::arg("name") = nb::none(),
      "A tensor of `value` (always a copy: writing to the NumPy array later does not change it).");
  m.def(
      "convert_to_tensor",
      [](nb::handle v, nb::handle dtype, nb::handle dtype_hint, nb::handle /*name: ignored, as eager TF does*/) {
        if (!dtype.is_none()) {
          ef::DType d = dtype_from_py(dtype);
          ef::Tensor t = to_tensor_as(v, d);
          if (t.dtype() != d)  // a tensor of another dtype: TF's ValueError, no silent cast
            throw nb::value_error(("convert_to_tensor: requested dtype " + std::string(ef::name_of(d)) +
                                   " for a tensor of dtype " + std::string(ef::name_of(t.dtype())) +
                                   "; use ef.cast to change a tensor's dtype").c_str());
          return t;
        }
        if (!dtype_hint.is_none()) {
          ef::DType d = dtype_from_py(dtype_hint);
          ef::Tensor hint = ef::zeros(ef::Shape{}, d);
          try {
            return to_tensor(v, &hint);  // numbers and lists take the hint where they fit it
          } catch (nb::python_error& e) {
            if (!is_conversion_error(e)) throw;
          }
        }
        return to_tensor(v);
      },
      nb::arg("value").none(), nb::arg("dtype") = nb::none(), nb::arg("dtype_hint") = nb::none(), nb::arg("name") = nb::none());
  m.def("_is_symbolic", [](const ef::Tensor& t) { return t.is_symbolic(); });
}

}  // namespace efpy
