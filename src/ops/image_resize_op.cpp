// ef::image::resize of images whose height or width is known only at run time (a decoded image
// inside a traced Dataset.map, as TF's tutorials resize them): one op whose kernel computes the
// taps for the concrete size and runs the composition of image_resize.cpp. Not differentiable
// (the composition is, where the size is static); the batch is resized example by example.
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

class ResizeDynamic : public MergeablePrimitive<ResizeDynamic> {
 public:
  ResizeDynamic(std::int64_t height, std::int64_t width, std::string method, bool preserve_aspect_ratio, bool antialias)
      : height_(height), width_(width), method_(std::move(method)), preserve_(preserve_aspect_ratio), antialias_(antialias) {}
  const char* name() const override { return "resize_dynamic"; }
  OpParams parameters() const override {
    return OpParams().add("size", std::vector<std::int64_t>{height_, width_}).add("method", method_)
        .add_flag("preserve_aspect_ratio", preserve_).add_flag("antialias", antialias_);
  }
  bool takes_bfloat16() const override { return true; }  // the composition converts for itself
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    const Tensor& x = in[0];
    if (x.rank() != 3 && x.rank() != 4) fail(name(), "takes images [h, w, c] or [n, h, w, c], got " + x.spec().str());
    std::vector<std::int64_t> dims = x.shape().dims();
    int h = x.rank() - 3;
    dims[static_cast<std::size_t>(h)] = preserve_ ? kDynamic : height_;
    dims[static_cast<std::size_t>(h + 1)] = preserve_ ? kDynamic : width_;
    DType out = method_ == "nearest" ? x.dtype() : DType::float32;
    return {{out, Shape(std::move(dims)), {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    out[0] = image::resize(in[0], height_, width_, method_, preserve_, antialias_);
  }

 private:
  std::int64_t height_, width_;
  std::string method_;
  bool preserve_, antialias_;
};

}  // namespace

void detail::add_image_resize_factories(detail::OpFactories& f) {
  f["resize_dynamic"] = [](const OpParams& p) {
    std::vector<std::int64_t> size = p.ints("size");
    if (size.size() != 2) p.bad("size must be two integers");
    return std::make_shared<ResizeDynamic>(size[0], size[1], p.text("method"), p.flag("preserve_aspect_ratio"),
                                           p.flag("antialias"));
  };
}

void detail::register_image_resize_rules() {
  register_op_rules<ResizeDynamic>({.runs_per_example = true,
                                    .onnx_unsupported = "a resize of images of unknown size is not exported"});
}

namespace image {
Tensor resize_unknown_size(const Tensor& images, std::int64_t new_height, std::int64_t new_width, const std::string& method,
                           bool preserve_aspect_ratio, bool antialias) {
  return dispatch1(ResizeDynamic(new_height, new_width, method, preserve_aspect_ratio, antialias), {images});
}
}  // namespace image

}  // namespace ef
