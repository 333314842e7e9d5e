#pragma once
// Export of inference graphs to ONNX (opset 17), built with the official ONNX protobuf schema
// (Debian's libonnx-dev) and checked with its checker before the file is written.
//
//   ef::onnx::export_model(model, "build/mlp.onnx");   // at the model's remembered input spec
//
// Covered: Dense and Conv2D (NHWC, transposed around ONNX's NCHW Conv), pooling, activations,
// softmax, BatchNormalization in inference (its elementwise ops), elementwise, reduction and
// shape ops. Inputs keep dynamic dims ("batch" for the first). Ops without an ONNX form
// (random draws, assignments, print, gradient-only ops, control flow) are an ef::Error naming
// the op. Variables become initializers holding their current values.
#include <memory>
#include <optional>
#include <string>

#include "eagerflow/function/concrete_function.h"
#include "eagerflow/nn/layer.h"

namespace ef::onnx {

inline constexpr int kOpset = 17;

void export_model(const ConcreteFunction& function, const std::string& path);
// `layer` in inference mode at `input_spec` (default: Layer::save_spec, dynamic batch).
void export_model(nn::Layer& layer, const std::string& path, std::optional<TensorSpec> input_spec = std::nullopt);

}  // namespace ef::onnx
