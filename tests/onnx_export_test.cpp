// ONNX export from C++: what cannot be exported is an ef::Error naming the op; what can is
// written only after the official checker accepts it. (onnxruntime runs the exported MLP, CNN
// and a many-op function against eagerflow in tests/interop/interop_test.py.)
#include <unistd.h>

#include <filesystem>

#include <eagerflow/function/function.h>
#include <eagerflow/saving/onnx.h>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
namespace fs = std::filesystem;

TEST(OnnxExport, OpsWithoutAnOnnxFormAreNamedErrors) {
  fs::path dir = ef::testing::fresh_temp_dir("onnx");
  auto noisy = function([](const Tensor& x) { return x + random::uniform_like(x); });
  expect_error([&] { onnx::export_model(*noisy.get_concrete_function(TensorSpec{DType::float32, {2}}), (dir / "a.onnx").string()); },
               {"onnx", "op 'random_uniform' has no ONNX form"});
  Variable v(zeros({2}), "v");
  auto stateful = function([&](const Tensor& x) {
    v.assign_add(x);
    return Tensor(v);
  });
  expect_error([&] { onnx::export_model(*stateful.get_concrete_function(TensorSpec{DType::float32, {2}}), (dir / "b.onnx").string()); },
               {"'assign_add' has no ONNX form"});
  EXPECT_FALSE(fs::exists(dir / "a.onnx"));
  nn::Dense unbuilt(3);
  expect_error([&] { onnx::export_model(unbuilt, (dir / "c.onnx").string()); }, {"no remembered input spec"});
  // A layer exports at its remembered spec; dropout vanishes in inference; the file appears.
  train::Sequential model;
  model.add<nn::Dense>(4, "relu");
  model.add<nn::Dropout>(0.5);
  model.add<nn::Dense>(2, "softmax");
  model(random::uniform({3, 5}));
  onnx::export_model(model, (dir / "ok.onnx").string());
  EXPECT_GT(fs::file_size(dir / "ok.onnx"), 100u);
  expect_error([&] { onnx::export_model(model, (dir / "missing" / "x.onnx").string()); }, {"cannot create a temporary file"});
  fs::remove_all(dir);
}

TEST(OnnxExport, LoadedModelsAndCustomGradientsExport) {
  fs::path dir = ef::testing::fresh_temp_dir("onnx_calls");
  train::Sequential original;
  original.add<nn::Dense>(4, "relu");
  original(random::uniform({3, 5}));
  save(original, (dir / "saved").string());
  // A loaded model inside the exported layer is exported as the ops it calls.
  train::Sequential wrapped({std::make_shared<nn::SavedModelLayer>((dir / "saved").string())});
  wrapped(random::uniform({3, 5}));
  onnx::export_model(wrapped, (dir / "wrapped.onnx").string());
  EXPECT_GT(fs::file_size(dir / "wrapped.onnx"), 100u);
  // A custom gradient's node passes its outputs on (its rule is for training).
  auto clipped = custom_gradient("clip", [](const Tensor& x) {
    return OutputAndGrad{x * 2.0f, [](const Tensor& dy) { return dy * 0.5f; }};
  });
  auto f = function([&](const Tensor& x) { return clipped(x) + 1.0f; });
  onnx::export_model(*f.get_concrete_function(TensorSpec{DType::float32, {2}}), (dir / "custom.onnx").string());
  EXPECT_GT(fs::file_size(dir / "custom.onnx"), 50u);
  fs::remove_all(dir);
}
