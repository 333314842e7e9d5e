// The C++ side of the interop tests (tests/interop/interop_test.py drives it):
//   interop_tool write-safetensors PATH   writes known tensors for Python to check
//   interop_tool check-safetensors PATH   checks the tensors Python wrote (see the script)
//   interop_tool run-saved-model DIR IN OUT   loads a saved model (ef::load), runs
//       "serving_default" on tensor "x" of IN and writes its result as "y" to OUT
// Exit status 0 when the check holds; the reason on stderr otherwise.
#include <cstdio>
#include <cstring>
#include <string>

#include <eagerflow/eagerflow.h>

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
  } catch (const Error& e) {
    return fail(e.what());
  }
  return fail("unknown command " + cmd);
}
