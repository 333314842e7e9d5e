#include "kernels/cpu/packed_b_cache.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "eagerflow/core/tensor.h"

namespace ef::cpu {
namespace {

struct Entry {
  std::weak_ptr<Storage> owner;  // a freed storage whose address comes back is another B
  std::uint64_t version = 0;
  std::shared_ptr<const PackedB> packed;  // null until the same version is seen twice
  std::uint64_t last_use = 0;
  // Its panels were dropped for room: not packed again until B changes. Weights beyond the
  // limit stay unpacked rather than pack on every call, each evicting the next.
  bool evicted = false;
};

struct LayoutHash {
  std::size_t operator()(const PackedBLayout& l) const {
    std::size_t h = std::hash<const void*>()(l.b);
    for (std::int64_t v : {l.k, l.n, l.nr, l.k_block, static_cast<std::int64_t>(l.transposed)})
      h = h * 1000003u ^ std::hash<std::int64_t>()(v);
    return h;
  }
};

std::atomic<std::size_t>& byte_limit_setting() {
  static std::atomic<std::size_t> limit = [] {
    const char* e = std::getenv("EF_PACKED_WEIGHTS_MB");
    const long mb = e && *e ? std::strtol(e, nullptr, 10) : 256;  // not a number: 0, off
    return static_cast<std::size_t>(std::clamp(mb, 0L, 1L << 30)) << 20;
  }();
  return limit;
}
std::size_t byte_limit() { return byte_limit_setting().load(std::memory_order_relaxed); }

bool same_owner(const std::weak_ptr<Storage>& a, const std::shared_ptr<Storage>& b) {
  return !a.owner_before(b) && !b.owner_before(a) && !a.expired();
}

struct Cache {
  std::mutex mutex;
  std::unordered_map<PackedBLayout, Entry, LayoutHash> entries;
  std::size_t bytes = 0;
  std::uint64_t clock = 0;
  std::size_t builds = 0;

  void drop_panels(Entry& e) {
    if (e.packed) bytes -= e.packed->buffer.size() * sizeof(float);
    e.packed.reset();
  }

  // Entries whose storage is gone go first; then, above the byte limit, the least recently used
  // panels (their entries marked evicted); above kMaxEntries, entries without panels (operands
  // seen once: activations, a training step's weights).
  void trim() {
    for (auto it = entries.begin(); it != entries.end();) {
      if (!it->second.owner.expired()) {
        ++it;
        continue;
      }
      drop_panels(it->second);
      it = entries.erase(it);
    }
    while (bytes > byte_limit()) {
      Entry* oldest = nullptr;
      for (auto& [layout, e] : entries)
        if (e.packed && (!oldest || e.last_use < oldest->last_use)) oldest = &e;
      if (!oldest) break;
      drop_panels(*oldest);
      oldest->evicted = true;
    }
    constexpr std::size_t kMaxEntries = 512;
    if (entries.size() > kMaxEntries) std::erase_if(entries, [](auto& kv) { return !kv.second.packed; });
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: products may run while the process exits
  return *c;
}

}  // namespace

std::shared_ptr<const PackedB> packed_b(const std::shared_ptr<Storage>& owner, const PackedBLayout& layout,
                                        std::int64_t floats, void (*pack)(const void* context, float* out),
                                        const void* context) {
  if (!owner || floats <= 0 || byte_limit() == 0) return nullptr;
  const std::uint64_t version = std::atomic_ref<std::uint64_t>(owner->version).load(std::memory_order_relaxed);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    auto [it, inserted] = c.entries.try_emplace(layout);
    Entry& e = it->second;
    e.last_use = ++c.clock;
    if (inserted || !same_owner(e.owner, owner) || e.version != version) {
      // New, another storage at the same address, or written since: wait for a second sight.
      c.drop_panels(e);
      e.owner = owner;
      e.version = version;
      e.evicted = false;
      if (inserted) c.trim();
      return nullptr;
    }
    if (e.packed) return e.packed;
    if (e.evicted || static_cast<std::size_t>(floats) * sizeof(float) > byte_limit()) return nullptr;
  }
  // Seen twice unchanged: pack outside the lock (other threads' products go on), then keep the
  // panels if nothing wrote B meanwhile.
  auto packed = std::make_shared<PackedB>();
  packed->buffer.resize(static_cast<std::size_t>(floats) + 16);
  const auto addr = reinterpret_cast<std::uintptr_t>(packed->buffer.data());
  float* panels = reinterpret_cast<float*>((addr + 63) & ~std::uintptr_t{63});
  pack(context, panels);
  packed->panels = panels;
  std::lock_guard lock(c.mutex);
  if (std::atomic_ref<std::uint64_t>(owner->version).load(std::memory_order_relaxed) != version) return nullptr;
  auto it = c.entries.find(layout);
  if (it != c.entries.end() && same_owner(it->second.owner, owner) && it->second.version == version &&
      !it->second.packed) {
    it->second.packed = packed;
    c.bytes += packed->buffer.size() * sizeof(float);
    ++c.builds;
    c.trim();
  }
  return packed;
}

std::size_t packed_b_bytes() {
  std::lock_guard lock(cache().mutex);
  return cache().bytes;
}

std::size_t packed_b_builds() {
  std::lock_guard lock(cache().mutex);
  return cache().builds;
}

void set_packed_b_byte_limit(std::size_t bytes) {
  byte_limit_setting().store(bytes, std::memory_order_relaxed);
  std::lock_guard lock(cache().mutex);
  cache().trim();
}

void release_packed_b() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.entries.clear();
  c.bytes = 0;
}

}  // namespace ef::cpu
