// The safetensors format: reading checks every size against the bytes that exist before
// anything is allocated.
#include "eagerflow/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "eagerflow/core/error.h"
#include "io/json.h"

namespace ef::io {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

// Headers larger than this are refused (the Python reader's limit is 100 MB too).
constexpr std::uint64_t kMaxHeader = 100'000'000;

const char* code_of(DType t) {
  switch (t) {
    case DType::float32: return "F32";
    case DType::float64: return "F64";
    case DType::int32: return "I32";
    case DType::int64: return "I64";
    case DType::bool_: return "BOOL";
    case DType::bfloat16: return "BF16";
    case DType::float16: return "F16";
    case DType::string: break;  // safetensors has no strings: refused where a tensor is written
    case DType::uint8: return "U8";
    case DType::int8: return "I8";
    case DType::int16: return "I16";
    case DType::uint16: return "U16";
    case DType::uint32: return "U32";
    case DType::uint64: return "U64";
    case DType::complex64: return "C64";  // (safetensors' own code; complex128 has none)
    case DType::complex128: break;
  }
  return "?";
}

DType dtype_from_code(const std::string& code, const std::string& what) {
  if (code == "F32") return DType::float32;
  if (code == "F64") return DType::float64;
  if (code == "I32") return DType::int32;
  if (code == "I64") return DType::int64;
  if (code == "BOOL") return DType::bool_;
  if (code == "BF16") return DType::bfloat16;
  if (code == "F16") return DType::float16;
  if (code == "U8") return DType::uint8;
  if (code == "I8") return DType::int8;
  if (code == "I16") return DType::int16;
  if (code == "U16") return DType::uint16;
  if (code == "U32") return DType::uint32;
  if (code == "U64") return DType::uint64;
  if (code == "C64") return DType::complex64;
  throw Error(ErrorCode::unimplemented,
              what + ": dtype " + code + " is not supported (eagerflow reads F32, F64, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, C64)");
}

}  // namespace

const Tensor* TensorFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t.value;
  return nullptr;
}

std::vector<std::byte> serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  std::set<std::string> seen;
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      header += (first ? "" : ",") + json_quote(k) + ":" + json_quote(v);
      first = false;
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (const auto& [name, value] : tensors) {
    if (name.empty()) throw Error("save_safetensors: a tensor has an empty name");
    if (name == "__metadata__") throw Error("save_safetensors: '__metadata__' is reserved");
    if (!seen.insert(name).second) throw Error("save_safetensors: the name '" + name + "' is used twice");
    if (!value.defined() || !value.shape().is_static())
      throw Error("save_safetensors: '" + name + "' is not a concrete tensor");
    if (value.dtype() == DType::string)
      fail(ErrorCode::unimplemented, "save_safetensors",
           "'" + name + "' is a string tensor; the safetensors format (and the files saved with it: models, "
           "checkpoints, graph constants) holds numbers only");
    if (value.dtype() == DType::complex128)
      fail(ErrorCode::unimplemented, "save_safetensors",
           "'" + name + "' is complex128, which the safetensors format has no code for (complex64 is C64)");
    std::uint64_t bytes = static_cast<std::uint64_t>(value.num_elements()) * size_of(value.dtype());
    header += (header.size() > 1 ? "," : "") + json_quote(name) + ":{\"dtype\":\"" + code_of(value.dtype()) +
              "\",\"shape\":[";
    for (int d = 0; d < value.rank(); ++d) header += (d ? "," : "") + std::to_string(value.shape()[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  while ((header.size() + 8) % 8 != 0) header += ' ';  // data starts 8-byte aligned
  std::vector<std::byte> out(8 + header.size() + offset);
  std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::byte* data = out.data() + 8 + header.size();
  for (const auto& [name, value] : tensors) {
    std::size_t bytes = static_cast<std::size_t>(value.num_elements()) * size_of(value.dtype());
    if (bytes) std::memcpy(data, value.raw_data(), bytes);
    data += bytes;
  }
  return out;
}

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<std::byte> bytes = serialize_safetensors(tensors, metadata);
  write_file_atomically(path, bytes);
}

TensorFile parse_safetensors(std::span<const std::byte> bytes, const std::string& what) {
  if (bytes.size() < 8)
    throw Error(ErrorCode::data_loss, what + ": not a safetensors file (shorter than its 8-byte header length)");
  std::uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeader || header_len > bytes.size() - 8)
    throw Error(ErrorCode::data_loss, what + ": header length " + std::to_string(header_len) +
                                          " does not fit the file's " + std::to_string(bytes.size()) + " bytes");
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(header_len));
  Json header = parse_json(text, what);
  const Json::Object& entries = header.object(what + ": header");
  std::span<const std::byte> data = bytes.subspan(8 + static_cast<std::size_t>(header_len));

  struct Entry {
    std::string name;
    DType dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t begin, end;
  };
  std::vector<Entry> list;
  TensorFile out;
  for (const auto& [name, desc] : entries) {
    std::string where = what + ": tensor '" + name + "'";
    if (name == "__metadata__") {
      for (const auto& [k, v] : desc.object(what + ": __metadata__")) out.metadata[k] = v.string(what + ": __metadata__." + k);
      continue;
    }
    Entry e{name, dtype_from_code(desc.find("dtype") ? desc.find("dtype")->string(where + " dtype") : "(missing)", where), {}, 0, 0};
    const Json* shape = desc.find("shape");
    const Json* offsets = desc.find("data_offsets");
    if (!shape || !offsets) throw Error(where + ": needs dtype, shape and data_offsets");
    if (desc.object(where).size() != 3) throw Error(where + ": unexpected fields (expected dtype, shape, data_offsets)");
    std::uint64_t count = 1;
    bool empty = false;
    const auto& dims = shape->array(where + " shape");
    if (dims.size() > 64) throw Error(where + ": rank " + std::to_string(dims.size()) + " is too large");
    for (const Json& d : dims) {
      std::int64_t v = d.integer(where + " shape");
      if (v < 0) throw Error(where + ": negative dimension " + std::to_string(v));
      e.shape.push_back(v);
      if (v == 0) empty = true;
      else if (!empty && count > data.size() / static_cast<std::uint64_t>(v) + 1) count = data.size() + 1;  // saturate
      else if (!empty) count *= static_cast<std::uint64_t>(v);
    }
    if (empty) count = 0;
    const auto& off = offsets->array(where + " data_offsets");
    if (off.size() != 2) throw Error(where + ": data_offsets must be [begin, end]");
    std::int64_t b = off[0].integer(where + " data_offsets"), en = off[1].integer(where + " data_offsets");
    if (b < 0 || en < b || static_cast<std::uint64_t>(en) > data.size())
      throw Error(where + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(en) + "] outside the " +
                  std::to_string(data.size()) + " data bytes");
    e.begin = static_cast<std::uint64_t>(b);
    e.end = static_cast<std::uint64_t>(en);
    std::uint64_t want = count > data.size() ? data.size() + 1 : count * size_of(e.dtype);
    if (e.end - e.begin != want)
      throw Error(where + ": " + std::to_string(e.end - e.begin) + " data bytes for shape " +
                  Shape(e.shape).str() + " of " + code_of(e.dtype) + " (needs " +
                  (count > data.size() ? std::string("more than the file holds") : std::to_string(want)) + ")");
    list.push_back(std::move(e));
  }
  // The byte ranges tile the data exactly: no overlap, no hole, nothing after.
  std::vector<const Entry*> order;
  for (const auto& e : list) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t at = 0;
  for (const Entry* e : order) {
    if (e->begin != at)
      throw Error(ErrorCode::data_loss,
                  what + ": tensor '" + e->name + "' does not start where the previous one ends (overlap or hole)");
    at = e->end;
  }
  if (at != data.size())
    throw Error(ErrorCode::data_loss, what + ": " + std::to_string(data.size() - at) + " bytes after the last tensor");
  for (const Entry* e : order) {
    Tensor t = Tensor::empty(e->dtype, Shape(e->shape));
    if (e->end > e->begin) {
      if (e->dtype == DType::bool_)  // only 0 and 1 are booleans
        for (std::uint64_t i = e->begin; i < e->end; ++i)
          if (static_cast<unsigned char>(data[i]) > 1)
            throw Error(ErrorCode::data_loss, what + ": tensor '" + e->name + "' holds a BOOL that is not 0 or 1");
      std::memcpy(t.raw_mutable_data(), data.data() + e->begin, static_cast<std::size_t>(e->end - e->begin));
    }
    out.tensors.push_back({e->name, std::move(t)});
  }
  return out;
}

TensorFile load_safetensors(const std::string& path) {
  std::vector<std::byte> bytes = read_file(path);
  return parse_safetensors(bytes, "'" + path + "'");
}

}  // namespace ef::io
