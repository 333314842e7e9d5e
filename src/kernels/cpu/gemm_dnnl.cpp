#include <atomic>
#include <cstdlib>
#include <string>
#include <list>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "eagerflow/core/error.h"

#include "kernels/cpu/dnnl_engine.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_chain.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/parallel.h"

namespace ef::cpu {
namespace {

dnnl::engine& cpu_engine() { return dnnl_engine(); }

// oneDNN fixes a primitive's thread count when it is created, so the budget is part of the key.
// The last flag: bfloat16 operands and result (float32 accumulation), else float32.
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, bool, int, bool, bool, bool>;

// Creating a oneDNN primitive costs 50-300 us; executing a cached one costs a few. Each thread
// keeps its own primitives and memory objects, so execution needs no lock and only the data
// pointers change between calls.
struct Prepared {
  dnnl::matmul matmul;
  dnnl::memory a, b, c, bias;
  // Built once: memory objects are handles, so the arguments see each new data pointer. The
  // C API takes them as an array, which spares the C++ wrapper's per-call conversion.
  std::vector<dnnl_exec_arg_t> args;
};

Prepared prepare(const Key& key) {
  auto [batch, m, k, n, a_bc, b_bc, has_bias, threads, a_t, b_t, bf16] = key;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dt data = bf16 ? dt::bf16 : dt::f32;
  // A transposed operand is the same logical matrix with swapped strides.
  dnnl::memory::desc a_md({a_bc ? 1 : batch, m, k}, data,
                          a_t ? dnnl::memory::dims{m * k, 1, m} : dnnl::memory::dims{m * k, k, 1});
  dnnl::memory::desc b_md({b_bc ? 1 : batch, k, n}, data,
                          b_t ? dnnl::memory::dims{k * n, 1, k} : dnnl::memory::dims{k * n, n, 1});
  dnnl::memory::desc c_md({batch, m, n}, data, tag::abc);
  dnnl::memory::desc bias_md({1, 1, n}, dt::f32, tag::abc);
  dnnl::primitive_attr attr;
  dnnl::matmul::desc desc = has_bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md) : dnnl::matmul::desc(a_md, b_md, c_md);
  dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
  void* none = DNNL_MEMORY_NONE;
  Prepared p{dnnl::matmul(pd), dnnl::memory(a_md, cpu_engine(), none), dnnl::memory(b_md, cpu_engine(), none),
             dnnl::memory(c_md, cpu_engine(), none), dnnl::memory(bias_md, cpu_engine(), none), {}};
  p.args = {{DNNL_ARG_SRC, p.a.get()}, {DNNL_ARG_WEIGHTS, p.b.get()}, {DNNL_ARG_DST, p.c.get()}};
  if (has_bias) p.args.push_back({DNNL_ARG_BIAS, p.bias.get()});
  return p;
}

// Each thread keeps the most recently used primitives, at most kMaxPrimitives: a program
// that sees many shapes (varying batch sizes, sequence lengths) does not grow without bound.
// release_cached() bumps the generation, and each thread drops its cache at its next matmul.
constexpr std::size_t kMaxPrimitives = 64;
std::atomic<std::uint64_t> generation{0};

struct PrimitiveCache {
  std::list<std::pair<Key, Prepared>> lru;  // most recent first
  std::map<Key, std::list<std::pair<Key, Prepared>>::iterator> index;
  std::uint64_t seen_generation = 0;

  Prepared& get(const Key& key) {
    if (seen_generation != generation.load(std::memory_order_relaxed)) {
      index.clear();
      lru.clear();
      seen_generation = generation.load();
    }
    auto it = index.find(key);
    if (it != index.end()) {
      lru.splice(lru.begin(), lru, it->second);
      return it->second->second;
    }
    lru.emplace_front(key, prepare(key));
    index[key] = lru.begin();
    if (lru.size() > kMaxPrimitives) {
      index.erase(lru.back().first);
      lru.pop_back();
    }
    return lru.front().second;
  }
};

thread_local PrimitiveCache primitive_cache;

}  // namespace

void release_primitive_caches() { generation.fetch_add(1); }

dnnl::engine& dnnl_engine() {
  static dnnl::engine engine = [] {
    // oneDNN keeps its own cache of primitive implementations (1024 by default); ours hold
    // the prepared primitives, so a small one is enough and memory stays bounded.
    dnnl::set_primitive_cache_capacity(64);
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

namespace {
dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}
}  // namespace

void dnnl_execute(const dnnl::primitive& primitive, const std::vector<dnnl_exec_arg_t>& args, const char* op) {
  dnnl_status_t status =
      dnnl_primitive_execute(primitive.get(), thread_stream().get(), static_cast<int>(args.size()), args.data());
  if (status != dnnl_success)
    fail(ErrorCode::internal, op, "oneDNN failed to execute (status " + std::to_string(status) + ")");
}

void dnnl_wait() { thread_stream().wait(); }
// A release (release_primitive_caches) empties the cache at its next use: until then it holds none.
std::size_t cached_primitives_on_this_thread() {
  return primitive_cache.seen_generation == generation.load() ? primitive_cache.lru.size() : 0;
}

void gemm_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
              std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias, bool a_transposed,
              bool b_transposed, const std::shared_ptr<Storage>* b_owner) {
  // A few rows: stream the weights once (kernels/cpu/gemv.cpp), unless they are a kept model's
  // whose panels the blocked GEMM reads faster (same chain per element: same bits either way).
  if (gemv_applicable(m)) {
    if (gemm_chain_f32_few_rows(a, b, c, batch, m, k, n, a_broadcast, b_broadcast, bias, a_transposed, b_transposed,
                                b_owner))
      return;
    return gemv_f32(a, b, c, batch, m, k, n, a_broadcast, b_broadcast, bias, a_transposed, b_transposed, b_owner);
  }
  if (gemm_chain_applicable())  // more rows: the same arithmetic per element, blocked (gemm_chain.cpp)
    return gemm_chain_f32(a, b, c, batch, m, k, n, a_broadcast, b_broadcast, bias, a_transposed, b_transposed,
                          b_owner);
  thread_local dnnl::stream stream(cpu_engine());
  int threads = threads_for_work(work_of({batch, m, k, n}), kGemmParallelGrain);
  detail::sync_omp_threads(threads);
  Key key{batch, m, k, n, a_broadcast, b_broadcast, bias != nullptr, threads, a_transposed, b_transposed, false};
  Prepared& p = primitive_cache.get(key);
  p.a.set_data_handle(const_cast<float*>(a));
  p.b.set_data_handle(const_cast<float*>(b));
  p.c.set_data_handle(c);
  if (bias) p.bias.set_data_handle(const_cast<float*>(bias));
  dnnl_status_t status = dnnl_primitive_execute(p.matmul.get(), stream.get(), static_cast<int>(p.args.size()), p.args.data());
  if (status != dnnl_success)
    fail(ErrorCode::internal, "matmul", "oneDNN failed to execute (status " + std::to_string(status) + ")");
  stream.wait();
}

bool native_bfloat16() {
  static const bool native = [] {
    if (const char* env = std::getenv("EF_BFLOAT16_NATIVE"); env && std::string(env) == "0") return false;
    auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;  // AVX512_BF16, or AMX (whose flags include it)
  }();
  return native;
}

void gemm_bf16(const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n,
               bool a_broadcast, bool b_broadcast, bool a_transposed, bool b_transposed) {
  thread_local dnnl::stream stream(cpu_engine());
  int threads = threads_for_work(work_of({batch, m, k, n}), kGemmParallelGrain);
  detail::sync_omp_threads(threads);
  Key key{batch, m, k, n, a_broadcast, b_broadcast, false, threads, a_transposed, b_transposed, true};
  Prepared& p = primitive_cache.get(key);
  p.a.set_data_handle(const_cast<void*>(a));
  p.b.set_data_handle(const_cast<void*>(b));
  p.c.set_data_handle(c);
  dnnl_status_t status = dnnl_primitive_execute(p.matmul.get(), stream.get(), static_cast<int>(p.args.size()), p.args.data());
  if (status != dnnl_success)
    fail(ErrorCode::internal, "matmul", "oneDNN failed to execute a bfloat16 matmul (status " + std::to_string(status) + ")");
  stream.wait();
}

}  // namespace ef::cpu
