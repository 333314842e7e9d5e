#pragma once
// An op's parameters as one ordered, typed list (MLX's Primitive::state()). Printing (the
// graph text), equality for common-subexpression elimination and the saved-model format all
// derive from it, and a saved model rebuilds an op from it through the factory registered
// for the op's name beside the op itself (src/ops/op_factories.h): a new op needs no edit in io.
//
//   OpParams parameters() const override {
//     return OpParams().add("axes", axes_).add_flag("keepdims", keepdims_);
//   }   // prints "axes=(1,) keepdims=True"
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "eagerflow/core/dtype.h"
#include "eagerflow/core/shape.h"

namespace ef {

// A bare word ("same", a variable's name): printed as it is. Text (std::string) prints quoted.
struct Word {
  std::string text;
  bool operator==(const Word&) const = default;
};

class OpParams {
 public:
  // The token of a parameter read back from text, typed when a getter asks for it.
  struct Raw {
    std::string text;
    bool operator==(const Raw&) const = default;
  };
  using Value = std::variant<bool, std::int64_t, double, std::string, Word, std::vector<std::int64_t>, Shape, DType, Raw>;

  // Any alternative of Value; an int is an int64 and a std::vector<int> a tuple (axes). Taken
  // as a template so that a double stays a double (an `int` overload would truncate it).
  template <class T>
  OpParams& add(std::string name, const T& value) {
    if constexpr (std::is_same_v<T, int>) return add_value(std::move(name), Value(std::int64_t{value}));
    else if constexpr (std::is_same_v<T, std::vector<int>>)
      return add_value(std::move(name), Value(std::vector<std::int64_t>(value.begin(), value.end())));
    else return add_value(std::move(name), Value(value));
  }
  // Flags are listed only when set ("keepdims=True"); absent reads as false.
  OpParams& add_flag(std::string name, bool set) { return set ? add(std::move(name), Value(true)) : *this; }

  // "name=value name=value": tuples "(1,)", shapes "[?,3]", dtypes by name, text quoted with
  // \" \\ \n escaped, reals in the shortest text that reads back to the same double.
  std::string str() const;
  // The parameters printed by str(), as raw tokens; `where` prefixes errors ("'m.json' node 3 (sum)").
  static OpParams parse(const std::string& text, const std::string& where);

  // Reals compare by bits (0.0 and -0.0 differ, as the tensors they fill do).
  bool operator==(const OpParams& other) const;
  bool empty() const { return items_.empty(); }

  // Typed reads (for factories), of a typed or a parsed value; a missing or mistyped one is
  // an ef::Error naming `where` and the parameter.
  bool has(const std::string& name) const;
  bool flag(const std::string& name) const;
  std::int64_t integer(const std::string& name) const;
  // An axis: an integer within +-2^20.
  int axis(const std::string& name) const;
  std::vector<int> axes(const std::string& name) const;
  double real(const std::string& name) const;
  std::string text(const std::string& name) const;
  std::string word(const std::string& name) const;
  std::vector<std::int64_t> ints(const std::string& name) const;
  Shape shape(const std::string& name) const;
  DType dtype(const std::string& name) const;
  [[noreturn]] void bad(const std::string& why) const;

 private:
  OpParams& add_value(std::string name, Value value);
  const Value& at(const std::string& name) const;
  std::vector<std::pair<std::string, Value>> items_;
  std::string where_ = "op parameters";
};

}  // namespace ef
