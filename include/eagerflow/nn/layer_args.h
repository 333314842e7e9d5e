#pragma once
// One declared argument list per layer (issue 30): a table of LayerArg (Keras name, member of the
// layer's options, where it lives) that the constructor, get_config, the factory and the Python
// keywords (python/src/layer_args.h) all read, so none can drop an argument. Example: Dense.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/constraints.h"
#include "eagerflow/nn/initializers.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/nn/regularizers.h"

namespace ef {
struct Stride2;  // eagerflow/ops/ops.h
}

namespace ef::nn {

// Keras' base-Layer arguments, which every layer takes besides its own.
struct LayerOptions {
  std::string name;  // empty: made from the class name ("dense_1")
  bool trainable = true;
  std::optional<DTypePolicy> dtype;  // unset: the global policy when the layer is made
  Regularizer activity_regularizer;
  // Keras 2's input_shape= (one example's shape; input_dim=n is input_shape=(n,)) and batch_size=:
  // a Sequential that starts with the layer is built at once (Layer::declared_input_shape).
  std::optional<std::vector<std::int64_t>> input_shape;
  std::optional<std::int64_t> input_dim, batch_size;
};

enum class ArgUse : unsigned char {
  config,       // the layer's own key in get_config, read back by its factory
  base_config,  // a key base_config writes and layer_from_config applies for every layer
  // Taken by the constructor, not saved: input_shape only builds a Sequential (Keras' config
  // holds the built model's shape). (Initializers are saved where they have a Keras name.)
  construct_only,
};
enum class ArgCheck : unsigned char { any, positive, non_negative, fraction /* in [0, 1) */, padding /* valid, same */,
                                      channels_last /* the one data_format */ };

template <class O>
struct LayerArg {
  using Member = std::variant<bool O::*, std::int64_t O::*, double O::*, std::string O::*, Stride2 O::*, ActivationFn O::*,
                              Initializer O::*, Regularizer O::*, Constraint O::*, std::optional<DTypePolicy> O::*,
                              std::optional<std::int64_t> O::*, std::optional<std::vector<std::int64_t>> O::*>;
  std::string_view name;  // Keras' keyword
  Member member;
  ArgUse use = ArgUse::config;
  bool required = false;      // no default: units, filters
  bool keyword_only = false;  // Keras takes it in **kwargs (the base arguments but activity_regularizer)
  ArgCheck check = ArgCheck::any;
};

}  // namespace ef::nn
