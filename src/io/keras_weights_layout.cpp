#include "io/keras_weights_layout.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <set>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/optim/keras_optimizers.h"
#include "eagerflow/train/functional.h"
#include "eagerflow/train/model.h"

namespace ef::io::keras {
namespace {

// ---------------------------------------------------------------- the mapping, one row per kind
// A layer kind whose Keras structure differs from eagerflow's. `vars_group`: Keras keeps the
// layer's own variables in this sub-object (its RNN cell) rather than in the layer's group.
// `children`: Keras' attribute name of each sub-layer, matched to eagerflow's sub-layer by its
// position ("#0") or by the last part of its name. Variables keep eagerflow's creation order,
// which is Keras' for every kind listed (checked against files Keras writes, see
// python/tests/interop/test_keras_weights_interop.py).
// `shared_child_var`: Keras' layer also tracks this variable of its first sub-layer as its own,
// first (SpectralNormalization's `self.kernel = self.layer.kernel`), so the file holds it twice.
struct Rule {
  const char* keras_class;
  const char* vars_group;
  const char* vars_group_name;
  std::vector<std::pair<const char*, const char*>> children;
  const char* shared_child_var = nullptr;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"LSTM", "cell", "lstm_cell", {}},
      {"GRU", "cell", "gru_cell", {}},
      {"SimpleRNN", "cell", "simple_rnn_cell", {}},
      {"ConvLSTM1D", "cell", "conv_lstm_cell", {}},
      {"ConvLSTM2D", "cell", "conv_lstm_cell", {}},
      {"ConvLSTM3D", "cell", "conv_lstm_cell", {}},
      {"Bidirectional", nullptr, nullptr, {{"forward_layer", "#0"}, {"backward_layer", "#1"}}},
      {"TimeDistributed", nullptr, nullptr, {{"layer", "#0"}}},
      {"MultiHeadAttention", nullptr, nullptr,
       {{"query_dense", "query"}, {"key_dense", "key"}, {"value_dense", "value"}, {"output_dense", "attention_output"}}},
      {"SpectralNormalization", nullptr, nullptr, {{"layer", "#0"}}, "kernel"},
  };
  return table;
}

const Rule* rule_for(const std::string& keras_class) {
  for (const Rule& r : rules())
    if (keras_class == r.keras_class) return &r;
  return nullptr;
}

std::mutex& namer_mutex() {
  static std::mutex m;
  return m;
}
KerasChildNamesHook& child_namer() {
  static KerasChildNamesHook namer;
  return namer;
}

std::string last_part(const std::string& name) {
  auto pos = name.rfind('/');
  return pos == std::string::npos ? name : name.substr(pos + 1);
}

const train::Model* as_model(const nn::Layer& l) { return dynamic_cast<const train::Model*>(&l); }

// eagerflow classes whose Keras class has another name (Keras exports both; its files name
// containers by the class's real name).
const char* keras_alias(const std::string& t) {
  static const std::pair<const char*, const char*> aliases[] = {{"GroupQueryAttention", "GroupedQueryAttention"}};
  for (const auto& [ours, theirs] : aliases)
    if (t == ours) return theirs;
  return nullptr;
}

// Keras' class of a layer: a functional model is a "Functional" whatever its Python class says.
std::string keras_class(const nn::Layer& l) {
  std::string t = l.type_name();
  if (const char* alias = keras_alias(t)) return alias;
  const train::Model* m = as_model(l);
  if (m && m->functional_graph() && (t == "Model" || t == "Functional")) return "Functional";
  return t;
}

bool is_container(const nn::Layer& l) {
  const train::Model* m = as_model(l);
  return m && (m->functional_graph() || dynamic_cast<const train::Sequential*>(&l));
}

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "/" + b; }

std::string unique_name(const std::string& name, std::map<std::string, int>& used) {
  auto it = used.find(name);
  if (it == used.end()) {
    used[name] = 0;
    return name;
  }
  return name + "_" + std::to_string(++it->second);
}

// The layer's own variables (not its sub-layers'): trainable ones first, then the others, each
// in creation order, as Keras' Layer.save_own_variables lists them.
std::vector<Variable> own_variables(const nn::Layer& l) {
  std::set<const void*> of_children;
  for (const nn::Layer* c : l.layers())
    if (c)
      for (const Variable& v : c->weights()) of_children.insert(v.state_ptr().get());
  std::vector<Variable> trainable, other;
  for (const Variable& v : l.weights()) {
    if (of_children.count(v.state_ptr().get())) continue;
    (v.trainable() ? trainable : other).push_back(v);
  }
  trainable.insert(trainable.end(), other.begin(), other.end());
  return trainable;
}

void describe(const nn::Layer& l, const std::string& path, std::vector<Entry>& out, std::set<const nn::Layer*>& seen,
              int depth);

void describe_container(const std::vector<const nn::Layer*>& items, const std::string& path, std::vector<Entry>& out,
                        std::set<const nn::Layer*>& seen, int depth) {
  std::map<std::string, int> used;
  for (const nn::Layer* c : items) describe(*c, join(path, unique_name(snake_case(keras_class(*c)), used)), out, seen, depth + 1);
}

void describe(const nn::Layer& l, const std::string& path, std::vector<Entry>& out, std::set<const nn::Layer*>& seen,
              int depth) {
  if (depth > 64) fail(l.name(), "layers nested more than 64 deep: cannot be saved in Keras' layout");
  if (!seen.insert(&l).second) return;  // a shared layer is saved once, at its first path (Keras' visited set)
  std::string cls = keras_class(l);
  const Rule* rule = rule_for(cls);
  std::vector<Variable> own = own_variables(l);
  std::string what = l.name() + " (" + cls + ")";
  // A layer that keeps a Keras sub-layer's variables itself ("query/kernel" in C++'s
  // MultiHeadAttention): they go to that sub-layer's group.
  std::vector<Entry> parts;
  if (rule) {
    std::vector<Variable> rest;
    for (const Variable& v : own) {
      std::string n = v.name();
      auto slash = n.rfind('/');
      std::string parent = slash == std::string::npos ? "" : last_part(n.substr(0, slash));
      bool placed = false;
      for (const auto& [attr, which] : rule->children)
        if (which[0] != '#' && parent == which) {
          auto it = std::find_if(parts.begin(), parts.end(), [&](const Entry& e) { return e.name == parent; });
          if (it == parts.end()) parts.push_back({join(path, attr), parent, what, {}}), it = parts.end() - 1;
          it->vars.push_back(v);
          placed = true;
        }
      if (!placed) rest.push_back(v);
    }
    own = std::move(rest);
    // In the rule's order, whatever order the variables were made in.
    std::vector<Entry> ordered;
    for (const auto& [attr, which] : rule->children)
      for (auto& e : parts)
        if (e.name == which) ordered.push_back(std::move(e));
    parts = std::move(ordered);
  }
  if (rule && rule->shared_child_var && !l.layers().empty() && l.layers()[0]) {
    for (const Variable& v : l.layers()[0]->weights())
      if (last_part(v.name()) == rule->shared_child_var) {
        own.insert(own.begin(), v);
        break;
      }
  }
  if (rule && rule->vars_group) {
    out.push_back({path, l.name(), what, {}});
    out.push_back({join(path, rule->vars_group), rule->vars_group_name, what, std::move(own)});
  } else {
    out.push_back({path, l.name(), what, std::move(own)});
  }

  for (auto& e : parts) out.push_back(std::move(e));

  std::vector<const nn::Layer*> children;
  for (const nn::Layer* c : l.layers())
    if (c) children.push_back(c);

  if (is_container(l)) {
    const train::Model& m = *as_model(l);
    std::vector<const nn::Layer*> items;
    if (const train::FunctionalGraph* g = m.functional_graph()) {
      // Keras' Functional.layers starts with its InputLayers (no variables, named groups).
      std::map<std::string, int> used;
      for (const auto& n : g->input_names()) out.push_back({join(join(path, "layers"), unique_name("input_layer", used)), n, n, {}});
      for (const auto& c : g->layers()) items.push_back(c.get());
      std::map<std::string, int> used_all = used;
      for (const nn::Layer* c : items)
        describe(*c, join(join(path, "layers"), unique_name(snake_case(keras_class(*c)), used_all)), out, seen, depth + 1);
    } else {
      for (const auto& c : dynamic_cast<const train::Sequential&>(l).stack()) items.push_back(c.get());
      describe_container(items, join(path, "layers"), out, seen, depth);
    }
    return;
  }
  if (rule) {
    std::set<const nn::Layer*> matched;
    for (const auto& [attr, which] : rule->children) {
      const nn::Layer* found = nullptr;
      std::string w = which;
      if (w.size() > 1 && w[0] == '#') {
        std::size_t i = std::stoul(w.substr(1));
        if (i < children.size()) found = children[i];
      } else {
        for (const nn::Layer* c : children)
          if (last_part(c->name()) == w) found = c;
      }
      if (!found) continue;  // not built with this part (a layer without bias, say)
      matched.insert(found);
      describe(*found, join(path, attr), out, seen, depth + 1);
    }
    for (const nn::Layer* c : children)
      if (!matched.count(c) && !c->weights().empty())
        fail(l.name(), "sub-layer '" + c->name() + "' has no place in Keras' layout of " + cls);
    return;
  }
  std::optional<std::vector<KerasChild>> named;
  {
    KerasChildNamesHook namer;
    {
      std::lock_guard<std::mutex> g(namer_mutex());
      namer = child_namer();
    }
    if (namer) named = namer(l);
  }
  if (named) {
    std::map<std::string, std::map<std::string, int>> used;  // per list attribute
    for (const KerasChild& c : *named) {
      if (!c.layer) continue;
      std::string p = join(path, c.attribute);
      if (c.in_list) p = join(p, unique_name(snake_case(keras_class(*c.layer)), used[c.attribute]));
      describe(*c.layer, p, out, seen, depth + 1);
    }
    return;
  }
  // A C++ layer of the user's: its sub-layers by their own names.
  for (const nn::Layer* c : children) describe(*c, join(path, last_part(c->name())), out, seen, depth + 1);
}

}  // namespace

std::string snake_case(const std::string& class_name) {
  std::string s;
  for (char c : class_name)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') s += c;
  // (.)([A-Z][a-z]+) -> \1_\2, then ([a-z])([A-Z]) -> \1_\2, as Keras' two regular expressions.
  std::string a;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(s[i])) && i + 1 < s.size() &&
        std::islower(static_cast<unsigned char>(s[i + 1])))
      a += '_';
    a += s[i];
  }
  std::string b;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(a[i])) && std::islower(static_cast<unsigned char>(a[i - 1])))
      b += '_';
    b += static_cast<char>(std::tolower(static_cast<unsigned char>(a[i])));
  }
  return b;
}

std::vector<Entry> model_entries(const nn::Layer& model) {
  std::vector<Entry> out;
  std::set<const nn::Layer*> seen;
  describe(model, "", out, seen, 0);
  // Every weight must have its place: one left out would silently not be saved or loaded.
  std::set<const void*> placed;
  for (const Entry& e : out)
    for (const Variable& v : e.vars) placed.insert(v.state_ptr().get());
  std::string missing;
  for (const Variable& v : model.weights())
    if (!placed.count(v.state_ptr().get())) missing += (missing.empty() ? "'" : ", '") + v.name() + "'";
  if (!missing.empty())
    fail(ErrorKind(ErrorCode::unimplemented), model.name(),
         "these weights have no place in Keras' weights layout (a layer kind eagerflow cannot map yet): " + missing);
  return out;
}

Entry optimizer_entry(const optim::Optimizer& opt, const std::vector<Variable>& trainable) {
  std::string cls = optim::keras_class_name(opt);
  Entry e{"optimizer", snake_case(cls.empty() ? opt.name() : cls), opt.name() + " (optimizer)", {}};
  std::vector<Variable> all = opt.variables();
  std::set<const void*> placed;
  if (!all.empty()) {
    e.vars.push_back(all[0]);  // iterations
    placed.insert(all[0].state_ptr().get());
  } else {  // never stepped: Keras' unbuilt optimizer still saves its step counter
    e.vars.push_back(Variable(zeros({}, DType::int64), opt.name() + "/iterations", false));
  }
  if (!opt.learning_rate_setting().schedule() && opt.learning_rate_variable().defined()) {
    e.vars.push_back(opt.learning_rate_variable());
    placed.insert(opt.learning_rate_variable().state_ptr().get());
  }
  // Keras' blocks: add_optimizer_variables(vars, [names...]) interleaves its names per variable;
  // separate calls follow each other. The moving averages (use_ema) come first, from the base build.
  // A block is a list of slot names per variable ("*": every slot the optimizer keeps for it).
  std::vector<std::vector<std::string>> blocks;
  if (opt.clip_options().use_ema) blocks.push_back({"average"});
  std::vector<std::string> names;
  if (!trainable.empty())
    for (const auto& s : opt.slot_specs(trainable[0])) names.push_back(s.name);
  if (cls == "RMSprop") {
    for (const auto& n : names) blocks.push_back({n});
  } else {
    blocks.push_back({"*"});
  }
  // An optimizer that has not stepped yet has no slots: Keras' unbuilt optimizer saves only its
  // counters, and so do we (loading such a file leaves a built optimizer's slots alone).
  bool built = trainable.empty() || names.empty() || !opt.slots_of(trainable[0]).empty();
  if (!built) blocks.clear();
  for (const auto& block : blocks)
    for (const Variable& v : trainable) {
      auto slots = opt.slots_of(v);
      std::vector<std::string> wanted = block;
      if (block == std::vector<std::string>{"*"}) {
        wanted.clear();
        for (const auto& s : opt.slot_specs(v)) wanted.push_back(s.name);
        // Keras' Adafactor keeps two placeholder int32 scalars (r, c) for a variable of rank < 2.
        if (cls == "Adafactor" && v.shape().rank() < 2)
          for (const char* dummy : {"/r", "/c"}) e.vars.push_back(Variable(zeros({}, DType::int32), v.name() + dummy, false));
      }
      for (const auto& n : wanted) {
        auto it = slots.find(n);
        if (it == slots.end())
          fail(opt.name(), "has no slot '" + n + "' for '" + v.name() + "' (build the optimizer first)");
        e.vars.push_back(it->second);
        placed.insert(it->second.state_ptr().get());
      }
    }
  for (const Variable& v : all)  // Nadam's u_product comes after the slots in Keras
    if (!placed.count(v.state_ptr().get())) e.vars.push_back(v);
  return e;
}

}  // namespace ef::io::keras

namespace ef {
void set_keras_child_names_hook(KerasChildNamesHook hook) {
  std::lock_guard<std::mutex> g(io::keras::namer_mutex());
  io::keras::child_namer() = std::move(hook);
}
}  // namespace ef
