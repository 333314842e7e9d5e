#include "eagerflow/function/signature.h"

#include <sstream>

#include "eagerflow/function/args.h"

namespace ef {

std::string static_value_str(const StaticValue& v) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::ostringstream os;
      os << d;
      return os.str();
    }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
  };
  return std::visit(Visitor{}, v);
}

std::string ArgSignature::str() const {
  switch (kind) {
    case Kind::tensor: return specs[0].str();
    case Kind::tensor_list: {
      std::string s = "[";
      for (std::size_t i = 0; i < specs.size(); ++i) s += (i ? ", " : "") + specs[i].str();
      return s + "]";
    }
    case Kind::tensor_map: {
      std::string s = "{";
      for (std::size_t i = 0; i < specs.size(); ++i) s += (i ? ", " : "") + keys[i] + ": " + specs[i].str();
      return s + "}";
    }
    case Kind::static_value: return static_value_str(value);
  }
  return "?";
}

std::string signature_str(const Signature& sig, const std::vector<std::string>& names) {
  std::string s = "(";
  for (std::size_t i = 0; i < sig.size(); ++i) {
    if (i) s += ", ";
    if (i < names.size() && !names[i].empty()) s += names[i] + ": ";
    s += sig[i].str();
  }
  return s + ")";
}

bool signature_accepts(const Signature& general, const Signature& specific) {
  if (general.size() != specific.size()) return false;
  for (std::size_t i = 0; i < general.size(); ++i) {
    const ArgSignature &g = general[i], &s = specific[i];
    if (g.kind != s.kind || g.keys != s.keys || g.specs.size() != s.specs.size() || g.value != s.value) return false;
    for (std::size_t k = 0; k < g.specs.size(); ++k)
      if (g.specs[k].dtype != s.specs[k].dtype || !g.specs[k].shape.accepts(s.specs[k].shape)) return false;
  }
  return true;
}

namespace detail {
void check_tensor_arg(const Tensor& t) {
  if (!t.defined()) fail("function", "an argument tensor is undefined (default-constructed)");
}
}  // namespace detail

}  // namespace ef
