// Python values -> tensors, with TF's dtype rules: a Python int is int32, or int64 when it does
// not fit int32; a Python float float32; a NumPy array keeps its dtype or widens to one the
// library computes in (float16 -> float32; int8, int16, uint8, uint16 -> int32; uint32,
// uint64 -> int64). No conversion changes a value: what a dtype cannot hold (2**40 as int32,
// 2**64 anywhere, uint64 above 2^63, 1.5 as an integer) raises ef.ConversionError.
//
// Every conversion copies. A tensor is immutable (ef::Variable swaps tensors, never writes
// them), so it must not share memory its caller can still write: with a shared array,
// `a[:] = 0` after `c = ef.constant(a)` changed `x + c` eagerly while a trace that had
// captured c kept whichever values its passes had folded. TF's constant copies too.
#include "convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include <nanobind/ndarray.h>

#include "eagerflow/core/complex_dtype.h"
#include "eagerflow/core/string_tensor.h"
#include <nanobind/stl/string.h>

namespace efpy {
namespace {

using RoArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

PyObject* g_conversion_error = nullptr;  // eagerflow.ConversionError (init_convert)

constexpr const char* kAccepted =
    "accepted: ef.Tensor, ef.Variable, Python bool, int, float, str and bytes values and (nested) lists of them "
    "(numbers and strings not mixed), NumPy arrays of bool, integer, floating (and ml_dtypes.bfloat16), str or bytes dtypes";

std::string str_of(nb::handle h) { return nb::cast<std::string>(nb::str(h)); }

std::string name(ef::DType d) { return std::string(ef::name_of(d)); }

// The range of integer dtype `d` as long longs (uint64's top half is beyond a long long).
std::pair<long long, long long> int_range(ef::DType d) {
  std::pair<long long, long long> r{std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max()};
  if (d != ef::DType::int64 && d != ef::DType::uint64)
    ef::dispatch_storage_dtype(d, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        r = {static_cast<long long>(std::numeric_limits<T>::min()), static_cast<long long>(std::numeric_limits<T>::max())};
    });
  if (d == ef::DType::uint64) r.first = 0;
  return r;
}

// TF converts Python ints to its narrow and unsigned integers as NumPy does, wrapping
// (tf.constant(-1, tf.uint8) is 255, 300 is 44); int32 refuses what it cannot hold.
bool fits(long long v, ef::DType d) {
  if (ef::is_storage_int(d)) return true;
  auto [lo, hi] = int_range(d);
  return v >= lo && v <= hi;
}

// A float that converts to integer dtype `d` without changing: finite, whole and in range.
bool integral_in(double v, ef::DType d) {
  if (!std::isfinite(v) || v != std::trunc(v)) return false;
  if (d == ef::DType::int64) return v >= -0x1p63 && v < 0x1p63;
  if (d == ef::DType::uint64) return v >= 0 && v < 0x1p64;
  auto [lo, hi] = int_range(d);
  return v >= static_cast<double>(lo) && v <= static_cast<double>(hi);
}

// A Python int as a long long; nullopt when it does not fit int64.
std::optional<long long> py_int(PyObject* o) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow) return std::nullopt;
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

ef::Tensor int_scalar(long long v, ef::DType d) {
  if (d == ef::DType::int64) return ef::scalar<std::int64_t>(v);
  if (d == ef::DType::int32) return ef::scalar<std::int32_t>(static_cast<std::int32_t>(v));
  return ef::cast(ef::scalar<std::int64_t>(v), d);  // uint8 .. uint64: in range (checked by the caller)
}

// A Python number (complex, float, int or bool) as a complex scalar of dtype `d`.
ef::Tensor complex_scalar(nb::handle h, ef::DType d) {
  Py_complex c = PyComplex_AsCComplex(h.ptr());
  if (c.real == -1.0 && PyErr_Occurred()) throw nb::python_error();
  if (d == ef::DType::complex64)
    return ef::scalar(std::complex<float>(static_cast<float>(c.real), static_cast<float>(c.imag)));
  return ef::scalar(std::complex<double>(c.real, c.imag));
}

// A Python bool, int or float as dtype `d`; `context` ends the error message.
ef::Tensor scalar_as(nb::handle h, ef::DType d, const std::string& context) {
  PyObject* o = h.ptr();
  if (ef::is_complex(d)) return complex_scalar(h, d);
  if (PyBool_Check(o)) return ef::cast(ef::scalar<bool>(o == Py_True), d);
  if (PyLong_Check(o)) {
    if (ef::is_floating(d)) {
      double v = PyLong_AsDouble(o);  // 2**64 is a float32 like any other number
      if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
      return ef::full(ef::Shape{}, v, d);
    }
    auto v = py_int(o);
    if (d == ef::DType::bool_) return ef::scalar<bool>(!v || *v != 0);
    if (!v || !fits(*v, d)) conversion_error("the Python int " + str_of(h) + " does not fit " + name(d) + context);
    return int_scalar(*v, d);
  }
  double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  if (ef::is_integer(d)) {
    if (!integral_in(v, d))
      conversion_error("cannot convert the Python float " + nb::cast<std::string>(nb::repr(h)) + " to " + name(d) +
                       " without changing its value" + context);
    if (d == ef::DType::uint64 && v >= 0x1p63) return ef::cast(ef::scalar<double>(v), d);
    return int_scalar(static_cast<long long>(v), d);
  }
  return ef::full(ef::Shape{}, v, d);
}

// A Python scalar without a requested dtype; `like` (the other operand of an op) gives it its
// dtype, as TF's weak types do: `x + 2` keeps x's dtype, `x_int32 + 2**40` is an error.
ef::Tensor scalar_of(nb::handle h, const ef::Tensor* like) {
  PyObject* o = h.ptr();
  bool weak = like && like->defined() && like->dtype() != ef::DType::bool_;
  if (PyBool_Check(o)) return ef::scalar<bool>(o == Py_True);
  if (PyLong_Check(o)) {
    if (weak)
      return scalar_as(h, like->dtype(),
                       std::string(", the dtype of the other operand; make that operand wider first (ef.cast(x, ef.") +
                           (ef::is_integer(like->dtype()) ? "int64" : "float64") + "))");
    auto v = py_int(o);
    if (!v) conversion_error("the Python int " + str_of(h) + " does not fit int64, the widest integer dtype");
    return int_scalar(*v, fits(*v, ef::DType::int32) ? ef::DType::int32 : ef::DType::int64);
  }
  double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  if (like && like->defined() && ef::is_floating(like->dtype())) return ef::full(ef::Shape{}, v, like->dtype());
  if (like && like->defined() && ef::is_complex(like->dtype())) return complex_scalar(h, like->dtype());
  return ef::scalar<float>(static_cast<float>(v));
}

ef::Tensor copy_out(const RoArray& a, ef::DType d) {
  std::vector<std::int64_t> dims(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) dims[i] = static_cast<std::int64_t>(a.shape(i));
  ef::Tensor t = ef::Tensor::empty(d, ef::Shape(dims));
  if (t.nbytes() != a.nbytes())
    ef::fail("convert", "array of " + std::to_string(a.nbytes()) + " bytes for " + t.spec().str());
  if (a.nbytes()) std::memcpy(t.raw_mutable_data(), a.data(), a.nbytes());
  return t;
}

nb::object c_contiguous(nb::object arr) {
  if (nb::cast<bool>(arr.attr("flags").attr("c_contiguous"))) return arr;
  return arr.attr("copy")("order"_a = "C");
}

RoArray as_ro(nb::handle arr) {
  RoArray a;
  if (!nb::try_cast(arr, a, /*convert=*/false))
    throw nb::type_error(
        ("eagerflow: cannot read the memory of a NumPy array of dtype " + str_of(arr.attr("dtype"))).c_str());
  return a;
}

[[noreturn]] void unsupported_dtype(nb::handle dtype, const std::string& kind) {
  std::string why = kind == "c"                    ? " (complex64 and complex128 are; complex256 is not)"
                    : (kind == "U" || kind == "S") ? " (strings are not numbers)"
                    : kind == "O" ? " (Python objects: a list mixing numbers with other things, or ints beyond int64)"
                                  : "";
  throw nb::type_error(
      ("eagerflow: cannot make a tensor of NumPy dtype " + str_of(dtype) + why + "; " + kAccepted).c_str());
}

// A string tensor of a NumPy array of str, bytes or Python objects that are all str or bytes
// (str as UTF-8, as TF's); nullopt for an object array holding anything else.
std::optional<ef::Tensor> strings_from_array(nb::object arr) {
  nb::object flat = arr.attr("ravel")().attr("tolist")();
  ef::StringTensorBuilder b;
  for (nb::handle item : flat) {
    if (PyBytes_Check(item.ptr())) {
      b.append(std::string_view(PyBytes_AS_STRING(item.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(item.ptr()))));
    } else if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t n = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &n);
      if (!utf8) throw nb::python_error();
      b.append(std::string_view(utf8, static_cast<std::size_t>(n)));
    } else {
      return std::nullopt;
    }
  }
  std::vector<std::int64_t> dims;
  for (nb::handle d : arr.attr("shape")) dims.push_back(nb::cast<std::int64_t>(d));
  return std::move(b).finish(ef::Shape(dims));
}

// A copy of a NumPy array as a tensor. `literal`: the array came from a Python list, whose
// float64 means float32 and whose int64 means int32 when every value fits (TF's defaults).
ef::Tensor from_array(nb::object arr, bool literal) {
  nb::object dt = arr.attr("dtype");
  if (str_of(dt.attr("name")) == "bfloat16") {  // ml_dtypes' bfloat16: the bits as they are
    nb::object bits = c_contiguous(arr).attr("view")("uint16");
    return copy_out(as_ro(bits), ef::DType::bfloat16);
  }
  std::string kind = str_of(dt.attr("kind"));
  if (kind == "U" || kind == "S" || kind == "O")
    if (auto strings = strings_from_array(arr)) return *strings;
  int size = nb::cast<int>(dt.attr("itemsize"));
  if (!nb::cast<bool>(dt.attr("isnative"))) arr = arr.attr("astype")(dt.attr("newbyteorder")("="));  // big-endian
  ef::DType out = ef::DType::float32;
  const char* via = nullptr;  // the NumPy dtype to widen to first (exact)
  if (kind == "f" && size == 2) out = ef::DType::float16;  // NumPy's float16, as TF's
  else if (kind == "f" && size == 4) out = ef::DType::float32;
  else if (kind == "f" && size == 8)
    out = literal ? ef::DType::float32 : ef::DType::float64, via = literal ? "float32" : nullptr;
  // Every NumPy integer keeps its dtype, as in TF (np.uint8 images stay uint8).
  else if (kind == "i" && size == 1) out = ef::DType::int8;
  else if (kind == "i" && size == 2) out = ef::DType::int16;
  else if (kind == "i" && size == 4) out = ef::DType::int32;
  else if (kind == "i" && size == 8) out = ef::DType::int64;
  else if (kind == "u" && size == 1) out = ef::DType::uint8;
  else if (kind == "u" && size == 2) out = ef::DType::uint16;
  else if (kind == "u" && size == 4) out = ef::DType::uint32;
  else if (kind == "u" && size == 8) out = ef::DType::uint64;
  else if (kind == "b" && size == 1) out = ef::DType::bool_;
  else if (kind == "c" && size == 8) out = ef::DType::complex64;
  else if (kind == "c" && size == 16) out = ef::DType::complex128;
  else unsupported_dtype(dt, kind);
  arr = c_contiguous(arr);
  if (literal && out == ef::DType::int64) {
    RoArray a = as_ro(arr);
    const auto* p = static_cast<const std::int64_t*>(a.data());
    bool all32 = true;
    for (std::size_t i = 0; i < a.size() && all32; ++i) all32 = fits(p[i], ef::DType::int32);
    if (all32) out = ef::DType::int32, via = "int32";
  }
  if (via) arr = arr.attr("astype")(via);
  return copy_out(as_ro(arr), out);
}

// What a (nested) list holds, found without building anything.
struct Scan {
  bool floats = false, ints = false, bools = false, other = false, complex = false, ranged = false, strings = false;
  long long lo = 0, hi = 0;     // of the ints that fit int64 (when `ranged`)
  PyObject* too_big = nullptr;  // the first int beyond int64
};

void scan(PyObject* o, Scan& s, int depth) {
  if (PyList_Check(o) || PyTuple_Check(o)) {
    if (depth > 64) {
      s.other = true;
      return;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < n; ++i) scan(items[i], s, depth + 1);
  } else if (PyBool_Check(o)) {
    s.bools = true;
  } else if (PyLong_Check(o)) {
    auto v = py_int(o);
    if (!v) {
      if (!s.too_big) s.too_big = o;
    } else {
      if (!s.ranged) s.lo = s.hi = *v, s.ranged = true;
      s.lo = std::min(s.lo, *v), s.hi = std::max(s.hi, *v);
    }
    s.ints = true;
  } else if (PyFloat_Check(o)) {
    s.floats = true;
  } else if (PyComplex_Check(o)) {
    s.complex = true;
  } else if (PyUnicode_Check(o) || PyBytes_Check(o)) {
    s.strings = true;
  } else {
    s.other = true;  // NumPy scalars, arrays, tensors, strings, None: NumPy infers
  }
}

// A Python list or tuple as a tensor: dtype `target`, else `hint` where every value fits it
// (the other operand's dtype), else TF's inference (floats float32; ints int32 or int64).
ef::Tensor from_literal(nb::handle h, std::optional<ef::DType> target, std::optional<ef::DType> hint = std::nullopt) {
  Scan s;
  scan(h.ptr(), s, 0);
  if (s.complex) {  // complex128, as TF's (or the other operand's complex dtype)
    if (s.strings || s.too_big)
      throw nb::type_error(("eagerflow: cannot make a tensor of " + describe(h) + "; " + kAccepted).c_str());
    ef::Tensor t = from_array(numpy_module().attr("asarray")(h, "dtype"_a = "complex128"), /*literal=*/false);
    if (!target && hint && ef::is_complex(*hint)) target = hint;
    return target ? checked_cast(t, *target) : t;
  }
  if (s.strings) {
    if (s.floats || s.ints || s.bools || s.other || s.too_big)
      throw nb::type_error(("eagerflow: cannot make a tensor of a list mixing strings with other values, " + describe(h) +
                            "; " + kAccepted).c_str());
    ef::Tensor t = from_array(numpy_module().attr("asarray")(h, "dtype"_a = "object"), /*literal=*/true);
    return target ? checked_cast(t, *target) : t;
  }
  if (s.other) {
    ef::Tensor t = from_array(numpy_module().attr("asarray")(h), /*literal=*/true);
    return target ? checked_cast(t, *target) : t;
  }
  if (!target && hint && ef::is_complex(*hint)) target = hint;  // numbers next to a complex tensor become complex
  if (!target && hint && *hint != ef::DType::bool_) {
    bool fits_hint = ef::is_floating(*hint) ||
                     (!s.floats && !s.too_big && (!s.ints || (fits(s.lo, *hint) && fits(s.hi, *hint))));
    if (fits_hint) target = hint;
  }
  ef::DType out = target     ? *target
                  : s.floats ? ef::DType::float32
                  : s.ints
                      ? (s.too_big || !fits(s.lo, ef::DType::int32) || !fits(s.hi, ef::DType::int32) ? ef::DType::int64
                                                                                                     : ef::DType::int32)
                  : s.bools ? ef::DType::bool_
                            : ef::DType::float32;  // [] (TF: float32)
  bool floating_out = ef::is_floating(out);
  if (s.too_big && !floating_out)
    conversion_error("the Python int " + str_of(s.too_big) + " does not fit " +
                     (target ? std::string(name(out)) : std::string("int64, the widest integer dtype")));
  if (ef::is_integer(out) && !s.floats && s.ints && (!fits(s.lo, out) || !fits(s.hi, out)))
    conversion_error("the Python int " + std::to_string(fits(s.lo, out) ? s.hi : s.lo) + " does not fit " + name(out));
  // NumPy builds the array in a dtype that holds every value exactly; checked_cast narrows.
  const char* build = out == ef::DType::float64 ? "float64"
                      : floating_out            ? "float32"
                      : s.floats                ? "float64"
                      : out == ef::DType::bool_ ? "bool"
                      : out == ef::DType::int64 || ef::is_storage_int(out) ? "int64"
                                                                           : "int32";
  ef::Tensor t = from_array(numpy_module().attr("asarray")(h, "dtype"_a = build), /*literal=*/false);
  return checked_cast(t, out);
}

ef::Tensor from_array_like(nb::handle h) { return from_array(numpy_module().attr("asarray")(h), /*literal=*/false); }

bool is_python_scalar(nb::handle h) { return PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()); }

[[noreturn]] void not_convertible(nb::handle h) {
  throw nb::type_error(("eagerflow: cannot make a tensor of " + describe(h) + "; " + kAccepted).c_str());
}

}  // namespace

nb::module_& numpy_module() {
  static nb::module_* np = new nb::module_(nb::module_::import_("numpy"));  // leaked: outlives interpreter teardown
  return *np;
}

std::string describe(nb::handle h) {
  std::string r;
  try {
    r = nb::cast<std::string>(nb::repr(h));
  } catch (nb::python_error&) {
    r = "?";
  }
  if (r.size() > 60) r = r.substr(0, 57) + "...";
  return nb::cast<std::string>(h.type().attr("__name__")) + " " + r;
}

void conversion_error(const std::string& message) {
  PyErr_SetString(g_conversion_error, ("eagerflow: " + message).c_str());
  throw nb::python_error();
}

bool is_conversion_error(nb::python_error& e) { return e.matches(g_conversion_error); }

std::int64_t int_arg(nb::handle h, const char* what) {
  if (!PyIndex_Check(h.ptr()))
    throw nb::type_error((std::string(what) + " must be an integer, got " + describe(h)).c_str());
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i) throw nb::python_error();
  auto v = py_int(i.ptr());
  if (!v) conversion_error(std::string(what) + " = " + str_of(i) + " does not fit int64");
  return *v;
}

double float_arg(nb::handle h, const char* what) {
  if (PyFloat_Check(h.ptr())) return PyFloat_AsDouble(h.ptr());
  if (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr()) || nb::hasattr(h, "__float__")) {
    double v = PyFloat_AsDouble(h.ptr());
    if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return v;
  }
  throw nb::type_error((std::string(what) + " must be a real number, got " + describe(h)).c_str());
}

std::vector<std::int64_t> dims_arg(nb::handle h, const char* what, bool allow_unknown) {
  if (nb::isinstance<ef::Tensor>(h)) {
    ef::Tensor t = nb::cast<ef::Tensor>(h);
    if (!ef::is_integer(t.dtype()) || t.rank() > 1)
      throw nb::type_error(
          (std::string(what) + " must be ints or a 1-d integer tensor, got a tensor " + t.spec().str()).c_str());
    return ef::cast(t, ef::DType::int64).to_vector<std::int64_t>();
  }
  if (PyIndex_Check(h.ptr())) return {int_arg(h, what)};
  if (PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr()) || !PySequence_Check(h.ptr()))
    throw nb::type_error((std::string(what) + " must be an int or a sequence of ints, got " + describe(h)).c_str());
  std::vector<std::int64_t> dims;
  for (nb::handle d : h) {
    if (d.is_none() && allow_unknown) dims.push_back(ef::kDynamic);
    else if (!PyIndex_Check(d.ptr()))
      throw nb::type_error((std::string(what) + " must be a sequence of ints" + (allow_unknown ? " (or None)" : "") +
                            ", got " + describe(d) + " in " + describe(h))
                               .c_str());
    else dims.push_back(int_arg(d, what));
  }
  return dims;
}

std::vector<int> axes_arg(nb::handle h, const char* what) {
  if (h.is_none()) return {};
  std::vector<int> out;
  for (std::int64_t a : dims_arg(h, what, /*allow_unknown=*/false)) {
    if (a < std::numeric_limits<int>::min() || a > std::numeric_limits<int>::max())
      throw nb::value_error((std::string(what) + ": axis " + std::to_string(a) + " is out of range").c_str());
    out.push_back(static_cast<int>(a));
  }
  return out;
}

std::uint64_t seed_arg(nb::handle h, const char* what) {
  if (!PyIndex_Check(h.ptr()))
    throw nb::type_error((std::string(what) + " must be an int or None, got " + describe(h)).c_str());
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i) throw nb::python_error();
  unsigned long long v = PyLong_AsUnsignedLongLong(i.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    conversion_error(std::string(what) + " = " + str_of(i) + " must be an int in [0, 2**64)");
  }
  return v;
}

ef::Tensor checked_cast(const ef::Tensor& t, ef::DType d) {
  if (t.dtype() == d) return t;
  if (ef::is_complex(t.dtype()) && !ef::is_complex(d))
    throw nb::type_error(("eagerflow: cannot convert a complex value to " + name(d) +
                          " without losing its imaginary part; use tf.math.real or tf.cast explicitly").c_str());
  if (ef::is_integer(d) && !t.is_symbolic() && !t.is_keras_tensor()) {
    if (ef::is_floating(t.dtype())) {
      ef::Tensor f = ef::cast(t, ef::DType::float64);
      for (double v : f.data<double>())
        if (!integral_in(v, d))
          conversion_error("cannot convert the value " + str_of(nb::float_(v)) + " to " + name(d) +
                           " without changing it (a fraction, out of range or not finite); round it, or cast "
                           "explicitly with ef.cast");
    } else if (t.dtype() == ef::DType::uint64 && ef::is_index_dtype(d)) {
      for (auto v : t.data<std::uint64_t>())
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) || !fits(static_cast<long long>(v), d))
          conversion_error("the uint64 value " + std::to_string(v) + " does not fit " + name(d) +
                           " (converting it would wrap around)");
    } else if (ef::is_integer(t.dtype()) && ef::is_index_dtype(d)) {  // (the storage integers wrap)
      ef::Tensor wide = ef::cast(t, ef::DType::int64);
      for (auto v : wide.data<std::int64_t>())
        if (!fits(v, d)) conversion_error("the value " + std::to_string(v) + " does not fit " + name(d));
    }
  }
  return ef::cast(t, d);
}

double fill_value(nb::handle h, ef::DType d, const char* what) {
  ef::Tensor t = to_tensor_as(h, d);
  if (t.rank() != 0)
    throw nb::value_error((std::string(what) + " must be a scalar, got shape " + t.shape().str()).c_str());
  if (t.is_symbolic() || t.is_keras_tensor())
    throw nb::type_error(
        (std::string(what) + " must be a number known when the op is made, got a symbolic tensor").c_str());
  if (t.dtype() == ef::DType::int64) {
    std::int64_t v = t.item<std::int64_t>();
    double dv = static_cast<double>(v);
    if (dv >= 0x1p63 || static_cast<std::int64_t>(dv) != v)
      conversion_error(std::string(what) + " = " + std::to_string(v) +
                       " is beyond 2^53, where this op cannot hold it exactly");
  }
  return ef::cast(t, ef::DType::float64).item<double>();
}

ef::Tensor to_tensor_as(nb::handle h, ef::DType d) {
  ef::Tensor* t;
  if (nb::try_cast(h, t, false) && t) return *t;
  if (is_python_scalar(h)) return scalar_as(h, d, "");
  if (nb::hasattr(h, "_ef_tensor")) return to_tensor(h.attr("_ef_tensor")());
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) return from_literal(h, d);
  return checked_cast(to_tensor(h), d);
}

ef::Tensor to_tensor(nb::handle h, const ef::Tensor* like) {
  ef::Tensor* t;
  if (nb::try_cast(h, t, false) && t) return *t;
  if (is_python_scalar(h)) return scalar_of(h, like);
  if (nb::hasattr(h, "_ef_tensor")) return to_tensor(h.attr("_ef_tensor")(), like);  // e.g. Variable
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    std::optional<ef::DType> hint;
    if (like && like->defined()) hint = like->dtype();
    return from_literal(h, std::nullopt, hint);
  }
  if (PyComplex_Check(h.ptr()))  // complex128, or the other operand's complex dtype (TF's weak typing)
    return complex_scalar(h, like && like->defined() && ef::is_complex(like->dtype()) ? like->dtype() : ef::DType::complex128);
  if (PyBytes_Check(h.ptr()))
    return ef::string_scalar(std::string_view(PyBytes_AS_STRING(h.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(h.ptr()))));
  if (PyUnicode_Check(h.ptr())) {  // UTF-8, as TF's
    Py_ssize_t n = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
    if (!utf8) throw nb::python_error();
    return ef::string_scalar(std::string_view(utf8, static_cast<std::size_t>(n)));
  }
  if (PyObject_CheckBuffer(h.ptr()) == 0 && !PyComplex_Check(h.ptr()) && !nb::hasattr(h, "__array__") &&
      !nb::hasattr(h, "__array_interface__") && !nb::hasattr(h, "__dlpack__") && !nb::hasattr(h, "dtype"))
    not_convertible(h);
  ef::Tensor arr = from_array_like(h);
  // An integer array next to an integer tensor takes the tensor's dtype, as TF converts it
  // (int32 tensor + np.uint8 array; uint8 image + np.array([1, 2])): values that would change
  // are refused for int32 and int64 (checked_cast), and wrap for uint8 .. uint64 as TF's.
  if (like && like->defined() && ef::is_integer(like->dtype()) && ef::is_integer(arr.dtype()) && arr.dtype() != like->dtype())
    return checked_cast(arr, like->dtype());
  return arr;
}

void init_convert(nb::module_& m) {
  PyObject* bases = PyTuple_Pack(2, PyExc_TypeError, PyExc_ValueError);
  if (!bases) throw nb::python_error();
  g_conversion_error = PyErr_NewExceptionWithDoc(
      "eagerflow.ConversionError",
      "A value that cannot become a tensor of the dtype asked for or inferred without changing: an int beyond "
      "the dtype's range, a fraction as an integer, uint64 above 2^63. Both a TypeError (as TF's conversions "
      "raise) and a ValueError (a value out of range).",
      bases, nullptr);
  Py_DECREF(bases);
  if (!g_conversion_error) throw nb::python_error();
  m.attr("ConversionError") = nb::borrow(g_conversion_error);  // our own reference stays: used until exit
}

}  // namespace efpy
