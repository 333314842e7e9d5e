#pragma once
// The checked form of an ONNX graph that the importer interprets (src/io/onnx_import.cpp reads
// and validates the protobuf into it; src/io/onnx_import_ops*.cpp run its nodes with ef ops).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/core/tensor.h"
#include "eagerflow/variable.h"

namespace ef::onnx::detail {

// A node the file describes wrongly (an attribute of the wrong type, inconsistent inputs): as
// opposed to a form the importer does not handle, or a shape only known at run time.
class MalformedNode : public Error {
 public:
  using Error::Error;
};

// What is known at trace time of an int64 shape vector: its values (kDynamic where only the run
// knows) and, for each, the tensor and axis it is the dim of (made by Shape; null for others).
struct KnownDims {
  std::vector<std::int64_t> values;
  std::vector<std::pair<const void*, int>> origin;
  static KnownDims of(std::vector<std::int64_t> v) {
    KnownDims k;
    k.origin.assign(v.size(), {nullptr, -1});
    k.values = std::move(v);
    return k;
  }
};

struct Attr {
  enum class Type { f, i, s, t, floats, ints, strings, other };
  Type type = Type::other;
  float f = 0;
  std::int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string op, name;
  std::vector<int> inputs;   // value ids; -1 for an omitted optional input ("")
  std::vector<int> outputs;  // -1 for an omitted optional output
  std::map<std::string, Attr> attrs;
};

struct Program {
  std::string what;  // the file, for errors
  int opset = 0;
  std::vector<std::string> value_names;
  std::vector<int> inputs;
  std::vector<std::string> input_names;
  std::vector<TensorSpec> input_specs;
  std::vector<int> outputs;
  std::vector<std::string> output_names;
  std::vector<std::pair<int, Tensor>> constants;  // initializers kept as constants
  std::vector<std::pair<int, int>> variables;     // (value id, index in the variable list)
  std::vector<Node> nodes;                        // in an order where inputs come first
};

// Runs one node: `in` holds its inputs (undefined for omitted ones); returns one tensor per
// output (undefined for outputs the op does not make, which must then be unused).
class NodeContext {
 public:
  NodeContext(const Program& p, const Node& n, std::vector<Tensor> in,
              std::vector<std::optional<KnownDims>> partial)
      : program(p), node(n), in_(std::move(in)), partial_(std::move(partial)) {}
  const Program& program;
  const Node& node;

  std::size_t num_inputs() const { return in_.size(); }
  bool has(std::size_t i) const { return i < in_.size() && in_[i].defined(); }
  const Tensor& in(std::size_t i) const;
  std::size_t num_outputs() const { return node.outputs.size(); }

  // Attributes, checked for their ONNX type.
  bool has_attr(const std::string& name) const { return node.attrs.count(name) != 0; }
  std::int64_t attr_int(const std::string& name, std::int64_t fallback) const;
  std::int64_t attr_int(const std::string& name) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<std::int64_t> attr_ints(const std::string& name, std::vector<std::int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  const Tensor& attr_tensor(const std::string& name) const;

  // The values of an integer input that must be known when the graph is traced (shapes, axes,
  // pads): an error naming the node when it is computed from a runtime value.
  std::vector<std::int64_t> ints(std::size_t i) const;
  // What is known of an int64 shape vector: its values with kDynamic for those only known at
  // run time (a dynamic dim that went through Shape, Gather, Concat ...); nullopt when nothing.
  std::optional<std::vector<std::int64_t>> known(std::size_t i) const;
  std::optional<KnownDims> known_dims(std::size_t i) const;
  double number(std::size_t i) const;  // a scalar input known at trace time

  // An axis attribute/argument normalized against `rank` (negative counts from the end).
  int axis(std::int64_t a, int rank) const;
  // Refuses a result of more than 2^28 elements that the node would make from its attributes or
  // constant inputs (pads, repeats, shapes): a damaged file cannot make it allocate gigabytes.
  void check_size(const Shape& result) const;
  [[noreturn]] void bad(const std::string& message) const;           // a malformed node
  [[noreturn]] void unsupported(const std::string& message) const;   // a valid form not handled

  // Set by ops computing shape vectors partly known at trace time (see known()).
  std::vector<std::optional<KnownDims>> partial_out;

 private:
  std::vector<Tensor> in_;
  std::vector<std::optional<KnownDims>> partial_;
};

using OpFn = std::function<std::vector<Tensor>(NodeContext&)>;
// The op table (src/io/onnx_import_ops*.cpp register into it).
const std::map<std::string, OpFn>& op_table();
void add_math_ops(std::map<std::string, OpFn>& t);
void add_shape_ops(std::map<std::string, OpFn>& t);
void add_nn_ops(std::map<std::string, OpFn>& t);
void add_rnn_ops(std::map<std::string, OpFn>& t);

// ONNX's TensorProto data type code -> DType (an error naming `where` for those not handled).
DType dtype_from_code(std::int64_t code, const std::string& where);

// Runs the program on `args` with the variables' current values (inside a trace: reads).
std::vector<Tensor> run_program(const Program& p, const std::vector<Variable>& vars, const std::vector<Tensor>& args);

}  // namespace ef::onnx::detail
