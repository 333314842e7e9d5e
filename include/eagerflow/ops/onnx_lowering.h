#pragma once
// How an op writes itself into an ONNX graph (its OpRules::onnx, eagerflow/ops/op_rules.h). The
// exporter (eagerflow/saving/onnx.h) hands each node's lowering a Lowering: the names of the
// node's inputs and outputs, and ways to add ONNX nodes and constants. A lowering names
// values; it never sees the protobuf.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::ir {
class Graph;
}

namespace ef::onnx {

// ONNX's TensorProto.DataType code of a dtype.
constexpr int dtype_code(DType t) {
  switch (t) {
    case DType::float32: return 1;
    case DType::float64: return 11;
    case DType::int32: return 6;
    case DType::int64: return 7;
    case DType::bool_: return 9;
    case DType::bfloat16: return 16;
    case DType::float16: return 10;
    case DType::string: return 8;
    case DType::uint8: return 2;
    case DType::int8: return 3;
    case DType::uint16: return 4;
    case DType::int16: return 5;
    case DType::uint32: return 12;
    case DType::uint64: return 13;
    case DType::complex64: return 14;
    case DType::complex128: return 15;
  }
  return 0;
}

// A graph attribute (Scan's body): `graph`'s first `num_inputs` inputs are the body's own,
// the rest are read from the enclosing graph by the names in `captures`.
struct SubGraphAttribute {
  std::shared_ptr<const ir::Graph> graph;
  std::size_t num_inputs = 0;
  std::vector<std::string> captures;
};

// One attribute of an ONNX node: an int (bools and enums too), a float, a string, ints, a
// tensor or a graph.
struct Attribute {
  using Value = std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>, Tensor, SubGraphAttribute>;
  template <class T>
    requires std::is_integral_v<T>
  Attribute(std::string n, T v) : name(std::move(n)), value(static_cast<std::int64_t>(v)) {}
  Attribute(std::string n, float v) : name(std::move(n)), value(v) {}
  Attribute(std::string n, const char* v) : name(std::move(n)), value(std::string(v)) {}
  Attribute(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
  Attribute(std::string n, std::vector<std::int64_t> v) : name(std::move(n)), value(std::move(v)) {}
  Attribute(std::string n, Tensor v) : name(std::move(n)), value(std::move(v)) {}
  Attribute(std::string n, SubGraphAttribute v) : name(std::move(n)), value(std::move(v)) {}
  std::string name;
  Value value;
};

class Lowering {
 public:
  virtual ~Lowering() = default;

  // The node's inputs: their names in the ONNX graph and their specs.
  virtual std::size_t num_inputs() const = 0;
  virtual const std::string& input(std::size_t i) const = 0;
  virtual const TensorSpec& input_spec(std::size_t i) const = 0;
  std::vector<std::string> inputs() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < num_inputs(); ++i) out.push_back(input(i));
    return out;
  }

  // The node's outputs: the names the lowering writes them to (fresh ones; later nodes read
  // them), and their specs. rename_output says output i is another value already there.
  virtual std::size_t num_outputs() const = 0;
  virtual const std::string& output(std::size_t i = 0) const = 0;
  virtual const TensorSpec& output_spec(std::size_t i = 0) const = 0;
  virtual void rename_output(std::size_t i, const std::string& name) = 0;

  // A name no other value has ("<hint>_<n>").
  virtual std::string fresh(const std::string& hint) = 0;
  // A constant (an initializer) holding `value`; its name is `name`, or a fresh one when empty.
  virtual std::string constant(const Tensor& value, const std::string& name = "") = 0;
  // An int64 vector constant (shapes, axes, pads).
  std::string ints(const std::vector<std::int64_t>& v) {
    return constant(tensor(v, Shape{static_cast<std::int64_t>(v.size())}));
  }
  // A scalar constant of dtype t.
  virtual std::string scalar_constant(double v, DType t) = 0;
  // Adds a node of ONNX op `type`.
  virtual void node(const std::string& type, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs, std::vector<Attribute> attributes = {}) = 0;
  // The node cannot be exported in this case: an ef::Error (unimplemented) naming the op, the
  // reason and the layer.
  [[noreturn]] virtual void unsupported(const std::string& why) = 0;
};

}  // namespace ef::onnx
