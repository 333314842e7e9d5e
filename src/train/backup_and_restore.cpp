// Keras' BackupAndRestore over Checkpoint: one file holds the whole training state, so the
// atomic write of that file is the atomic backup (Keras writes weights and metadata as two
// files; a kill between them pairs new weights with an old epoch).
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "eagerflow/core/error.h"
#include "eagerflow/train/callbacks.h"
#include "eagerflow/train/checkpoint.h"
#include "eagerflow/train/model.h"
#include "io/atomic_file.h"

namespace ef::train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kWho = "BackupAndRestore";
constexpr const char* kFile = "latest.safetensors";

// The checkpoint of a model's training state; `epoch` is the next epoch to run.
Checkpoint training_state(Model& model, const Variable& epoch) {
  Checkpoint ckpt;
  ckpt.track("model", model);
  if (model.optimizer()) ckpt.track("optimizer", *model.optimizer());
  ckpt.track("epoch", epoch);
  return ckpt;
}

// A message with the bytes that are not printable ASCII written as \xNN: errors about a damaged
// file may quote its bytes, and the message must stay valid text (Python decodes it as UTF-8).
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace

BackupAndRestore::BackupAndRestore(std::string backup_dir, std::string save_freq, bool delete_checkpoint)
    : backup_dir_(std::move(backup_dir)), delete_checkpoint_(delete_checkpoint) {
  if (backup_dir_.empty()) fail(kWho, "Empty `backup_dir` argument passed");
  if (save_freq != "epoch")
    fail(kWho, "save_freq='" + save_freq + "' is not supported: only 'epoch'. Backups every N batches would resume "
               "the interrupted epoch from its start with mid-epoch weights, which cannot end where an "
               "uninterrupted run ends");
}

std::string BackupAndRestore::backup_path() const { return (fs::path(backup_dir_) / kFile).string(); }

void BackupAndRestore::on_train_begin() {
  restored_epoch_ = -1;
  if (!model) return;
  std::string path = backup_path();
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return;  // nothing backed up: a fresh run
  if (!fs::is_regular_file(status))
    fail(ErrorCode::failed_precondition, kWho, "the backup '" + path + "' is not a regular file");
  if (model->weights().empty())
    fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error), kWho,
         "To use the BackupAndRestore callback, your model must be built before you call fit(): model '" +
             model->name() + "' has no weights yet, so the backup '" + path +
             "' cannot be restored. Build it beforehand by calling it on a batch of data.");
  Variable epoch(scalar(std::int64_t{0}), "backup_and_restore/epoch", /*trainable=*/false);
  try {
    training_state(*model, epoch).restore(path);
  } catch (const Error& e) {
    throw Error(e.kind(), printable(e.what()));
  }
  std::int64_t next = Tensor(epoch).item<std::int64_t>();
  if (next < 0 || next > (std::int64_t{1} << 30))
    fail(ErrorCode::data_loss, kWho,
         "the backup '" + path + "' names epoch " + std::to_string(next) + ": the file is damaged");
  restored_epoch_ = static_cast<int>(next);
  model->resume_epoch = restored_epoch_;
}

void BackupAndRestore::on_epoch_end(int epoch, const Logs&) {
  if (!model) return;
  std::error_code ec;
  fs::create_directories(backup_dir_, ec);
  if (ec) fail(kWho, "cannot create the backup folder '" + backup_dir_ + "': " + ec.message());
  Variable next(scalar(static_cast<std::int64_t>(epoch) + 1), "backup_and_restore/epoch", /*trainable=*/false);
  training_state(*model, next).save(backup_path());
}

// Keras removes the whole backup_dir; this removes what it wrote (the backup and the
// temporary files of killed writers), and the folder when that leaves it empty.
void BackupAndRestore::on_train_end() {
  if (!delete_checkpoint_) return;
  std::error_code ec;
  fs::remove(backup_path(), ec);
  io::detail::remove_orphans(backup_path());
  if (fs::is_directory(backup_dir_, ec) && fs::is_empty(backup_dir_, ec)) fs::remove(backup_dir_, ec);
}

}  // namespace ef::train
