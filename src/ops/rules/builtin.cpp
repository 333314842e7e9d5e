// The records of the ops in src/ops, registered on first use of the table (src/ops/op_rules.cpp).
#include "ops/rules/builtin_rules.h"

namespace ef::detail {

void register_builtin_op_rules() {
  register_elementwise_rules();
  register_reduction_rules();
  register_layout_rules();
  register_sequence_rules();
  register_nn_rules();
  register_rnn_rules();
  register_attention_rules();
  register_layer_norm_rules();
  register_softmax_cross_entropy_rules();
  register_fused_dense_rules();
  register_fused_elementwise_rules();
  register_fused_conv_rules();
  register_optimizer_update_rules();
  register_print_rules();
  register_scatter_nd_rules();
  register_string_rules();
  register_complex_rules();
  register_fft_rules();
  register_eig_rules();
  register_host_call_rules();
  register_file_rules();
  register_image_codec_rules();
  register_image_resize_rules();
  register_image_resample_rules();
  register_example_rules();
  register_decode_raw_rules();
  register_linalg_rules();
  register_random_dists_rules();
}

}  // namespace ef::detail
