#include "eagerflow/function/signature.h"

#include <bit>
#include <charconv>
#include <functional>
#include <sstream>

#include "eagerflow/function/args.h"

namespace ef {

std::string static_value_str(const StaticValue& v) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);  // exact: reads back to the same bits
      return std::string(buf, end);
    }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
  };
  return std::visit(Visitor{}, v);
}

bool static_equal(const StaticValue& a, const StaticValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) return std::bit_cast<std::uint64_t>(*x) == std::bit_cast<std::uint64_t>(std::get<double>(b));
  return a == b;
}

std::string ArgSignature::str() const {
  switch (kind) {
    case Kind::variable: return "variable '" + keys[0] + "' " + specs[0].str();
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
    if (g.kind != s.kind || g.keys != s.keys || g.specs.size() != s.specs.size() || !static_equal(g.value, s.value))
      return false;
    for (std::size_t k = 0; k < g.specs.size(); ++k)
      if (g.specs[k].dtype != s.specs[k].dtype || !g.specs[k].shape.accepts(s.specs[k].shape)) return false;
  }
  return true;
}

void hash_string_static(std::uint64_t& h, std::string_view s) {
  hash_mix(h, 0x5747u + 4);  // the variant index of std::string
  hash_mix(h, std::hash<std::string_view>{}(s));
}

void hash_static(std::uint64_t& h, const StaticValue& v) {
  if (auto* str = std::get_if<std::string>(&v)) return hash_string_static(h, *str);
  hash_mix(h, 0x5747u + v.index());
  if (auto* b = std::get_if<bool>(&v)) hash_mix(h, *b);
  else if (auto* i = std::get_if<std::int64_t>(&v)) hash_mix(h, static_cast<std::uint64_t>(*i));
  else if (auto* d = std::get_if<double>(&v)) hash_mix(h, std::bit_cast<std::uint64_t>(*d));
}

// Mirrors detail::ArgTraits<T>::hash for each kind of argument.
std::uint64_t signature_hash(const Signature& sig) {
  std::uint64_t h = sig.size();
  for (const auto& a : sig) {
    hash_mix(h, static_cast<std::uint64_t>(a.kind));
    switch (a.kind) {
      case ArgSignature::Kind::static_value:
      case ArgSignature::Kind::variable: hash_static(h, a.value); break;
      case ArgSignature::Kind::tensor: hash_spec(h, a.specs[0].dtype, a.specs[0].shape); break;
      case ArgSignature::Kind::tensor_list:
      case ArgSignature::Kind::tensor_map:
        hash_mix(h, a.specs.size());
        for (std::size_t k = 0; k < a.specs.size(); ++k) {
          if (a.kind == ArgSignature::Kind::tensor_map) hash_mix(h, std::hash<std::string_view>{}(a.keys[k]));
          hash_spec(h, a.specs[k].dtype, a.specs[k].shape);
        }
        break;
    }
  }
  return h;
}

bool signature_is_static(const Signature& sig) {
  for (const auto& a : sig)
    for (const auto& s : a.specs)
      if (!s.shape.is_static()) return false;
  return true;
}

namespace detail {
void check_tensor_arg(const Tensor& t) {
  if (!t.defined()) fail("function", "an argument tensor is undefined (default-constructed)");
  if (t.is_symbolic() && !trace::current())
    fail("function", "an argument is a symbolic tensor " + t.spec().str() +
                         " left over from a finished trace (it was kept outside the traced function, e.g. stored in a "
                         "captured variable or container); symbolic tensors exist only while their function traces: "
                         "return the value from the function instead");
}

void FlatTensors::spill(const Tensor& t) {
  if (heap_.empty()) heap_.assign(inline_.begin(), inline_.end());
  heap_.push_back(t);
}

void OutTraits<std::vector<Tensor>>::flatten(const std::vector<Tensor>& v, std::vector<Tensor>& out,
                                             OutputStructure& s) {
  s.list_sizes.push_back(v.size());
  out.insert(out.end(), v.begin(), v.end());
}

std::vector<Tensor> OutTraits<std::vector<Tensor>>::build(OutputCursor& c) {
  std::size_t n = c.structure->list_sizes[c.next_list++];
  std::vector<Tensor> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(std::move(c.tensors[c.next_tensor++]));
  return v;
}

void OutTraits<std::map<std::string, Tensor>>::flatten(const std::map<std::string, Tensor>& m,
                                                       std::vector<Tensor>& out, OutputStructure& s) {
  std::vector<std::string> keys;
  for (const auto& [k, t] : m) {
    keys.push_back(k);
    out.push_back(t);
  }
  s.map_keys.push_back(std::move(keys));
}

std::map<std::string, Tensor> OutTraits<std::map<std::string, Tensor>>::build(OutputCursor& c) {
  std::map<std::string, Tensor> m;
  for (const auto& k : c.structure->map_keys[c.next_map++]) m.emplace(k, std::move(c.tensors[c.next_tensor++]));
  return m;
}
}  // namespace detail

void check_signature_dims(const Signature& sig, const std::vector<std::string>& names, const std::string& tag) {
  for (std::size_t i = 0; i < sig.size(); ++i) {
    const ArgSignature& a = sig[i];
    if (a.kind == ArgSignature::Kind::static_value) continue;
    for (std::size_t k = 0; k < a.specs.size(); ++k) {
      const TensorSpec& spec = a.specs[k];
      auto where = [&] {
        std::string w = "arg " + std::to_string(i);
        if (i < names.size() && !names[i].empty()) w += " (" + names[i] + ")";
        if (a.kind == ArgSignature::Kind::tensor_list) w += "[" + std::to_string(k) + "]";
        if (a.kind == ArgSignature::Kind::tensor_map && k < a.keys.size()) w += "[\"" + a.keys[k] + "\"]";
        return w;
      };
      std::int64_t bytes = static_cast<std::int64_t>(size_of(spec.dtype));
      bool empty = false;
      for (auto d : spec.shape) empty |= d == 0;
      for (int axis = 0; axis < spec.shape.rank(); ++axis) {
        std::int64_t d = spec.shape[axis];
        if (d < 0 && d != kDynamic)
          fail(tag, where() + ": " + spec.str() + " has dimension " + std::to_string(d) + " at axis " + std::to_string(axis) +
                        "; dims are >= 0, or ef::kDynamic (-1) for a size known only when the graph runs");
        if (d > 0 && !empty && __builtin_mul_overflow(bytes, d, &bytes))
          fail(tag, where() + ": " + spec.str() + " has more elements than a 64-bit size can count");
      }
    }
  }
}

}  // namespace ef
