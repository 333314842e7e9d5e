#pragma once
// Tensors to and from safetensors files (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the raw little-endian data. Python's `safetensors` package and PyTorch read what
// this writes, and this reads what they write (dtypes F32, F64, I32, I64, BOOL).
//
// Writes are atomic: a temporary file in the same folder, flushed and synced, then renamed
// over the target, so a failed write or a killed process leaves the previous file intact.
// Reads check everything against the file's size before allocating: a damaged or hostile
// file is an ef::Error naming the file and what is wrong.
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::io {

struct NamedTensor {
  std::string name;
  Tensor value;
};

struct TensorFile {
  std::vector<NamedTensor> tensors;            // in the file's data order
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
  const Tensor* find(const std::string& name) const;
};

// Names must be unique and non-empty; tensors must be concrete.
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
TensorFile load_safetensors(const std::string& path);
// The same from bytes in memory (`what` names them in errors).
TensorFile parse_safetensors(std::span<const std::byte> bytes, const std::string& what);
std::vector<std::byte> serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata = {});

// Replaces `path` with `bytes` atomically (temporary file in the same folder, fsync, rename,
// fsync of the folder). Throws ef::Error, leaving `path` as it was, when anything fails.
void write_file_atomically(const std::string& path, std::span<const std::byte> bytes);
// The whole file; an ef::Error when it cannot be read or is larger than max_bytes.
std::vector<std::byte> read_file(const std::string& path, std::size_t max_bytes = std::size_t{1} << 40);

}  // namespace ef::io
