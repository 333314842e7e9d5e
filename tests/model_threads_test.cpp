// A model's lazily made steps under threads: concurrent first calls make one step (one trace),
// and a step replaced by another thread's call (other data) stays alive while calls use it.
#include <atomic>
#include <barrier>
#include <thread>

#include "test_util.h"

using namespace ef;

namespace {

std::shared_ptr<train::Sequential> small_model() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(8, "relu");
  model->add<nn::Dense>(2);
  return model;
}

constexpr int kThreads = 8;

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>();
  for (std::size_t i = 0; i < va.size(); ++i)
    if (!(std::fabs(va[i] - vb[i]) <= 1e-5f)) return false;
  return true;
}

}  // namespace

TEST(ModelThreads, ConcurrentFirstPredictMakesOneStep) {
  random::set_seed(3);
  Tensor x = random::normal({10, 4});
  for (int round = 0; round < 6; ++round) {
    auto model = small_model();
    model->build(Shape{kDynamic, 4});
    Tensor expected = (*model)(x);
    std::barrier start(kThreads);
    std::vector<Tensor> outs(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        outs[t] = model->predict(x, 4);
      });
    for (auto& th : threads) th.join();
    for (const auto& o : outs) EXPECT_TRUE(same_values(o, expected));
    EXPECT_EQ(model->predict_tracing_count(), 1);
  }
}

// Threads alternating between inputs of two ranks: each call's step signature differs from the
// last one made, so the model's predict step is replaced while other threads run theirs.
TEST(ModelThreads, ReplacedPredictStepOutlivesCallsThroughIt) {
  random::set_seed(4);
  auto model = small_model();
  model->build(Shape{kDynamic, 4});
  Tensor x2 = random::normal({6, 4}), x3 = random::normal({3, 2, 4});
  Tensor e2 = (*model)(x2), e3 = (*model)(x3);
  std::barrier start(kThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < 12; ++i) {
        bool rank3 = (t + i) % 2 == 1;
        Tensor out = model->predict(rank3 ? x3 : x2, 2);
        if (!same_values(out, rank3 ? e3 : e2)) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// After concurrent first predict calls the model trains as usual: one predict trace, one train trace.
TEST(ModelThreads, ConcurrentFirstPredictThenFit) {
  random::set_seed(5);
  auto model = small_model();
  model->compile(std::make_shared<optim::SGD>(0.01), "mse");
  Tensor x = random::normal({8, 4}), y = random::normal({8, 2});
  model->build(Shape{kDynamic, 4});
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      start.arrive_and_wait();
      model->predict(x, 3);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(model->predict_tracing_count(), 1);
  model->fit(x, y, [] {
    train::FitOptions o;
    o.verbose = 0;
    o.epochs = 2;
    return o;
  }());
  EXPECT_EQ(model->tracing_count(), 1);
}
