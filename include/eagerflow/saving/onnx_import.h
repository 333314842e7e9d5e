#pragma once
// Import of ONNX models (the official protobuf schema, Debian's libonnx-dev) as a function of
// eagerflow ops: every ONNX node is interpreted with the ops that eager mode and tracing use,
// inside an ef::function trace, so a call replays a compiled graph and a GradientTape
// differentiates through it. Floating-point initializers of rank >= 1 (the weights; not
// Resize's scales) become trainable ef::Variables, so the model fine-tunes with any optimizer.
//
//   auto m = ef::onnx::load_model("mlp.onnx");
//   ef::Tensor y = m({x})[0];                       // traces once per input shape, then replays
//   auto cf = m.concrete_function();               // at the file's input specs (batch dynamic)
//
// Opsets 11 to 21 of the default domain; ops: supported_ops(). A node of any other op, or of
// another domain, is an ef::Error (unimplemented) naming every such op and node at once.
// Damaged or hostile files (truncated, oversized, dangling or cyclic graphs, bad attributes,
// external data) are ef::Errors naming the file and what is wrong.
#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/function/concrete_function.h"
#include "eagerflow/variable.h"

namespace ef::onnx {

inline constexpr int kMinImportOpset = 11;
inline constexpr int kMaxImportOpset = 21;
// Files above this size are refused before they are parsed.
inline constexpr std::size_t kMaxImportBytes = (std::size_t{1} << 31) - 1;  // what protobuf parses

namespace detail {
struct Program;
struct ImportedState;
}  // namespace detail

class ImportedModel {
 public:
  // The graph's inputs (initializers excluded), their specs (dim_param or unset dims: kDynamic)
  // and its outputs' names.
  const std::vector<std::string>& input_names() const;
  const std::vector<TensorSpec>& input_specs() const;
  const std::vector<std::string>& output_names() const;
  int opset() const;

  // Runs the model: inputs by position, or by ONNX input name. Each new input shape traces once
  // (all shapes static, so shape subgraphs fold); a call under a GradientTape or inside another
  // trace is one call op whose gradient reaches variables().
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> operator()(const std::map<std::string, Tensor>& inputs) const;

  // The weights (floating initializers of rank >= 1), in the file's order, named as there.
  const std::vector<Variable>& variables() const;
  std::vector<Variable> trainable_variables() const;

  // The traced function at `specs` (default: input_specs(), dynamic dims kept). Shape
  // subgraphs over a dynamic dim run as runtime-shape ops where eagerflow has one; a graph
  // needing a dynamic dim's value where only a static one will do is an ef::Error.
  std::shared_ptr<const ConcreteFunction> concrete_function(std::vector<TensorSpec> specs = {}) const;

 private:
  friend ImportedModel load_model_from_bytes(std::span<const std::byte>, const std::string&);
  std::shared_ptr<detail::ImportedState> state_;
};

ImportedModel load_model(const std::string& path);
// The same from a serialized ModelProto in memory; `what` names it in errors.
ImportedModel load_model_from_bytes(std::span<const std::byte> bytes, const std::string& what = "<onnx bytes>");

// The ONNX op types the importer interprets (default domain), sorted.
std::vector<std::string> supported_ops();

}  // namespace ef::onnx
