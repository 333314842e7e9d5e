// Keras 3's weights file: the groups and datasets of io/keras_weights_layout.h in HDF5.
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/saving/keras_weights.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/trace/context.h"
#include "io/hdf5_file.h"
#include "io/keras_weights_layout.h"

namespace ef {
namespace {

using io::keras::Entry;

std::string spec_text(DType d, const Shape& s) { return TensorSpec{d, s, {}}.str(); }

std::string var_names(const Entry& e) {
  std::string out = "[";
  for (std::size_t i = 0; i < e.vars.size(); ++i) out += (i ? ", " : "") + std::string("'") + e.vars[i].name() + "'";
  return out + "]";
}

std::vector<Variable> trainable_of(const nn::Layer& model) { return model.trainable_weights(); }

// The group at `path` ("a/b/c"), made with any missing parents.
io::h5::Group make_groups(io::h5::Group root, const std::string& path) {
  io::h5::Group g = std::move(root);
  std::size_t start = 0;
  while (start <= path.size() && !path.empty()) {
    std::size_t end = path.find('/', start);
    std::string part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    g = g.has_group(part) ? g.group(part) : g.create_group(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return g;
}

// The group at `path`, or null when any part is missing.
const io::h5::SnapshotGroup* find_groups(const io::h5::SnapshotGroup& root, const std::string& path) {
  const io::h5::SnapshotGroup* at = &root;
  std::size_t start = 0;
  if (path.empty()) return nullptr;
  while (true) {
    std::size_t end = path.find('/', start);
    std::string part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!at->has_group(part)) return nullptr;
    at = &at->group(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return at;
}

void write_entries(io::h5::File& file, const std::vector<Entry>& entries) {
  io::h5::Group root = file.root();
  for (const Entry& e : entries) {
    io::h5::Group vars = make_groups(file.root(), e.path.empty() ? "vars" : e.path + "/vars");
    vars.set_string_attr("name", e.name);
    for (std::size_t i = 0; i < e.vars.size(); ++i) vars.write_dataset(std::to_string(i), e.vars[i].value());
  }
}

std::vector<Entry> entries_to_save(const nn::Layer& model, const optim::Optimizer* optimizer) {
  std::vector<Entry> entries = io::keras::model_entries(model);
  if (optimizer) entries.push_back(io::keras::optimizer_entry(*optimizer, trainable_of(model)));
  return entries;
}

struct Assignment {
  Variable target;
  Tensor value;
};

// Reads `e`'s datasets into `out` when they fit; a line per problem otherwise. `optional_count`:
// another number of variables is no problem, the entry is skipped (Keras' optimizer warning).
void match_entry(const io::h5::SnapshotGroup& root, const Entry& e, bool optional_count, std::vector<Assignment>& out,
                 std::vector<std::string>& problems) {
  std::string vars_path = e.path.empty() ? "vars" : e.path + "/vars";
  const io::h5::SnapshotGroup* g = find_groups(root, vars_path);
  std::vector<std::string> members = g ? g->members(1 << 16) : std::vector<std::string>{};
  if (members.size() != e.vars.size()) {
    if (optional_count) return;
    if (!g && !e.vars.empty())
      problems.push_back("layer " + e.what + ": the file has no group '" + vars_path + "' for its " +
                         std::to_string(e.vars.size()) + " variables " + var_names(e));
    else
      problems.push_back("layer " + e.what + " expected " + std::to_string(e.vars.size()) +
                         " variables, but received " + std::to_string(members.size()) + " variables in '" + vars_path +
                         "'. Expected: " + var_names(e));
    return;
  }
  for (std::size_t i = 0; i < e.vars.size(); ++i) {
    const Variable& v = e.vars[i];
    std::string key = std::to_string(i);
    std::string where = "'" + vars_path + "/" + key + "'";
    if (!g->has_dataset(key)) {
      problems.push_back(e.what + ": the file has no dataset " + where + " for '" + v.name() + "'");
      continue;
    }
    TensorSpec spec = g->dataset_spec(key);
    if (spec.shape != v.shape()) {
      problems.push_back(e.what + ": " + where + " has shape " + spec.shape.str() + ", but variable '" + v.name() +
                         "' has shape " + v.shape().str());
      continue;
    }
    Tensor t = g->read_dataset(key);
    if (t.dtype() != v.dtype()) {
      bool convertible = (is_floating(t.dtype()) && is_floating(v.dtype())) ||
                         (is_integer(t.dtype()) && is_integer(v.dtype()));
      if (!convertible) {
        problems.push_back(e.what + ": " + where + " is " + spec_text(t.dtype(), t.shape()) + ", variable '" + v.name() +
                           "' is " + spec_text(v.dtype(), v.shape()));
        continue;
      }
      t = cast(t, v.dtype());
    }
    out.push_back({v, std::move(t)});
  }
}

[[noreturn]] void report(const std::string& what, const std::vector<std::string>& problems) {
  std::string msg = what + ": " + std::to_string(problems.size()) + " mismatch" + (problems.size() == 1 ? "" : "es") +
                    " with the model (nothing was loaded; skip_mismatch loads what fits):";
  for (const auto& p : problems) msg += "\n  " + p;
  throw Error(ErrorKind(ErrorCode::invalid_argument, PythonBuiltin::value_error), msg);
}

void load_from(const io::h5::Snapshot& file, nn::Layer& model, optim::Optimizer* optimizer, bool skip_mismatch) {
  trace::EagerScope eager;
  const std::string& what = file.info().what;
  std::vector<Entry> entries = io::keras::model_entries(model);
  bool any = false;
  for (const Entry& e : entries) any = any || !e.vars.empty();
  if (!any)
    fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error), model.name(),
         "has no weights yet: call the model once (or build it) before loading '" + what + "'");
  const io::h5::SnapshotGroup& root = file.root();
  if (root.has_attr("layer_names") || (root.has_group("model_weights") && root.group("model_weights").has_attr("layer_names")))
    throw Error(ErrorKind(ErrorCode::invalid_argument, PythonBuiltin::value_error),
                what + ": a legacy Keras 2 HDF5 file (layer_names), not Keras 3's weights layout: load it under a "
                       "name ending in .h5 (not .weights.h5), or with ef::load_legacy_h5_weights");
  std::vector<Assignment> assignments;
  std::vector<std::string> problems;
  for (const Entry& e : entries) match_entry(root, e, false, assignments, problems);
  if (optimizer && root.has_group("optimizer")) {
    optimizer->build(trainable_of(model));  // restoring needs the slots: make them as the first step would
    match_entry(root, io::keras::optimizer_entry(*optimizer, trainable_of(model)), true, assignments, problems);
  }
  if (!problems.empty() && !skip_mismatch) report("loading '" + what + "' into " + model.name(), problems);
  for (auto& a : assignments) a.target.assign(a.value);
}

}  // namespace

std::vector<std::byte> keras_weights_to_bytes(const nn::Layer& model, const optim::Optimizer* optimizer) {
  io::h5::Lock lock;
  trace::EagerScope eager;
  std::vector<Entry> entries = entries_to_save(model, optimizer);
  io::h5::File file = io::h5::File::create(model.name() + ".weights.h5");
  write_entries(file, entries);
  return file.image();
}

void save_keras_weights(const nn::Layer& model, const std::string& path, const optim::Optimizer* optimizer) {
  std::vector<std::byte> bytes = keras_weights_to_bytes(model, optimizer);
  io::write_file_atomically(path, bytes);
}

void load_keras_weights(nn::Layer& model, const std::string& path, optim::Optimizer* optimizer,
                        const KerasWeightsLoadOptions& options) {
  io::h5::Snapshot file = io::h5::Snapshot::of_file(path);
  load_from(file, model, optimizer, options.skip_mismatch);
}

void load_keras_weights(nn::Layer& model, const std::string& path, optim::Optimizer* optimizer) {
  load_keras_weights(model, path, optimizer, KerasWeightsLoadOptions{});
}

void keras_weights_from_bytes(nn::Layer& model, std::span<const std::byte> h5, optim::Optimizer* optimizer,
                              const std::string& what) {
  io::h5::Snapshot file = io::h5::Snapshot::of_image(h5, what);
  load_from(file, model, optimizer, false);
}

bool is_hdf5_file(const std::string& path) { return io::h5::has_signature(path); }

}  // namespace ef
