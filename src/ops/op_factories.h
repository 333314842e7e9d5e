#pragma once
// How a saved model rebuilds an op from its name and parameters: each family of ops adds the
// factories of its ops beside their definitions; this list only names the families (a static
// library links an object file only when something references it, so self-registration in
// each file could silently lose an op).
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "eagerflow/ops/op_params.h"
#include "eagerflow/ops/primitive.h"

namespace ef::detail {

using OpFactory = std::function<std::shared_ptr<const Primitive>(const OpParams&)>;
using OpFactories = std::map<std::string, OpFactory>;

void add_elementwise_factories(OpFactories& f);    // src/ops/elementwise.cpp
void add_reduce_factories(OpFactories& f);         // src/ops/reduce.cpp
void add_matmul_factories(OpFactories& f);         // src/ops/matmul.cpp
void add_shape_factories(OpFactories& f);          // src/ops/shape_ops.cpp
void add_runtime_shape_factories(OpFactories& f);  // src/ops/runtime_shape.cpp
void add_random_factories(OpFactories& f);         // src/ops/random.cpp
void add_conv_factories(OpFactories& f);           // src/ops/conv.cpp
void add_check_factories(OpFactories& f);          // src/ops/checks.cpp
void add_custom_gradient_factories(OpFactories& f);  // src/autodiff/custom_gradient_op.cpp
void add_sequence_elementwise_factories(OpFactories& f);  // src/ops/tri_clip_round.cpp
void add_pad_tile_factories(OpFactories& f);      // src/ops/pad_tile.cpp
void add_cumulative_factories(OpFactories& f);    // src/ops/cumulative.cpp
void add_sort_factories(OpFactories& f);          // src/ops/sort_ops.cpp
void add_scatter_nd_factories(OpFactories& f);    // src/ops/scatter_nd_op.cpp
void add_string_factories(OpFactories& f);        // src/ops/string_ops.cpp
void add_complex_factories(OpFactories& f);       // src/ops/complex_op.cpp
void add_fft_factories(OpFactories& f);           // src/ops/fft_op.cpp
void add_eig_factories(OpFactories& f);           // src/ops/linalg_eig_op.cpp
void add_file_factories(OpFactories& f);          // src/io/file_ops.cpp
void add_image_codec_factories(OpFactories& f);   // src/io/image_codec.cpp
void add_image_resize_factories(OpFactories& f);  // src/ops/image_resize_op.cpp
void add_image_resample_factories(OpFactories& f);  // src/ops/image_resample_op.cpp
void add_example_factories(OpFactories& f);       // src/io/example_ops.cpp
void add_decode_raw_factories(OpFactories& f);    // src/io/decode_raw.cpp
void add_linalg_factories(OpFactories& f);        // src/ops/linalg_op.cpp
void add_random_dists_factories(OpFactories& f);  // src/ops/random_dists_op.cpp
void add_candidate_sampler_factories(OpFactories& f);  // src/ops/candidate_sampler_op.cpp (via the line above)
void add_attention_factories(OpFactories& f);        // src/ops/attention_op.cpp
void add_layer_norm_factories(OpFactories& f);       // src/ops/layer_norm_op.cpp
void add_dist_factories(OpFactories& f);             // src/distributed/collectives.cpp
void add_softmax_cross_entropy_factories(OpFactories& f);  // src/ops/softmax_cross_entropy_op.cpp

// Every built-in op that a saved model can hold, by name.
const OpFactories& builtin_op_factories();

}  // namespace ef::detail
