// tf.train's checkpoint functions over TF's checkpoint files; the state file is parsed as the
// text-format CheckpointState TF writes (one `field: "quoted string"` per line).
#include "eagerflow/io/tf_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "eagerflow/core/error.h"

namespace ef::train {
namespace {

namespace fs = std::filesystem;

// The value of a text-format string field: "..." with \" \\ \n \t \' escapes; nullopt if malformed.
std::optional<std::string> unquote(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  if (v.size() < 2 || (v.front() != '"' && v.front() != '\'') || v.back() != v.front()) return std::nullopt;
  v = v.substr(1, v.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '\\' || i + 1 == v.size()) {
      out.push_back(v[i]);
      continue;
    }
    char c = v[++i];
    out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
  }
  return out;
}

bool has_index(const std::string& prefix) {
  std::error_code ec;
  return fs::exists(io::bundle_index_path(prefix), ec);
}

std::string prefix_of(const std::string& ckpt_dir_or_prefix) {
  std::error_code ec;
  if (!fs::is_directory(ckpt_dir_or_prefix, ec)) return ckpt_dir_or_prefix;
  auto latest = latest_checkpoint(ckpt_dir_or_prefix);
  if (!latest)
    fail("load_checkpoint", "Couldn't find 'checkpoint' file or checkpoints in given directory " + ckpt_dir_or_prefix);
  return *latest;
}

}  // namespace

std::optional<std::string> latest_checkpoint(const std::string& checkpoint_dir, const std::string& latest_filename) {
  fs::path state = fs::path(checkpoint_dir) / latest_filename;
  std::ifstream in(state);
  if (!in) return std::nullopt;
  std::string line;
  std::optional<std::string> path;
  std::size_t bytes = 0;
  while (std::getline(in, line)) {
    bytes += line.size();
    if (bytes > (std::size_t{16} << 20))
      fail(ErrorCode::data_loss, "latest_checkpoint", state.string() + ": larger than any checkpoint state file");
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string_view field(line.data(), colon);
    while (!field.empty() && field.front() == ' ') field.remove_prefix(1);
    if (field != "model_checkpoint_path") continue;
    path = unquote(std::string_view(line).substr(colon + 1));
    if (!path)
      fail(ErrorCode::data_loss, "latest_checkpoint",
           state.string() + ": model_checkpoint_path is not a quoted string");
  }
  if (!path || path->empty()) return std::nullopt;
  std::string full = fs::path(*path).is_absolute() ? *path : (fs::path(checkpoint_dir) / *path).string();
  return has_index(full) ? std::optional<std::string>(full) : std::nullopt;
}

io::BundleReader load_checkpoint(const std::string& ckpt_dir_or_prefix) {
  return io::BundleReader(prefix_of(ckpt_dir_or_prefix));
}

std::vector<std::pair<std::string, Shape>> list_variables(const std::string& ckpt_dir_or_prefix) {
  auto reader = load_checkpoint(ckpt_dir_or_prefix);
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& key : reader.keys()) out.emplace_back(key, reader.shape(key));
  return out;
}

Tensor load_variable(const std::string& ckpt_dir_or_prefix, const std::string& name) {
  std::string key = name;
  if (key.size() > 2 && key.compare(key.size() - 2, 2, ":0") == 0) key.resize(key.size() - 2);
  return load_checkpoint(ckpt_dir_or_prefix).read(key);
}

}  // namespace ef::train
