#pragma once
#include <gtest/gtest.h>

#include <eagerflow/eagerflow.h>
#include <cmath>
#include <string>

namespace ef::testing {

// Expects `fn` to throw ef::Error whose message contains every one of `parts`.
template <class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected ef::Error";
  } catch (const ef::Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
  }
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) { EXPECT_TRUE(std::isnan(got[i])) << "at " << i; continue; }
    if (std::isinf(want[i])) { EXPECT_EQ(got[i], want[i]) << "at " << i; continue; }
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
  }
}

}  // namespace ef::testing
