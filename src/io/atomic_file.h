#pragma once
// The machinery behind atomic saves (write_file_atomically, ef::save's folder swap): names of
// the temporary siblings a writer makes, and how a later writer recognizes the ones a killed
// writer left behind.
//
// A temporary sibling of `target` is named ".<stem>.ef-<kind>-<pidns>-<pid>-<n>": <stem> is the
// target's file name (shortened with a hash when long, so that the temporary name stays within
// NAME_MAX), <kind> is "tmp" (a file being written), "new" (a folder being written) or "old" (a
// replaced folder being removed), <pidns> the writer's pid namespace, <pid> its process id. Such
// an entry is removed only when it names this target, this pid namespace, and a process that no
// longer exists (kill(pid, 0) fails with ESRCH): never a live writer's file, never a file of
// another name or shape.
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "eagerflow/core/error.h"

namespace ef::io::detail {

struct TempName {
  std::string kind;   // "tmp", "new", "old" ("tmp" also for the older ".<name>.tmp-<pid>-<n>")
  std::uint64_t pid_namespace = 0;
  pid_t pid = 0;
  bool legacy = false;  // the older format, which did not record the pid namespace
};

// A fresh temporary sibling name (file name only) of `target_name` of the given kind.
std::string temp_name(const std::string& target_name, const char* kind);
// What `entry` (a file name in the target's folder) is, when it is a temporary sibling of
// `target_name`; nullopt for anything else.
std::optional<TempName> parse_temp_name(const std::string& entry, const std::string& target_name);
// Whether the writer that made `t` is provably gone (same pid namespace, ESRCH, not this process).
bool writer_is_gone(const TempName& t);
// Removes the temporary siblings of `target` left by writers that are gone (best effort:
// errors are ignored; a save never fails because of this).
void remove_orphans(const std::filesystem::path& target);

// Checks a path a file will be written to or read from: non-empty, and, when it exists (after
// following symbolic links), a regular file. Returns the path to use: a symbolic link is
// followed, so that the file it points to is replaced, not the link. `what` names the API.
std::filesystem::path checked_file_target(const std::string& path, const std::string& what);

// fsync of a folder (makes renames in it durable); best effort.
void sync_folder(const std::filesystem::path& folder);

// Tests: whether a folder swap may use renameat2(RENAME_EXCHANGE) (true by default); with false
// it uses the two-rename fallback (old aside, new in) that file systems without it get.
void set_rename_exchange_enabled(bool on);
bool rename_exchange_enabled();

}  // namespace ef::io::detail
