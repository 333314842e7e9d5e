#pragma once
// Argument checks the optimizers share: a bad hyperparameter is an ef::Error naming the
// optimizer and the argument, at construction.
#include <cmath>
#include <string>

#include "eagerflow/core/error.h"

namespace ef::optim {

// A rate that trains: finite, positive, and still so in float32 (the rate is a float32
// variable: 1e39 would become Inf, 1e-50 would become 0).
inline void expect_rate(const std::string& optimizer, double rate) {
  float f = static_cast<float>(rate);
  if (!(std::isfinite(rate) && rate > 0 && std::isfinite(f) && f > 0))
    fail(optimizer, "learning_rate must be a positive number that float32 holds, got " + std::to_string(rate) +
                        (std::isfinite(rate) && rate > 0 ? " (out of float32's range)" : ""));
}

// name in [low, high) (or [low, high] when closed): NaN fails too.
inline void expect_in(const std::string& optimizer, const char* name, double v, double low, double high, bool closed) {
  if (!(v >= low && (closed ? v <= high : v < high)))
    fail(optimizer, std::string(name) + " must be in [" + std::to_string(low) + ", " + std::to_string(high) +
                        (closed ? "]" : ")") + ", got " + std::to_string(v));
}

inline void expect_epsilon(const std::string& optimizer, double epsilon) {
  if (!(std::isfinite(epsilon) && epsilon >= 0))
    fail(optimizer, "epsilon must be a finite number >= 0, got " + std::to_string(epsilon));
}


}  // namespace ef::optim
