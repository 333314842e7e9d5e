#pragma once
#include <gtest/gtest.h>

#include <eagerflow/eagerflow.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

namespace ef::testing {

// An empty folder of this process's own under the system's temp folder (made anew).
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / ("ef_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// Captures std::cout for a scope (progress bars, callbacks' messages).
class CaptureStdout {
 public:
  CaptureStdout() : old_(std::cout.rdbuf(buffer_.rdbuf())) {}
  ~CaptureStdout() { std::cout.rdbuf(old_); }
  CaptureStdout(const CaptureStdout&) = delete;
  CaptureStdout& operator=(const CaptureStdout&) = delete;
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

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

// Normal draws, float64 by default, the same for a seed.
inline Tensor randn(Shape s, std::uint64_t seed, DType dtype = DType::float64) {
  return random::stateless_normal(s, seed, 0.0, 1.0, dtype);
}

// Same shape and dtype, and every element within tol (relative, plus tol absolute).
inline void expect_tensor_near(const Tensor& got, const Tensor& want, double tol = 1e-9) {
  ASSERT_EQ(got.shape(), want.shape()) << got.spec().str() << " vs " << want.spec().str();
  ASSERT_EQ(got.dtype(), want.dtype());
  auto g = cast(got, DType::float64).to_vector<double>(), w = cast(want, DType::float64).to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "at " << i;
}

}  // namespace ef::testing
