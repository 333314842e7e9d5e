#include "eagerflow/nn/layer.h"

#include <atomic>

#include "eagerflow/nn/layer_type_name.h"
#include "eagerflow/nn/layer_name.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "eagerflow/trace/keras_tensor.h"
#include "eagerflow/core/log.h"
#include "eagerflow/nn/recurrent.h"  // mask_of / set_mask
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/trace/context.h"
#include "core/autocast.h"

namespace ef::nn {
namespace {

thread_local std::vector<Layer*> call_stack;
thread_local std::vector<bool> training_stack;  // the training flag of each active layer call

std::string snake_case(const std::string& camel) {
  std::string out;
  for (std::size_t i = 0; i < camel.size(); ++i) {
    char c = camel[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      bool boundary = i > 0 && (std::islower(static_cast<unsigned char>(camel[i - 1])) ||
                                (i + 1 < camel.size() && std::islower(static_cast<unsigned char>(camel[i + 1]))));
      if (boundary && !out.empty() && out.back() != '_') out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string class_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  if (auto pos = name.rfind("::"); pos != std::string::npos) name = name.substr(pos + 2);
  if (auto pos = name.find('<'); pos != std::string::npos) name = name.substr(0, pos);
  return name;
}

// Keras' unique layer names: the first "dense", then "dense_1", "dense_2", ...
struct NameCounts {
  std::mutex mutex;
  std::map<std::string, int> counts;
};
NameCounts& name_counts() {
  static NameCounts c;
  return c;
}

std::string unique_name(const std::string& base) {
  NameCounts& c = name_counts();
  std::lock_guard lock(c.mutex);
  int n = c.counts[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

// Pushes a layer on this thread's call stack (and its name on the name scope, its training
// flag on the training stack).
class CallFrame {
 public:
  CallFrame(Layer* layer, bool training) : scope_(layer->name()) {
    call_stack.push_back(layer);
    training_stack.push_back(training);
  }
  ~CallFrame() {
    call_stack.pop_back();
    training_stack.pop_back();
  }

 private:
  NameScope scope_;
};

// Layers that compute in float32 under a bfloat16 policy, as Keras 3's do (their statistics
// need float32; their variables are not autocast): inputs go in as float32, outputs come out
// in the compute dtype.
bool computes_in_float32(const Layer& layer) {
  std::string t = layer.type_name();
  return t == "BatchNormalization" || t == "LayerNormalization";
}

// Keras' input autocast, for the 16-bit floats only (float64 inputs of float32 layers keep
// their dtype, as before policies): a floating input whose dtype differs from `to`, where one
// of them is bfloat16 or float16, is cast to `to`.
std::vector<Tensor> autocast_inputs(std::span<const Tensor> inputs, DType to, bool cast_integers) {
  std::vector<Tensor> out(inputs.begin(), inputs.end());
  for (auto& t : out) {
    DType d = t.dtype();
    if (d != to && is_floating(d) && (is_storage_float(d) || is_storage_float(to))) t = cast(t, to);
    else if (cast_integers && !is_floating(d) && !is_complex(d) && d != DType::string) t = cast(t, to);
  }
  return out;
}

}  // namespace

void Layer::set_dtype_policy(const DTypePolicy& policy) {
  std::lock_guard lock(mutex_);
  if (built_ && !(policy == dtype_policy_))
    fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error), name(),
         "is built: set its dtype policy before its first call (its weights have the variable dtype of '" +
             dtype_policy_.name() + "', not of '" + policy.name() + "')");
  dtype_policy_ = policy;
}

// A name given is kept as is; a default one is made when first needed (see name() and track()).
struct Layer::ChildIndex {
  std::unordered_set<const Layer*> members;
  std::unordered_map<std::string, const Layer*> by_name;
  std::unordered_map<std::string, std::uint64_t> next_suffix;  // per default base name
};

void check_layer_name(const std::string& name) {
  for (std::size_t i = 0; i < name.size(); ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c != 0x7f && c != '/') continue;
    std::string shown;
    for (unsigned char b : name) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      shown += b >= 0x20 && b < 0x7f ? std::string(1, static_cast<char>(b)) : std::string(hex);
    }
    throw InvalidLayerName("[layer] invalid layer name '" + shown + "': " +
                           (c == '/' ? std::string("it cannot contain '/'")
                                     : "it holds the control character " + std::to_string(c) + " at byte " + std::to_string(i)) +
                           " (names are printable text without '/')");
  }
}

Layer::Layer(std::string name)
    : name_(std::move(name)), explicit_name_(!name_.empty()), child_index_(std::make_unique<ChildIndex>()) {
  check_layer_name(name_);
}

void reset_layer_names() {
  NameCounts& c = name_counts();
  std::lock_guard lock(c.mutex);
  c.counts.clear();
}

const std::string& Layer::name() const {
  // The dynamic type is not known in the constructor, so a default name is given lazily.
  std::lock_guard lock(mutex_);
  if (name_.empty()) name_ = unique_name(snake_case(class_name(typeid(*this))));
  return name_;
}

Tensor Layer::call(const Tensor&) {
  fail(name(), "a layer must override call(inputs) or call(inputs, training)");
}

namespace {
Tensor only_output(const Layer& layer, std::vector<Tensor> outputs) {
  if (outputs.size() != 1)
    fail(layer.name(), "has " + std::to_string(outputs.size()) + " outputs; call_outputs(inputs) returns all of them");
  return std::move(outputs[0]);
}
}  // namespace

Tensor Layer::operator()(const Tensor& inputs, std::optional<bool> training) {
  return only_output(*this, invoke(std::span<const Tensor>(&inputs, 1), true, false, training));
}

Tensor Layer::operator()(const std::vector<Tensor>& inputs, std::optional<bool> training) {
  return only_output(*this, invoke(inputs, false, false, training));
}

std::vector<Tensor> Layer::call_outputs(const std::vector<Tensor>& inputs, std::optional<bool> training) {
  return invoke(inputs, inputs.size() == 1, true, training);
}

std::vector<Tensor> Layer::call_multi(const std::vector<Tensor>& inputs, bool training) {
  return {inputs.size() == 1 ? call(inputs[0], training) : call(inputs, training)};
}

void Layer::build(const std::vector<Shape>& shapes) {
  // A layer that does not override this builds for its first input (Bidirectional's sequence
  // before its initial states): a single-input layer called with several inputs then fails in
  // call() with its weights made for the first, never built without them.
  if (!shapes.empty()) build(shapes[0]);
}

Tensor Layer::call(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != 1) fail(name(), "takes one input, got " + std::to_string(inputs.size()));
  return call(inputs[0], training);
}

void Layer::set_trainable(bool trainable) {
  std::lock_guard lock(mutex_);
  trainable_ = trainable;
  for (Layer* child : children_) child->set_trainable(trainable);
}

bool Layer::trainable_in_call() const {
  if (!trainable_) return false;
  return std::all_of(call_stack.begin(), call_stack.end(), [](const Layer* l) { return l->trainable(); });
}

std::vector<Tensor> Layer::invoke(std::span<const Tensor> inputs, bool single, bool multi, std::optional<bool> training) {
  if (inputs.empty()) fail(name(), "called with no inputs");
  for (const auto& t : inputs)
    if (!t.defined()) fail(name(), "called with an undefined tensor");
  // On Keras tensors (ef::train::Input) the call is recorded into the functional graph.
  if (detail::any_keras_tensor(inputs)) return detail::call_on_keras_tensors(*this, inputs, single, training);
  if (!call_stack.empty() && call_stack.back() != this) call_stack.back()->track(*this);
  if (call_stack.empty()) clear_losses();  // Keras: a new outermost call starts with no add_loss values
  bool is_training = training.value_or(!training_stack.empty() && training_stack.back());
  CallFrame frame(this, is_training);
  if (log_enabled(LogLevel::verbose) && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.is_symbolic(); }))
    log(LogLevel::verbose, "[ef.trace] " + NameScope::current_path() + ".call(inputs: " + describe(inputs) +
                               ") (symbolic" + (built_ ? "" : ", builds the layer") + ")");
  {
    std::lock_guard lock(mutex_);  // recursive: build_once locks it again
    if (!built_) {
      std::vector<Shape> shapes;
      for (const auto& t : inputs) shapes.push_back(t.shape());
      build_once(shapes, single, /*for_call=*/true);
    }
  }
  // The dtype policy: inputs cast, variables read in the compute dtype while call() runs.
  DType compute = dtype_policy_.compute_dtype();
  bool wide = dtype_policy_.is_mixed() && is_storage_float(compute) && computes_in_float32(*this);
  std::vector<Tensor> cast_inputs = autocast_inputs(inputs, wide ? DType::float32 : compute, casts_integer_inputs());
  std::optional<DType> autocast;
  if (dtype_policy_.is_mixed() && !wide) autocast = compute;
  std::vector<Tensor> outs;
  {
    detail::AutocastScope scope(autocast);
    if (multi) outs = call_multi(cast_inputs, is_training);
    else outs.push_back(single ? call(cast_inputs[0], is_training) : call(cast_inputs, is_training));
  }
  if (wide)
    for (auto& o : outs)
      if (o.defined() && o.dtype() == DType::float32) o = cast(o, compute);
  if (!outs.empty() && outs[0].defined()) {
    const Tensor& out = outs[0];
    std::lock_guard lock(mutex_);
    output_spec_ = out.spec();
    // Keras' _set_save_spec: the first call's input, batch dim dynamic, so that the layer
    // can be saved without an explicit signature.
    if (!save_spec_ && single && inputs[0].rank() >= 1) {
      std::vector<std::int64_t> dims = inputs[0].shape().dims();
      dims[0] = kDynamic;
      save_spec_ = TensorSpec{inputs[0].dtype(), Shape(std::move(dims)), {}};
    }
  }
  // Keras' mask propagation through layers that keep the input's steps.
  if (single && outs.size() == 1 && outs[0].defined() && supports_masking() && !outs[0].same_as(inputs[0]))
    if (Tensor m = mask_of(inputs[0]); m.defined() && !mask_of(outs[0]).defined()) set_mask(outs[0], m);
  add_activity_loss(outs);
  return outs;
}

void Layer::build_once(const std::vector<Shape>& shapes, bool single, bool for_call) {
  // Built once, also when two threads call it first at the same time; a build that throws
  // leaves no weights behind, so a retry starts clean.
  std::lock_guard lock(mutex_);
  if (built_) return;
  // Like TF's init_scope, build() runs with the trace hidden, so weights are made eagerly.
  // Inputs may be symbolic here; build sees their shape only.
  std::size_t weights_before = own_weights_.size();
  building_for_call_ = for_call;
  try {
    if (single) build(shapes[0]);
    else build(shapes);
  } catch (...) {
    building_for_call_ = false;
    own_weights_.resize(weights_before);
    throw;
  }
  building_for_call_ = false;
  built_ = true;
}

void Layer::build_for(const Shape& input_shape) { build_once({input_shape}, true, false); }

void Layer::build_for(const std::vector<Shape>& input_shapes) {
  if (input_shapes.empty()) fail(name(), "build_for: no input shapes");
  build_once(input_shapes, false, false);
}

std::optional<TensorSpec> Layer::save_spec() const {
  std::lock_guard lock(mutex_);
  return save_spec_;
}

namespace {
std::atomic<std::string (*)(const Layer&)> type_name_hook{nullptr};
}  // namespace

void set_layer_type_name_hook(std::string (*hook)(const Layer& layer)) { type_name_hook.store(hook); }

std::string Layer::type_name() const {
  if (auto hook = type_name_hook.load(); hook != nullptr)
    if (std::string name = hook(*this); !name.empty()) return name;
  return class_name(typeid(*this));
}

std::optional<TensorSpec> Layer::output_spec() const {
  std::lock_guard lock(mutex_);
  return output_spec_;
}

Variable Layer::add_weight(const std::string& weight_name, const Shape& shape, const Initializer& initializer,
                           bool trainable, DType dtype) {
  // Keras' add_weight(dtype=None): the policy's variable dtype (float32 is the default here).
  if (dtype == DType::float32 && is_floating(dtype_policy_.variable_dtype())) dtype = dtype_policy_.variable_dtype();
  std::string path = NameScope::current_path();
  std::string full = (path.empty() ? name() : path) + "/" + weight_name;
  if (!shape.is_static())
    fail(name(), "weight '" + weight_name + "' needs a fully known shape, got " + shape.str() +
                     " (a dim of the input that the weight depends on is dynamic)");
  ef::detail::charge_weight_budget(shape, dtype, full);  // a model being loaded (eagerflow/nn/layer_config.h)
  Tensor initial;
  {
    trace::EagerScope eager;  // initializers run eagerly even while tracing
    initial = initializer(shape, dtype);
  }
  if (initial.shape() != shape || initial.dtype() != dtype)
    fail(name(), "initializer for '" + weight_name + "' returned " + initial.spec().str() + ", expected " +
                     TensorSpec{dtype, shape, {}}.str());
  Variable v(initial, full, trainable);
  std::lock_guard lock(mutex_);
  own_weights_.push_back(v);
  return v;
}

void Layer::track_weight(const Variable& v) {
  if (!v.defined()) fail(name(), "track_weight: the variable is undefined");
  std::lock_guard lock(mutex_);
  for (const auto& w : own_weights_)
    if (w.same_as(v)) return;
  own_weights_.push_back(v);
}

void Layer::track(Layer& child) {
  if (&child == this) return;
  std::scoped_lock lock(mutex_, child.mutex_);
  ChildIndex& index = *child_index_;
  if (index.members.count(&child)) return;
  if (child.name_.empty()) {
    // A sub-layer without a name of its own is named among its siblings ("dense", "dense_1"):
    // weight paths then do not depend on how many layers the program made elsewhere. The
    // counter per base name only moves forward, so naming N layers costs O(N), not O(N^2).
    std::string base = snake_case(class_name(typeid(child)));
    std::uint64_t& next = index.next_suffix[base];
    std::string candidate = next == 0 ? base : base + "_" + std::to_string(next);
    while (index.by_name.count(candidate)) candidate = base + "_" + std::to_string(++next);
    ++next;
    child.name_ = candidate;
  }
  auto [named, fresh] = index.by_name.emplace(child.name_, &child);
  if (!fresh)
    fail(name(), "All layer names should be unique: two different sub-layers are named '" + child.name_ + "' (a " +
                     named->second->type_name() + " and a " + child.type_name() + "); their weights would share the "
                     "path '" + name() + "/" + child.name_ + "/...': give one of them another name");
  index.members.insert(&child);
  children_.push_back(&child);
  child.parents_.push_back(this);
}

Layer::~Layer() {
  std::lock_guard lock(mutex_);
  auto unlink = [this](std::vector<Layer*>& v) { v.erase(std::remove(v.begin(), v.end(), this), v.end()); };
  for (Layer* p : parents_) {
    unlink(p->children_);
    p->child_index_->members.erase(this);
    auto named = p->child_index_->by_name.find(name_);
    if (named != p->child_index_->by_name.end() && named->second == this) p->child_index_->by_name.erase(named);
  }
  for (Layer* c : children_) unlink(c->parents_);
}

void Layer::collect(std::vector<Variable>& out, bool frozen_parent, std::vector<bool>* trainable) const {
  std::lock_guard lock(mutex_);
  bool frozen = frozen_parent || !trainable_;
  for (const auto& w : own_weights_) {
    // A layer shared by two parents is collected once.
    if (std::any_of(out.begin(), out.end(), [&](const Variable& u) { return u.same_as(w); })) continue;
    out.push_back(w);
    if (trainable) trainable->push_back(!frozen && w.trainable());
  }
  for (const Layer* c : children_) c->collect(out, frozen, trainable);
}

std::vector<Variable> Layer::weights() const {
  std::vector<Variable> all;
  collect(all, false, nullptr);
  return all;
}

std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> all, out;
  std::vector<bool> trainable;
  collect(all, false, &trainable);
  for (std::size_t i = 0; i < all.size(); ++i)
    if (trainable[i]) out.push_back(all[i]);
  return out;
}

std::vector<Variable> Layer::non_trainable_weights() const {
  std::vector<Variable> all, out;
  std::vector<bool> trainable;
  collect(all, false, &trainable);
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!trainable[i]) out.push_back(all[i]);
  return out;
}

}  // namespace ef::nn
