#pragma once
// The families of src/ops whose records (eagerflow/ops/op_rules.h) the table registers on first
// use: each function registers its family's, from the file beside the family's kernels.
namespace ef::detail {

void register_builtin_op_rules();  // all of the below

void register_elementwise_rules();    // src/ops/rules/elementwise.cpp
void register_reduction_rules();      // src/ops/rules/reductions.cpp
void register_layout_rules();         // src/ops/rules/layout.cpp
void register_sequence_rules();       // src/ops/rules/sequence.cpp
void register_nn_rules();             // src/ops/rules/nn.cpp (matmul, conv, pool, variables)
void register_rnn_rules();            // src/ops/rnn_op.cpp
void register_attention_rules();      // src/ops/attention_op.cpp
void register_layer_norm_rules();     // src/ops/layer_norm_op.cpp
void register_softmax_cross_entropy_rules();  // src/ops/softmax_cross_entropy_op.cpp
void register_fused_dense_rules();    // src/ops/fused_dense.cpp
void register_fused_elementwise_rules();  // src/ops/fused_elementwise.cpp
void register_fused_conv_rules();     // src/ops/conv.cpp
void register_optimizer_update_rules();  // src/ops/optimizer_update_op.cpp
void register_print_rules();          // src/ops/print.cpp
void register_scatter_nd_rules();     // src/ops/scatter_nd_op.cpp
void register_string_rules();         // src/ops/string_ops.cpp
void register_complex_rules();        // src/ops/complex_op.cpp
void register_fft_rules();            // src/ops/fft_op.cpp
void register_eig_rules();            // src/ops/linalg_eig_op.cpp
void register_host_call_rules();      // src/ops/host_call.cpp
void register_file_rules();           // src/io/file_ops.cpp
void register_image_codec_rules();    // src/io/image_codec.cpp
void register_image_resize_rules();   // src/ops/image_resize_op.cpp
void register_image_resample_rules(); // src/ops/image_resample_op.cpp
void register_example_rules();        // src/io/example_ops.cpp
void register_decode_raw_rules();     // src/io/decode_raw.cpp
void register_linalg_rules();         // src/ops/linalg_op.cpp
void register_random_dists_rules();   // src/ops/random_dists_op.cpp (candidate samplers too)

}  // namespace ef::detail
