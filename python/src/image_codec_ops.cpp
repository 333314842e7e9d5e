// TF's image codecs (eagerflow/io/image_codec.h) as _core._image_codecs; python/eagerflow/io.py
// and image.py give them TF's names.
#include "bindings.h"
#include "convert.h"
#include "eagerflow/io/image_codec.h"

#include <nanobind/stl/string.h>

namespace efpy {

void init_image_codecs(nb::module_& m) {
  nb::module_ c = m.def_submodule("_image_codecs", "ef.io's image codecs (python/eagerflow/io.py)");
  using H = nb::handle;
  namespace io = ef::io;
  c.def("decode_png", [](H x, int channels, H dtype) { return io::decode_png(to_tensor(x), channels, dtype_from_py(dtype)); },
        nb::arg("contents"), nb::arg("channels") = 0, nb::arg("dtype"));
  c.def("decode_jpeg", [](H x, int channels, const std::string& dct) { return io::decode_jpeg(to_tensor(x), channels, dct); },
        nb::arg("contents"), nb::arg("channels") = 0, nb::arg("dct_method") = "");
  c.def("decode_and_crop_jpeg",
        [](H x, H window, int channels, const std::string& dct) {
          return io::decode_and_crop_jpeg(to_tensor(x), to_tensor_as(window, ef::DType::int32), channels, dct);
        },
        nb::arg("contents"), nb::arg("crop_window"), nb::arg("channels") = 0, nb::arg("dct_method") = "");
  c.def("decode_bmp", [](H x, int channels) { return io::decode_bmp(to_tensor(x), channels); }, nb::arg("contents"),
        nb::arg("channels") = 0);
  c.def("decode_image", [](H x, int channels, H dtype) { return io::decode_image(to_tensor(x), channels, dtype_from_py(dtype)); },
        nb::arg("contents"), nb::arg("channels") = 0, nb::arg("dtype"));
  c.def("encode_png", [](H x, int compression) { return io::encode_png(to_tensor(x), compression); }, nb::arg("image"),
        nb::arg("compression") = -1);
  c.def("encode_jpeg",
        [](H x, int quality, bool progressive, bool optimize_size, bool chroma, const std::string& unit, int xd, int yd) {
          return io::encode_jpeg(to_tensor(x), {quality, progressive, optimize_size, chroma, unit, xd, yd});
        },
        nb::arg("image"), nb::arg("quality") = 95, nb::arg("progressive") = false, nb::arg("optimize_size") = false,
        nb::arg("chroma_downsampling") = true, nb::arg("density_unit") = "in", nb::arg("x_density") = 300,
        nb::arg("y_density") = 300);
  c.def("is_jpeg", [](H x) { return io::is_jpeg(to_tensor(x)); }, nb::arg("contents"));
  c.def("extract_jpeg_shape", [](H x, H out) { return io::extract_jpeg_shape(to_tensor(x), dtype_from_py(out)); },
        nb::arg("contents"), nb::arg("output_type"));
}

}  // namespace efpy
