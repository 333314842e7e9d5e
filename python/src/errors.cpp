// ef.Error: every ef::Error (the C++ message: tag, op, shapes, layer path) as a Python exception.
#include <cstring>
#include <typeinfo>

#include <eagerflow/nn/layer_name.h>

#include "bindings.h"
#include "convert.h"

namespace efpy {
namespace {
PyObject* g_invalid_argument = nullptr;
}

void invalid_argument(const std::string& message) {
  PyErr_SetString(g_invalid_argument, message.c_str());
  throw nb::python_error();
}

void init_errors(nb::module_& m) {
  // A subclass of RuntimeError, so `except RuntimeError` code keeps working.
  nb::exception<ef::Error> error(m, "Error", PyExc_RuntimeError);
  // Messages may quote bytes that are not UTF-8 (a damaged file's header): nanobind's own
  // translation would raise UnicodeDecodeError instead of ef.Error. Decoded here with
  // backslashreplace (b'\xff' reads as "\xff"); registered after it, so tried first.
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* type) {
        try {
          std::rethrow_exception(p);
        } catch (const ef::Error& e) {
          const char* what = e.what();
          PyObject* msg = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "backslashreplace");
          if (!msg) return;  // MemoryError stays set
          PyErr_SetObject(static_cast<PyObject*>(type), msg);
          Py_DECREF(msg);
        }
      },
      error.ptr());
  // tf.errors.InvalidArgumentError: an argument's value is wrong (a zero step). An ef.Error, so
  // `except ef.Error` and `except RuntimeError` see it too; ef.errors re-exports it.
  g_invalid_argument = PyErr_NewExceptionWithDoc(
      "eagerflow.errors.InvalidArgumentError",
      "An argument's value is invalid for the op (TF's tf.errors.InvalidArgumentError).", error.ptr(), nullptr);
  if (!g_invalid_argument) throw nb::python_error();
  m.attr("InvalidArgumentError") = nb::borrow(g_invalid_argument);
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
  // Names Keras refuses with ValueError (after the ef::Error translator: tried before it).
  nb::exception<ef::nn::InvalidLayerName>(m, "InvalidLayerNameError", PyExc_ValueError);
}
}  // namespace efpy
