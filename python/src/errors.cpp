// ef.Error: every ef::Error (the C++ message: tag, op, shapes, layer path) as a Python exception.
#include <cstring>

#include <eagerflow/nn/layer_name.h>

#include "bindings.h"

namespace efpy {
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
  // Names Keras refuses with ValueError (after the ef::Error translator: tried before it).
  nb::exception<ef::nn::InvalidLayerName>(m, "InvalidLayerNameError", PyExc_ValueError);
}
}  // namespace efpy
