#pragma once
// Protocol-buffer wire format, by hand, for the few small messages of TF's checkpoints (the
// bundle's header and entries, the object graph): varints, tags, length-delimited fields.
// Reading never trusts a length: every one is checked against the bytes left, and a failure
// throws ef::Error(DATA_LOSS) with `what` (the file and the message) in the text.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "eagerflow/core/error.h"

namespace ef::io::wire {

enum WireType : int { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

inline void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void put_fixed32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_fixed64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_tag(std::string& out, int field, WireType type) {
  put_varint(out, (static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(type));
}
inline void put_varint_field(std::string& out, int field, std::uint64_t v) {
  put_tag(out, field, kVarint);
  put_varint(out, v);
}
inline void put_bytes_field(std::string& out, int field, std::string_view bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

inline std::uint32_t get_fixed32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
inline std::uint64_t get_fixed64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// A cursor over bytes being decoded.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& what) : data_(bytes), what_(what) {}
  bool done() const { return pos_ >= data_.size(); }
  std::size_t pos() const { return pos_; }
  std::size_t left() const { return data_.size() - pos_; }

  [[noreturn]] void bad(const std::string& why) const {
    fail(ErrorCode::data_loss, "checkpoint", what_ + ": " + why + " (at byte " + std::to_string(pos_) + ")");
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) bad("a varint runs past the end");
      auto b = static_cast<unsigned char>(data_[pos_++]);
      if (shift == 63 && b > 1) bad("a varint overflows 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    bad("a varint is longer than 10 bytes");
  }
  std::uint32_t varint32() {
    std::uint64_t v = varint();
    if (v > 0xffffffffu) bad("a 32-bit varint is out of range");
    return static_cast<std::uint32_t>(v);
  }
  std::string_view bytes(std::size_t n) {
    if (n > left())
      bad("a length of " + std::to_string(n) + " runs past the end (" + std::to_string(left()) + " bytes left)");
    auto out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::uint32_t fixed32() { return get_fixed32(bytes(4).data()); }
  std::uint64_t fixed64() { return get_fixed64(bytes(8).data()); }
  std::string_view length_delimited() {
    return bytes(static_cast<std::size_t>(std::min<std::uint64_t>(varint(), SIZE_MAX)));
  }
  // The next tag: (field, wire type).
  std::pair<int, int> tag() {
    std::uint64_t t = varint();
    if ((t >> 3) == 0 || (t >> 3) > (1u << 29)) bad("a field number is out of range");
    return {static_cast<int>(t >> 3), static_cast<int>(t & 7)};
  }
  // Skips a field of an unknown number (groups are refused: proto3 has none).
  void skip(int type) {
    switch (type) {
      case kVarint: varint(); return;
      case kFixed64: bytes(8); return;
      case kLengthDelimited: length_delimited(); return;
      case kFixed32: bytes(4); return;
      default: bad("a field of wire type " + std::to_string(type) + " (not one proto3 writes)");
    }
  }
  void expect(int type, int want, const char* field) {
    if (type != want) bad(std::string("field ") + field + " has the wrong wire type");
  }
  const std::string& what() const { return what_; }

 private:
  std::string_view data_;
  const std::string& what_;
  std::size_t pos_ = 0;
};

}  // namespace ef::io::wire
