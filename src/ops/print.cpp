#include "eagerflow/ops/print.h"
#include "ops/print_op.h"

#include <iostream>
#include <mutex>

#include "core/tensor_print.h"
#include "eagerflow/core/line_sink.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/ops/op_rules.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

LineSink& print_sink() {
  static LineSink s(std::cout, /*newline=*/false);
  return s;
}

class Print : public PrimitiveBase<Print> {
 public:
  explicit Print(std::vector<detail::PrintPiece> pieces) : pieces_(std::move(pieces)) {}
  const char* name() const override { return "print"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  std::string attrs() const override {
    std::string s = "format=\"";
    for (std::size_t i = 0; i < pieces_.size(); ++i) s += (i ? " " : "") + (pieces_[i].is_tensor ? std::string("{}") : pieces_[i].text);
    return s + "\"";
  }
  bool has_effect() const override { return true; }
  bool skip_on_gradient_rerun() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    for (const auto& t : in)
      if (!t.defined()) fail(name(), "an input tensor is undefined (default-constructed)");
    return {};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor>) const override {
    std::string line;
    std::size_t next = 0;
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      if (i) line += ' ';
      line += pieces_[i].is_tensor ? detail::format_for_print(in[next++], static_cast<int>(line.size())) : pieces_[i].text;
    }
    line += '\n';
    print_sink().write(line);
  }
  const std::vector<detail::PrintPiece>& pieces() const { return pieces_; }

 private:
  std::vector<detail::PrintPiece> pieces_;
};

}  // namespace

std::shared_ptr<Primitive> make_print(std::vector<detail::PrintPiece> pieces) {
  return std::make_shared<Print>(std::move(pieces));
}

const std::vector<detail::PrintPiece>* print_pieces(const Primitive& op) {
  auto* p = dynamic_cast<const Print*>(&op);
  return p ? &p->pieces() : nullptr;
}

void set_print_sink(std::function<void(std::string_view)> sink) { print_sink().set(std::move(sink)); }

namespace detail {
void print_op(std::vector<PrintPiece> pieces, std::vector<Tensor> tensors) {
  dispatch(Print(std::move(pieces)), tensors);
}
}  // namespace detail

void detail::register_print_rules() {
  // Under vmap each example prints its own values.
  register_op_rules<Print>({.runs_per_example = true, .onnx_unsupported = "print is an effect; exported graphs compute only"});
}

}  // namespace ef
