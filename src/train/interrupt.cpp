#include "eagerflow/train/interrupt.h"

#include <atomic>

namespace ef::train {
namespace {
std::atomic<InterruptCheck> installed{nullptr};
}  // namespace

InterruptCheck set_interrupt_check(InterruptCheck check) { return installed.exchange(check); }

void check_interrupt() {
  if (InterruptCheck check = installed.load(std::memory_order_acquire)) check();
}

}  // namespace ef::train
