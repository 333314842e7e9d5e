#include "bindings.h"
namespace efpy { void init_training(nb::module_& m) {} }
