// read_file and write_file: stateful ops (a trace keeps them; each replay does the I/O).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/errno_kind.h"
#include "eagerflow/core/string_tensor.h"
#include "eagerflow/io/files.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

std::string scalar_string(const Primitive& op, const Tensor& t, const char* what) {
  if (t.dtype() != DType::string || t.rank() != 0)
    fail(kWrongType, op.name(), std::string(what) + " must be a string scalar, got " + t.spec().str());
  return std::string(t.item<std::string_view>());
}

class ReadFile : public MergeablePrimitive<ReadFile> {
 public:
  const char* name() const override { return "read_file"; }
  bool takes_strings() const override { return true; }
  bool is_stateful() const override { return true; }  // the file may change between calls
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    if (in[0].dtype() != DType::string || in[0].rank() != 0)
      fail(kWrongType, name(), "filename must be a string scalar, got " + in[0].spec().str());
    return {{DType::string, Shape{}, {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    std::string path = scalar_string(*this, in[0], "filename");
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(detail::errno_kind(errno), name(), path + ": " + std::strerror(errno));
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (f.bad()) fail(detail::errno_kind(errno), name(), path + ": read failed: " + std::strerror(errno));
    out[0] = string_scalar(bytes);
  }
};

class WriteFile : public MergeablePrimitive<WriteFile> {
 public:
  const char* name() const override { return "write_file"; }
  bool takes_strings() const override { return true; }
  bool has_effect() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 2);
    for (const Tensor& t : in)
      if (t.dtype() != DType::string || t.rank() != 0)
        fail(kWrongType, name(), "filename and contents must be string scalars, got " + describe(in));
    return {};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor>) const override {
    std::string path = scalar_string(*this, in[0], "filename");
    std::string_view bytes = in[1].item<std::string_view>();
    io::write_file_atomically(path, std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
  }
};

}  // namespace

void detail::add_file_factories(detail::OpFactories& f) {
  f["read_file"] = [](const OpParams&) { return std::make_shared<ReadFile>(); };
  f["write_file"] = [](const OpParams&) { return std::make_shared<WriteFile>(); };
}

void detail::register_file_rules() {
  register_op_rules<ReadFile>({.runs_per_example = true, .onnx_unsupported = "file I/O has no ONNX form"});
  register_op_rules<WriteFile>({.runs_per_example = true, .onnx_unsupported = "file I/O has no ONNX form"});
}

namespace io {
Tensor read_file(const Tensor& filename) { return dispatch1(ReadFile(), {filename}); }
void write_file(const Tensor& filename, const Tensor& contents) { dispatch(WriteFile(), std::vector<Tensor>{filename, contents}); }
}  // namespace io

}  // namespace ef
