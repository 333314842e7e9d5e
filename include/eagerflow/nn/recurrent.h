#pragma once
// Recurrent layers as Keras 3: SimpleRNN, LSTM, GRU and Bidirectional, on inputs
// [batch, time, features]. Weights have Keras' names, shapes and gate order, so weights copied
// from a Keras layer give Keras' numbers:
//   SimpleRNN: kernel [in, units], recurrent_kernel [units, units], bias [units]
//   LSTM:      kernel [in, 4u], recurrent_kernel [u, 4u], bias [4u]; gates i, f, c, o
//   GRU:       kernel [in, 3u], recurrent_kernel [u, 3u], bias [2, 3u] (input bias, then
//              recurrent bias; reset_after = true, Keras' default) or [3u]; gates z, r, h
//
// Two paths give the same numbers: LSTM and GRU with Keras' default activations (tanh and
// sigmoid), float32 and no mask run as one fused op on oneDNN's RNN primitives (forward and
// backward: ef::lstm / ef::gru below); everything else (other activations, float64, masks,
// SimpleRNN, GRU with reset_after = false) runs the cell's ef ops in one ef::scan over the
// time steps (any number of steps; its gradient is a reverse scan).
//
// Outputs: return_sequences gives [batch, time, units] (else the last output [batch, units]);
// return_state adds the final states (LSTM: h, c; GRU and SimpleRNN: h), read with
// layer.call_outputs({x}). An initial state is given as extra inputs: call_outputs({x, h0, c0})
// for an LSTM, call_outputs({x, h0}) for the others (operator()({x, h0}) when return_state is
// false). go_backwards reads the sequence from its end and returns the outputs in that order,
// as Keras does.
//
// Masks (Keras' mask_zero): Embedding(..., mask_zero = true) marks its output with a mask
// [batch, time] (true = a real step); recurrent layers called on a marked tensor skip the masked
// steps, keeping the previous state and output, as Keras does (the output before the first real
// step is zero). See ef::nn::set_mask / mask_of: a mask rides with the tensor handle it was set
// on, so it reaches the next layer in a Sequential, a functional model or plain code alike, and
// layers whose supports_masking() is true (Dense, Dropout, Activation, LayerNormalization) pass it
// on to their output.
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/layer.h"

namespace ef {

// ---- fused recurrent ops (float32, oneDNN). x [batch, time, in]; the initial states may be
// undefined (zeros); reverse runs from the last step to the first (outputs stay at their time
// positions, unlike go_backwards). Gradients flow to every input through oneDNN's backward pass.
struct LstmOutputs {
  Tensor sequence, h, c;  // [batch, time, units], [batch, units], [batch, units]
};
// kernel [in, 4u], recurrent_kernel [u, 4u], bias [4u]: Keras' layouts, gates i, f, c, o.
LstmOutputs lstm(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias,
                 const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor(), bool reverse = false);
struct GruOutputs {
  Tensor sequence, h;
};
// Keras' reset_after GRU: kernel [in, 3u], recurrent_kernel [u, 3u] (gates z, r, h),
// bias [2, 3u] (input bias, recurrent bias).
GruOutputs gru(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias,
               const Tensor& h0 = Tensor(), bool reverse = false);

}  // namespace ef

namespace ef::nn {

// ---- masks
// Marks `x` (this handle and its copies) with a Keras mask: bool [batch, time], true for steps
// that count. An undefined mask removes it. Layers that honour masks read it with mask_of.
void set_mask(const Tensor& x, const Tensor& mask);
// The mask set on x, or an undefined tensor.
Tensor mask_of(const Tensor& x);

// An orthogonal matrix (Keras' Orthogonal initializer, the recurrent kernels' default): the Q of
// a QR decomposition of a normal matrix, columns or rows orthonormal.
Initializer orthogonal_initializer(double gain = 1.0);

struct RNNOptions {
  ActivationFn activation = "tanh";
  ActivationFn recurrent_activation = "sigmoid";  // LSTM and GRU
  bool use_bias = true;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  // Keras' initializers of the input kernel, the recurrent kernel and the bias.
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer recurrent_initializer = orthogonal_initializer();
  Initializer bias_initializer = zeros_initializer();
  bool unit_forget_bias = true;  // LSTM: the forget gate's bias starts at 1 (the rest bias_initializer's)
  // Keras' dropout: in training, each sequence's input features are dropped with this rate (one
  // mask for every step, as Keras' cells draw it) and the kept ones scaled by 1 / (1 - rate).
  double dropout = 0.0;
  bool reset_after = true;       // GRU
  // Keras' zero_output_for_mask: masked steps output zeros instead of the previous output
  // (Bidirectional sets it on both layers when they return sequences, as Keras does).
  bool zero_output_for_mask = false;
  // false: always the ef::scan path (tests compare it with the fused one).
  bool allow_fused = true;
  DType dtype = DType::float32;  // of the weights (and so of the inputs), as Keras' dtype
};

// What SimpleRNN, LSTM and GRU share: weights, the time loop, masks and outputs.
class RNNBase : public Layer {
 public:
  std::int64_t units() const { return units_; }
  RNNOptions& options() { return options_; }
  const RNNOptions& options() const { return options_; }
  Variable kernel() const { return kernel_; }
  Variable recurrent_kernel() const { return recurrent_kernel_; }
  Variable bias() const { return bias_; }
  // How many state tensors the cell carries (LSTM 2, others 1).
  virtual int num_states() const { return 1; }
  std::optional<LayerConfig> get_config() const override;
  bool casts_integer_inputs() const override { return true; }
  // Runs the layer with an explicit mask ([batch, time] bool; undefined: none) and initial
  // state (empty: zeros): Keras' layer(x, mask=..., initial_state=...). Returns the output,
  // then the final states when return_state.
  std::vector<Tensor> call_with(const Tensor& x, const Tensor& mask, const std::vector<Tensor>& initial_state);

 protected:
  RNNBase(int gates, std::int64_t units, RNNOptions options, std::string name);
  virtual const char* class_name() const = 0;
  void build(const Shape& input_shape) override;
  void build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<Tensor> call_multi(const std::vector<Tensor>& inputs, bool training) override;
  // The input with options().dropout applied while training (its mask kept).
  Tensor dropped(const Tensor& x, bool training) const;
  // One step of the scan path: the projected input (x_t @ kernel + input bias), the states, the
  // recurrent kernel and recurrent bias (undefined: none) as read for this call -> the new
  // states (the first is the output h).
  virtual std::vector<Tensor> step(const Tensor& projected, const std::vector<Tensor>& states, const Tensor& rk,
                                   const Tensor& rb) = 0;
  // The fused path, when it applies (defined outputs: sequence, then the final states).
  virtual std::optional<std::vector<Tensor>> fused(const Tensor& x, const std::vector<Tensor>& states, bool reverse) {
    return std::nullopt;
  }
  // The input bias added to x @ kernel on the scan path (GRU's first row), or undefined;
  // the bias added to h @ recurrent_kernel inside the step (GRU's second row), or undefined.
  virtual Tensor input_bias() const;
  virtual Tensor recurrent_bias() const { return Tensor(); }
  bool default_activations() const;

  int gates_;
  std::int64_t units_;
  RNNOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;

 private:
  std::vector<Tensor> run(const Tensor& x, const Tensor& mask, std::vector<Tensor> states, bool reverse);
  friend class Bidirectional;
};

// h = activation(x @ kernel + h @ recurrent_kernel + bias).
class SimpleRNN : public RNNBase {
 public:
  explicit SimpleRNN(std::int64_t units, RNNOptions options = {}, std::string name = "");

 protected:
  const char* class_name() const override { return "SimpleRNN"; }
  std::vector<Tensor> step(const Tensor& projected, const std::vector<Tensor>& states, const Tensor& rk,
                           const Tensor& rb) override;
};

class LSTM : public RNNBase {
 public:
  explicit LSTM(std::int64_t units, RNNOptions options = {}, std::string name = "");
  int num_states() const override { return 2; }

 protected:
  const char* class_name() const override { return "LSTM"; }
  std::vector<Tensor> step(const Tensor& projected, const std::vector<Tensor>& states, const Tensor& rk,
                           const Tensor& rb) override;
  std::optional<std::vector<Tensor>> fused(const Tensor& x, const std::vector<Tensor>& states, bool reverse) override;
};

class GRU : public RNNBase {
 public:
  explicit GRU(std::int64_t units, RNNOptions options = {}, std::string name = "");

 protected:
  const char* class_name() const override { return "GRU"; }
  std::vector<Tensor> step(const Tensor& projected, const std::vector<Tensor>& states, const Tensor& rk,
                           const Tensor& rb) override;
  std::optional<std::vector<Tensor>> fused(const Tensor& x, const std::vector<Tensor>& states, bool reverse) override;
  Tensor input_bias() const override;
  Tensor recurrent_bias() const override;
};

// Keras' Bidirectional(layer, merge_mode): the layer reads the sequence forwards, a copy of it
// (same class and options, its own weights, go_backwards flipped) backwards; their outputs
// (the backward one put back in time order when return_sequences) merge by merge_mode:
// "concat" (default), "sum", "mul", "ave". return_state adds the forward then the backward
// states. Weights: forward layer's, then backward layer's (Keras' order).
class Bidirectional : public Layer {
 public:
  explicit Bidirectional(std::shared_ptr<RNNBase> layer, std::string merge_mode = "concat", std::string name = "");
  RNNBase& forward_layer() { return *forward_; }
  RNNBase& backward_layer() { return *backward_; }
  const std::string& merge_mode() const { return merge_mode_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::vector<Tensor> call_multi(const std::vector<Tensor>& inputs, bool training) override;

 private:
  std::shared_ptr<RNNBase> forward_, backward_;
  std::string merge_mode_;
};

}  // namespace ef::nn
