// Interrupting fit, evaluate and predict between batches (the hook Python's Ctrl-C handling
// installs, eagerflow/train/interrupt.h): the loop stops at the next batch, the model stays
// usable and trains again.
#include <stdexcept>

#include "eagerflow/train/interrupt.h"
#include "test_util.h"

using namespace ef;

namespace {

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

int checks = 0;
int interrupt_at = -1;  // the check that throws
void counting_check() {
  if (checks++ == interrupt_at) throw Interrupted();
}

// Installs counting_check for a scope.
struct InterruptAt {
  explicit InterruptAt(int n) {
    checks = 0;
    interrupt_at = n;
    previous = train::set_interrupt_check(&counting_check);
  }
  ~InterruptAt() { train::set_interrupt_check(previous); }
  train::InterruptCheck previous;
};

std::shared_ptr<train::Sequential> model_for_interrupts() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(4, "relu");
  model->add<nn::Dense>(1);
  model->compile(std::make_shared<optim::SGD>(0.01), "mse");
  return model;
}

}  // namespace

TEST(Interrupt, FitStopsAtTheNextBatchAndTheModelTrainsAgain) {
  auto model = model_for_interrupts();
  Tensor x = random::normal({40, 3}), y = random::normal({40, 1});
  train::FitOptions o;
  o.batch_size = 4;  // 10 steps an epoch
  o.epochs = 100;
  o.verbose = 0;
  {
    InterruptAt at(12);
    EXPECT_THROW(model->fit(x, y, o), Interrupted);
  }
  // Checks come before every batch but the first: the 13th check stops it before step 14.
  EXPECT_EQ(Tensor(model->optimizer()->iterations()).item<std::int64_t>(), 13);
  o.epochs = 2;
  train::History h = model->fit(x, y, o);
  EXPECT_EQ(h.history["loss"].size(), 2u);
  EXPECT_EQ(Tensor(model->optimizer()->iterations()).item<std::int64_t>(), 33);
  EXPECT_EQ(model->tracing_count(), 1);
}

TEST(Interrupt, EvaluateAndPredictStopBetweenBatches) {
  auto model = model_for_interrupts();
  Tensor x = random::normal({40, 3}), y = random::normal({40, 1});
  {
    InterruptAt at(2);
    EXPECT_THROW(model->evaluate(x, y, 4), Interrupted);
    EXPECT_EQ(checks, 3);
  }
  {
    InterruptAt at(0);
    EXPECT_THROW(model->predict(x, 4), Interrupted);
    EXPECT_EQ(checks, 1);
  }
  {
    InterruptAt at(-1);  // installed, never throws
    EXPECT_EQ(model->predict(x, 4).shape(), (Shape{40, 1}));
    EXPECT_EQ(checks, 9);
  }
  EXPECT_EQ(model->predict(x, 4).shape(), (Shape{40, 1}));
  EXPECT_TRUE(std::isfinite(model->evaluate(x, y, 4).at("loss")));
}
