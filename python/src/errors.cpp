// ef.Error and ef.errors: every ef::Error (the C++ message: tag, op, shapes, layer path) as the
// Python exception of its kind. The classes and the rule that picks one live in
// python/eagerflow/errors.py, which hands this file its factory; ef.Error stays the base.
#include <cstring>
#include <typeinfo>

#include "bindings.h"
#include "convert.h"

namespace efpy {
namespace {
PyObject* g_error = nullptr;    // eagerflow._core.Error (ef.Error)
PyObject* g_factory = nullptr;  // eagerflow.errors._from_status(code, builtin, message) -> exception

// ef.errors' factory is not set while the package imports (or after the interpreter cleared it):
// the plain ef.Error then.
void raise_error(const ef::Error& e) {
  const char* what = e.what();
  // Messages may quote bytes that are not UTF-8 (a damaged file's header): decoded with
  // backslashreplace (b'\xff' reads as "\xff"), never a UnicodeDecodeError instead of the error.
  PyObject* msg = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "backslashreplace");
  if (!msg) return;  // MemoryError stays set
  if (g_factory) {
    PyObject* exc = PyObject_CallFunction(g_factory, "iiO", static_cast<int>(e.code()),
                                          static_cast<int>(e.kind().python), msg);
    Py_DECREF(msg);
    if (!exc) return;  // the factory's own failure stays set
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
    Py_DECREF(exc);
    return;
  }
  PyErr_SetObject(g_error, msg);
  Py_DECREF(msg);
}

bool is_instance(PyObject* value, PyObject* type) {
  int r = PyObject_IsInstance(value, type);
  if (r < 0) PyErr_Clear();  // (only a broken __instancecheck__ fails: not an instance then)
  return r == 1;
}
}  // namespace

void invalid_argument(const std::string& message) { throw ef::Error(ef::ErrorCode::invalid_argument, message); }

ef::ErrorKind kind_of_python(nb::python_error& e) {
  PyObject* v = e.value().ptr();
  using ef::ErrorCode;
  using ef::PythonBuiltin;
  if (g_error && is_instance(v, g_error)) {
    ErrorCode code = ErrorCode::invalid_argument;  // a plain ef.Error("...") raised by Python code
    nb::object c = nb::getattr(e.value(), "error_code", nb::none());
    int n = 0;
    if (nb::try_cast(c, n) && n >= 1 && n <= 15) code = static_cast<ErrorCode>(n);
    PythonBuiltin builtin = PythonBuiltin::none;
    if (is_instance(v, PyExc_TypeError)) builtin = PythonBuiltin::type_error;
    else if (is_instance(v, PyExc_FileNotFoundError)) builtin = PythonBuiltin::file_not_found_error;
    else if (code != ErrorCode::invalid_argument && is_instance(v, PyExc_ValueError))
      builtin = PythonBuiltin::value_error;
    else if (code != ErrorCode::unimplemented && is_instance(v, PyExc_NotImplementedError))
      builtin = PythonBuiltin::not_implemented_error;
    return {code, builtin};
  }
  if (is_instance(v, PyExc_TypeError)) return ef::kWrongType;
  if (is_instance(v, PyExc_ValueError)) return ErrorCode::invalid_argument;
  if (is_instance(v, PyExc_NotImplementedError)) return ErrorCode::unimplemented;
  if (is_instance(v, PyExc_StopIteration) || is_instance(v, PyExc_IndexError)) return ErrorCode::out_of_range;
  if (is_instance(v, PyExc_MemoryError)) return ErrorCode::resource_exhausted;
  if (is_instance(v, PyExc_FileNotFoundError)) return ef::kFileNotFound;
  if (is_instance(v, PyExc_PermissionError)) return ErrorCode::permission_denied;
  return ErrorCode::unknown;
}

void init_errors(nb::module_& m) {
  // A subclass of RuntimeError, so `except RuntimeError` code keeps working.
  nb::exception<ef::Error> error(m, "Error", PyExc_RuntimeError);
  g_error = error.ptr();  // the module keeps it until exit
  // Registered after nanobind's own for ef::Error, so tried first.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ef::Error& e) {
      raise_error(e);
    }
  });
  // Set by eagerflow.errors when it is imported; None clears it (at exit).
  m.def(
      "_set_error_factory",
      [](nb::object factory) {
        PyObject* old = g_factory;
        g_factory = factory.is_none() ? nullptr : factory.release().ptr();
        Py_XDECREF(old);
      },
      "factory"_a.none());
  // The backstop for a Python value of a type a binding cannot take (nanobind's cast_error is
  // std::bad_cast, which it would raise as RuntimeError("std::bad_cast")). The common paths
  // check their arguments first and name them (convert.h); this says at least what went wrong.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::bad_cast&) {
      PyErr_SetString(PyExc_TypeError,
                      "eagerflow: an argument has a type this function does not accept (a Python value could not be "
                      "converted to the C++ type it expects); see help() of the function for the accepted types");
    }
  });
}
}  // namespace efpy
