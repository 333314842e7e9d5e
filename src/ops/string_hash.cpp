// The published algorithms (MurmurHash64A, FarmHash's farmhashna::Hash64 which Fingerprint64
// is, SipHash-2-4), written from their definitions; little-endian loads as on every CPU
// eagerflow builds for.
#include "ops/string_hash.h"

#include <cstring>
#include <utility>

namespace ef::detail {

namespace {

std::uint64_t load64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
std::uint32_t load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint64_t rotr(std::uint64_t v, int s) { return s == 0 ? v : (v >> s) | (v << (64 - s)); }
std::uint64_t rotl(std::uint64_t v, int s) { return (v << s) | (v >> (64 - s)); }

// ---- FarmHash (farmhashna)
constexpr std::uint64_t k0 = 0xc3a5c85c97cb3127ULL, k1 = 0xb492b66fbe98f273ULL, k2 = 0x9ae16a3b2f90404fULL;

std::uint64_t shift_mix(std::uint64_t v) { return v ^ (v >> 47); }

std::uint64_t hash_len16(std::uint64_t u, std::uint64_t v, std::uint64_t mul) {
  std::uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  std::uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

std::uint64_t hash_len0to16(const char* s, std::size_t len) {
  if (len >= 8) {
    std::uint64_t mul = k2 + len * 2, a = load64(s) + k2, b = load64(s + len - 8);
    std::uint64_t c = rotr(b, 37) * mul + a, d = (rotr(a, 25) + b) * mul;
    return hash_len16(c, d, mul);
  }
  if (len >= 4) {
    std::uint64_t mul = k2 + len * 2, a = load32(s);
    return hash_len16(len + (a << 3), load32(s + len - 4), mul);
  }
  if (len > 0) {
    std::uint8_t a = static_cast<std::uint8_t>(s[0]), b = static_cast<std::uint8_t>(s[len >> 1]),
                 c = static_cast<std::uint8_t>(s[len - 1]);
    std::uint32_t y = static_cast<std::uint32_t>(a) + (static_cast<std::uint32_t>(b) << 8);
    std::uint32_t z = static_cast<std::uint32_t>(len) + (static_cast<std::uint32_t>(c) << 2);
    return shift_mix(y * k2 ^ z * k0) * k2;
  }
  return k2;
}

std::uint64_t hash_len17to32(const char* s, std::size_t len) {
  std::uint64_t mul = k2 + len * 2, a = load64(s) * k1, b = load64(s + 8), c = load64(s + len - 8) * mul,
                d = load64(s + len - 16) * k2;
  return hash_len16(rotr(a + b, 43) + rotr(c, 30) + d, a + rotr(b + k2, 18) + c, mul);
}

std::uint64_t hash_len33to64(const char* s, std::size_t len) {
  std::uint64_t mul = k2 + len * 2, a = load64(s) * k2, b = load64(s + 8), c = load64(s + len - 8) * mul,
                d = load64(s + len - 16) * k2;
  std::uint64_t y = rotr(a + b, 43) + rotr(c, 30) + d;
  std::uint64_t z = hash_len16(y, a + rotr(b + k2, 18) + c, mul);
  std::uint64_t e = load64(s + 16) * mul, f = load64(s + 24), g = (y + load64(s + len - 32)) * mul,
                h = (z + load64(s + len - 24)) * mul;
  return hash_len16(rotr(e + f, 43) + rotr(g, 30) + h, e + rotr(f + a, 18) + g, mul);
}

std::pair<std::uint64_t, std::uint64_t> weak_hash32(const char* s, std::uint64_t a, std::uint64_t b) {
  std::uint64_t w = load64(s), x = load64(s + 8), y = load64(s + 16), z = load64(s + 24);
  a += w;
  b = rotr(b + a + z, 21);
  std::uint64_t c = a;
  a += x;
  a += y;
  b += rotr(a, 44);
  return {a + z, b + c};
}

// ---- SipHash
void sip_round(std::uint64_t& v0, std::uint64_t& v1, std::uint64_t& v2, std::uint64_t& v3) {
  v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
  v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
  v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
  v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
}

}  // namespace

std::uint64_t legacy_hash64(std::string_view str) {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL, seed = 0xDECAFCAFFEULL;
  constexpr int r = 47;
  const char* data = str.data();
  std::size_t n = str.size();
  std::uint64_t h = seed ^ (n * m);
  while (n >= 8) {
    std::uint64_t k = load64(data);
    data += 8;
    n -= 8;
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (n > 0) {
    for (std::size_t i = n; i-- > 0;) h ^= static_cast<std::uint64_t>(static_cast<std::uint8_t>(data[i])) << (8 * i);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

std::uint64_t fingerprint64(std::string_view str) {
  const char* s = str.data();
  std::size_t len = str.size();
  if (len <= 16) return hash_len0to16(s, len);
  if (len <= 32) return hash_len17to32(s, len);
  if (len <= 64) return hash_len33to64(s, len);
  constexpr std::uint64_t seed = 81;
  std::uint64_t x = seed, y = seed * k1 + 113, z = shift_mix(y * k2 + 113) * k2;
  std::pair<std::uint64_t, std::uint64_t> v{0, 0}, w{0, 0};
  x = x * k2 + load64(s);
  const char* end = s + ((len - 1) / 64) * 64;
  const char* last64 = end + ((len - 1) & 63) - 63;
  do {
    x = rotr(x + y + v.first + load64(s + 8), 37) * k1;
    y = rotr(y + v.second + load64(s + 48), 42) * k1;
    x ^= w.second;
    y += v.first + load64(s + 40);
    z = rotr(z + w.first, 33) * k1;
    v = weak_hash32(s, v.second * k1, x + w.first);
    w = weak_hash32(s + 32, z + w.second, y + load64(s + 16));
    std::swap(z, x);
    s += 64;
  } while (s != end);
  std::uint64_t mul = k1 + ((z & 0xff) << 1);
  s = last64;
  w.first += ((len - 1) & 63);
  v.first += w.first;
  w.first += v.first;
  x = rotr(x + y + v.first + load64(s + 8), 37) * mul;
  y = rotr(y + v.second + load64(s + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + load64(s + 40);
  z = rotr(z + w.first, 33) * mul;
  v = weak_hash32(s, v.second * mul, x + w.first);
  w = weak_hash32(s + 32, z + w.second, y + load64(s + 16));
  std::swap(z, x);
  return hash_len16(hash_len16(v.first, w.first, mul) + shift_mix(y) * k0 + z, hash_len16(v.second, w.second, mul) + x, mul);
}

std::uint64_t siphash24(std::uint64_t key0, std::uint64_t key1, std::string_view str) {
  std::uint64_t v0 = key0 ^ 0x736f6d6570736575ULL, v1 = key1 ^ 0x646f72616e646f6dULL,
                v2 = key0 ^ 0x6c7967656e657261ULL, v3 = key1 ^ 0x7465646279746573ULL;
  const char* p = str.data();
  std::size_t n = str.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t m = load64(p);
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  std::uint64_t b = static_cast<std::uint64_t>(str.size()) << 56;
  for (std::size_t i = 0; i < n; ++i) b |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(p[i])) << (8 * i);
  v3 ^= b;
  sip_round(v0, v1, v2, v3);
  sip_round(v0, v1, v2, v3);
  v0 ^= b;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) sip_round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace ef::detail
