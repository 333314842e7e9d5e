// float32 GEMM libraries on the shapes eagerflow runs, one library per process (each brings its
// own thread pool, and MKL its own OpenMP): bench/peers/gemm_libraries.py runs them interleaved,
// pinned, and writes the table. Not a Google Benchmark: it also checks each library's bits.
//
//   ef_gemm_libraries --lib ours|ours_unpacked|onednn|openblas|blis|mkl|xsmm --threads N [--min-ms 30]
//   ef_gemm_libraries --fma-peak --threads N
//
// ours = gemm_f32 (gemv for a few rows, the FMA-chain GEMM above), as the ops call it: a
// forward Dense's weights (and the other constant-weight shapes: LSTM gates, projections,
// convolution filters) belong to a tensor, whose panels the GEMM packs once and keeps, as
// onnxruntime packs a served model's initializers once; ours_unpacked = the same without
// (every call packs B, as a training step's products do);
// onednn = the same entry with EF_ISA=baseline (oneDNN's matmul primitive, cached per shape);
// openblas, blis, mkl = cblas_sgemm from the shared library (dlopen: nothing to link, a library
// that is absent is reported so); xsmm = libxsmm's libxsmm_sgemm_omp, when built with it.
//
// --fma-peak: the ceiling every row is read against, N threads each running 24 independent
// chains of FMAs on registers (no loads; AVX-512 where the CPU has it, else AVX2): a GEMM's
// FMAs also need their operands loaded, so no library reaches it.
// One JSON object per shape: the median microseconds of 5 timings, GFLOPS, process CPU / wall,
// and three checks of the bits: the same on a second call ("repeat"), the same at 1 and N
// threads ("threads"), and a row's bits the same whether it is computed alone, with two other
// rows, or in the whole product ("row_alone": what users see when they compare predict(x)[i]
// with model(x[i:i+1])).
#include <dlfcn.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"
#include "eagerflow/core/threading.h"
#include "kernels/cpu/gemm.h"

#if defined(EF_HAVE_LIBXSMM)
#include <libxsmm.h>
#endif

namespace {

// GFLOPS of one thread's register-only FMA chains, `seconds` long (24 chains: enough to cover
// the FMA latency on both ports). One function per instruction set: vectors stay in registers.
#define EF_FMA_RATE(NAME, TARGET, V, LANES, FMA, SET)                                           \
  __attribute__((target(TARGET))) double NAME(double seconds) {                                 \
    V acc[24];                                                                                   \
    for (int i = 0; i < 24; ++i) acc[i] = SET(0.001f * static_cast<float>(i));                   \
    const V a = SET(0.9999f), b = SET(1e-4f);                                                    \
    std::int64_t rounds = 0;                                                                     \
    const auto t0 = std::chrono::steady_clock::now();                                            \
    double elapsed = 0;                                                                          \
    while (elapsed < seconds) {                                                                  \
      for (int rep = 0; rep < 10000; ++rep) {                                                    \
        _Pragma("GCC unroll 24") for (int j = 0; j < 24; ++j) acc[j] = FMA(acc[j], a, b);        \
      }                                                                                          \
      rounds += 10000;                                                                           \
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();    \
    }                                                                                            \
    alignas(64) float lanes[LANES];                                                              \
    float sink = 0;                                                                              \
    for (int i = 0; i < 24; ++i) {                                                               \
      std::memcpy(lanes, &acc[i], sizeof(lanes));                                                \
      sink += lanes[0];                                                                          \
    }                                                                                            \
    if (sink == 1234.5f) std::printf(" ");                                                       \
    return static_cast<double>(rounds) * 24 * LANES * 2 / elapsed * 1e-9;                        \
  }
EF_FMA_RATE(fma_rate_avx512, "avx512f", __m512, 16, _mm512_fmadd_ps, _mm512_set1_ps)
EF_FMA_RATE(fma_rate_avx2, "avx2,fma", __m256, 8, _mm256_fmadd_ps, _mm256_set1_ps)
#undef EF_FMA_RATE

// The FMA ceiling of `threads` threads at once (the best of 3 samples of 0.2 s).
void print_fma_peak(int threads) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  double best = 0;
  for (int sample = 0; sample < 3; ++sample) {
    double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += avx512 ? fma_rate_avx512(0.2) : fma_rate_avx2(0.2);
    best = std::max(best, total);
  }
  std::printf("{\"fma_peak_gflops\": %.1f, \"threads\": %d, \"isa\": \"%s\"}\n", best, threads,
              avx512 ? "avx512" : "avx2");
}

struct Shape {
  const char* what;  // where eagerflow runs it
  std::int64_t batch, m, k, n;
  bool ta, tb;  // A stored [K,M], B stored [N,K]
};

// B is a model's weights (the same every call): one matrix stored [K,N], a forward product.
bool constant_weights(const Shape& s) {
  const std::string what = s.what;
  return s.batch == 1 && !s.ta && !s.tb &&
         (what.rfind("Dense", 0) == 0 || what.rfind("LSTM", 0) == 0 || what.rfind("transformer", 0) == 0 ||
          what.rfind("conv", 0) == 0);
}

// MLP 784-512-512-10 (forward at batch 1 to 4096, the training step's two gradients), the
// transformer block (width 256, 4 heads, seq 256, batch 16: projections, feed-forward,
// attention per head), conv-as-GEMM (the CNN's second convolution, 16 -> 32 channels over
// 14x14, batch 32), LSTM(256) gates at batch 1 and 32, and 1024^3.
const std::vector<Shape> kShapes = {
    {"Dense 784->512, batch 1", 1, 1, 784, 512, false, false},
    {"Dense 784->512, batch 16", 1, 16, 784, 512, false, false},
    {"Dense 784->512, batch 128", 1, 128, 784, 512, false, false},
    {"Dense 512->512, batch 128", 1, 128, 512, 512, false, false},
    {"Dense 512->10, batch 128", 1, 128, 512, 10, false, false},
    {"Dense 784->512, batch 1024", 1, 1024, 784, 512, false, false},
    {"Dense 784->512, batch 4096", 1, 4096, 784, 512, false, false},
    {"dX = dY W^T, 128x512 . (784x512)^T", 1, 128, 512, 784, false, true},
    {"dW = X^T dY, (128x784)^T . 128x512", 1, 784, 128, 512, true, false},
    {"transformer QKV 4096x256 . 256x768", 1, 4096, 256, 768, false, false},
    {"transformer FFN up 4096x256 . 256x1024", 1, 4096, 256, 1024, false, false},
    {"transformer FFN down 4096x1024 . 1024x256", 1, 4096, 1024, 256, false, false},
    {"attention q k^T, 64 x 256x64 . (256x64)^T", 64, 256, 64, 256, false, true},
    {"attention p v, 64 x 256x256 . 256x64", 64, 256, 256, 64, false, false},
    {"conv-as-GEMM 6272x144 . 144x32", 1, 6272, 144, 32, false, false},
    {"LSTM gates, batch 1, 1x256 . 256x1024", 1, 1, 256, 1024, false, false},
    {"LSTM gates, batch 32, 32x256 . 256x1024", 1, 32, 256, 1024, false, false},
    {"square 1024^3", 1, 1024, 1024, 1024, false, false},
};

using Gemm = std::function<void(const Shape&, const float*, const float*, float*)>;

// cblas_sgemm's enums: row-major 101, no transpose 111, transpose 112.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);

Gemm cblas_gemm(CblasSgemm sgemm) {
  return [sgemm](const Shape& s, const float* a, const float* b, float* c) {
    const int lda = static_cast<int>(s.ta ? s.m : s.k), ldb = static_cast<int>(s.tb ? s.k : s.n);
    for (std::int64_t i = 0; i < s.batch; ++i)
      sgemm(101, s.ta ? 112 : 111, s.tb ? 112 : 111, static_cast<int>(s.m), static_cast<int>(s.n),
            static_cast<int>(s.k), 1.0f, a + i * s.m * s.k, lda, b + i * s.k * s.n, ldb, 0.0f, c + i * s.m * s.n,
            static_cast<int>(s.n));
  };
}

// The library's entry point and its thread setter; an error line (and exit 2) when absent.
void* open_symbol(const std::vector<std::string>& files, const char* symbol, void** handle) {
  for (const auto& f : files)
    if ((*handle = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) return dlsym(*handle, symbol);
  std::printf("{\"error\": \"none of the library's files loads (%s)\"}\n", dlerror());
  std::exit(2);
}

Gemm library(const std::string& name, int threads, std::string* detail) {
  if (name == "ours") {
    // Constant weights live in a tensor's storage (copied there once per shape), as a layer's do.
    ef::set_num_threads(threads);
    *detail = "gemm_f32, weights packed once";
    auto held = std::make_shared<std::pair<const char*, ef::Tensor>>(nullptr, ef::Tensor());
    return [held](const Shape& s, const float* a, const float* b, float* c) {
      if (!constant_weights(s))
        return ef::cpu::gemm_f32(a, b, c, s.batch, s.m, s.k, s.n, false, false, nullptr, s.ta, s.tb);
      if (held->first != s.what) {  // each shape has its own B, drawn once
        held->second = ef::Tensor::empty(ef::DType::float32, ef::Shape{s.k, s.n});
        std::copy(b, b + s.k * s.n, held->second.mutable_data<float>().data());
        held->first = s.what;
      }
      ef::cpu::gemm_f32(a, held->second.data<float>().data(), c, 1, s.m, s.k, s.n, false, false, nullptr, false,
                        false, &held->second.impl().storage);
    };
  }
  if (name == "ours_unpacked" || name == "onednn") {
    ef::set_num_threads(threads);
    *detail = name == "ours_unpacked" ? "gemm_f32, B packed on every call"
                                      : "gemm_f32 with EF_ISA=baseline (oneDNN matmul)";
    return [](const Shape& s, const float* a, const float* b, float* c) {
      ef::cpu::gemm_f32(a, b, c, s.batch, s.m, s.k, s.n, false, false, nullptr, s.ta, s.tb);
    };
  }
  void* handle = nullptr;
  if (name == "openblas") {
    auto sgemm = reinterpret_cast<CblasSgemm>(open_symbol({"libopenblas.so.0"}, "cblas_sgemm", &handle));
    auto set = reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads"));
    auto config = reinterpret_cast<const char* (*)()>(dlsym(handle, "openblas_get_config"));
    if (set) set(threads);
    *detail = config ? config() : "libopenblas.so.0";
    return cblas_gemm(sgemm);
  }
  if (name == "blis") {
    auto sgemm = reinterpret_cast<CblasSgemm>(open_symbol({"libblis.so.4"}, "cblas_sgemm", &handle));
    auto set = reinterpret_cast<void (*)(long)>(dlsym(handle, "bli_thread_set_num_threads"));
    if (set) set(threads);
    *detail = "libblis.so.4";
    return cblas_gemm(sgemm);
  }
  if (name == "mkl") {
    const char* dir = std::getenv("EF_MKL_DIR");
    std::vector<std::string> files{"libmkl_rt.so.3", "libmkl_rt.so.2"};
    if (dir) files.insert(files.begin(), std::string(dir) + "/libmkl_rt.so.3");
    auto sgemm = reinterpret_cast<CblasSgemm>(open_symbol(files, "cblas_sgemm", &handle));
    auto set = reinterpret_cast<void (*)(int)>(dlsym(handle, "MKL_Set_Num_Threads"));
    if (set) set(threads);
    *detail = "libmkl_rt (MKL_CBWR=" + std::string(std::getenv("MKL_CBWR") ? std::getenv("MKL_CBWR") : "unset") + ")";
    return cblas_gemm(sgemm);
  }
#if defined(EF_HAVE_LIBXSMM)
  if (name == "xsmm") {
    omp_set_num_threads(threads);
    libxsmm_init();
    *detail = "libxsmm_sgemm_omp (libxsmm " LIBXSMM_VERSION ")";
    // Column-major: the row-major C[M,N] is C^T[N,M] = op(B)^T op(A)^T, whose operands are B and
    // A read column-major as they are stored.
    return [](const Shape& s, const float* a, const float* b, float* c) {
      const libxsmm_blasint m = s.n, n = s.m, k = s.k, lda = s.tb ? s.k : s.n, ldb = s.ta ? s.m : s.k, ldc = s.n;
      const char ta = s.tb ? 'T' : 'N', tb = s.ta ? 'T' : 'N';
      const float one = 1.0f, zero = 0.0f;
      for (std::int64_t i = 0; i < s.batch; ++i)
        libxsmm_sgemm_omp(&ta, &tb, &m, &n, &k, &one, b + i * s.k * s.n, &lda, a + i * s.m * s.k, &ldb, &zero,
                          c + i * s.m * s.n, &ldc);
    };
  }
#endif
  std::printf("{\"error\": \"unknown or unbuilt library %s\"}\n", name.c_str());
  std::exit(2);
}

// Sets the thread count the library uses for the next calls (the checks compare 1 and N).
void set_threads(const std::string& name, int threads) {
  if (name == "ours" || name == "ours_unpacked" || name == "onednn") {
    ef::set_num_threads(threads);
    return;
  }
  omp_set_num_threads(threads);
  const char* setters[][2] = {{"openblas", "openblas_set_num_threads"}, {"mkl", "MKL_Set_Num_Threads"}};
  for (auto& s : setters)
    if (name == s[0])
      if (auto f = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, s[1]))) f(threads);
  if (name == "blis")
    if (auto f = reinterpret_cast<void (*)(long)>(dlsym(RTLD_DEFAULT, "bli_thread_set_num_threads"))) f(threads);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Rows [0, rows) of op(A) as a matrix of their own, stored as A is.
std::vector<float> first_rows(const Shape& s, const float* a, std::int64_t rows) {
  std::vector<float> out(static_cast<std::size_t>(rows * s.k));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t p = 0; p < s.k; ++p) {
      if (s.ta) out[p * rows + r] = a[p * s.m + r];
      else out[r * s.k + p] = a[r * s.k + p];
    }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib = "ours";
  int threads = 1;
  double min_ms = 30;
  bool fma_peak = false;
  for (int i = 1; i < argc; ++i) {
    const bool value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--fma-peak")) fma_peak = true;
    else if (value && !std::strcmp(argv[i], "--lib")) lib = argv[++i];
    else if (value && !std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--min-ms")) min_ms = std::atof(argv[++i]);
  }
  if (fma_peak) {
    print_fma_peak(threads);
    return 0;
  }
  if (lib == "onednn") setenv("EF_ISA", "baseline", 1);  // before the first kernel reads it
  std::string detail;
  const Gemm gemm = library(lib, threads, &detail);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  {  // A warm-up of 300 ms: the thread team, the library's first-call setup, the clock.
    const Shape& big = kShapes.back();
    std::vector<float> a(big.m * big.k, 0.5f), b(big.k * big.n, 0.25f), c(big.m * big.n);
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 0.3)
      gemm(big, a.data(), b.data(), c.data());
  }
  for (const Shape& s : kShapes) {
    const std::size_t na = s.batch * s.m * s.k, nb = s.batch * s.k * s.n, nc = s.batch * s.m * s.n;
    std::vector<float> a(na), b(nb), c(nc), c2(nc), c1(nc);
    for (auto& x : a) x = dist(rng);
    for (auto& x : b) x = dist(rng);
    set_threads(lib, threads);
    gemm(s, a.data(), b.data(), c.data());
    gemm(s, a.data(), b.data(), c2.data());
    const bool repeat = c == c2;
    // A row computed alone and with two others, against the whole product (first matrix).
    bool row_alone = true;
    for (std::int64_t rows : {std::int64_t{1}, std::int64_t{3}}) {
      if (rows >= s.m) continue;
      const Shape part{s.what, 1, rows, s.k, s.n, s.ta, s.tb};
      const std::vector<float> pa = first_rows(s, a.data(), rows);
      std::vector<float> pc(static_cast<std::size_t>(rows * s.n));
      gemm(part, pa.data(), b.data(), pc.data());
      row_alone = row_alone && std::equal(pc.begin(), pc.end(), c.begin());
    }
    // Against a double-precision product on the first rows (a wrong transpose shows here).
    double err = 0;
    for (std::int64_t i = 0; i < std::min<std::int64_t>(s.m, 4); ++i)
      for (std::int64_t j = 0; j < s.n; ++j) {
        double ref = 0, mag = 0;
        for (std::int64_t p = 0; p < s.k; ++p) {
          const double x = s.ta ? a[p * s.m + i] : a[i * s.k + p], y = s.tb ? b[j * s.k + p] : b[p * s.n + j];
          ref += x * y;
          mag += std::abs(x * y);
        }
        err = std::max(err, std::abs(c[i * s.n + j] - ref) / (mag + 1e-30));
      }
    bool same_threads = true;
    if (threads > 1) {
      set_threads(lib, 1);
      gemm(s, a.data(), b.data(), c1.data());
      same_threads = c1 == c;
      set_threads(lib, threads);
    }
    // Timing: calls per sample so that a sample lasts min_ms; 5 samples, the median.
    gemm(s, a.data(), b.data(), c.data());
    auto t0 = std::chrono::steady_clock::now();
    int calls = 0;
    while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < min_ms / 3) {
      gemm(s, a.data(), b.data(), c.data());
      ++calls;
    }
    const int per_sample = std::max(1, calls * 3);
    std::vector<double> us;
    const double cpu0 = cpu_seconds();
    const auto wall0 = std::chrono::steady_clock::now();
    for (int sample = 0; sample < 5; ++sample) {
      const auto t = std::chrono::steady_clock::now();
      for (int i = 0; i < per_sample; ++i) gemm(s, a.data(), b.data(), c.data());
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / per_sample);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    const double cpu_per_wall = (cpu_seconds() - cpu0) / wall;
    std::sort(us.begin(), us.end());
    const double flops = 2.0 * s.batch * s.m * s.k * s.n;
    std::printf(
        "{\"lib\": \"%s\", \"detail\": \"%s\", \"threads\": %d, \"shape\": \"%s\", \"us\": %.2f, \"gflops\": %.1f, "
        "\"cpu_per_wall\": %.2f, \"repeat\": %s, \"threads_same\": %s, \"row_alone\": %s, \"rel_err\": %.1e}\n",
        lib.c_str(), detail.c_str(), threads, s.what, us[2], flops / us[2] * 1e-3, cpu_per_wall,
        repeat ? "true" : "false", same_threads ? "true" : "false", row_alone ? "true" : "false", err);
    std::fflush(stdout);
  }
  return 0;
}
