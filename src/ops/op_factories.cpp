#include "ops/op_factories.h"
#include "ops/rnn_op.h"

namespace ef::detail {

const OpFactories& builtin_op_factories() {
  static const OpFactories table = [] {
    OpFactories f;
    add_elementwise_factories(f);
    add_reduce_factories(f);
    add_matmul_factories(f);
    add_shape_factories(f);
    add_runtime_shape_factories(f);
    add_random_factories(f);
    add_conv_factories(f);
    add_check_factories(f);
    add_custom_gradient_factories(f);
    add_rnn_factories(f);
    add_sequence_elementwise_factories(f);
    add_pad_tile_factories(f);
    add_cumulative_factories(f);
    add_sort_factories(f);
    add_scatter_nd_factories(f);
    add_string_factories(f);
    add_complex_factories(f);
    add_fft_factories(f);
    add_eig_factories(f);
    add_file_factories(f);
    add_image_codec_factories(f);
    add_image_resize_factories(f);
    add_image_resample_factories(f);
    add_random_dists_factories(f);
    add_example_factories(f);
    add_decode_raw_factories(f);
    add_linalg_factories(f);
    add_attention_factories(f);
    add_layer_norm_factories(f);
    add_dist_factories(f);
    add_softmax_cross_entropy_factories(f);
    return f;
  }();
  return table;
}

}  // namespace ef::detail
