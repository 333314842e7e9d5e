// A row's result does not depend on the batch it is computed in: every row of matmul(A, B)
// has the bits of matmul(A[i:i+1], B) for every M from 1 to 300 (the few-rows kernel, the
// blocked GEMM and their tile edges), A and B stored either way, batched, in bfloat16, through
// Dense with bias and relu, a model's predict at any batch size and a saved-then-loaded model.
#include <cstring>

#include "core/thread_budget.h"
#include "test_util.h"

using namespace ef;

namespace {

constexpr std::int64_t kRows = 300;

std::vector<float> floats(const Tensor& t) { return cast(t, DType::float32).to_vector<float>(); }

// Rows [s, s+m) of a [rows, cols] tensor; the window moves with m so that a row meets every
// position in a tile.
std::int64_t start_for(std::int64_t m) { return (m * 37) % (kRows - m + 1); }

// Bit-equal rows: out's row r against single[s + r], each `cols` floats.
void expect_rows(const std::vector<float>& out, const std::vector<std::vector<float>>& single, std::int64_t s,
                 std::int64_t m, std::int64_t cols, const std::string& what) {
  ASSERT_EQ(out.size(), static_cast<std::size_t>(m * cols)) << what;
  for (std::int64_t r = 0; r < m; ++r)
    ASSERT_EQ(std::memcmp(out.data() + r * cols, single[static_cast<std::size_t>(s + r)].data(),
                          static_cast<std::size_t>(cols) * sizeof(float)),
              0)
        << what << ": row " << s + r << " of a product of " << m << " rows";
}

// Every M = 1..300 for one (K, N), the operands stored as asked; `dtype` is the operands'.
void check_matmul(std::int64_t k, std::int64_t n, bool ta, bool tb, DType dtype = DType::float32) {
  const std::string what = "k=" + std::to_string(k) + " n=" + std::to_string(n) + " ta=" + std::to_string(ta) +
                           " tb=" + std::to_string(tb) + " " + std::string(name_of(dtype));
  Tensor a = cast(ef::testing::randn({kRows, k}, static_cast<std::uint64_t>(k * 1000 + n), DType::float32), dtype);
  Tensor b = cast(ef::testing::randn({k, n}, static_cast<std::uint64_t>(k * 1000 + n + 1), DType::float32), dtype);
  Tensor a_stored = ta ? transpose(a) : a;  // [K, 300] when transposed
  Tensor b_stored = tb ? transpose(b) : b;
  auto rows_of = [&](std::int64_t s, std::int64_t m) {
    Tensor part = ta ? slice(a_stored, {0, s}, {k, s + m}) : slice(a_stored, {s}, {s + m});
    return floats(matmul(part, b_stored, ta, tb));
  };
  std::vector<std::vector<float>> single;
  for (std::int64_t i = 0; i < kRows; ++i) single.push_back(rows_of(i, 1));
  for (std::int64_t m = 1; m <= kRows; ++m) {
    const std::int64_t s = start_for(m);
    expect_rows(rows_of(s, m), single, s, m, n, what);
  }
}

const std::int64_t kNs[] = {1, 10, 64, 129};

}  // namespace

TEST(BatchInvariance, MatmulRowsForEveryMSmallK) {
  for (std::int64_t k : {1, 7, 97})
    for (std::int64_t n : kNs) check_matmul(k, n, false, false);
}

TEST(BatchInvariance, MatmulRowsForEveryMLargeK) {
  for (std::int64_t k : {784, 1000})
    for (std::int64_t n : kNs) check_matmul(k, n, false, false);
}

// K past one cache block (256) and not a multiple of it, nor of 8.
TEST(BatchInvariance, MatmulRowsAcrossKBlocks) { check_matmul(513, 37, false, false); }

TEST(BatchInvariance, MatmulRowsWithTransposedOperands) {
  for (auto [ta, tb] : {std::pair{true, false}, {false, true}, {true, true}}) {
    check_matmul(7, 129, ta, tb);
    check_matmul(97, 10, ta, tb);
    check_matmul(300, 64, ta, tb);
  }
}

TEST(BatchInvariance, MatmulRowsInBfloat16) {
  check_matmul(97, 64, false, false, DType::bfloat16);
  check_matmul(784, 10, false, true, DType::bfloat16);
}

// A stacked product: row r of matrix j, [3, M, K] x [3, K, N] and x [K, N], has the bits of
// that row alone.
TEST(BatchInvariance, BatchedMatmulRows) {
  const std::int64_t k = 784, n = 33;
  Tensor a = ef::testing::randn({3, kRows, k}, 5, DType::float32);
  Tensor b3 = ef::testing::randn({3, k, n}, 6, DType::float32), b2 = ef::testing::randn({k, n}, 7, DType::float32);
  for (const Tensor& b : {b3, b2}) {
    std::vector<std::vector<std::vector<float>>> single(3);
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t i = 0; i < kRows; ++i) {
        Tensor bj = b.rank() == 3 ? slice(b, {j}, {j + 1}) : b;
        single[static_cast<std::size_t>(j)].push_back(floats(matmul(slice(a, {j, i}, {j + 1, i + 1}), bj)));
      }
    for (std::int64_t m : {1, 2, 5, 8, 9, 13, 47, 64, 100, 151, 299, 300}) {
      const std::int64_t s = start_for(m);
      auto out = floats(matmul(slice(a, {0, s}, {3, s + m}), b));
      for (std::int64_t j = 0; j < 3; ++j)
        expect_rows(std::vector<float>(out.begin() + j * m * n, out.begin() + (j + 1) * m * n),
                    single[static_cast<std::size_t>(j)], s, m, n, "matrix " + std::to_string(j));
    }
  }
}

// The fused Dense (bias and activation after the product) on every M.
TEST(BatchInvariance, DenseWithBiasAndReluRows) {
  random::set_seed(3);
  for (std::int64_t n : {10, 129}) {
    nn::Dense dense(n, "relu");
    Tensor x = ef::testing::randn({kRows, 784}, 9, DType::float32);
    dense(slice(x, {0}, {1}));  // builds the weights; then a nonzero bias, so that relu cuts some
    dense.bias().assign(ef::testing::randn({n}, 10, DType::float32));
    std::vector<std::vector<float>> single;
    for (std::int64_t i = 0; i < kRows; ++i) single.push_back(floats(dense(slice(x, {i}, {i + 1}))));
    for (std::int64_t m = 1; m <= kRows; ++m) {
      const std::int64_t s = start_for(m);
      expect_rows(floats(dense(slice(x, {s}, {s + m}))), single, s, m, n, "Dense(" + std::to_string(n) + ")");
    }
  }
}

namespace {

std::shared_ptr<train::Sequential> mlp() {
  auto m = std::make_shared<train::Sequential>("mlp");
  m->add<nn::Dense>(64, "relu");
  m->add<nn::Dense>(129, "relu");
  m->add<nn::Dense>(10);
  m->build(Shape({kDynamic, 784}));  // an MNIST MLP
  return m;
}

void expect_same_rows(const Tensor& got, const std::vector<std::vector<float>>& single, const std::string& what) {
  expect_rows(floats(got), single, 0, kRows, 10, what);
}

}  // namespace

// predict in batches of 1, 16 (its last batch 12 rows) and 300, and the model on one row.
TEST(BatchInvariance, ModelPredictAtAnyBatchSizeAndAfterLoading) {
  random::set_seed(4);
  auto model = mlp();
  Tensor x = ef::testing::randn({kRows, 784}, 11, DType::float32);
  std::vector<std::vector<float>> single;
  for (std::int64_t i = 0; i < kRows; ++i) single.push_back(floats((*model)(slice(x, {i}, {i + 1}))));
  for (std::int64_t batch : {1, 16, 32, 300})
    expect_same_rows(model->predict(x, batch), single, "predict batch " + std::to_string(batch));
  auto dir = ef::testing::fresh_temp_dir("batch_invariance");
  std::string path = (dir / "m.efmodel").string();
  save_model(*model, path);
  auto loaded = load_model(path);
  expect_same_rows(loaded->predict(x, 100), single, "loaded, predict batch 100");
  expect_same_rows(loaded->predict(x), single, "loaded, predict");
}

// Under mixed_bfloat16 (bfloat16 computation, float32 variables) the same holds.
TEST(BatchInvariance, MixedBfloat16ModelPredict) {
  nn::set_global_policy(nn::DTypePolicy("mixed_bfloat16"));
  struct Restore {
    ~Restore() { nn::set_global_policy(nn::DTypePolicy("float32")); }
  } restore;
  random::set_seed(5);
  auto model = mlp();
  Tensor x = ef::testing::randn({kRows, 784}, 12, DType::float32);
  std::vector<std::vector<float>> single;
  for (std::int64_t i = 0; i < kRows; ++i) single.push_back(floats((*model)(slice(x, {i}, {i + 1}))));
  for (std::int64_t batch : {1, 16, 300})
    expect_same_rows(model->predict(x, batch), single, "predict batch " + std::to_string(batch));
}

// The threads split rows and columns, never K: one thread and two give the same bits.
TEST(BatchInvariance, ThreadCountDoesNotChangeTheBits) {
  struct Restore {
    int explicit_count = detail::explicit_thread_count();
    ~Restore() {
      if (explicit_count > 0) set_num_threads(explicit_count);
      else detail::use_default_threads_for_testing();
    }
  } restore;
  Tensor a = ef::testing::randn({300, 784}, 13, DType::float32), b = ef::testing::randn({784, 515}, 14, DType::float32);
  set_num_threads(1);
  auto one = floats(matmul(a, b));
  auto one_t = floats(matmul(a, transpose(b), false, true));
  set_num_threads(2);
  EXPECT_EQ(floats(matmul(a, b)), one);
  EXPECT_EQ(floats(matmul(a, transpose(b), false, true)), one_t);
  EXPECT_EQ(one, one_t);  // B stored [N,K] gives the bits of B stored [K,N]
}
