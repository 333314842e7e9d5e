// ef.Error: every ef::Error (the C++ message: tag, op, shapes, layer path) as a Python exception.
#include "bindings.h"

namespace efpy {
void init_errors(nb::module_& m) {
  // A subclass of RuntimeError, so `except RuntimeError` code keeps working.
  nb::exception<ef::Error>(m, "Error", PyExc_RuntimeError);
}
}  // namespace efpy
