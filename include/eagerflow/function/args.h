#pragma once
// How each C++ argument and result type of a traced function is keyed, flattened into graph
// inputs/outputs, and replaced by symbolic stand-ins while tracing. Supported arguments:
// Tensor, std::vector<Tensor>, std::map<std::string, Tensor>, TensorSpec (and containers of
// them, for get_concrete_function), and static values: bool, integers, floating point, strings.
#include <array>
#include <bit>
#include <concepts>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "eagerflow/function/signature.h"
#include "eagerflow/trace/context.h"
#include "eagerflow/variable.h"

namespace ef::detail {

// A small inline buffer of tensors, so that a cached call does not allocate for few args.
class FlatTensors {
 public:
  void push(const Tensor& t) {
    if (n_ < inline_.size()) inline_[n_] = t;
    else spill(t);
    ++n_;
  }
  std::span<const Tensor> span() const {
    return n_ <= inline_.size() ? std::span<const Tensor>(inline_.data(), n_) : std::span<const Tensor>(heap_);
  }

 private:
  void spill(const Tensor& t);  // past the inline buffer (src/function/signature.cpp)
  std::array<Tensor, 8> inline_;
  std::vector<Tensor> heap_;
  std::size_t n_ = 0;
};

void check_tensor_arg(const Tensor& t);

template <class T> struct ArgTraits {
  static_assert(sizeof(T) == 0,
                "ef::function arguments must be Tensor, std::vector<Tensor>, std::map<std::string, Tensor>, "
                "TensorSpec, ef::Variable, bool, an integer, a floating-point number or a string");
};

template <> struct ArgTraits<Tensor> {
  using Symbolic = Tensor;
  static ArgSignature signature(const Tensor& t) {
    check_tensor_arg(t);
    return {ArgSignature::Kind::tensor, {t.spec()}, {}, {}, {}};
  }
  static bool matches(const ArgSignature& s, const Tensor& t) {
    return s.kind == ArgSignature::Kind::tensor && t.defined() && !t.is_symbolic() && s.specs[0].dtype == t.dtype() &&
           s.specs[0].shape.accepts(t.shape());
  }
  static void flatten(const Tensor& t, FlatTensors& out) { out.push(t); }
  static void hash(const Tensor& t, std::uint64_t& h) {
    hash_mix(h, static_cast<std::uint64_t>(ArgSignature::Kind::tensor));
    if (t.defined()) hash_spec(h, t.dtype(), t.shape());
  }
  static Tensor symbolic(const ArgSignature& s, trace::TraceContext& ctx) { return ctx.add_input(s.specs[0]); }
};

template <> struct ArgTraits<TensorSpec> {
  using Symbolic = Tensor;
  static ArgSignature signature(const TensorSpec& s) { return {ArgSignature::Kind::tensor, {s}, {}, {}, {}}; }
  static Tensor symbolic(const ArgSignature& s, trace::TraceContext& ctx) { return ctx.add_input(s.specs[0]); }
};

template <class E> concept TensorLike = std::same_as<E, Tensor> || std::same_as<E, TensorSpec>;

template <TensorLike E> struct ArgTraits<std::vector<E>> {
  using Symbolic = std::vector<Tensor>;
  static ArgSignature signature(const std::vector<E>& v) {
    ArgSignature s{ArgSignature::Kind::tensor_list, {}, {}, {}, {}};
    for (const auto& t : v) s.specs.push_back(ArgTraits<E>::signature(t).specs[0]);
    return s;
  }
  static bool matches(const ArgSignature& s, const std::vector<Tensor>& v) {
    if (s.kind != ArgSignature::Kind::tensor_list || s.specs.size() != v.size()) return false;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!v[i].defined() || v[i].is_symbolic() || s.specs[i].dtype != v[i].dtype() || !s.specs[i].shape.accepts(v[i].shape()))
        return false;
    return true;
  }
  static void flatten(const std::vector<Tensor>& v, FlatTensors& out) {
    for (const auto& t : v) out.push(t);
  }
  static void hash(const std::vector<Tensor>& v, std::uint64_t& h) {
    hash_mix(h, static_cast<std::uint64_t>(ArgSignature::Kind::tensor_list));
    hash_mix(h, v.size());
    for (const auto& t : v)
      if (t.defined()) hash_spec(h, t.dtype(), t.shape());
  }
  static std::vector<Tensor> symbolic(const ArgSignature& s, trace::TraceContext& ctx) {
    std::vector<Tensor> v;
    for (const auto& spec : s.specs) v.push_back(ctx.add_input(spec));
    return v;
  }
};

template <TensorLike E> struct ArgTraits<std::map<std::string, E>> {
  using Symbolic = std::map<std::string, Tensor>;
  static ArgSignature signature(const std::map<std::string, E>& m) {
    ArgSignature s{ArgSignature::Kind::tensor_map, {}, {}, {}, {}};
    for (const auto& [k, t] : m) {
      s.keys.push_back(k);
      s.specs.push_back(ArgTraits<E>::signature(t).specs[0]);
    }
    return s;
  }
  static bool matches(const ArgSignature& s, const std::map<std::string, Tensor>& m) {
    if (s.kind != ArgSignature::Kind::tensor_map || s.specs.size() != m.size()) return false;
    std::size_t i = 0;
    for (const auto& [k, t] : m) {
      if (k != s.keys[i] || !t.defined() || s.specs[i].dtype != t.dtype() || !s.specs[i].shape.accepts(t.shape()))
        return false;
      ++i;
    }
    return true;
  }
  static void flatten(const std::map<std::string, Tensor>& m, FlatTensors& out) {
    for (const auto& [k, t] : m) out.push(t);
  }
  static void hash(const std::map<std::string, Tensor>& m, std::uint64_t& h) {
    hash_mix(h, static_cast<std::uint64_t>(ArgSignature::Kind::tensor_map));
    hash_mix(h, m.size());
    for (const auto& [k, t] : m) {
      hash_mix(h, std::hash<std::string_view>{}(k));
      if (t.defined()) hash_spec(h, t.dtype(), t.shape());
    }
  }
  static std::map<std::string, Tensor> symbolic(const ArgSignature& s, trace::TraceContext& ctx) {
    std::map<std::string, Tensor> m;
    for (std::size_t i = 0; i < s.keys.size(); ++i) m.emplace(s.keys[i], ctx.add_input(s.specs[i]));
    return m;
  }
};

// Static values are part of the cache key; the traced code sees the value itself.
template <class T>
  requires(std::is_arithmetic_v<T> || std::same_as<T, std::string>)
struct ArgTraits<T> {
  using Symbolic = T;
  static StaticValue key(const T& v) {
    if constexpr (std::same_as<T, bool>) return v;
    else if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(v);
    else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
    else return v;
  }
  static ArgSignature signature(const T& v) { return {ArgSignature::Kind::static_value, {}, {}, key(v), {}}; }
  static bool matches(const ArgSignature& s, const T& v) {
    if (s.kind != ArgSignature::Kind::static_value) return false;
    if constexpr (std::same_as<T, bool>) { auto* p = std::get_if<bool>(&s.value); return p && *p == v; }
    else if constexpr (std::is_integral_v<T>) { auto* p = std::get_if<std::int64_t>(&s.value); return p && *p == static_cast<std::int64_t>(v); }
    else if constexpr (std::is_floating_point_v<T>) {  // by bits: NaN matches NaN, -0.0 is not 0.0
      auto* p = std::get_if<double>(&s.value);
      return p && std::bit_cast<std::uint64_t>(*p) == std::bit_cast<std::uint64_t>(static_cast<double>(v));
    }
    else { auto* p = std::get_if<std::string>(&s.value); return p && *p == v; }
  }
  static void flatten(const T&, FlatTensors&) {}
  static void hash(const T& v, std::uint64_t& h) {
    hash_mix(h, static_cast<std::uint64_t>(ArgSignature::Kind::static_value));
    if constexpr (std::same_as<T, std::string>) hash_string_static(h, v);  // no copy
    else hash_static(h, key(v));
  }
  static T symbolic(const ArgSignature& s, trace::TraceContext&) {
    if constexpr (std::same_as<T, bool>) return std::get<bool>(s.value);
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(std::get<std::int64_t>(s.value));
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(std::get<double>(s.value));
    else return std::get<std::string>(s.value);
  }
};

// Variables are captured by reference, like TF: the traced body reads the variable itself;
// another variable (even of the same spec) traces again.
template <> struct ArgTraits<Variable> {
  using Symbolic = Variable;
  static std::int64_t id(const Variable& v) { return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(v.state_ptr().get())); }
  static ArgSignature signature(const Variable& v) {
    if (!v.defined()) fail("function", "an argument variable is undefined (default-constructed)");
    return {ArgSignature::Kind::variable, {v.state_ptr()->spec}, {v.name()}, id(v), v.state_ptr()};
  }
  static bool matches(const ArgSignature& s, const Variable& v) {
    auto* p = std::get_if<std::int64_t>(&s.value);
    return s.kind == ArgSignature::Kind::variable && v.defined() && p && *p == id(v);
  }
  static void flatten(const Variable&, FlatTensors&) {}
  static void hash(const Variable& v, std::uint64_t& h) {
    hash_mix(h, static_cast<std::uint64_t>(ArgSignature::Kind::variable));
    hash_static(h, StaticValue(v.defined() ? id(v) : std::int64_t{0}));
  }
  static Variable symbolic(const ArgSignature& s, trace::TraceContext&) {
    return Variable::from_state(std::static_pointer_cast<VariableState>(s.object));
  }
};

// String literals are static string arguments.
template <std::size_t N> struct ArgTraits<char[N]> {
  using Symbolic = std::string;
  static ArgSignature signature(const char (&v)[N]) { return ArgTraits<std::string>::signature(std::string(v)); }
  static bool matches(const ArgSignature& s, const char (&v)[N]) {
    auto* p = std::get_if<std::string>(&s.value);
    return s.kind == ArgSignature::Kind::static_value && p && *p == v;
  }
  static void flatten(const char (&)[N], FlatTensors&) {}
  static void hash(const char (&v)[N], std::uint64_t& h) {
    hash_mix(h, static_cast<std::uint64_t>(ArgSignature::Kind::static_value));
    hash_string_static(h, std::string_view(v));
  }
  static std::string symbolic(const ArgSignature& s, trace::TraceContext&) { return std::get<std::string>(s.value); }
};

// ---- results ----
// The shape of a result tree, recorded at trace time and replayed to rebuild results.
struct OutputStructure {
  std::vector<std::size_t> list_sizes;
  std::vector<std::vector<std::string>> map_keys;
};

struct OutputCursor {
  std::span<Tensor> tensors;
  std::size_t next_tensor = 0, next_list = 0, next_map = 0;
  const OutputStructure* structure;
};

template <class R> struct OutTraits {
  static_assert(sizeof(R) == 0,
                "ef::function results must be void, Tensor, std::vector<Tensor>, std::map<std::string, Tensor>, "
                "or a std::tuple / std::pair of those");
};

template <> struct OutTraits<Tensor> {
  static void flatten(const Tensor& t, std::vector<Tensor>& out, OutputStructure&) { out.push_back(t); }
  static Tensor build(OutputCursor& c) { return std::move(c.tensors[c.next_tensor++]); }
};
// Lists and maps of results: out of line (src/function/signature.cpp), so that including this
// header does not compile their container code.
template <> struct OutTraits<std::vector<Tensor>> {
  static void flatten(const std::vector<Tensor>& v, std::vector<Tensor>& out, OutputStructure& s);
  static std::vector<Tensor> build(OutputCursor& c);
};
template <> struct OutTraits<std::map<std::string, Tensor>> {
  static void flatten(const std::map<std::string, Tensor>& m, std::vector<Tensor>& out, OutputStructure& s);
  static std::map<std::string, Tensor> build(OutputCursor& c);
};
template <class... Ts> struct OutTraits<std::tuple<Ts...>> {
  static void flatten(const std::tuple<Ts...>& t, std::vector<Tensor>& out, OutputStructure& s) {
    std::apply([&](const auto&... e) { (OutTraits<std::decay_t<decltype(e)>>::flatten(e, out, s), ...); }, t);
  }
  static std::tuple<Ts...> build(OutputCursor& c) { return std::tuple<Ts...>{OutTraits<Ts>::build(c)...}; }
};
template <class A, class B> struct OutTraits<std::pair<A, B>> {
  static void flatten(const std::pair<A, B>& p, std::vector<Tensor>& out, OutputStructure& s) {
    OutTraits<A>::flatten(p.first, out, s);
    OutTraits<B>::flatten(p.second, out, s);
  }
  static std::pair<A, B> build(OutputCursor& c) {
    A a = OutTraits<A>::build(c);  // sequenced: first, then second
    B b = OutTraits<B>::build(c);
    return {std::move(a), std::move(b)};
  }
};

}  // namespace ef::detail
