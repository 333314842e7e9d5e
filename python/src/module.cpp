// eagerflow._core: module entry. Each concept registers its bindings from its own file.
#include "bindings.h"

NB_MODULE(_core, m) {
  m.doc() = "eagerflow's C++ core (nanobind)";
  efpy::init_errors(m);
  efpy::init_tensor(m);
  efpy::init_ops(m);
  efpy::init_function(m);
  efpy::init_autodiff(m);
  efpy::init_layers(m);
  efpy::init_layers_keras(m);
  efpy::init_training(m);
  efpy::init_metrics(m);
  efpy::init_callbacks(m);
  efpy::init_io(m);
  efpy::init_log(m);
  efpy::init_transforms(m);
  efpy::init_custom(m);
  efpy::init_saving_keras(m);
}
