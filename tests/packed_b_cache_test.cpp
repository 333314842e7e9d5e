// The packed-B cache (src/kernels/cpu/packed_b_cache.cpp): a product by the same unchanged
// weights reads panels packed once, gives the bits it gave before, and never a stale answer
// after the weights change: written in place (an optimizer step), replaced, or freed and their
// address given to other weights.
#include <cstring>
#include <vector>

#include "core/thread_budget.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_chain.h"
#include "kernels/cpu/packed_b_cache.h"
#include "test_util.h"

using namespace ef;

namespace {

Tensor normal(Shape s, std::uint64_t seed) { return random::stateless_normal(std::move(s), seed, 0.0, 1.0, DType::float32); }

// What the product must be: the same chain of multiply-adds with B packed on the spot (no
// owner: the cache is not asked).
std::vector<float> uncached(const Tensor& x, const Tensor& w, bool tb = false) {
  const std::int64_t m = x.dim(0), k = x.dim(1), n = tb ? w.dim(0) : w.dim(1);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  cpu::gemm_chain_f32(x.data<float>().data(), w.data<float>().data(), c.data(), 1, m, k, n, false, false, nullptr,
                      false, tb);
  return c;
}

// Matrix i of a stack [count, rows, cols], sharing its storage (as the rows a model's fit
// walks, or one scan step's slice, do).
Tensor matrix_view(const Tensor& stack, std::int64_t i) {
  auto impl = new_tensor_impl();
  impl->dtype = stack.dtype();
  impl->shape = Shape{stack.dim(1), stack.dim(2)};
  impl->storage = stack.impl().storage;
  impl->offset = stack.impl().offset + static_cast<std::size_t>(i * stack.dim(1) * stack.dim(2)) * sizeof(float);
  return Tensor(impl);
}

void expect_bits(const Tensor& got, const std::vector<float>& want, const char* what) {
  const std::vector<float> g = got.to_vector<float>();
  ASSERT_EQ(g.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(g.data(), want.data(), g.size() * sizeof(float)), 0) << what;
}

class PackedBCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
    cpu::release_packed_b();
  }
};

}  // namespace

TEST_F(PackedBCache, TheSecondProductPacksAndLaterOnesGiveTheSameBits) {
  const Tensor x = normal({128, 300}, 1), w = normal({300, 70}, 2);
  const std::vector<float> want = uncached(x, w);
  expect_bits(matmul(x, w), want, "first product (no panels yet)");
  EXPECT_EQ(cpu::packed_b_bytes(), 0u);
  expect_bits(matmul(x, w), want, "second product (packs)");
  EXPECT_GE(cpu::packed_b_bytes(), 300u * 70u * sizeof(float));
  for (int i = 0; i < 3; ++i) expect_bits(matmul(x, w), want, "from the kept panels");
  // Another A by the same weights, of other sizes: the same panels serve it.
  const Tensor x2 = normal({45, 300}, 3);
  expect_bits(matmul(x2, w), uncached(x2, w), "another batch size");
  // B stored [N,K] (transpose_b) is its own layout.
  const Tensor wt = normal({70, 300}, 4);
  for (int i = 0; i < 3; ++i) expect_bits(matmul(x, wt, false, true), uncached(x, wt, true), "transpose_b");
}

TEST_F(PackedBCache, AWriteInPlaceIsSeen) {
  const Tensor x = normal({64, 200}, 5);
  Tensor w = normal({200, 40}, 6);
  for (int i = 0; i < 3; ++i) matmul(x, w);  // panels kept
  ASSERT_GT(cpu::packed_b_bytes(), 0u);
  // As an optimizer step does: the same storage, new values.
  for (int step = 0; step < 4; ++step) {
    auto values = w.mutable_data<float>();
    for (std::size_t i = 0; i < values.size(); i += 3) values[i] = values[i] * -0.5f + static_cast<float>(step);
    const std::vector<float> want = uncached(x, w);
    for (int i = 0; i < 3; ++i) expect_bits(matmul(x, w), want, "after the write");
  }
  // One value changed is enough.
  w.mutable_data<float>()[7] += 1.0f;
  expect_bits(matmul(x, w), uncached(x, w), "one value changed");
}

TEST_F(PackedBCache, WeightsFreedAndReplacedAtTheSameAddressAreNotConfused) {
  const Tensor x = normal({32, 96}, 7);
  for (std::uint64_t seed = 10; seed < 20; ++seed) {
    const Tensor w = normal({96, 48}, seed);  // the allocator hands the last one's bytes back
    const std::vector<float> want = uncached(x, w);
    for (int i = 0; i < 3; ++i) expect_bits(matmul(x, w), want, "weights of this round");
  }
}

TEST_F(PackedBCache, AViewIsItsOwnLayout) {
  // Two halves of one storage, multiplied in turn: different starts, different panels.
  const Tensor both = normal({2, 120, 64}, 21);
  const Tensor first = matrix_view(both, 0), second = matrix_view(both, 1);
  const Tensor x = normal({40, 120}, 22);
  for (int i = 0; i < 3; ++i) {
    expect_bits(matmul(x, first), uncached(x, first.clone()), "first half");
    expect_bits(matmul(x, second), uncached(x, second.clone()), "second half");
  }
}

TEST_F(PackedBCache, TwoThreadsReadTheSamePanels) {
  const int before = ef::num_threads();
  ef::set_num_threads(2);
  ef::sync_thread_budget();
  const Tensor x = normal({256, 512}, 31), w = normal({512, 300}, 32);
  const std::vector<float> want = uncached(x, w);
  for (int i = 0; i < 3; ++i) expect_bits(matmul(x, w), want, "2 threads");
  ef::set_num_threads(before);
  ef::sync_thread_budget();
}

TEST_F(PackedBCache, WeightsBeyondTheLimitStayUnpackedInsteadOfRepackingEveryCall) {
  // Room for one of two weight matrices: the one evicted is not packed again on every call
  // (each build would evict the other: a pack pass and an allocation per product).
  const Tensor x = normal({64, 256}, 70), w1 = normal({256, 128}, 71), w2 = normal({256, 128}, 72);
  const std::vector<float> want1 = uncached(x, w1), want2 = uncached(x, w2);
  cpu::set_packed_b_byte_limit(256 * 128 * sizeof(float) * 3 / 2);
  const std::size_t builds = cpu::packed_b_builds();
  for (int i = 0; i < 20; ++i) {
    expect_bits(matmul(x, w1), want1, "first weights");
    expect_bits(matmul(x, w2), want2, "second weights");
    EXPECT_LE(cpu::packed_b_bytes(), 256u * 128u * sizeof(float) * 3 / 2);
  }
  EXPECT_LE(cpu::packed_b_builds() - builds, 2u);
  EXPECT_GT(cpu::packed_b_bytes(), 0u) << "one of them stays packed";
  cpu::set_packed_b_byte_limit(std::size_t{256} << 20);
}

TEST_F(PackedBCache, FewRowsAtTwoThreadsReadTheirColumnsFromACopy) {
  // Batch-1 inference: at 2 threads each thread's columns of the weights are kept together.
  const int before = ef::num_threads();
  ef::set_num_threads(2);
  ef::sync_thread_budget();
  for (std::int64_t m : {1, 3, 8})
    for (std::int64_t n : {512, 1000, 100}) {
      const Tensor x = normal({m, 784}, 50 + static_cast<std::uint64_t>(m));
      Tensor w = normal({784, n}, 60);
      std::vector<float> want(static_cast<std::size_t>(m * n));
      cpu::gemm_f32(x.data<float>().data(), w.data<float>().data(), want.data(), 1, m, 784, n, false, false);
      for (int i = 0; i < 3; ++i) expect_bits(matmul(x, w), want, "few rows, 2 threads");
      // Products this size run on both threads (100 columns at a few rows stay on one: no copy).
      if (n >= 512) {
        EXPECT_GT(cpu::packed_b_bytes(), 0u) << "each thread's columns, kept";
      }
      w.mutable_data<float>()[n + 3] = 100.0f;  // after a write, the new value
      std::vector<float> again(want.size());
      cpu::gemm_f32(x.data<float>().data(), w.data<float>().data(), again.data(), 1, m, 784, n, false, false);
      EXPECT_NE(again, want);
      expect_bits(matmul(x, w), again, "few rows after a write");
    }
  ef::set_num_threads(before);
  ef::sync_thread_budget();
}

TEST_F(PackedBCache, AFewRowsByKeptWeightsRunTheBlockedGemmWithTheSameBits) {
  // 2 to 8 rows by weights multiplied before (a served model at a small batch) read the GEMM's
  // kept panels instead of streaming the weights (where the CPU runs AVX-512's 64-column tile); the rows' bits stay those of the few-rows
  // kernel, at one and two threads, and after a write the new weights are used.
  const int before = ef::num_threads();
  for (int threads : {1, 2}) {
    ef::set_num_threads(threads);
    ef::sync_thread_budget();
    for (std::int64_t m : {2, 3, 5, 8})
      for (std::int64_t n : {64, 512}) {
        cpu::release_packed_b();
        const Tensor x = normal({m, 784}, 70 + static_cast<std::uint64_t>(m));
        Tensor w = normal({784, n}, 80);
        const std::vector<float> want = uncached(x, w);
        // One row at a time on the few-rows kernel: what each row must be whatever its batch.
        for (std::int64_t r = 0; r < m; ++r) {
          std::vector<float> row(static_cast<std::size_t>(n));
          cpu::gemm_f32(x.data<float>().data() + r * 784, w.data<float>().data(), row.data(), 1, 1, 784, n, false,
                        false);
          ASSERT_EQ(std::memcmp(row.data(), want.data() + r * n, row.size() * sizeof(float)), 0) << "row " << r;
        }
        const std::size_t builds = cpu::packed_b_builds();
        for (int i = 0; i < 3; ++i) expect_bits(matmul(x, w), want, "a few rows by kept weights");
        // Only the 64-column AVX-512 tile takes a few rows (the others would compute padded rows).
        if (cpu::gemm_chain_has_avx512()) {
          EXPECT_GT(cpu::packed_b_builds(), builds) << "m=" << m << " n=" << n << ": the GEMM's panels were built";
        }
        w.mutable_data<float>()[5] = -50.0f;
        const std::vector<float> changed = uncached(x, w);
        ASSERT_NE(changed, want);
        for (int i = 0; i < 3; ++i) expect_bits(matmul(x, w), changed, "a few rows after a write");
      }
  }
  // Weights written before every product (a training step's) are never packed.
  ef::set_num_threads(1);
  ef::sync_thread_budget();
  cpu::release_packed_b();
  const Tensor x = normal({4, 784}, 90);
  Tensor w = normal({784, 512}, 91);
  for (int step = 0; step < 4; ++step) {
    w.mutable_data<float>()[static_cast<std::size_t>(step)] += 1.0f;
    expect_bits(matmul(x, w), uncached(x, w), "weights written every step");
  }
  EXPECT_EQ(cpu::packed_b_bytes(), 0u);
  ef::set_num_threads(before);
  ef::sync_thread_budget();
}

TEST_F(PackedBCache, ADenseLayerSeesItsOptimizerStep) {
  // The Keras path: predict, a training step, predict again. Adam's first step gives the kernel
  // a buffer of its own; from the second on it writes that buffer in place.
  random::set_seed(3);
  auto model = std::make_shared<train::Sequential>("mlp");
  model->add(std::make_shared<nn::Dense>(30, "relu", true, "hidden"));
  model->add(std::make_shared<nn::Dense>(5, nn::ActivationFn{}, true, "out"));
  model->compile(std::make_shared<optim::Adam>(0.05), train::LossRef("mse"), {});
  const Tensor x = normal({64, 50}, 41), y = normal({64, 5}, 42);
  const std::vector<float> before1 = model->predict(x).to_vector<float>();
  const std::vector<float> before2 = model->predict(x).to_vector<float>();
  const std::vector<float> before3 = model->predict(x).to_vector<float>();
  EXPECT_EQ(before1, before2);
  EXPECT_EQ(before1, before3);
  EXPECT_GT(cpu::packed_b_bytes(), 0u) << "predict's products by the same weights keep their panels";
  model->train_on_batch(x, y);
  for (int i = 0; i < 3; ++i) model->predict(x);  // panels of the new buffers
  const void* kernel_bytes = model->get_weights()[0].raw_data();
  model->train_on_batch(x, y);
  ASSERT_EQ(model->get_weights()[0].raw_data(), kernel_bytes) << "the step was to write the kernel in place";
  const std::vector<float> after = model->predict(x).to_vector<float>();
  // The same model on copies of its new weights (fresh storages, nothing cached for them).
  std::vector<Tensor> weights = model->get_weights();
  Tensor h = relu(add(matmul(x, weights[0].clone()), weights[1]));
  const std::vector<float> want = add(matmul(h, weights[2].clone()), weights[3]).to_vector<float>();
  ASSERT_EQ(after.size(), want.size());
  EXPECT_EQ(std::memcmp(after.data(), want.data(), want.size() * sizeof(float)), 0);
  EXPECT_NE(after, before1);
}
