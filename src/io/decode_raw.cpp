// decode_raw: the bytes of each string as numbers (TF's DecodeRaw / DecodePaddedRaw), an op so
// that it runs inside Dataset.map graphs (the usual image_raw -> uint8 pattern).
#include <algorithm>
#include <cstring>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/io/example.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

class DecodeRaw : public MergeablePrimitive<DecodeRaw> {
 public:
  DecodeRaw(DType out_type, bool little_endian, std::int64_t fixed_length)
      : out_type_(out_type), little_endian_(little_endian), fixed_length_(fixed_length) {
    if (out_type == DType::string) fail(kWrongType, name(), "out_type cannot be string");
    const auto size = static_cast<std::int64_t>(size_of(out_type));
    if (fixed_length >= 0 && fixed_length % size)
      fail(name(), "fixed_length (" + std::to_string(fixed_length) + ") must be a multiple of the size of out_type (" +
                       std::to_string(size) + ")");
  }
  const char* name() const override { return "decode_raw"; }
  bool takes_strings() const override { return true; }
  bool takes_bfloat16() const override { return true; }  // it writes any dtype's bytes as they are
  bool is_differentiable() const override { return false; }
  OpParams parameters() const override {
    OpParams p;
    p.add("out_type", out_type_);
    p.add_flag("big_endian", !little_endian_);
    p.add("fixed_length", fixed_length_);
    return p;
  }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    if (in[0].dtype() != DType::string) fail(kWrongType, name(), "input_bytes must be strings, got " + in[0].spec().str());
    std::vector<std::int64_t> dims = in[0].shape().dims();
    dims.push_back(fixed_length_ >= 0 ? fixed_length_ / static_cast<std::int64_t>(size_of(out_type_)) : kDynamic);
    return {{out_type_, Shape(dims), {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    auto xs = in[0].data<std::string_view>();
    const std::size_t size = size_of(out_type_);
    std::size_t n = fixed_length_ >= 0 ? static_cast<std::size_t>(fixed_length_) : (xs.empty() ? 0 : xs[0].size());
    if (fixed_length_ < 0) {
      for (std::size_t i = 0; i < xs.size(); ++i)
        if (xs[i].size() != n)
          fail(name(), "DecodeRaw requires input strings to all be the same size, but element " + std::to_string(i) +
                           " has size " + std::to_string(xs[i].size()) + " != " + std::to_string(n));
      if (n % size)
        fail(name(), "Input to DecodeRaw has length " + std::to_string(n) + " that is not a multiple of " +
                         std::to_string(size) + ", the size of " + std::string(name_of(out_type_)));
    }
    std::vector<std::int64_t> dims = in[0].shape().dims();
    dims.push_back(static_cast<std::int64_t>(n / size));
    Tensor t = Tensor::empty(out_type_, Shape(dims));
    auto* dst = static_cast<char*>(t.raw_mutable_data());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      char* row = dst + i * n;
      std::size_t k = std::min(n, xs[i].size());
      std::memcpy(row, xs[i].data(), k);
      std::memset(row + k, 0, n - k);  // DecodePaddedRaw: short strings padded with zeros
      if (!little_endian_ && size > 1)
        for (std::size_t at = 0; at < n; at += size) std::reverse(row + at, row + at + size);
    }
    out[0] = std::move(t);
  }

 private:
  DType out_type_;
  bool little_endian_;
  std::int64_t fixed_length_;
};

}  // namespace

void detail::add_decode_raw_factories(detail::OpFactories& f) {
  f["decode_raw"] = [](const OpParams& p) {
    return std::make_shared<DecodeRaw>(p.dtype("out_type"), !p.flag("big_endian"), p.integer("fixed_length"));
  };
}

void detail::register_decode_raw_rules() {
  register_op_rules<DecodeRaw>({.runs_per_example = true, .onnx_unsupported = "string ops are not exported to ONNX"});
}

namespace io {
Tensor decode_raw(const Tensor& input_bytes, DType out_type, bool little_endian, std::int64_t fixed_length) {
  return dispatch1(DecodeRaw(out_type, little_endian, fixed_length), {input_bytes});
}
}  // namespace io

}  // namespace ef
