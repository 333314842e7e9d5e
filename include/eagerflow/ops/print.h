#pragma once
// ef::print is an op: it prints on every execution, eager or replayed from a graph (unlike
// std::cout inside a traced function, which runs only while tracing). Like tf.print.
//   ef::print("loss:", loss, "step", step);
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

// Where ef::print writes (default: std::cout). Pass nullptr to restore the default.
void set_print_sink(std::function<void(std::string_view)> sink);

namespace detail {
struct PrintPiece {
  std::string text;
  bool is_tensor = false;
};
void print_op(std::vector<PrintPiece> pieces, std::vector<Tensor> tensors);
inline void add_print_arg(std::vector<PrintPiece>& p, std::vector<Tensor>& t, const Tensor& x) {
  p.push_back({{}, true});
  t.push_back(x);
}
inline void add_print_arg(std::vector<PrintPiece>& p, std::vector<Tensor>&, std::string_view s) {
  p.push_back({std::string(s), false});
}
template <class N> requires std::is_arithmetic_v<N>
void add_print_arg(std::vector<PrintPiece>& p, std::vector<Tensor>&, N n) {
  p.push_back({std::to_string(n), false});
}
}  // namespace detail

template <class... Args>
void print(const Args&... args) {
  std::vector<detail::PrintPiece> pieces;
  std::vector<Tensor> tensors;
  (detail::add_print_arg(pieces, tensors, args), ...);
  detail::print_op(std::move(pieces), std::move(tensors));
}

}  // namespace ef
