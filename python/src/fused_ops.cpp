// Fused ops from Python: ef.nn.layer_norm (eagerflow/nn/normalization.h), the op that
// keras.layers.LayerNormalization runs on.
#include <eagerflow/nn/cross_entropy.h>

#include "bindings.h"

namespace efpy {

void init_fused_ops(nb::module_& m) {
  nb::module_ nn = m.def_submodule("nn", "Neural-network functions (eagerflow/nn/attention.h)");
  nn.def(
      "layer_norm",
      [](nb::handle x, nb::handle gamma, nb::handle beta, double epsilon) {
        ef::Tensor tx = to_tensor(x), tg = to_tensor(gamma, &tx), tb = to_tensor(beta, &tx);
        nb::gil_scoped_release release;
        return ef::nn::layer_norm(tx, tg, tb, epsilon);
      },
      nb::arg("x"), nb::arg("gamma"), nb::arg("beta"), nb::arg("epsilon") = 1e-3,
      "(x - mean) / sqrt(var + epsilon) * gamma + beta over x's last axis (biased variance), as one fused op "
      "(forward and gradient one pass each); gamma and beta: [features] of x's dtype (float32 or float64).");
  nn.def(
      "sparse_softmax_cross_entropy_with_logits",
      [](nb::handle labels, nb::handle logits) {
        ef::Tensor tl = to_tensor(logits), ty = to_tensor(labels);
        nb::gil_scoped_release release;
        return ef::nn::sparse_softmax_cross_entropy_with_logits(ty, tl);
      },
      nb::arg("labels"), nb::arg("logits"),
      "TF's tf.nn.sparse_softmax_cross_entropy_with_logits: per row logsumexp(logits) - logits[label] over the last "
      "axis, as one fused op (its gradient one pass); labels int32/int64 of logits' shape without the class axis.");
}

}  // namespace efpy
