#pragma once
// ef::function over a layer. Separate from eagerflow/nn/layer.h so that code defining or
// using layers does not compile the tracing machinery; eagerflow/eagerflow.h includes both.
#include <concepts>
#include <memory>
#include <string>
#include <utility>

#include "eagerflow/function/function.h"
#include "eagerflow/nn/layer.h"

namespace ef {
namespace detail {
struct LayerAccess {
  static std::weak_ptr<int> alive(const nn::Layer& layer) { return layer.alive_; }
};
}  // namespace detail

// ef::function over a layer: traces layer(inputs). The layer is held by reference and must
// outlive the function (like a tf.function over a Keras layer).
template <class L>
  requires std::derived_from<L, nn::Layer>
auto function(L& layer, FunctionOptions options = {}) {
  if (options.name.empty()) options.name = layer.name();
  if (options.arg_names.empty()) options.arg_names = {"inputs"};
  nn::Layer* target = &layer;
  std::weak_ptr<int> alive = detail::LayerAccess::alive(layer);
  std::string name = layer.name();
  // Cached traces keep running without the layer (the graph holds its variables); a new
  // signature must trace the layer again, which needs it alive.
  return Function(
      [target, alive, name](const Tensor& inputs) {
        if (alive.expired())
          fail("function " + name, "the layer '" + name + "' was destroyed, and a new input signature " +
                                       inputs.spec().str() + " needs it to trace; ef::function(layer) holds the "
                                       "layer by reference: keep it alive as long as the function");
        return (*target)(inputs);
      },
      std::move(options));
}
}  // namespace ef
