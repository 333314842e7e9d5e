// SimpleRNN, LSTM, GRU, Bidirectional and Keras masks (include/eagerflow/nn/recurrent.h).
#include "eagerflow/nn/recurrent.h"

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

#include "eagerflow/core/error.h"
#include "eagerflow/function/scan.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"
#include "nn/layer_args.h"  // set_initializer, read_initializer

namespace ef::nn {
namespace {

constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();

// ---------------------------------------------------------------- masks
// A side table from tensor handles to their masks: a mask belongs to the handle it was set on
// (and the copies of that handle that layers pass along), and dies with it.
struct MaskTable {
  std::mutex mutex;
  std::unordered_map<const TensorImpl*, std::pair<std::weak_ptr<TensorImpl>, Tensor>> masks;
};
MaskTable& mask_table() {
  static MaskTable* t = new MaskTable();  // never destroyed: tensors may outlive static destruction
  return *t;
}

Tensor columns(const Tensor& z, std::int64_t from, std::int64_t to) { return slice(z, {0, from}, {kEnd, to}); }

// The sequence axis (1) read backwards.
Tensor flip_time(const Tensor& seq) {
  std::vector<std::int64_t> begin(static_cast<std::size_t>(seq.rank()), 0), end(static_cast<std::size_t>(seq.rank()), kEnd),
      strides(static_cast<std::size_t>(seq.rank()), 1);
  begin[1] = -1;
  end[1] = std::numeric_limits<std::int64_t>::min() / 2;
  strides[1] = -1;
  return slice(seq, begin, end, strides);
}

bool is_named(const ActivationFn& f, const char* name) { return f.name() == name; }

// Zeros [batch, units] in x's dtype for x [batch, time, features], also for a dynamic batch.
Tensor zero_state(const Tensor& x, std::int64_t units) {
  // [batch, 1] zeros from the first step's first feature (summed: no steps give zeros too)
  Tensor first = sum(zeros_like(slice(x, {0, 0, 0}, {kEnd, 1, 1})), {1, 2});
  return broadcast_to(reshape(first, Shape{-1, 1}), Shape{kDynamic, units});
}

}  // namespace

void set_mask(const Tensor& x, const Tensor& mask) {
  if (!x.defined()) fail("set_mask", "the tensor is undefined");
  MaskTable& t = mask_table();
  std::lock_guard lock(t.mutex);
  if (t.masks.size() > 256)
    for (auto it = t.masks.begin(); it != t.masks.end();) it = it->second.first.expired() ? t.masks.erase(it) : std::next(it);
  const TensorImpl* key = x.impl_ptr().get();
  if (!mask.defined()) t.masks.erase(key);
  else t.masks[key] = {x.impl_ptr(), mask};
}

Tensor mask_of(const Tensor& x) {
  if (!x.defined()) return Tensor();
  MaskTable& t = mask_table();
  std::lock_guard lock(t.mutex);
  auto it = t.masks.find(x.impl_ptr().get());
  if (it == t.masks.end()) return Tensor();
  if (it->second.first.lock() != x.impl_ptr()) {  // an old entry whose address was reused
    t.masks.erase(it);
    return Tensor();
  }
  return it->second.second;
}

// ---------------------------------------------------------------- initializers
Initializer orthogonal_initializer(double gain) {
  ConfigMap keras_arguments;
  keras_arguments.set("gain", gain);
  keras_arguments.set("seed", nullptr);
  Initializer::Function fn = [gain](const Shape& s, DType dtype) {
    if (s.rank() < 2) fail("orthogonal_initializer", "needs a shape of rank >= 2, got " + s.str());
    std::int64_t cols = s[s.rank() - 1], rows = s.num_elements() / std::max<std::int64_t>(cols, 1);
    // Gram-Schmidt on the longer side of a normal matrix, in double (as QR gives up to signs).
    bool transposed = rows < cols;
    std::int64_t n = transposed ? cols : rows, k = transposed ? rows : cols;  // k orthonormal vectors of length n
    std::vector<double> a = cast(random::normal(Shape{k, n}, 0.0, 1.0, DType::float64), DType::float64).to_vector<double>();
    for (std::int64_t i = 0; i < k; ++i) {
      double* v = a.data() + i * n;
      for (int pass = 0; pass < 2; ++pass)
        for (std::int64_t j = 0; j < i; ++j) {
          const double* q = a.data() + j * n;
          double dot = 0;
          for (std::int64_t e = 0; e < n; ++e) dot += v[e] * q[e];
          for (std::int64_t e = 0; e < n; ++e) v[e] -= dot * q[e];
        }
      double norm = 0;
      for (std::int64_t e = 0; e < n; ++e) norm += v[e] * v[e];
      norm = std::sqrt(norm);
      for (std::int64_t e = 0; e < n; ++e) v[e] = norm > 0 ? v[e] / norm : 0.0;
    }
    std::vector<double> out(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        out[static_cast<std::size_t>(r * cols + c)] = gain * (transposed ? a[r * n + c] : a[c * n + r]);
    return cast(tensor(out, s), dtype);
  };
  return {std::move(fn), "OrthogonalInitializer", std::move(keras_arguments)};
}

// ---------------------------------------------------------------- RNNBase
RNNBase::RNNBase(int gates, std::int64_t units, RNNOptions options, std::string name)
    : Layer(std::move(name)), gates_(gates), units_(units), options_(std::move(options)) {
  if (units <= 0) fail("rnn", "units must be positive, got " + std::to_string(units));
}

bool RNNBase::default_activations() const {
  return is_named(options_.activation, "tanh") && is_named(options_.recurrent_activation, "sigmoid");
}

void RNNBase::build(const Shape& input_shape) {
  if (input_shape.rank() != 3)
    fail(name(), "expects inputs [batch, time, features], got shape " + input_shape.str());
  std::int64_t features = input_shape[2];
  if (features == kDynamic) fail(name(), "the features (last dim) of the input must be known to build, got " + input_shape.str());
  std::int64_t g = gates_ * units_;
  DType dt = options_.dtype;
  if (dt != DType::float32 && dt != DType::float64) fail(kWrongType, name(), "weights must be float32 or float64");
  kernel_ = add_weight("kernel", Shape{features, g}, options_.kernel_initializer, true, dt);
  recurrent_kernel_ = add_weight("recurrent_kernel", Shape{units_, g}, options_.recurrent_initializer, true, dt);
  if (options_.use_bias) {
    bool gru_after = gates_ == 3 && options_.reset_after;
    Shape bs = gru_after ? Shape{2, g} : Shape{g};
    Initializer init = options_.bias_initializer;
    if (gates_ == 4 && options_.unit_forget_bias) {
      // Keras: the input gate's and the cell's and output gates' biases from bias_initializer,
      // the forget gate's ones.
      std::int64_t u = units_;
      init = [u, b = options_.bias_initializer](const Shape& s, DType t) {
        return concat({b(Shape{u}, t), ones(Shape{u}, t), b(Shape{2 * u}, t)}, 0);
      };
    }
    bias_ = add_weight("bias", bs, init, true, dt);
  }
}

void RNNBase::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.empty()) fail(name(), "called with no inputs");
  build(input_shapes[0]);
}

Tensor RNNBase::input_bias() const { return options_.use_bias ? Tensor(bias_) : Tensor(); }

Tensor RNNBase::call(const Tensor& inputs) { return call(inputs, false); }

Tensor RNNBase::call(const Tensor& inputs, bool training) {
  std::vector<Tensor> out = call_with(dropped(inputs, training), mask_of(inputs), {});
  if (out.size() != 1) fail(name(), "returns its states too (return_state); read them with call_outputs(inputs)");
  return out[0];
}

Tensor RNNBase::dropped(const Tensor& x, bool training) const {
  double rate = options_.dropout;
  if (!training || rate == 0.0 || x.rank() != 3 || !is_floating(x.dtype())) return x;
  // One mask per sequence, [batch, 1, features], drawn afresh on every call (also replayed).
  Tensor first_step = gather(x, tensor(std::vector<std::int64_t>{0}), 1);
  Tensor keep = greater_equal(random::uniform_like(first_step, 0.0, 1.0), scalar_like(first_step, rate));
  return x * where(keep, full_like(first_step, 1.0 / (1.0 - rate)), zeros_like(first_step));
}

Tensor RNNBase::call(const std::vector<Tensor>& inputs, bool training) {
  std::vector<Tensor> out = call_multi(inputs, training);
  if (out.size() != 1) fail(name(), "returns its states too (return_state); read them with call_outputs(inputs)");
  return out[0];
}

std::vector<Tensor> RNNBase::call_multi(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.empty()) fail(name(), "called with no inputs");
  std::vector<Tensor> states(inputs.begin() + 1, inputs.end());
  return call_with(dropped(inputs[0], training), mask_of(inputs[0]), states);
}

std::vector<Tensor> RNNBase::call_with(const Tensor& x, const Tensor& mask, const std::vector<Tensor>& initial_state) {
  if (!kernel_.defined())
    fail(ErrorCode::failed_precondition, name(), "call_with before the layer was built; call it on an input first");
  if (x.rank() != 3 || x.shape()[2] != kernel_.shape()[0])
    fail(name(), "input " + x.spec().str() + " is incompatible: expected [batch, time, " +
                     std::to_string(kernel_.shape()[0]) + "]");
  if (!is_floating(x.dtype())) fail(kWrongType, name(), "expects floating inputs, got " + x.spec().str());
  // Under a mixed policy the weights read as the compute dtype inside call() (autocast).
  DType weights = dtype_policy().is_mixed() ? compute_dtype() : kernel_.dtype();
  if (x.dtype() != weights)
    fail(name(), "input " + x.spec().str() + " and weights (" + std::string(name_of(weights)) +
                     ") differ in dtype; the layer builds its weights in the dtype of its first input");
  if (!initial_state.empty() && static_cast<int>(initial_state.size()) != num_states())
    fail(name(), "takes " + std::to_string(num_states()) + " initial state tensor(s), got " +
                     std::to_string(initial_state.size()));
  for (const Tensor& s : initial_state)
    if (!s.defined() || s.rank() != 2 || s.shape()[1] != units_ || s.dtype() != x.dtype())
      fail(name(), "an initial state must be [batch, " + std::to_string(units_) + "] " + std::string(name_of(x.dtype())) +
                       ", got " + (s.defined() ? s.spec().str() : std::string("undefined")));
  if (mask.defined() && (mask.rank() != 2 || mask.dtype() != DType::bool_))
    fail(name(), "a mask must be bool [batch, time], got " + mask.spec().str());
  std::vector<Tensor> states = initial_state;
  states.resize(static_cast<std::size_t>(num_states()));
  std::vector<Tensor> r = run(x, mask, states, options_.go_backwards);
  std::vector<Tensor> out;
  out.push_back(options_.return_sequences ? r[0] : r[1]);
  if (options_.return_sequences && mask.defined())
    set_mask(out[0], mask);  // as Keras' compute_mask: the input's mask, also for go_backwards
  if (options_.return_state) out.insert(out.end(), r.begin() + 1, r.end());
  return out;
}

// Returns the outputs in processing order (Keras' go_backwards order), then the final states.
std::vector<Tensor> RNNBase::run(const Tensor& x, const Tensor& mask, std::vector<Tensor> states, bool reverse) {
  // bfloat16 (mixed precision) runs the fused float32 op too, converted at its boundary.
  bool fusable = x.dtype() == DType::float32 || is_storage_float(x.dtype());
  if (!mask.defined() && options_.allow_fused && fusable && default_activations()) {
    if (auto f = fused(x, states, reverse)) {
      std::vector<Tensor> r = std::move(*f);
      if (reverse) r[0] = flip_time(r[0]);
      return r;
    }
  }
  if (mask.defined() && mask.shape()[1] != x.shape()[1] && mask.shape()[1] != kDynamic && x.shape()[1] != kDynamic)
    fail(name(), "the mask " + mask.spec().str() + " does not fit the input " + x.spec().str());
  // One ef::scan over the time-major projected inputs (any number of steps, also a dynamic one;
  // its gradient is a reverse scan over the saved per-step values). The weights are read once
  // outside the body and captured (docs/scan.md).
  Tensor projected = matmul(x, kernel_);
  if (Tensor b = input_bias(); b.defined()) projected = projected + b;
  Tensor rk = recurrent_kernel_, rb = recurrent_bias();
  Tensor zero = zero_state(x, units_);
  for (Tensor& s : states)
    if (!s.defined()) s = zero;
  std::size_t ns = states.size();
  std::vector<Tensor> init = states, xs{transpose(projected, {1, 0, 2})};
  if (mask.defined()) {
    init.push_back(zero);  // the previous output
    xs.push_back(transpose(expand_dims(mask, -1), {1, 0, 2}));  // [time, batch, 1]
  }
  bool zero_masked = options_.zero_output_for_mask;
  ScanBody body = [&](const std::vector<Tensor>& carry, const std::vector<Tensor>& in) {
    std::vector<Tensor> s(carry.begin(), carry.begin() + static_cast<std::ptrdiff_t>(ns));
    std::vector<Tensor> next = step(in[0], s, rk, rb);
    Tensor out = next[0];
    if (in.size() > 1) {
      const Tensor& m = in[1];
      for (std::size_t i = 0; i < ns; ++i) next[i] = where(m, next[i], s[i]);
      out = where(m, out, zero_masked ? zeros_like(out) : carry[ns]);
      next.push_back(out);
    }
    return std::pair{next, std::vector<Tensor>{out}};
  };
  ScanOptions so;
  so.reverse = reverse;
  auto [carry, ys] = scan(body, init, xs, so);
  Tensor seq = transpose(ys[0], {1, 0, 2});
  if (reverse) seq = flip_time(seq);  // processing order, as Keras' go_backwards
  std::vector<Tensor> r{seq};
  r.insert(r.end(), carry.begin(), carry.begin() + static_cast<std::ptrdiff_t>(ns));
  // Keras' last output is the final h (masked steps keep it), which the first state is.
  return r;
}

std::optional<LayerConfig> RNNBase::get_config() const {
  auto c = base_config(*this, class_name());
  std::string w = "layer '" + name() + "' (" + class_name() + ")";
  c.config.set("units", units_);
  c.config.set("activation", activation_config(options_.activation, w));
  if (gates_ > 1) c.config.set("recurrent_activation", activation_config(options_.recurrent_activation, w));
  c.config.set("use_bias", options_.use_bias);
  set_initializer(c.config, "kernel_initializer", options_.kernel_initializer);
  set_initializer(c.config, "recurrent_initializer", options_.recurrent_initializer);
  set_initializer(c.config, "bias_initializer", options_.bias_initializer);
  c.config.set("return_sequences", options_.return_sequences);
  c.config.set("return_state", options_.return_state);
  c.config.set("go_backwards", options_.go_backwards);
  if (gates_ == 4) c.config.set("unit_forget_bias", options_.unit_forget_bias);
  c.config.set("dropout", options_.dropout);
  if (gates_ == 3) c.config.set("reset_after", options_.reset_after);
  if (options_.zero_output_for_mask) c.config.set("zero_output_for_mask", true);
  return c;
}

// ---------------------------------------------------------------- cells
SimpleRNN::SimpleRNN(std::int64_t units, RNNOptions options, std::string name)
    : RNNBase(1, units, std::move(options), std::move(name)) {}

std::vector<Tensor> SimpleRNN::step(const Tensor& p, const std::vector<Tensor>& s, const Tensor& rk, const Tensor& rb) {
  return {options_.activation(p + matmul(s[0], rk))};
}

LSTM::LSTM(std::int64_t units, RNNOptions options, std::string name) : RNNBase(4, units, std::move(options), std::move(name)) {}

std::vector<Tensor> LSTM::step(const Tensor& p, const std::vector<Tensor>& s, const Tensor& rk, const Tensor& rb) {
  std::int64_t u = units_;
  Tensor z = p + matmul(s[0], rk);
  const ActivationFn &act = options_.activation, &rec = options_.recurrent_activation;
  Tensor i = rec(columns(z, 0, u)), f = rec(columns(z, u, 2 * u)), g = act(columns(z, 2 * u, 3 * u)),
         o = rec(columns(z, 3 * u, 4 * u));
  Tensor c = f * s[1] + i * g;
  return {o * act(c), c};
}

std::optional<std::vector<Tensor>> LSTM::fused(const Tensor& x, const std::vector<Tensor>& s, bool reverse) {
  Tensor b = options_.use_bias ? Tensor(bias_) : zeros(Shape{4 * units_}, x.dtype());
  LstmOutputs o = lstm(x, kernel_, recurrent_kernel_, b, s[0], s[1], reverse);
  return std::vector<Tensor>{o.sequence, o.h, o.c};
}

GRU::GRU(std::int64_t units, RNNOptions options, std::string name) : RNNBase(3, units, std::move(options), std::move(name)) {}

Tensor GRU::recurrent_bias() const {
  if (!options_.use_bias || !options_.reset_after) return Tensor();
  return reshape(slice(Tensor(bias_), {1}, {2}), Shape{3 * units_});
}

Tensor GRU::input_bias() const {
  if (!options_.use_bias) return Tensor();
  if (!options_.reset_after) return bias_;
  return reshape(slice(Tensor(bias_), {0}, {1}), Shape{3 * units_});
}

std::vector<Tensor> GRU::step(const Tensor& p, const std::vector<Tensor>& s, const Tensor& rk, const Tensor& rb) {
  std::int64_t u = units_;
  const ActivationFn &act = options_.activation, &rec = options_.recurrent_activation;
  const Tensor& h = s[0];
  Tensor xz = columns(p, 0, u), xr = columns(p, u, 2 * u), xh = columns(p, 2 * u, 3 * u);
  Tensor hh, z;
  if (options_.reset_after) {
    Tensor r_all = matmul(h, rk);
    if (rb.defined()) r_all = r_all + rb;
    z = rec(xz + columns(r_all, 0, u));
    Tensor r = rec(xr + columns(r_all, u, 2 * u));
    hh = act(xh + r * columns(r_all, 2 * u, 3 * u));
  } else {
    Tensor r_zr = matmul(h, slice(rk, {0, 0}, {kEnd, 2 * u}));
    z = rec(xz + columns(r_zr, 0, u));
    Tensor r = rec(xr + columns(r_zr, u, 2 * u));
    hh = act(xh + matmul(r * h, slice(rk, {0, 2 * u}, {kEnd, 3 * u})));
  }
  return {z * h + (1.0 - z) * hh};
}

std::optional<std::vector<Tensor>> GRU::fused(const Tensor& x, const std::vector<Tensor>& s, bool reverse) {
  if (!options_.reset_after) return std::nullopt;
  Tensor b = options_.use_bias ? Tensor(bias_) : zeros(Shape{2, 3 * units_}, x.dtype());
  GruOutputs o = gru(x, kernel_, recurrent_kernel_, b, s[0], reverse);
  return std::vector<Tensor>{o.sequence, o.h};
}

// ---------------------------------------------------------------- Bidirectional
namespace {
std::shared_ptr<RNNBase> make_rnn(const RNNBase& like, RNNOptions o, std::string name) {
  if (dynamic_cast<const LSTM*>(&like)) return std::make_shared<LSTM>(like.units(), std::move(o), std::move(name));
  if (dynamic_cast<const GRU*>(&like)) return std::make_shared<GRU>(like.units(), std::move(o), std::move(name));
  if (dynamic_cast<const SimpleRNN*>(&like)) return std::make_shared<SimpleRNN>(like.units(), std::move(o), std::move(name));
  fail("bidirectional", "wraps SimpleRNN, LSTM or GRU");
}
}  // namespace

Bidirectional::Bidirectional(std::shared_ptr<RNNBase> layer, std::string merge_mode, std::string name)
    : Layer(std::move(name)), forward_(std::move(layer)), merge_mode_(std::move(merge_mode)) {
  if (!forward_) fail("bidirectional", "the layer is null");
  if (forward_->built())
    fail(ErrorCode::failed_precondition, "bidirectional",
         "wraps a layer that is not built yet (it builds both directions)");
  if (merge_mode_ != "concat" && merge_mode_ != "sum" && merge_mode_ != "mul" && merge_mode_ != "ave")
    fail("bidirectional", "merge_mode must be 'concat', 'sum', 'mul' or 'ave', got '" + merge_mode_ + "'");
  if (forward_->options().return_sequences) forward_->options().zero_output_for_mask = true;
  RNNOptions o = forward_->options();
  o.go_backwards = !o.go_backwards;
  backward_ = make_rnn(*forward_, o, "backward_" + forward_->name());
  backward_->set_dtype_policy(forward_->dtype_policy());  // both directions compute alike
}

void Bidirectional::build(const Shape& input_shape) {}

Tensor Bidirectional::call(const Tensor& inputs, bool training) {
  std::vector<Tensor> out = call_multi({inputs}, training);
  if (out.size() != 1) fail(name(), "returns its states too (return_state); read them with call_outputs(inputs)");
  return out[0];
}

std::vector<Tensor> Bidirectional::call_multi(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.empty()) fail(name(), "called with no inputs");
  const Tensor& x = inputs[0];
  Tensor mask = mask_of(x);
  std::size_t n = static_cast<std::size_t>(forward_->num_states());
  std::vector<Tensor> fs, bs;
  if (inputs.size() > 1) {
    if (inputs.size() != 1 + 2 * n)
      fail(name(), "takes " + std::to_string(2 * n) + " initial state tensors (forward, then backward), got " +
                       std::to_string(inputs.size() - 1));
    fs.assign(inputs.begin() + 1, inputs.begin() + 1 + static_cast<std::ptrdiff_t>(n));
    bs.assign(inputs.begin() + 1 + static_cast<std::ptrdiff_t>(n), inputs.end());
  }
  // Called through operator() so they build and become sub-layers; the mask is passed on.
  auto run = [&](RNNBase& layer, const std::vector<Tensor>& states) {
    std::vector<Tensor> args{identity(x)};
    if (mask.defined()) set_mask(args[0], mask);
    args.insert(args.end(), states.begin(), states.end());
    return layer.call_outputs(args, training);
  };
  std::vector<Tensor> f = run(*forward_, fs), b = run(*backward_, bs);
  Tensor yb = b[0];
  if (forward_->options().return_sequences) yb = flip_time(yb);
  Tensor y;
  if (merge_mode_ == "concat") y = concat({f[0], yb}, -1);
  else if (merge_mode_ == "sum") y = f[0] + yb;
  else if (merge_mode_ == "mul") y = f[0] * yb;
  else y = (f[0] + yb) * 0.5;
  if (forward_->options().return_sequences && mask.defined()) set_mask(y, mask);
  std::vector<Tensor> out{y};
  out.insert(out.end(), f.begin() + 1, f.end());
  out.insert(out.end(), b.begin() + 1, b.end());
  return out;
}

std::optional<LayerConfig> Bidirectional::get_config() const {
  auto c = base_config(*this, "Bidirectional");
  auto inner = forward_->get_config();
  ConfigMap layer;
  layer.set("class_name", inner->class_name);
  layer.set("config", inner->config);
  c.config.set("layer", layer);
  c.config.set("merge_mode", merge_mode_);
  return c;
}

}  // namespace ef::nn

// ---------------------------------------------------------------- configs
namespace ef::detail {
using namespace ef::nn;

void add_recurrent_layer_factories(std::map<std::string, LayerFactory>& f) {
  auto options = [](const ConfigMap& c) {
    RNNOptions o;
    o.activation = activation_from_config(c.at("activation"), c.where);
    if (c.has("recurrent_activation")) o.recurrent_activation = activation_from_config(c.at("recurrent_activation"), c.where);
    o.use_bias = c.flag("use_bias");
    o.return_sequences = c.flag("return_sequences");
    o.return_state = c.flag("return_state");
    o.go_backwards = c.flag("go_backwards");
    if (c.has("unit_forget_bias")) o.unit_forget_bias = c.flag("unit_forget_bias");
    if (c.has_value("dropout")) o.dropout = c.real("dropout");
    if (!(o.dropout >= 0.0 && o.dropout < 1.0)) throw Error(c.where + ": dropout must be in [0, 1)");
    read_initializer(c, "kernel_initializer", o.kernel_initializer);
    read_initializer(c, "recurrent_initializer", o.recurrent_initializer);
    read_initializer(c, "bias_initializer", o.bias_initializer);
    if (c.has("reset_after")) o.reset_after = c.flag("reset_after");
    if (c.has("zero_output_for_mask")) o.zero_output_for_mask = c.flag("zero_output_for_mask");
    return o;
  };
  auto units = [](const ConfigMap& c) {
    std::int64_t u = c.integer("units");
    if (u <= 0 || u > (std::int64_t{1} << 24)) throw Error(c.where + ": units must be in [1, 2^24]");
    return u;
  };
  f["SimpleRNN"] = [=](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    return std::make_shared<SimpleRNN>(units(lc.config), options(lc.config), lc.config.text("name"));
  };
  f["LSTM"] = [=](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    return std::make_shared<LSTM>(units(lc.config), options(lc.config), lc.config.text("name"));
  };
  f["GRU"] = [=](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    return std::make_shared<GRU>(units(lc.config), options(lc.config), lc.config.text("name"));
  };
  f["Bidirectional"] = [](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    const ConfigMap& c = lc.config;
    const ConfigMap& inner = c.map("layer");
    LayerConfig ic{inner.text("class_name"), inner.map("config")};
    if (ic.class_name != "LSTM" && ic.class_name != "GRU" && ic.class_name != "SimpleRNN")
      throw Error(c.where + ": Bidirectional wraps SimpleRNN, LSTM or GRU, got '" + ic.class_name + "'");
    auto layer = std::dynamic_pointer_cast<RNNBase>(layer_from_config(ic, c.where));
    if (!layer) throw Error(c.where + ": the wrapped layer is not recurrent");
    return std::make_shared<Bidirectional>(layer, c.text("merge_mode"), c.text("name"));
  };
}

}  // namespace ef::detail
