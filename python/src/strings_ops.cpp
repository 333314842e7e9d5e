// ef::strings (eagerflow/ops/strings.h) as _core._strings; python/eagerflow/strings.py gives it
// TF's argument names and wraps ragged results.
#include "bindings.h"
#include "convert.h"
#include "eagerflow/io/files.h"
#include "eagerflow/ops/strings.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;
namespace st = ef::strings;

Tensor T(H h) { return to_tensor(h); }

st::Unit unit_arg(const std::string& unit) {
  if (unit == "BYTE") return st::Unit::byte;
  if (unit == "UTF8_CHAR") return st::Unit::utf8_char;
  throw nb::value_error(("unit must be 'BYTE' or 'UTF8_CHAR', got '" + unit + "'").c_str());
}

nb::tuple pieces(const st::Pieces& p) { return nb::make_tuple(p.values, p.row_splits, p.starts); }

}  // namespace

void init_strings(nb::module_& m) {
  nb::module_ s = m.def_submodule("_strings", "ef.strings (python/eagerflow/strings.py)");
  s.def("length", [](H x, const std::string& unit) { return st::length(T(x), unit_arg(unit)); }, nb::arg("input"),
        nb::arg("unit") = "BYTE");
  s.def("lower", [](H x) { return st::lower(T(x)); }, nb::arg("input"));
  s.def("upper", [](H x) { return st::upper(T(x)); }, nb::arg("input"));
  s.def("strip", [](H x) { return st::strip(T(x)); }, nb::arg("input"));
  s.def("regex_full_match", [](H x, const std::string& p) { return st::regex_full_match(T(x), p); }, nb::arg("input"),
        nb::arg("pattern"));
  s.def("regex_replace", [](H x, const std::string& p, const std::string& r, bool g) { return st::regex_replace(T(x), p, r, g); },
        nb::arg("input"), nb::arg("pattern"), nb::arg("rewrite"), nb::arg("replace_global") = true);
  s.def("to_number", [](H x, H out_type) { return st::to_number(T(x), dtype_from_py(out_type)); }, nb::arg("input"),
        nb::arg("out_type"));
  s.def("as_string",
        [](H x, int precision, bool scientific, bool shortest, int width, const std::string& fill) {
          return st::as_string(T(x), {precision, scientific, shortest, width, fill});
        },
        nb::arg("input"), nb::arg("precision") = -1, nb::arg("scientific") = false, nb::arg("shortest") = false,
        nb::arg("width") = -1, nb::arg("fill") = "");
  s.def("join", [](const std::vector<Tensor>& xs, const std::string& sep) { return st::join(xs, sep); }, nb::arg("inputs"),
        nb::arg("separator") = "");
  s.def("equal", [](H x, H y) { return st::equal(T(x), T(y)); }, nb::arg("x"), nb::arg("y"));
  s.def("not_equal", [](H x, H y) { return st::not_equal(T(x), T(y)); }, nb::arg("x"), nb::arg("y"));
  s.def("substr", [](H x, H pos, H len, const std::string& unit) { return st::substr(T(x), T(pos), T(len), unit_arg(unit)); },
        nb::arg("input"), nb::arg("pos"), nb::arg("len"), nb::arg("unit") = "BYTE");
  s.def("reduce_join",
        [](H x, std::optional<std::vector<int>> axes, bool keepdims, const std::string& sep) {
          return st::reduce_join(T(x), axes, keepdims, sep);
        },
        nb::arg("input"), nb::arg("axes").none(), nb::arg("keepdims") = false, nb::arg("separator") = "");
  s.def("unsorted_segment_join",
        [](H x, H ids, std::int64_t n, const std::string& sep) { return st::unsorted_segment_join(T(x), T(ids), n, sep); },
        nb::arg("inputs"), nb::arg("segment_ids"), nb::arg("num_segments"), nb::arg("separator") = "");
  s.def("split", [](H x, std::optional<std::string> sep, std::int64_t maxsplit) { return pieces(st::split(T(x), sep, maxsplit)); },
        nb::arg("input"), nb::arg("sep").none(), nb::arg("maxsplit") = -1);
  s.def("bytes_split", [](H x) { return pieces(st::bytes_split(T(x))); }, nb::arg("input"));
  s.def("unicode_split", [](H x) { return pieces(st::unicode_split(T(x))); }, nb::arg("input"));
  s.def("unicode_decode", [](H x) { return pieces(st::unicode_decode(T(x))); }, nb::arg("input"));
  s.def("unicode_encode", [](H cps, H splits) { return st::unicode_encode(T(cps), T(splits)); }, nb::arg("code_points"),
        nb::arg("row_splits"));
  s.def("to_hash_bucket", [](H x, std::int64_t n) { return st::to_hash_bucket(T(x), n); }, nb::arg("input"), nb::arg("num_buckets"));
  s.def("to_hash_bucket_fast", [](H x, std::int64_t n) { return st::to_hash_bucket_fast(T(x), n); }, nb::arg("input"),
        nb::arg("num_buckets"));
  s.def("to_hash_bucket_strong",
        [](H x, std::int64_t n, std::uint64_t k0, std::uint64_t k1) { return st::to_hash_bucket_strong(T(x), n, k0, k1); },
        nb::arg("input"), nb::arg("num_buckets"), nb::arg("key0"), nb::arg("key1"));
  s.def("read_file", [](H f) { return ef::io::read_file(T(f)); }, nb::arg("filename"));
  s.def("write_file", [](H f, H c) { ef::io::write_file(T(f), T(c)); }, nb::arg("filename"), nb::arg("contents"));
  s.def("encode_base64", [](H x, bool pad) { return st::encode_base64(T(x), pad); }, nb::arg("input"), nb::arg("pad") = false);
  s.def("decode_base64", [](H x) { return st::decode_base64(T(x)); }, nb::arg("input"));
}

}  // namespace efpy
