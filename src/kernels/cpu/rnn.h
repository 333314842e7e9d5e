#pragma once
// LSTM and GRU (Keras' reset_after form: oneDNN's linear-before-reset GRU) on oneDNN's RNN
// primitives, float32, one layer, one direction. Activations are [batch, time, features]
// (oneDNN's ntc) and states [batch, units]; weights in Keras' layouts, which are oneDNN's
// ldigo ([in, gates, units]); the bias is [gates, units] (GRU: 4 rows, see src/ops/rnn_op.cpp).
// Prepared primitives and their weight buffers are cached per thread and geometry.
#include <cstddef>
#include <cstdint>

namespace ef::cpu {

enum class RnnCell { lstm, gru };

struct RnnGeometry {
  RnnCell cell;
  std::int64_t t, n, c, u;  // steps, batch, input features, units
  bool reverse;
  int gates() const { return cell == RnnCell::lstm ? 4 : 3; }
  int bias_rows() const { return 4; }
  int states() const { return cell == RnnCell::lstm ? 2 : 1; }
};

// Bytes of the workspace the forward pass leaves for the backward pass.
std::size_t rnn_workspace_bytes(const RnnGeometry& g);

// c0 / c_t are unused for the GRU. ws: rnn_workspace_bytes(g) bytes, 64-byte aligned.
void rnn_forward(const RnnGeometry& g, const float* x, const float* h0, const float* c0, const float* w, const float* r,
                 const float* b, float* y, float* h_t, float* c_t, void* ws);

// From the forward pass's inputs, outputs and workspace and the output gradients (dc_t unused
// for the GRU): the gradients of x, h0, c0, w, r and b.
void rnn_backward(const RnnGeometry& g, const float* x, const float* h0, const float* c0, const float* w, const float* r,
                  const float* b, const float* y, const float* h_t, const float* c_t, const void* ws, const float* dy,
                  const float* dh_t, const float* dc_t, float* dx, float* dh0, float* dc0, float* dw, float* dr, float* db);

}  // namespace ef::cpu
