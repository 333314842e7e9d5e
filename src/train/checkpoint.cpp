#include "eagerflow/train/checkpoint.h"

#include <cxxabi.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <typeinfo>
#include <unordered_map>


#include "eagerflow/core/error.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/ops/random.h"
#include "eagerflow/train/distribution.h"
#include "eagerflow/train/model.h"
#include "io/fnv1a.h"
#include "train/keras_weight_files.h"

namespace ef::train {
namespace {

// One value to write into one variable (or the generator).
struct Assignment {
  Variable target;
  Tensor value;
};

std::string spec_text(DType d, const Shape& s) { return TensorSpec{d, s, {}}.str(); }

// The file's tensors by name: TensorFile::find scans, which would make matching N keys O(N^2).
class Index {
 public:
  explicit Index(const io::TensorFile& file) {
    for (const auto& t : file.tensors) by_name_.emplace(t.name, &t.value);
  }
  const Tensor* find(const std::string& key) const {
    auto it = by_name_.find(key);
    return it == by_name_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<std::string, const Tensor*> by_name_;
};

// A class's name without its namespaces ("Adam", "CosineDecay", or a user's class).
std::string class_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  if (auto pos = name.rfind("::"); pos != std::string::npos) name = name.substr(pos + 2);
  return name;
}

// The optimizer's class ("SGD", "Adam", "AdamW", or a user's), as checkpoints record it.
std::string optimizer_type(const optim::Optimizer& opt) { return class_name(typeid(opt)); }

// The shortest text that reads back as exactly `v`.
std::string exact(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// A learning-rate schedule as checkpoints record it: its kind and every setting, exactly, so
// that two schedules compare equal only when they give the same rates. A user's schedule is
// known by its class name alone.
std::string schedule_text(const optim::LearningRateSchedule& s) {
  if (const auto* e = dynamic_cast<const optim::ExponentialDecay*>(&s))
    return "ExponentialDecay(initial=" + exact(e->initial()) + ", decay_steps=" + exact(e->decay_steps()) +
           ", decay_rate=" + exact(e->decay_rate()) + ", staircase=" + (e->staircase() ? "true" : "false") + ")";
  if (const auto* c = dynamic_cast<const optim::CosineDecay*>(&s))
    return "CosineDecay(initial=" + exact(c->initial()) + ", decay_steps=" + exact(c->decay_steps()) +
           ", alpha=" + exact(c->alpha()) +
           (c->warmup_target() ? ", warmup_target=" + exact(*c->warmup_target()) + ", warmup_steps=" + exact(c->warmup_steps())
                               : std::string()) + ")";
  if (const auto* p = dynamic_cast<const optim::PiecewiseConstantDecay*>(&s)) {
    std::string text = "PiecewiseConstantDecay(boundaries=[";
    for (double b : p->boundaries()) text += exact(b) + ",";
    text += "], values=[";
    for (double v : p->values()) text += exact(v) + ",";
    return text + "])";
  }
  if (const auto* p = dynamic_cast<const optim::PolynomialDecay*>(&s))
    return "PolynomialDecay(initial=" + exact(p->initial()) + ", decay_steps=" + exact(p->decay_steps()) + ", end=" +
           exact(p->end_learning_rate()) + ", power=" + exact(p->power()) + ", cycle=" + (p->cycle() ? "true" : "false") + ")";
  if (const auto* p = dynamic_cast<const optim::InverseTimeDecay*>(&s))
    return "InverseTimeDecay(initial=" + exact(p->initial()) + ", decay_steps=" + exact(p->decay_steps()) + ", decay_rate=" +
           exact(p->decay_rate()) + ", staircase=" + (p->staircase() ? "true" : "false") + ")";
  if (const auto* p = dynamic_cast<const optim::CosineDecayRestarts*>(&s))
    return "CosineDecayRestarts(initial=" + exact(p->initial()) + ", first_decay_steps=" + exact(p->first_decay_steps()) +
           ", t_mul=" + exact(p->t_mul()) + ", m_mul=" + exact(p->m_mul()) + ", alpha=" + exact(p->alpha()) + ")";
  return class_name(typeid(s)) + "()";
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

// Matches `file` against `wanted` (key -> variable); returns the assignments, and the
// mismatches as lines for one error.
void match(const io::TensorFile& file, const Index& index, const std::vector<std::pair<std::string, Variable>>& wanted,
           const std::set<std::string>& also_known, std::vector<Assignment>& out, std::vector<std::string>& problems) {
  std::set<std::string> used;
  for (const auto& [key, var] : wanted) {
    const Tensor* t = index.find(key);
    if (!t) {
      problems.push_back("missing in the file: '" + key + "' " + spec_text(var.dtype(), var.shape()));
      continue;
    }
    used.insert(key);
    if (t->dtype() != var.dtype() || t->shape() != var.shape()) {
      problems.push_back("'" + key + "': the file has " + t->spec().str() + ", the variable is " +
                         spec_text(var.dtype(), var.shape()));
      continue;
    }
    out.push_back({var, *t});
  }
  for (const auto& t : file.tensors)
    if (!used.count(t.name) && !also_known.count(t.name)) problems.push_back("not in the model: '" + t.name + "' " + t.value.spec().str());
}

[[noreturn]] void report(const std::string& what, const std::vector<std::string>& problems) {
  std::string msg = what + ": " + std::to_string(problems.size()) + " mismatch" + (problems.size() == 1 ? "" : "es") +
                    " (nothing was loaded; skip_mismatch loads what fits):";
  for (const auto& p : problems) msg += "\n  " + p;
  throw Error(msg);
}

Tensor u64_scalar(std::uint64_t v) { return scalar(static_cast<std::int64_t>(v)); }

// FNV-1a over the metadata and every tensor's name, dtype, shape and bytes (by name): a file
// damaged after it was written (a flipped byte in the data, which the safetensors format
// cannot notice) is an error, not silently different weights. Any one changed byte changes it.
// Files written before the standard basis (io/fnv1a.h) carry one made from kLegacyFnvBasis.
std::string content_checksum(const std::vector<io::NamedTensor>& tensors, const std::map<std::string, std::string>& metadata,
                             std::uint64_t basis = io::kFnvBasis) {
  std::uint64_t h = basis;
  auto add = [&h](const void* p, std::size_t n) { h = io::fnv1a(p, n, h); };
  auto add_text = [&](const std::string& t) {
    std::uint64_t n = t.size();
    add(&n, sizeof n);
    add(t.data(), t.size());
  };
  for (const auto& [k, v] : metadata) {
    if (k == "checksum") continue;
    add_text(k);
    add_text(v);
  }
  std::vector<const io::NamedTensor*> sorted;
  for (const auto& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (const io::NamedTensor* t : sorted) {
    add_text(t->name);
    add_text(std::string(name_of(t->value.dtype())));
    for (int d = 0; d < t->value.rank(); ++d) {
      std::int64_t dim = t->value.shape()[d];
      add(&dim, sizeof dim);
    }
    std::size_t bytes = static_cast<std::size_t>(t->value.num_elements()) * size_of(t->value.dtype());
    if (bytes) add(t->value.raw_data(), bytes);
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

namespace {
void add_seed_generators(const std::string& key, const nn::Layer& layer, std::map<std::string, int>& seen,
                         std::vector<std::pair<std::string, const random::SeedGenerator*>>& out) {
  if (const random::SeedGenerator* g = layer.seed_generator()) {
    int n = ++seen[key];
    out.emplace_back(n == 1 ? key : key + "#" + std::to_string(n), g);
  }
  for (const nn::Layer* child : layer.layers())
    if (child) add_seed_generators(key.empty() ? child->name() : key + "/" + child->name(), *child, seen, out);
}
}  // namespace

std::vector<std::pair<std::string, const random::SeedGenerator*>> seed_generators_by_key(const nn::Layer& layer) {
  std::vector<std::pair<std::string, const random::SeedGenerator*>> out;
  std::map<std::string, int> seen;
  add_seed_generators("", layer, seen, out);
  return out;
}

std::vector<std::pair<std::string, Variable>> weights_by_key(const nn::Layer& layer) {
  std::vector<std::pair<std::string, Variable>> out;
  std::string prefix = layer.name() + "/";
  std::set<std::string> seen;
  for (const Variable& v : layer.weights()) {
    std::string key = v.name().rfind(prefix, 0) == 0 ? v.name().substr(prefix.size()) : v.name();
    if (!seen.insert(key).second) fail(layer.name(), "two weights share the path '" + key + "'");
    out.emplace_back(std::move(key), v);
  }
  return out;
}

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
// Keras' HDF5 names: ".weights.h5" is Keras 3's layout, other ".h5" / ".hdf5" names Keras 2's.
bool keras3_name(const std::string& p) { return ends_with(p, ".weights.h5"); }
bool legacy_name(const std::string& p) { return !keras3_name(p) && (ends_with(p, ".h5") || ends_with(p, ".hdf5")); }
}  // namespace

void Model::save_weights(const std::string& path) const {
  if (legacy_name(path))  // Keras 3 writes no legacy weights files either
    fail(ErrorKind(ErrorCode::invalid_argument, PythonBuiltin::value_error), name(),
         "save_weights: the filename must end in `.weights.h5` for an HDF5 file. Received: filepath=" + path);
  if (!train::is_file_writer()) return;  // rank 0 of a data-parallel job writes (eagerflow/train/distribution.h)
  if (keras3_name(path)) {
    if (weights().empty())
      fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error), name(),
           "You are saving a model that has not yet been built. Try building the model first by calling it on some "
           "data or by using `build()`.");
    detail::save_keras_weights_file(*this, path);
    return;
  }
  std::vector<io::NamedTensor> tensors;
  for (const auto& [key, var] : weights_by_key(*this)) tensors.push_back({key, var.value()});
  io::save_safetensors(path, tensors, {{"format", "eagerflow-weights"}, {"version", "1"}});
}

void Model::load_weights(const std::string& path, bool skip_mismatch) {
  auto wanted = weights_by_key(*this);
  if (wanted.empty())
    fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error), name(),
         "has no weights yet: call the model once (or build it) before load_weights('" + path + "')");
  if (keras3_name(path)) {
    detail::load_keras_weights_file(*this, path, skip_mismatch);
    return;
  }
  if (legacy_name(path)) {
    detail::load_legacy_weights_file(*this, path);
    return;
  }
  io::TensorFile file = io::load_safetensors(path);
  std::vector<Assignment> assignments;
  std::vector<std::string> problems;
  match(file, Index(file), wanted, {}, assignments, problems);
  if (!problems.empty() && !skip_mismatch) report(name() + ".load_weights('" + path + "')", problems);
  for (auto& a : assignments) a.target.assign(a.value);
}

std::vector<Tensor> layer_weights(const nn::Layer& layer) {
  std::vector<Tensor> out;
  for (const Variable& v : layer.weights()) out.push_back(v.value());
  return out;
}

void set_layer_weights(nn::Layer& layer, const std::vector<Tensor>& values) {
  std::vector<Variable> vars = layer.weights();
  if (values.size() != vars.size())
    fail(layer.name(), "set_weights got a list of " + std::to_string(values.size()) + " values, but the layer has " +
                           std::to_string(vars.size()) + " weights (nothing was assigned)");
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const Tensor& t = values[i];
    std::string which = "weight " + std::to_string(i) + " ('" + vars[i].name() + "', " + spec_text(vars[i].dtype(), vars[i].shape()) + ")";
    if (!t.defined()) problems.push_back(which + ": the value is undefined");
    else if (t.is_symbolic() || t.is_keras_tensor()) problems.push_back(which + ": the value is a placeholder, not data");
    else if (t.shape() != vars[i].shape()) problems.push_back(which + ": the value has shape " + t.shape().str());
    else if (t.dtype() != vars[i].dtype()) problems.push_back(which + ": the value is " + std::string(name_of(t.dtype())));
  }
  if (!problems.empty()) {
    std::string msg = layer.name() + ".set_weights: " + std::to_string(problems.size()) + " mismatch" +
                      (problems.size() == 1 ? "" : "es") + " (nothing was assigned):";
    for (const auto& p : problems) msg += "\n  " + p;
    throw Error(msg);
  }
  for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign(values[i]);
}

std::vector<Tensor> Model::get_weights() const { return layer_weights(*this); }
void Model::set_weights(const std::vector<Tensor>& values) { set_layer_weights(*this, values); }

void Checkpoint::check_name(const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos || name == "rng")
    fail("Checkpoint", "object names must be non-empty, without '/', and not 'rng': got '" + name + "'");
  for (const auto& e : entries_)
    if (e.name == name) fail("Checkpoint", "the name '" + name + "' is tracked twice");
}

Checkpoint& Checkpoint::track(const std::string& name, nn::Layer& layer) {
  check_name(name);
  entries_.push_back({name, &layer, nullptr, {}});
  return *this;
}
Checkpoint& Checkpoint::track(const std::string& name, optim::Optimizer& optimizer) {
  check_name(name);
  entries_.push_back({name, nullptr, &optimizer, {}});
  return *this;
}
Checkpoint& Checkpoint::track(const std::string& name, const Variable& variable) {
  check_name(name);
  if (!variable.defined()) fail("Checkpoint", "variable '" + name + "' is undefined");
  entries_.push_back({name, nullptr, nullptr, variable});
  return *this;
}
Checkpoint& Checkpoint::track_random_state(bool on) {
  random_state_ = on;
  return *this;
}

namespace {

// Every variable a checkpoint covers, by key; optimizer slots are keyed by their owner's key.
struct Keyed {
  std::vector<std::pair<std::string, Variable>> vars;
};

}  // namespace

void Checkpoint::save(const std::string& path) const {
  if (!train::is_file_writer()) return;  // rank 0 of a data-parallel job writes (eagerflow/train/distribution.h)
  Keyed k;
  for (const auto& e : entries_) {
    if (e.layer)
      for (auto& [key, v] : weights_by_key(*e.layer)) k.vars.emplace_back(e.name + "/" + key, v);
    else if (e.variable.defined())
      k.vars.emplace_back(e.name, e.variable);
  }
  std::vector<io::NamedTensor> tensors;
  std::map<std::string, std::string> metadata{{"format", "eagerflow-checkpoint"}, {"version", "1"}};
  for (const auto& [key, v] : k.vars) tensors.push_back({key, v.value()});
  for (const auto& e : entries_) {
    if (!e.optimizer) continue;
    optim::Optimizer& opt = *e.optimizer;
    // The optimizer's type and slot names: restoring into another kind of optimizer is an error.
    std::set<std::string> slot_names;
    for (const auto& [owner_key, owner] : k.vars)
      for (const auto& [slot, var] : opt.slots_of(owner)) slot_names.insert(slot);
    metadata[e.name + "/type"] = optimizer_type(opt);
    metadata[e.name + "/slot_names"] = slot_names.empty() ? "" : joined(slot_names);
    if (opt.iterations().defined()) tensors.push_back({e.name + "/iterations", opt.iterations().value()});
    // A scheduled rate is a function of the step (saved above): its configuration is what
    // restoring needs; the constant-rate variable is unused (0) then.
    if (const auto& schedule = opt.learning_rate_setting().schedule())
      metadata[e.name + "/learning_rate_schedule"] = schedule_text(*schedule);
    else
      tensors.push_back({e.name + "/learning_rate", opt.learning_rate_variable().value()});
    for (const auto& [owner_key, owner] : k.vars) {
      for (const auto& [slot, var] : opt.slots_of(owner))
        tensors.push_back({e.name + "/slots/" + owner_key + "/" + slot, var.value()});
    }
    std::size_t saved_slots = 0, all_slots = opt.variables().size() - (opt.iterations().defined() ? 1 : 0);
    for (const auto& t : tensors) saved_slots += t.name.rfind(e.name + "/slots/", 0) == 0;
    if (saved_slots != all_slots)
      fail("Checkpoint", "optimizer '" + e.name + "' has slots for variables this checkpoint does not track; track "
                         "the layers (or variables) it trains");
  }
  if (random_state_) {
    random::GeneratorState g = random::get_global_state();
    tensors.push_back({"rng/seed", u64_scalar(g.seed)});
    tensors.push_back({"rng/counter", u64_scalar(g.counter)});
    // The draw counts of explicitly seeded ops, [n, 2] rows of (seed, count) as int64 bits.
    std::vector<std::int64_t> rows;
    for (auto [seed, n] : g.seeded) {
      rows.push_back(static_cast<std::int64_t>(seed));
      rows.push_back(static_cast<std::int64_t>(n));
    }
    std::int64_t count = static_cast<std::int64_t>(g.seeded.size());
    tensors.push_back({"rng/seeded", tensor(std::move(rows), Shape{count, 2})});
    for (const auto& [key, generator] : seed_generators())
      tensors.push_back({key, u64_scalar(generator->draws())});
  }
  metadata["checksum"] = content_checksum(tensors, metadata);
  io::save_safetensors(path, tensors, metadata);
}

void Checkpoint::restore(const std::string& path, bool skip_mismatch) {
  io::TensorFile file = io::load_safetensors(path);
  // Files from before checksums have none; a checksum that does not match is damage.
  if (auto sum = file.metadata.find("checksum"); sum != file.metadata.end() &&
                                                 sum->second != content_checksum(file.tensors, file.metadata) &&
                                                 sum->second != content_checksum(file.tensors, file.metadata, io::kLegacyFnvBasis))
    fail(ErrorCode::data_loss, "Checkpoint",
         "restore('" + path +
             "'): the file is damaged: its contents do not match the checksum it was "
             "saved with (nothing was loaded)");
  Index index(file);
  Keyed k;
  for (const auto& e : entries_) {
    if (e.layer) {
      auto weights = weights_by_key(*e.layer);
      if (weights.empty())
        fail(ErrorCode::failed_precondition, "Checkpoint",
             "layer '" + e.name + "' has no weights yet: call it once (or build it) before restoring");
      for (auto& [key, v] : weights) k.vars.emplace_back(e.name + "/" + key, v);
    } else if (e.variable.defined()) {
      k.vars.emplace_back(e.name, e.variable);
    }
  }
  std::map<std::string, Variable> by_key(k.vars.begin(), k.vars.end());
  std::vector<std::pair<std::string, Variable>> wanted = k.vars;
  std::vector<std::string> problems;
  std::set<std::string> known;
  // Optimizer state: slots named in the file are made (if missing) for the owners they name.
  struct SlotToMake {
    optim::Optimizer* opt;
    Variable owner;
    std::string slot, key;
  };
  std::vector<SlotToMake> slots;
  // Another kind of optimizer, or other slots, cannot continue the run: always an error (also
  // with skip_mismatch), before anything is assigned.
  std::vector<std::string> wrong_optimizer;
  for (const auto& e : entries_) {
    if (!e.optimizer) continue;
    known.insert(e.name + "/iterations");
    known.insert(e.name + "/learning_rate");
    std::string prefix = e.name + "/slots/";
    std::set<std::string> file_slots;
    for (const auto& t : file.tensors) {
      if (t.name.rfind(prefix, 0) != 0) continue;
      std::string rest = t.name.substr(prefix.size());
      std::size_t cut = rest.rfind('/');
      if (cut != std::string::npos) file_slots.insert(rest.substr(cut + 1));
      auto owner = cut == std::string::npos ? by_key.end() : by_key.find(rest.substr(0, cut));
      if (owner == by_key.end()) continue;  // reported below as not in the model
      known.insert(t.name);
      slots.push_back({e.optimizer, owner->second, rest.substr(cut + 1), t.name});
    }
    std::string type = optimizer_type(*e.optimizer);
    auto saved_type = file.metadata.find(e.name + "/type");  // files before this check have none
    if (saved_type != file.metadata.end() && saved_type->second != type) {
      wrong_optimizer.push_back("optimizer '" + e.name + "': the file holds the state of a " + saved_type->second +
                                " optimizer (slots: " + joined(file_slots) + "), this optimizer is a " + type);
      continue;
    }
    // An optimizer that has made slots already says which it uses (a fresh one makes them on
    // its first step, so only its type can be checked).
    std::set<std::string> own_slots;
    for (const auto& [key, var] : k.vars)
      for (const auto& [slot, v] : e.optimizer->slots_of(var)) own_slots.insert(slot);
    if (!own_slots.empty() && own_slots != file_slots) {
      std::set<std::string> missing, unexpected;
      for (const auto& n : own_slots) if (!file_slots.count(n)) missing.insert(n);
      for (const auto& n : file_slots) if (!own_slots.count(n)) unexpected.insert(n);
      wrong_optimizer.push_back("optimizer '" + e.name + "' (" + type + "): its slots are " + joined(own_slots) +
                                ", the file's are " + joined(file_slots) + " (missing in the file: " + joined(missing) +
                                "; unexpected: " + joined(unexpected) + ")");
    }
  }
  if (!wrong_optimizer.empty()) {
    std::string msg = "Checkpoint.restore('" + path + "'): the file was saved from another kind of optimizer, nothing "
                      "was loaded (restore into the same optimizer type and configuration):";
    for (const auto& p : wrong_optimizer) msg += "\n  " + p;
    fail("Checkpoint", msg);
  }
  if (random_state_) {
    known.insert("rng/seed");
    known.insert("rng/counter");
    known.insert("rng/seeded");  // optional: files from before it restore seeded ops from the start
    // Optional too: a layer's generator missing in the file (an older file) keeps its count.
    for (const auto& [key, generator] : seed_generators()) known.insert(key);
  }
  std::vector<Assignment> assignments;
  match(file, index, wanted, known, assignments, problems);
  // Slots, counters and the generator: checked the same way.
  std::vector<std::pair<std::string, Tensor>> opt_values;
  for (const auto& s : slots) {
    const Tensor* t = index.find(s.key);
    if (t->dtype() != s.owner.dtype() || t->shape() != s.owner.shape())
      problems.push_back("'" + s.key + "': the file has " + t->spec().str() + ", the variable is " +
                         spec_text(s.owner.dtype(), s.owner.shape()));
  }
  for (const auto& e : entries_) {
    if (!e.optimizer) continue;
    const Tensor* it = index.find(e.name + "/iterations");
    if (it && (it->dtype() != DType::int64 || it->rank() != 0)) problems.push_back("'" + e.name + "/iterations' is not an int64 scalar");
    const Tensor* lr = index.find(e.name + "/learning_rate");
    const auto& schedule = e.optimizer->learning_rate_setting().schedule();
    auto saved = file.metadata.find(e.name + "/learning_rate_schedule");
    bool lr_trains = lr && lr->dtype() == DType::float32 && lr->rank() == 0 && std::isfinite(lr->item<float>()) &&
                     lr->item<float>() > 0;
    if (schedule) {
      std::string own = schedule_text(*schedule);
      if (saved != file.metadata.end() && saved->second != own)
        problems.push_back("optimizer '" + e.name + "': the file's learning rate follows " + saved->second +
                           ", this optimizer's follows " + own);
      else if (saved == file.metadata.end() && lr_trains)
        problems.push_back("optimizer '" + e.name + "': the file has the constant learning rate " +
                           std::to_string(lr->item<float>()) + ", this optimizer's follows " + own);
      // Files written before schedules were recorded hold a rate of 0 here: the schedule and
      // the step restore the rate, so they load.
    } else if (saved != file.metadata.end()) {
      problems.push_back("optimizer '" + e.name + "': the file's learning rate follows " + saved->second +
                         ", this optimizer has a constant rate");
    } else if (!lr) {
      problems.push_back("missing in the file: '" + e.name + "/learning_rate'");
    } else if (lr->dtype() != DType::float32 || lr->rank() != 0) {
      problems.push_back("'" + e.name + "/learning_rate' is not a float32 scalar");
    } else if (!lr_trains) {
      problems.push_back("'" + e.name + "/learning_rate' is " + std::to_string(lr->item<float>()) + ": not a rate that trains");
    }
  }
  const Tensor *seed = index.find("rng/seed"), *counter = index.find("rng/counter");
  if (random_state_) {
    if (!seed || !counter) problems.push_back("missing in the file: the random generator's state (rng/seed, rng/counter)");
    else if (seed->dtype() != DType::int64 || counter->dtype() != DType::int64 || seed->rank() || counter->rank())
      problems.push_back("rng/seed and rng/counter must be int64 scalars");
    if (const Tensor* seeded = index.find("rng/seeded");
        seeded && (seeded->dtype() != DType::int64 || seeded->rank() != 2 || seeded->shape()[1] != 2))
      problems.push_back("rng/seeded must be int64[n,2] (seed, draws), got " + seeded->spec().str());
    for (const auto& [key, generator] : seed_generators())
      if (const Tensor* t = index.find(key); t && (t->dtype() != DType::int64 || t->rank() != 0))
        problems.push_back("'" + key + "' (a layer's seed generator) must be an int64 scalar, got " + t->spec().str());
  }
  if (!problems.empty() && !skip_mismatch) report("Checkpoint.restore('" + path + "')", problems);

  for (auto& a : assignments) a.target.assign(a.value);
  for (const auto& s : slots) {
    const Tensor* t = index.find(s.key);
    if (t->dtype() == s.owner.dtype() && t->shape() == s.owner.shape()) s.opt->get_or_create_slot(s.owner, s.slot).assign(*t);
  }
  for (const auto& e : entries_) {
    if (!e.optimizer) continue;
    const Tensor* it = index.find(e.name + "/iterations");
    if (it && it->dtype() == DType::int64 && it->rank() == 0) e.optimizer->get_or_create_iterations().assign(*it);
    const Tensor* lr = index.find(e.name + "/learning_rate");
    if (!e.optimizer->learning_rate_setting().schedule() && lr && lr->dtype() == DType::float32 && lr->rank() == 0 &&
        std::isfinite(lr->item<float>()) && lr->item<float>() > 0)
      e.optimizer->learning_rate_variable().assign(*lr);
  }
  if (random_state_ && seed && counter && seed->dtype() == DType::int64 && counter->dtype() == DType::int64 &&
      seed->rank() == 0 && counter->rank() == 0) {
    random::GeneratorState g{static_cast<std::uint64_t>(seed->item<std::int64_t>()),
                             static_cast<std::uint64_t>(counter->item<std::int64_t>()), {}};
    const Tensor* seeded = index.find("rng/seeded");
    if (seeded && seeded->dtype() == DType::int64 && seeded->rank() == 2 && seeded->shape()[1] == 2) {
      auto v = seeded->data<std::int64_t>();
      for (std::size_t i = 0; i + 1 < v.size(); i += 2)
        g.seeded.emplace_back(static_cast<std::uint64_t>(v[i]), static_cast<std::uint64_t>(v[i + 1]));
    }
    random::set_global_state(std::move(g));
  }
  if (random_state_)
    for (const auto& [key, generator] : seed_generators())
      if (const Tensor* t = index.find(key); t && t->dtype() == DType::int64 && t->rank() == 0)
        generator->set_draws(static_cast<std::uint64_t>(t->item<std::int64_t>()));
}

std::vector<std::pair<std::string, const random::SeedGenerator*>> Checkpoint::seed_generators() const {
  std::vector<std::pair<std::string, const random::SeedGenerator*>> out;
  for (const auto& e : entries_)
    if (e.layer)
      for (auto& [key, g] : seed_generators_by_key(*e.layer))
        out.emplace_back("rng/generators/" + e.name + (key.empty() ? "" : "/" + key), g);
  return out;
}

}  // namespace ef::train
