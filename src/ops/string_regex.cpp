#include "ops/string_regex.h"

#include <re2/re2.h>

#include "eagerflow/core/error.h"

namespace ef::detail {

struct CompiledRegex {
  explicit CompiledRegex(const std::string& pattern) : re(pattern, RE2::Quiet) {}
  RE2 re;
};

std::shared_ptr<const CompiledRegex> compile_regex(const char* op, const std::string& pattern) {
  auto compiled = std::make_shared<const CompiledRegex>(pattern);
  if (!compiled->re.ok()) fail(op, "invalid pattern: " + pattern + ", error: " + compiled->re.error());
  return compiled;
}

void check_rewrite(const char* op, const CompiledRegex& re, const std::string& rewrite) {
  std::string why;
  if (!re.re.CheckRewriteString(rewrite, &why)) fail(op, "invalid rewrite '" + rewrite + "': " + why);
}

bool regex_full_match(const CompiledRegex& re, std::string_view text) {
  return RE2::FullMatch(re2::StringPiece(text.data(), text.size()), re.re);
}

std::string regex_replace(const CompiledRegex& re, std::string_view text, const std::string& rewrite, bool global) {
  std::string out(text);
  if (global) RE2::GlobalReplace(&out, re.re, rewrite);
  else RE2::Replace(&out, re.re, rewrite);
  return out;
}

}  // namespace ef::detail
