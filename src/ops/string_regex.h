#pragma once
// RE2 behind a small interface: only src/ops/string_regex.cpp sees RE2's headers.
#include <memory>
#include <string>
#include <string_view>

namespace ef::detail {

struct CompiledRegex;

// An ef::Error (INVALID_ARGUMENT) naming `op` for a pattern RE2 does not accept, or a rewrite
// naming a group the pattern lacks.
std::shared_ptr<const CompiledRegex> compile_regex(const char* op, const std::string& pattern);
void check_rewrite(const char* op, const CompiledRegex& re, const std::string& rewrite);
bool regex_full_match(const CompiledRegex& re, std::string_view text);
// `text` with the first match (or every match when `global`) replaced by `rewrite` (\0-\9 groups).
std::string regex_replace(const CompiledRegex& re, std::string_view text, const std::string& rewrite, bool global);

}  // namespace ef::detail
