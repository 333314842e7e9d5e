#include "eagerflow/train/functional.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"

namespace ef::train {
namespace {

std::string unique_input_name() {
  static std::mutex mutex;
  static int count = 0;
  std::lock_guard lock(mutex);
  int n = count++;
  return n == 0 ? "input_layer" : "input_layer_" + std::to_string(n);
}

// What a node is called in errors and in summary's "Connected to".
std::string node_label(const KerasNode& node) {
  switch (node.kind) {
    case KerasNode::Kind::input: return "Input '" + node.name + "'";
    case KerasNode::Kind::layer: return "layer '" + node.name + "'";
    case KerasNode::Kind::op: return "op '" + node.name + "'";
  }
  return node.name;
}

}  // namespace

Tensor Input(const Shape& shape, DType dtype, std::string name, std::optional<std::int64_t> batch_size) {
  for (std::int64_t d : shape.dims())
    if (d < 0 && d != kDynamic) fail("Input", "dims must be >= 0 or kDynamic, got " + shape.str());
  if (batch_size && *batch_size < 0) fail("Input", "batch_size must be >= 0");
  std::vector<std::int64_t> dims{batch_size.value_or(kDynamic)};
  for (std::int64_t d : shape.dims()) dims.push_back(d);
  auto node = std::make_shared<KerasNode>();
  node->kind = KerasNode::Kind::input;
  node->name = name.empty() ? unique_input_name() : std::move(name);
  node->outputs.push_back(TensorSpec{dtype, Shape(dims), {}});
  return keras_tensor(std::move(node), 0);
}

Functional::Functional(std::vector<Tensor> inputs, std::vector<Tensor> outputs, std::string name) : Model(std::move(name)) {
  init_functional(std::move(inputs), std::move(outputs));
}

Functional::Functional(const Tensor& input, const Tensor& output, std::string name) : Model(std::move(name)) {
  init_functional({input}, {output});
}

Functional::Functional(std::vector<Tensor> inputs, const std::map<std::string, Tensor>& outputs, std::string name)
    : Model(std::move(name)) {
  std::vector<Tensor> outs;
  std::vector<std::string> names;
  for (const auto& [k, v] : outputs) {
    names.push_back(k);
    outs.push_back(v);
  }
  init_functional(std::move(inputs), std::move(outs), std::move(names));
}

FunctionalGraph::FunctionalGraph(const std::string& model, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                                 std::vector<std::string> out_names) {
  if (inputs.empty()) fail(model, "a functional model needs at least one input");
  if (outputs.empty()) fail(model, "a functional model needs at least one output");
  std::map<const KerasNode*, int> input_index;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.is_keras_tensor())
      fail(model, "input " + std::to_string(i) + " is not a Keras tensor: make the model's inputs with ef::train::Input");
    const auto& node = keras_node_of(t);
    if (node->kind != KerasNode::Kind::input)
      fail(model, "input " + std::to_string(i) + " is the output of " + node_label(*node) +
                      ", not an Input: a model's inputs must come from ef::train::Input");
    if (!input_index.emplace(node.get(), static_cast<int>(i)).second)
      fail(model, "Input '" + node->name + "' is given twice among the inputs");
    input_nodes_.push_back(node);
    input_names_.push_back(node->name);
    input_specs_.push_back(node->outputs[0]);
  }
  std::set<std::string> unique_inputs(input_names_.begin(), input_names_.end());
  if (unique_inputs.size() != input_names_.size()) fail(model, "two inputs have the same name; give each Input its own name");

  // Depth-first from the outputs: nodes after the nodes they read (a topological order).
  std::map<const KerasNode*, int> first_slot;  // node -> its first output's slot
  for (std::size_t i = 0; i < input_nodes_.size(); ++i) first_slot[input_nodes_[i].get()] = static_cast<int>(i);
  num_slots_ = static_cast<int>(input_nodes_.size());
  std::set<const KerasNode*> on_path;
  std::set<const KerasNode*> used_inputs;
  // Iterative, so a graph thousands of layers deep cannot overflow the stack.
  struct Frame {
    std::shared_ptr<const KerasNode> node;
    std::size_t next = 0;
  };
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& t = outputs[o];
    if (!t.defined() || !t.is_keras_tensor())
      fail(model, "output " + std::to_string(o) + " is not a Keras tensor: compute the outputs by calling layers on the inputs");
    std::vector<Frame> stack{{keras_node_of(t), 0}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const KerasNode* node = f.node.get();
      if (f.next == 0 && first_slot.count(node)) {
        if (node->kind == KerasNode::Kind::input) used_inputs.insert(node);
        stack.pop_back();
        continue;
      }
      if (f.next == 0) {
        if (node->kind == KerasNode::Kind::input)
          fail(model, "output " + std::to_string(o) + " depends on Input '" + node->name +
                          "', which is not among the model's inputs (graph disconnected)");
        on_path.insert(node);
      }
      if (f.next < node->inputs.size()) {
        const Tensor& in = node->inputs[f.next++];
        if (in.is_keras_tensor()) {
          auto parent = keras_node_of(in);
          if (on_path.count(parent.get())) fail(model, "the graph has a cycle through " + node_label(*node));
          stack.push_back({parent, 0});
        }
        continue;
      }
      on_path.erase(node);
      Step step;
      step.node = f.node;
      for (const auto& in : node->inputs)
        step.args.push_back(in.is_keras_tensor() ? first_slot.at(keras_node_of(in).get()) + keras_output_index(in) : -1);
      step.first_output = num_slots_;
      first_slot[node] = num_slots_;
      num_slots_ += static_cast<int>(node->outputs.size());
      steps_.push_back(std::move(step));
      stack.pop_back();
    }
    output_slots_.push_back(first_slot.at(keras_node_of(t).get()) + keras_output_index(t));
  }
  for (const auto& in : input_nodes_)
    if (!used_inputs.count(in.get()))
      fail(model, "Input '" + in->name + "' is not used by any output; remove it from the inputs or use it");

  std::set<const nn::Layer*> seen;
  for (const auto& step : steps_)
    if (step.node->kind == KerasNode::Kind::layer && seen.insert(step.node->layer.get()).second) layers_.push_back(step.node->layer);

  // Output names: as given, else the name of the layer (or op, or Input) that makes each one,
  // numbered when a node gives several outputs or names repeat.
  if (out_names.empty()) {
    std::map<std::string, int> seen;
    for (const auto& t : outputs) {
      const auto& node = keras_node_of(t);
      std::string base = node->name;
      if (node->outputs.size() > 1) base += "_" + std::to_string(keras_output_index(t));
      int n = seen[base]++;
      out_names.push_back(n == 0 ? base : base + "_" + std::to_string(n));
    }
  }
  output_names_ = std::move(out_names);
}

Tensor FunctionalGraph::conform_input(const std::string& model, std::size_t i, const Tensor& x) const {
  const TensorSpec& spec = input_specs_[i];
  Tensor v = x;
  // Keras adjusts a rank off by a trailing axis of 1 ([B] data for an Input of shape (1,)).
  if (v.rank() == spec.shape.rank() + 1 && v.rank() >= 1 && v.shape()[v.rank() - 1] == 1) {
    v = squeeze(v, {v.rank() - 1});
  } else if (v.rank() + 1 == spec.shape.rank() && spec.shape[spec.shape.rank() - 1] == 1) {
    v = expand_dims(v, -1);
  }
  bool fits = v.rank() == spec.shape.rank();
  for (int a = 0; fits && a < v.rank(); ++a)
    fits = spec.shape[a] == kDynamic || v.shape()[a] == kDynamic || spec.shape[a] == v.shape()[a];
  if (!fits)
    fail(model, "input '" + input_names_[i] + "' expects " + spec.str() + " (batch first), got " + x.spec().str());
  if (v.dtype() != spec.dtype) v = cast(v, spec.dtype);  // Keras converts inputs to the Input's dtype
  return v;
}

std::vector<Tensor> FunctionalGraph::run(const std::string& model, const std::vector<Tensor>& inputs) const {
  if (inputs.size() != input_nodes_.size())
    fail(model, "expects " + std::to_string(input_nodes_.size()) + " inputs, got " + std::to_string(inputs.size()));
  std::vector<Tensor> slots(static_cast<std::size_t>(num_slots_));
  for (std::size_t i = 0; i < inputs.size(); ++i) slots[i] = conform_input(model, i, inputs[i]);
  std::vector<Tensor> args;
  for (const Step& step : steps_) {
    const KerasNode& node = *step.node;
    args.clear();
    for (std::size_t j = 0; j < step.args.size(); ++j)
      args.push_back(step.args[j] < 0 ? node.inputs[j] : slots[static_cast<std::size_t>(step.args[j])]);
    std::vector<Tensor> outs;
    if (node.kind == KerasNode::Kind::op) outs = dispatch(*node.op, args);
    else outs = node.layer->call_outputs(args, node.training);
    if (outs.size() != node.outputs.size())
      fail(model, node_label(node) + " gave " + std::to_string(outs.size()) + " outputs, " +
                       std::to_string(node.outputs.size()) + " when the model was built");
    for (std::size_t k = 0; k < outs.size(); ++k) slots[static_cast<std::size_t>(step.first_output) + k] = std::move(outs[k]);
  }
  std::vector<Tensor> result;
  for (int s : output_slots_) result.push_back(slots[static_cast<std::size_t>(s)]);
  return result;
}

void FunctionalGraph::summary(std::ostream& os, const Model& m) const {
  auto count = [](const std::vector<Variable>& vs) {
    std::int64_t n = 0;
    for (const auto& v : vs) n += v.shape().num_elements();
    return n;
  };
  auto with_commas = [](std::int64_t v) {
    std::string s = std::to_string(v);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
    return s;
  };
  auto shape_text = [](const TensorSpec& spec) {
    std::string s = "(";
    for (int a = 0; a < spec.shape.rank(); ++a)
      s += (a ? ", " : "") + (spec.shape[a] == kDynamic ? std::string("None") : std::to_string(spec.shape[a]));
    return s + (spec.shape.rank() == 1 ? ",)" : ")");
  };
  // Keras numbers each layer's calls ("dense[1][0]": its second call, first output).
  std::map<const KerasNode*, std::pair<std::string, int>> call_index;
  std::map<std::string, int> calls;
  for (const auto& in : input_nodes_) call_index[in.get()] = {in->name, 0};
  for (const auto& step : steps_) call_index[step.node.get()] = {step.node->name, calls[step.node->name]++};
  const int w_name = 32, w_shape = 22, w_params = 10;
  std::string rule(w_name + w_shape + w_params + 30, '_'), double_rule(rule.size(), '=');
  os << "Model: \"" << m.name() << "\"\n" << rule << "\n";
  os << std::left << std::setw(w_name) << " Layer (type)" << std::setw(w_shape) << "Output Shape" << std::setw(w_params)
     << "Param #" << "Connected to\n" << double_rule << "\n";
  for (const auto& in : input_nodes_)
    os << std::left << std::setw(w_name) << (" " + in->name + " (InputLayer)") << std::setw(w_shape) << shape_text(in->outputs[0])
       << std::setw(w_params) << "0" << "-\n";
  std::set<const nn::Layer*> counted;
  for (const auto& step : steps_) {
    const KerasNode& node = *step.node;
    std::string type = node.kind == KerasNode::Kind::layer ? node.layer->type_name() : "Operation";
    if (const auto* nested = dynamic_cast<const Model*>(node.layer.get()); nested && nested->functional_graph())
      type = "Functional";
    std::int64_t params = 0;
    if (node.kind == KerasNode::Kind::layer && counted.insert(node.layer.get()).second) params = count(node.layer->weights());
    std::string connected;
    for (const auto& in : node.inputs) {
      if (!in.is_keras_tensor()) continue;
      const auto& [parent, call] = call_index.at(keras_node_of(in).get());
      connected += (connected.empty() ? "" : ", ") + parent + "[" + std::to_string(call) + "][" +
                   std::to_string(keras_output_index(in)) + "]";
    }
    std::string shapes;
    for (const auto& spec : node.outputs) shapes += (shapes.empty() ? "" : ", ") + shape_text(spec);
    os << std::left << std::setw(w_name) << (" " + node.name + " (" + type + ")") << std::setw(w_shape) << shapes
       << std::setw(w_params) << with_commas(params) << connected << "\n";
  }
  std::int64_t trainable = count(m.trainable_weights()), frozen = count(m.non_trainable_weights());
  os << double_rule << "\nTotal params: " << with_commas(trainable + frozen) << "\nTrainable params: " << with_commas(trainable)
     << "\nNon-trainable params: " << with_commas(frozen) << "\n" << rule << "\n";
}

}  // namespace ef::train
