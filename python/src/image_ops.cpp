// ef::image (eagerflow/ops/image.h) as _core._image; python/eagerflow/image.py gives the functions
// TF's signatures (name=None, ResizeMethod, size as a list or tensor).
#include "bindings.h"
#include "convert.h"
#include "eagerflow/ops/image.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

Tensor T(H h) { return to_tensor(h); }

std::optional<std::uint64_t> optional_seed(H seed) {
  if (seed.is_none()) return std::nullopt;
  return seed_arg(seed, "seed");
}

}  // namespace

void init_image(nb::module_& m) {
  nb::module_ im = m.def_submodule("_image", "ef.image's functions (python/eagerflow/image.py)");
#define EFPY_IMAGE_UNARY(name) im.def(#name, [](H x) { return ef::image::name(T(x)); }, nb::arg("image"));
  EFPY_IMAGE_UNARY(flip_left_right) EFPY_IMAGE_UNARY(flip_up_down) EFPY_IMAGE_UNARY(transpose)
  EFPY_IMAGE_UNARY(rgb_to_grayscale) EFPY_IMAGE_UNARY(grayscale_to_rgb) EFPY_IMAGE_UNARY(per_image_standardization)
  EFPY_IMAGE_UNARY(image_gradients) EFPY_IMAGE_UNARY(total_variation) EFPY_IMAGE_UNARY(sobel_edges)
#undef EFPY_IMAGE_UNARY
  im.def("rot90", [](H x, std::int64_t k) { return ef::image::rot90(T(x), static_cast<int>(k % 4)); },
         nb::arg("image"), nb::arg("k") = 1);
  im.def("random_flip_left_right", [](H x, H seed) { return ef::image::random_flip_left_right(T(x), optional_seed(seed)); },
         nb::arg("image"), nb::arg("seed").none() = nb::none());
  im.def("random_flip_up_down", [](H x, H seed) { return ef::image::random_flip_up_down(T(x), optional_seed(seed)); },
         nb::arg("image"), nb::arg("seed").none() = nb::none());
  im.def("crop_and_resize", [](H x, H boxes, H box_indices, std::int64_t crop_height, std::int64_t crop_width,
                               const std::string& method, H extrapolation_value) {
           return ef::image::crop_and_resize(T(x), T(boxes), to_tensor_as(box_indices, ef::DType::int32), crop_height, crop_width,
                                             method, float_arg(extrapolation_value, "extrapolation_value"));
         }, nb::arg("image"), nb::arg("boxes"), nb::arg("box_indices"), nb::arg("crop_height"), nb::arg("crop_width"),
         nb::arg("method") = "bilinear", nb::arg("extrapolation_value") = 0.0);
  im.def("extract_patches", [](H x, H sizes, H strides, H rates, const std::string& padding) {
           return ef::image::extract_patches(T(x), dims_arg(sizes, "sizes", false), dims_arg(strides, "strides", false),
                                             dims_arg(rates, "rates", false), padding);
         }, nb::arg("images"), nb::arg("sizes"), nb::arg("strides"), nb::arg("rates"), nb::arg("padding"));
  im.def("random_crop", [](H x, H size, H seed) {
           return ef::image::random_crop(T(x), dims_arg(size, "size", /*allow_unknown=*/false), optional_seed(seed));
         }, nb::arg("value"), nb::arg("size"), nb::arg("seed").none() = nb::none());
  // The stateless forms take one 64-bit key (image.py packs TF's seed pair into it).
  im.def("stateless_random_flip_left_right", [](H x, std::uint64_t key) { return ef::image::stateless_random_flip_left_right(T(x), key); },
         nb::arg("image"), nb::arg("key"));
  im.def("stateless_random_flip_up_down", [](H x, std::uint64_t key) { return ef::image::stateless_random_flip_up_down(T(x), key); },
         nb::arg("image"), nb::arg("key"));
  im.def("stateless_random_crop", [](H x, H size, std::uint64_t key) {
           return ef::image::stateless_random_crop(T(x), dims_arg(size, "size", false), key);
         }, nb::arg("value"), nb::arg("size"), nb::arg("key"));
  im.def("stateless_random_brightness", [](H x, H max_delta, std::uint64_t key) {
           return ef::image::stateless_random_brightness(T(x), float_arg(max_delta, "max_delta"), key);
         }, nb::arg("image"), nb::arg("max_delta"), nb::arg("key"));
  im.def("stateless_random_hue", [](H x, H max_delta, std::uint64_t key) {
           return ef::image::stateless_random_hue(T(x), float_arg(max_delta, "max_delta"), key);
         }, nb::arg("image"), nb::arg("max_delta"), nb::arg("key"));
  im.def("stateless_random_contrast", [](H x, H lower, H upper, std::uint64_t key) {
           return ef::image::stateless_random_contrast(T(x), float_arg(lower, "lower"), float_arg(upper, "upper"), key);
         }, nb::arg("image"), nb::arg("lower"), nb::arg("upper"), nb::arg("key"));
  im.def("stateless_random_saturation", [](H x, H lower, H upper, std::uint64_t key) {
           return ef::image::stateless_random_saturation(T(x), float_arg(lower, "lower"), float_arg(upper, "upper"), key);
         }, nb::arg("image"), nb::arg("lower"), nb::arg("upper"), nb::arg("key"));
  im.def("crop_to_bounding_box", [](H x, H oh, H ow, H th, H tw) {
           return ef::image::crop_to_bounding_box(T(x), int_arg(oh, "offset_height"), int_arg(ow, "offset_width"),
                                                  int_arg(th, "target_height"), int_arg(tw, "target_width"));
         }, nb::arg("image"), nb::arg("offset_height"), nb::arg("offset_width"), nb::arg("target_height"), nb::arg("target_width"));
  im.def("pad_to_bounding_box", [](H x, H oh, H ow, H th, H tw) {
           return ef::image::pad_to_bounding_box(T(x), int_arg(oh, "offset_height"), int_arg(ow, "offset_width"),
                                                 int_arg(th, "target_height"), int_arg(tw, "target_width"));
         }, nb::arg("image"), nb::arg("offset_height"), nb::arg("offset_width"), nb::arg("target_height"), nb::arg("target_width"));
  im.def("central_crop", [](H x, H fraction) { return ef::image::central_crop(T(x), float_arg(fraction, "central_fraction")); },
         nb::arg("image"), nb::arg("central_fraction"));
  im.def("resize_with_crop_or_pad", [](H x, H th, H tw) {
           return ef::image::resize_with_crop_or_pad(T(x), int_arg(th, "target_height"), int_arg(tw, "target_width"));
         }, nb::arg("image"), nb::arg("target_height"), nb::arg("target_width"));
  im.def("resize", [](H x, std::int64_t new_height, std::int64_t new_width, const std::string& method,
                      bool preserve_aspect_ratio, bool antialias) {
           return ef::image::resize(T(x), new_height, new_width, method, preserve_aspect_ratio, antialias);
         }, nb::arg("images"), nb::arg("new_height"), nb::arg("new_width"), nb::arg("method") = "bilinear",
         nb::arg("preserve_aspect_ratio") = false, nb::arg("antialias") = false);
  im.def("resize_with_pad", [](H x, H th, H tw, const std::string& method, bool antialias) {
           return ef::image::resize_with_pad(T(x), int_arg(th, "target_height"), int_arg(tw, "target_width"), method, antialias);
         }, nb::arg("image"), nb::arg("target_height"), nb::arg("target_width"), nb::arg("method") = "bilinear",
         nb::arg("antialias") = false);
  im.def("rgb_to_hsv", [](H x) { return ef::image::rgb_to_hsv(T(x)); }, nb::arg("images"));
  im.def("hsv_to_rgb", [](H x) { return ef::image::hsv_to_rgb(T(x)); }, nb::arg("images"));
  im.def("adjust_saturation", [](H x, H factor) {
           return ef::image::adjust_saturation(T(x), float_arg(factor, "saturation_factor"));
         }, nb::arg("image"), nb::arg("saturation_factor"));
  im.def("adjust_hue", [](H x, H delta) { return ef::image::adjust_hue(T(x), float_arg(delta, "delta")); },
         nb::arg("image"), nb::arg("delta"));
  im.def("adjust_gamma", [](H x, H gamma, H gain) {
           return ef::image::adjust_gamma(T(x), float_arg(gamma, "gamma"), float_arg(gain, "gain"));
         }, nb::arg("image"), nb::arg("gamma") = 1, nb::arg("gain") = 1);
  im.def("random_brightness", [](H x, H max_delta, H seed) {
           return ef::image::random_brightness(T(x), float_arg(max_delta, "max_delta"), optional_seed(seed));
         }, nb::arg("image"), nb::arg("max_delta"), nb::arg("seed").none() = nb::none());
  im.def("random_hue", [](H x, H max_delta, H seed) {
           return ef::image::random_hue(T(x), float_arg(max_delta, "max_delta"), optional_seed(seed));
         }, nb::arg("image"), nb::arg("max_delta"), nb::arg("seed").none() = nb::none());
  im.def("random_contrast", [](H x, H lower, H upper, H seed) {
           return ef::image::random_contrast(T(x), float_arg(lower, "lower"), float_arg(upper, "upper"), optional_seed(seed));
         }, nb::arg("image"), nb::arg("lower"), nb::arg("upper"), nb::arg("seed").none() = nb::none());
  im.def("random_saturation", [](H x, H lower, H upper, H seed) {
           return ef::image::random_saturation(T(x), float_arg(lower, "lower"), float_arg(upper, "upper"), optional_seed(seed));
         }, nb::arg("image"), nb::arg("lower"), nb::arg("upper"), nb::arg("seed").none() = nb::none());
  im.def("adjust_brightness", [](H x, H delta) { return ef::image::adjust_brightness(T(x), float_arg(delta, "delta")); },
         nb::arg("image"), nb::arg("delta"));
  im.def("adjust_contrast", [](H x, H factor) {
           return ef::image::adjust_contrast(T(x), float_arg(factor, "contrast_factor"));
         }, nb::arg("images"), nb::arg("contrast_factor"));
  im.def("convert_image_dtype", [](H x, H dtype, bool saturate) {
           return ef::image::convert_image_dtype(T(x), dtype_from_py(dtype), saturate);
         }, nb::arg("image"), nb::arg("dtype"), nb::arg("saturate") = false);
  im.def("psnr", [](H a, H b, H max_val) { return ef::image::psnr(T(a), T(b), float_arg(max_val, "max_val")); },
         nb::arg("a"), nb::arg("b"), nb::arg("max_val"));
  im.def("ssim_multiscale", [](H a, H b, H max_val, const std::vector<double>& power_factors, H filter_size, H filter_sigma,
                               H k1, H k2) {
           return ef::image::ssim_multiscale(T(a), T(b), float_arg(max_val, "max_val"), power_factors,
                                             int_arg(filter_size, "filter_size"), float_arg(filter_sigma, "filter_sigma"),
                                             float_arg(k1, "k1"), float_arg(k2, "k2"));
         }, nb::arg("img1"), nb::arg("img2"), nb::arg("max_val"), nb::arg("power_factors"), nb::arg("filter_size"),
         nb::arg("filter_sigma"), nb::arg("k1"), nb::arg("k2"));
  im.def("ssim", [](H a, H b, H max_val, H filter_size, H filter_sigma, H k1, H k2, bool return_index_map) {
           return ef::image::ssim(T(a), T(b), float_arg(max_val, "max_val"), int_arg(filter_size, "filter_size"),
                                  float_arg(filter_sigma, "filter_sigma"), float_arg(k1, "k1"), float_arg(k2, "k2"),
                                  return_index_map);
         }, nb::arg("img1"), nb::arg("img2"), nb::arg("max_val"), nb::arg("filter_size"), nb::arg("filter_sigma"),
         nb::arg("k1"), nb::arg("k2"), nb::arg("return_index_map") = false);
}

}  // namespace efpy
