// TensorProto, byte for byte as TF's SerializeTensor writes it: dtype (1), tensor_shape (2:
// TensorShapeProto, dims as field 2 with size as field 1), then tensor_content (4) for numbers
// or string_val (8) per string. Reading checks every length against the bytes left.
#include <cstring>

#include "eagerflow/core/error.h"
#include "eagerflow/core/string_tensor.h"
#include "eagerflow/io/tensor_proto.h"
#include "io/tf_dtype.h"

namespace ef::io {
namespace {

const char* tf_name(int code) {
  switch (code) {
    case 1: return "float";
    case 2: return "double";
    case 3: return "int32";
    case 4: return "uint8";
    case 5: return "int16";
    case 6: return "int8";
    case 7: return "string";
    case 8: return "complex64";
    case 9: return "int64";
    case 10: return "bool";
    case 14: return "bfloat16";
    case 17: return "uint16";
    case 18: return "complex128";
    case 19: return "half";
    case 22: return "uint32";
    case 23: return "uint64";
    default: return "an unknown type";
  }
}

void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void field(std::string& out, int num, std::string_view bytes) {
  varint(out, static_cast<std::uint64_t>(num) << 3 | 2);
  varint(out, bytes.size());
  out.append(bytes);
}

struct Bad {};

class Reader {
 public:
  explicit Reader(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool done() const { return p_ == end_; }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) throw Bad{};
      unsigned char c = static_cast<unsigned char>(*p_++);
      v |= static_cast<std::uint64_t>(c & 0x7F) << shift;
      if (!(c & 0x80)) return v;
    }
    throw Bad{};
  }
  std::string_view bytes(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) throw Bad{};
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  // The next field: number, wire type, and for wire 2 its bytes, wire 0 its value; fixed32/64
  // values come as bytes too.
  void next(std::uint32_t& num, int& wire, std::uint64_t& v, std::string_view& b) {
    std::uint64_t key = varint();
    num = static_cast<std::uint32_t>(key >> 3);
    wire = static_cast<int>(key & 7);
    if (num == 0) throw Bad{};
    switch (wire) {
      case 0: v = varint(); break;
      case 1: b = bytes(8); break;
      case 2: b = bytes(varint()); break;
      case 5: b = bytes(4); break;
      default: throw Bad{};
    }
  }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

std::string serialize_tensor(const Tensor& t) {
  if (t.is_symbolic()) fail("serialize_tensor", "needs a concrete tensor");
  std::string out;
  varint(out, 1 << 3);
  varint(out, static_cast<std::uint64_t>(tf_dtype_code(t.dtype())));
  std::string shape;
  for (std::int64_t d : t.shape()) {
    std::string dim;
    if (d != 0) {
      varint(dim, 1 << 3);
      varint(dim, static_cast<std::uint64_t>(d));
    }
    field(shape, 2, dim);
  }
  field(out, 2, shape);
  if (t.dtype() == DType::string) {
    for (std::string_view s : t.data<std::string_view>()) field(out, 8, s);
  } else if (t.num_elements() > 0) {
    Tensor c = t.clone();  // contiguous, on the CPU
    field(out, 4, std::string_view(static_cast<const char*>(c.raw_data()), c.nbytes()));
  }
  return out;
}

Tensor parse_tensor(std::string_view serialized, DType dtype) {
  int code = -1;
  std::vector<std::int64_t> dims;
  bool unknown_rank = false;
  std::string_view content;
  bool has_content = false;
  std::vector<std::string_view> strings;
  std::vector<std::uint64_t> ints;      // int_val, int64_val, bool_val, half_val, uint32/64_val
  std::vector<std::string_view> fixed;  // float_val, double_val: raw little-endian values
  int fixed_size = 0;
  try {
    Reader r(serialized);
    while (!r.done()) {
      std::uint32_t num;
      int wire;
      std::uint64_t v = 0;
      std::string_view b;
      r.next(num, wire, v, b);
      switch (num) {
        case 1:
          if (wire != 0) throw Bad{};
          code = static_cast<int>(v);
          break;
        case 2: {
          if (wire != 2) throw Bad{};
          dims.clear();
          Reader s(b);
          while (!s.done()) {
            std::uint32_t n2;
            int w2;
            std::uint64_t v2 = 0;
            std::string_view b2;
            s.next(n2, w2, v2, b2);
            if (n2 == 3 && w2 == 0) unknown_rank = v2 != 0;
            if (n2 != 2) continue;
            if (w2 != 2) throw Bad{};
            std::int64_t size = 0;
            Reader d(b2);
            while (!d.done()) {
              std::uint32_t n3;
              int w3;
              std::uint64_t v3 = 0;
              std::string_view b3;
              d.next(n3, w3, v3, b3);
              if (n3 == 1 && w3 == 0) size = static_cast<std::int64_t>(v3);
            }
            dims.push_back(size);
          }
          break;
        }
        case 4:
          if (wire != 2) throw Bad{};
          content = b;
          has_content = true;
          break;
        case 8:
          if (wire != 2) throw Bad{};
          strings.push_back(b);
          break;
        case 5:
        case 6: {  // float_val, double_val: packed or one at a time
          int size = num == 5 ? 4 : 8;
          fixed_size = size;
          if (wire == 2) {
            if (b.size() % static_cast<std::size_t>(size)) throw Bad{};
            for (std::size_t k = 0; k < b.size(); k += static_cast<std::size_t>(size)) fixed.push_back(b.substr(k, size));
          } else if ((wire == 5 && size == 4) || (wire == 1 && size == 8)) {
            fixed.push_back(b);
          } else {
            throw Bad{};
          }
          break;
        }
        case 7: case 10: case 11: case 13: case 16: case 17: {
          if (wire == 0) {
            ints.push_back(v);
          } else if (wire == 2) {
            Reader p(b);
            while (!p.done()) ints.push_back(p.varint());
          } else {
            throw Bad{};
          }
          break;
        }
        default: break;
      }
    }
  } catch (const Bad&) {
    fail("parse_tensor", "Could not parse `serialized` as TensorProto: '" + std::string(serialized.substr(0, 32)) + "'");
  }
  if (code != tf_dtype_code(dtype))
    fail("parse_tensor", std::string("Type mismatch between parsed tensor (") + tf_name(code) + ") and dtype (" +
                             tf_name(tf_dtype_code(dtype)) + ")");
  if (unknown_rank) fail("parse_tensor", "the TensorProto has an unknown rank");
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) fail("parse_tensor", "a negative dimension in the TensorProto");
    if (d > 0 && n > (std::int64_t{1} << 40) / d) fail("parse_tensor", "the TensorProto's shape is too large");
    n *= d;
  }
  Shape shape(dims);
  if (dtype == DType::string) {
    if (!strings.empty() && static_cast<std::int64_t>(strings.size()) != n)
      fail("parse_tensor", "the TensorProto has " + std::to_string(strings.size()) + " strings for shape " + shape.str());
    StringTensorBuilder b(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) b.append(strings.empty() ? std::string_view() : strings[static_cast<std::size_t>(k)]);
    return std::move(b).finish(shape);
  }
  const std::size_t item = size_of(dtype);
  if (has_content) {
    if (content.size() != static_cast<std::size_t>(n) * item)
      fail("parse_tensor", "the TensorProto's tensor_content has " + std::to_string(content.size()) + " bytes, the shape " +
                               shape.str() + " needs " + std::to_string(static_cast<std::size_t>(n) * item));
    Tensor t = Tensor::empty(dtype, shape);
    if (n) std::memcpy(t.raw_mutable_data(), content.data(), content.size());
    return t;
  }
  // Typed values: fewer than the shape holds repeat the last one (TF's rule), none are zeros.
  std::size_t have = fixed_size ? fixed.size() : ints.size();
  if (have > static_cast<std::size_t>(n)) fail("parse_tensor", "the TensorProto has more values than its shape holds");
  Tensor t = Tensor::empty(dtype, shape);
  auto* dst = static_cast<char*>(t.raw_mutable_data());
  for (std::int64_t k = 0; k < n; ++k) {
    char* at = dst + static_cast<std::size_t>(k) * item;
    if (have == 0) {
      std::memset(at, 0, item);
      continue;
    }
    std::size_t src = std::min<std::size_t>(static_cast<std::size_t>(k), have - 1);
    if (fixed_size) {
      if (static_cast<std::size_t>(fixed_size) != item) fail("parse_tensor", "float_val/double_val do not match the dtype");
      std::memcpy(at, fixed[src].data(), item);
    } else {
      std::uint64_t v = ints[src];
      std::memcpy(at, &v, item);  // little-endian: the low bytes are the value (half_val holds the bits)
    }
  }
  return t;
}

}  // namespace ef::io
