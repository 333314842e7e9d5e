// The C++ side of the interop tests (tests/interop/interop_test.py drives it):
//   interop_tool write-safetensors PATH   writes known tensors for Python to check
//   interop_tool check-safetensors PATH   checks the tensors Python wrote (see the script)
//   interop_tool export-onnx DIR          exports an MLP and a CNN (mlp.onnx, cnn.onnx) with
//       inputs and eagerflow's outputs (onnx_io.safetensors) for onnxruntime to compare
//   interop_tool run-saved-model DIR IN OUT   loads a saved model (ef::load), runs
//       "serving_default" on tensor "x" of IN and writes its result as "y" to OUT
// Exit status 0 when the check holds; the reason on stderr otherwise.
#include <cstdio>
#include <cstring>
#include <string>

#include <eagerflow/eagerflow.h>
#include <eagerflow/saving/onnx.h>

using namespace ef;

namespace {

int fail(const std::string& why) {
  std::fprintf(stderr, "interop_tool: %s\n", why.c_str());
  return 1;
}

int write_safetensors(const std::string& path) {
  io::save_safetensors(path,
                       {{"dense/kernel", reshape(arange(0.0, 6.0, 1.0), {2, 3}) * 0.5f},
                        {"f64", tensor(std::vector<double>{1.0 / 3.0, -1e300})},
                        {"i32", tensor(std::vector<std::int32_t>{-5, 7})},
                        {"i64", tensor(std::vector<std::int64_t>{INT64_MIN, INT64_MAX})},
                        {"mask", tensor(std::vector<bool>{true, false, true})},
                        {"scalar", scalar(2.5f)},
                        {"empty", zeros({0, 4})}},
                       {{"written_by", "eagerflow"}});
  return 0;
}

// What interop_test.py writes with safetensors.numpy.save_file.
int check_safetensors(const std::string& path) {
  io::TensorFile f = io::load_safetensors(path);
  const Tensor* a = f.find("a");
  const Tensor* b = f.find("b");
  const Tensor* c = f.find("c");
  if (!a || !b || !c) return fail("missing tensors a, b, c");
  if (a->spec() != TensorSpec{DType::float32, {2, 2}, {}}) return fail("a is " + a->spec().str());
  if (a->to_vector<float>() != std::vector<float>{1.0f, 2.0f, 3.0f, 4.5f}) return fail("a's values differ");
  if (b->spec() != TensorSpec{DType::int64, {3}, {}} || b->to_vector<std::int64_t>() != std::vector<std::int64_t>{-1, 0, 1})
    return fail("b is " + b->str());
  if (c->dtype() != DType::float64 || c->to_vector<double>() != std::vector<double>{0.1})
    return fail("c is " + c->str());
  return 0;
}

int export_onnx(const std::string& dir) {
  random::set_seed(42);
  train::Sequential mlp;
  mlp.add<nn::Flatten>();
  mlp.add<nn::Dense>(64, "relu");
  mlp.add<nn::Dense>(32, "gelu");
  mlp.add<nn::Dense>(10, "softmax");
  train::Sequential cnn;
  cnn.add<nn::Reshape>(Shape{28, 28, 1});
  cnn.add<nn::Conv2D>(8, Stride2{3, 3}, nn::Conv2DOptions{.activation = "relu"});
  cnn.add<nn::MaxPool2D>();
  cnn.add<nn::Conv2D>(16, Stride2{3, 3}, nn::Conv2DOptions{.strides = {1, 1}, .padding = "same", .activation = "tanh"});
  cnn.add<nn::AveragePooling2D>(Stride2{2, 2}, std::nullopt, "same");
  cnn.add<nn::BatchNormalization>();
  cnn.add<nn::Flatten>();
  cnn.add<nn::Dropout>(0.3);
  cnn.add<nn::Dense>(10);
  Tensor x = random::uniform({5, 28, 28});  // images in [0, 1], as MNIST
  mlp(x);
  cnn(x);
  for (auto& w : cnn.weights())  // moving statistics that are not 0 and 1
    if (w.name().find("moving_variance") != std::string::npos) w.assign(random::uniform(w.shape(), 0.5, 2.0));
    else if (w.name().find("moving_mean") != std::string::npos) w.assign(random::normal(w.shape(), 0.0, 0.1));
  // Many op kinds in one function (static shapes; several outputs).
  auto many = function([](const Tensor& x) {
    Tensor a = softmax(x * 2.0f, -1) + log_softmax(x, 0);
    Tensor b = sum(a, {1}, true) - mean(a, {0}) + max(x, {-1}, true) * min(x, {1}, true);
    Tensor c = where(x > 0.0f, sqrt(abs(x)), rsqrt(abs(x) + 1.0f)) + exp(x * 0.1f) - log(abs(x) + 1.0f);
    Tensor d = sigmoid(x) * ef::tanh(x) + erf(x) - ef::sin(x) * ef::cos(x) + maximum(x, c) - minimum(x, b) +
               pow(abs(x) + 1.0f, b * 0.1f) + gelu(x) - square(x) * 0.01f + relu(-x);
    Tensor e = matmul(d, x, false, true);
    Tensor f = concat({transpose(e), e}, 0);
    Tensor g = gather(slice(f, {1, 0}, {8, 4}, {2, 1}), tensor(std::vector<std::int64_t>{0, 2, 3, 1}), 0);
    Tensor h = one_hot(argmax(g, -1), 4);
    Tensor k = squeeze(expand_dims(h, 1), {1}) + full_like(h, 0.5) + zeros_like(h) + broadcast_to(sum(x, {1}), Shape{4, 4});
    Tensor l = cast(cast(g * 3.0f, DType::int32), DType::float32);
    return std::vector<Tensor>{d, g + k + l, reshape(x, Shape{2, 12}), e};
  });
  Tensor xm = random::normal({4, 6});
  onnx::export_model(*many.get_concrete_function(TensorSpec{DType::float32, {4, 6}}), dir + "/many.onnx");
  std::vector<Tensor> many_out = many(xm);
  onnx::export_model(mlp, dir + "/mlp.onnx");
  onnx::export_model(cnn, dir + "/cnn.onnx");
  io::save_safetensors(dir + "/onnx_io.safetensors", {{"x", x}, {"mlp", mlp(x, false)}, {"cnn", cnn(x, false)}, {"many_x", xm},
                                                      {"many_0", many_out[0]}, {"many_1", many_out[1]},
                                                      {"many_2", many_out[2]}, {"many_3", many_out[3]}});
  return 0;
}

int run_saved_model(const std::string& dir, const std::string& in, const std::string& out) {
  SavedModel m = load(dir);
  io::TensorFile f = io::load_safetensors(in);
  if (!f.find("x")) return fail("no tensor x in " + in);
  io::save_safetensors(out, {{"y", m("serving_default", {*f.find("x")})[0]}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "run-saved-model") {
    try {
      return run_saved_model(argv[2], argv[3], argv[4]);
    } catch (const Error& e) {
      return fail(e.what());
    }
  }
  if (argc != 3) return fail("usage: interop_tool write-safetensors|check-safetensors PATH");
  std::string cmd = argv[1], path = argv[2];
  try {
    if (cmd == "write-safetensors") return write_safetensors(path);
    if (cmd == "check-safetensors") return check_safetensors(path);
    if (cmd == "export-onnx") return export_onnx(path);
  } catch (const Error& e) {
    return fail(e.what());
  }
  return fail("unknown command " + cmd);
}
