#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "ops/elementwise_math.h"
#include "ops/fused.h"
#include "ops/primitives.h"
#include "ops/shape_rules.h"
#include "ops/rules/builtin_rules.h"
#include "eagerflow/ops/op_rules.h"

namespace ef {
namespace {

constexpr std::int64_t kBlock = 1024;  // elements per register: the live registers of a program stay in L1/L2 (measured: 256 -> 1024 took the 15-op chain from 9.1 to 7.9 ms)
constexpr int kMaxRegisters = 40;

// The same vector kernels as the unfused ops: a fused graph computes the same bits.
template <class T>
void run_unary(UnaryKind k, const T* in, T* out, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) return cpu::vec::kernels().unary_f32(k, in, out, n);
  else if constexpr (std::is_same_v<T, double>) return cpu::vec::kernels().unary_f64(k, in, out, n);
  switch (k) {
#define EF_CASE(K) case UnaryKind::K: for (std::int64_t i = 0; i < n; ++i) out[i] = unary_value(UnaryKind::K, in[i]); break;
    EF_CASE(neg) EF_CASE(abs) EF_CASE(exp) EF_CASE(log) EF_CASE(sqrt) EF_CASE(rsqrt) EF_CASE(square)
    EF_CASE(relu) EF_CASE(sigmoid) EF_CASE(tanh) EF_CASE(gelu) EF_CASE(erf) EF_CASE(sin) EF_CASE(cos) EF_CASE(logical_not)
      EF_CASE(tan) EF_CASE(asin) EF_CASE(acos) EF_CASE(atan) EF_CASE(sinh) EF_CASE(cosh) EF_CASE(asinh) EF_CASE(acosh)
      EF_CASE(atanh) EF_CASE(expm1) EF_CASE(erfc)
#undef EF_CASE
  }
}

template <class T>
void run_binary(BinaryKind k, const T* a, const T* b, T* out, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) return cpu::vec::kernels().binary_f32(k, a, 0, 1, b, 0, 1, out, 1, n);
  else if constexpr (std::is_same_v<T, double>) return cpu::vec::kernels().binary_f64(k, a, 0, 1, b, 0, 1, out, 1, n);
  switch (k) {
#define EF_CASE(K) case BinaryKind::K: for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(binary_value<BinaryKind::K, T>(a[i], b[i])); break;
    EF_CASE(add) EF_CASE(sub) EF_CASE(mul) EF_CASE(div) EF_CASE(pow) EF_CASE(maximum) EF_CASE(minimum)
#undef EF_CASE
    default: break;  // comparisons and logical ops change the dtype: never fused
  }
}

// The registers of one thread: a buffer kept per thread and grown on first use, so that
// replays allocate nothing and a thread with a small stack is safe (40 registers of 1024
// doubles would be 320 KiB of stack).
template <class T>
class RegisterFile {
 public:
  explicit RegisterFile(int registers) {
    thread_local std::vector<std::byte> buffer;
    std::size_t need = static_cast<std::size_t>(registers) * kBlock * sizeof(T) + 64;
    if (buffer.size() < need) buffer.resize(need);
    auto at = reinterpret_cast<std::uintptr_t>(buffer.data());
    base_ = reinterpret_cast<T*>((at + 63) & ~std::uintptr_t{63});
  }
  T* operator[](int r) const { return base_ + static_cast<std::int64_t>(r) * kBlock; }

 private:
  T* base_;
};

class FusedElementwise : public PrimitiveBase<FusedElementwise> {
 public:
  FusedElementwise(std::vector<FusedInstruction> program, int num_inputs, std::vector<int> outputs, TensorSpec spec)
      : program_(std::move(program)), num_inputs_(num_inputs), outputs_(std::move(outputs)), spec_(std::move(spec)) {
    allocate_slots();
  }
  const char* name() const override { return "fused_elementwise"; }
  std::string attrs() const override {
    auto reg = [&](int r) { return r < num_inputs_ ? "i" + std::to_string(r) : "t" + std::to_string(r - num_inputs_); };
    std::string s = "program=(";
    for (std::size_t i = 0; i < program_.size(); ++i) {
      const auto& ins = program_[i];
      s += (i ? "; " : "") + reg(num_inputs_ + static_cast<int>(i)) + "=" +
           (ins.binary ? binary_name(static_cast<BinaryKind>(ins.code)) : unary_name(static_cast<UnaryKind>(ins.code))) +
           "(" + reg(ins.a) + (ins.binary ? "," + reg(ins.b) : "") + ")";
    }
    s += ") out=(";
    for (std::size_t i = 0; i < outputs_.size(); ++i) s += (i ? "," : "") + reg(outputs_[i]);
    return s + ")";
  }
  // Inputs have the fused shape (dims may be dynamic: fit traces with a dynamic batch) or are
  // scalars. When the dynamic dims of different inputs differ at run time (one is 1 and
  // broadcasts), each output gets the shape the unfused ops would have given it.
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, static_cast<std::size_t>(num_inputs_));
    const Shape* common = nullptr;
    bool same = true;
    for (const auto& t : in) {
      if (t.dtype() != spec_.dtype || (t.rank() != 0 && !fits(t.shape())))
        fail(name(), "input " + t.spec().str() + " does not fit the fused shape " + spec_.str());
      if (t.rank() == 0) continue;
      if (!common) common = &t.shape();
      else same &= *common == t.shape();
    }
    if (same) return std::vector<TensorSpec>(outputs_.size(), TensorSpec{spec_.dtype, common ? *common : spec_.shape, {}});
    std::vector<Shape> reg = register_shapes(in);
    std::vector<TensorSpec> out;
    for (int r : outputs_) out.push_back(TensorSpec{spec_.dtype, reg[static_cast<std::size_t>(r)], {}});
    return out;
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    for (const auto& t : in)
      if (t.rank() != 0 && t.shape() != specs[0].shape) return eval_unfused(in, out);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
    dispatch_dtype(spec_.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) run<T>(in, out);
    });
  }

 private:
  // Scratch slots for the instructions' results, reused once a result is dead (the kernels
  // may write in place over their operands): the live block stays small enough for the
  // caches however long the program. Slots 0..inputs-1 hold scalar inputs spread out.
  void allocate_slots() {
    int regs = num_inputs_ + static_cast<int>(program_.size());
    std::vector<int> last_use(static_cast<std::size_t>(regs), -1);
    for (std::size_t p = 0; p < program_.size(); ++p) {
      last_use[static_cast<std::size_t>(program_[p].a)] = static_cast<int>(p);
      if (program_[p].binary) last_use[static_cast<std::size_t>(program_[p].b)] = static_cast<int>(p);
    }
    // An output's instruction writes straight into the output tensor (no scratch slot, no copy
    // out); later instructions read it there.
    output_index_.assign(static_cast<std::size_t>(regs), -1);
    for (std::size_t o = 0; o < outputs_.size(); ++o) output_index_[static_cast<std::size_t>(outputs_[o])] = static_cast<int>(o);
    slot_.assign(static_cast<std::size_t>(regs), -1);
    for (int i = 0; i < num_inputs_; ++i) slot_[static_cast<std::size_t>(i)] = i;
    std::vector<int> free_slots;
    num_slots_ = num_inputs_;
    for (std::size_t p = 0; p < program_.size(); ++p) {
      for (int r : {program_[p].a, program_[p].binary ? program_[p].b : -1})
        if (r >= num_inputs_ && output_index_[static_cast<std::size_t>(r)] < 0 && last_use[static_cast<std::size_t>(r)] == static_cast<int>(p) &&
            std::find(free_slots.begin(), free_slots.end(), slot_[static_cast<std::size_t>(r)]) == free_slots.end())
          free_slots.push_back(slot_[static_cast<std::size_t>(r)]);
      int dst = num_inputs_ + static_cast<int>(p);
      if (output_index_[static_cast<std::size_t>(dst)] >= 0) continue;  // lives in its output tensor
      if (!free_slots.empty()) {
        slot_[static_cast<std::size_t>(dst)] = free_slots.back();
        free_slots.pop_back();
      } else {
        slot_[static_cast<std::size_t>(dst)] = num_slots_++;
      }
      if (last_use[static_cast<std::size_t>(dst)] < 0) free_slots.push_back(slot_[static_cast<std::size_t>(dst)]);  // never read
    }
  }

  bool fits(const Shape& s) const {
    if (s.rank() != spec_.shape.rank()) return false;
    for (int d = 0; d < s.rank(); ++d)
      if (spec_.shape[d] >= 0 && s[d] >= 0 && spec_.shape[d] != s[d]) return false;
    return true;
  }
  std::vector<Shape> register_shapes(std::span<const Tensor> in) const {
    std::vector<Shape> reg;
    for (const auto& t : in) reg.push_back(t.shape());
    for (const auto& ins : program_) {
      if (!ins.binary) {
        reg.push_back(reg[static_cast<std::size_t>(ins.a)]);
        continue;
      }
      Shape pair[2] = {reg[static_cast<std::size_t>(ins.a)], reg[static_cast<std::size_t>(ins.b)]}, b;
      if (!try_broadcast(pair, b))
        fail(name(), "shapes cannot broadcast: " + pair[0].str() + " vs " + pair[1].str() + " (in " + attrs() + ")");
      reg.push_back(b);
    }
    return reg;
  }
  // The program op by op with the ordinary kernels (the same vector routines): for inputs
  // whose dynamic dims broadcast against each other at run time.
  void eval_unfused(std::span<const Tensor> in, std::span<Tensor> out) const {
    std::vector<Tensor> reg(in.begin(), in.end());
    for (const auto& ins : program_) {
      std::vector<Tensor> args{reg[static_cast<std::size_t>(ins.a)]};
      std::shared_ptr<Primitive> op;
      if (ins.binary) {
        args.push_back(reg[static_cast<std::size_t>(ins.b)]);
        op = std::make_shared<Binary>(static_cast<BinaryKind>(ins.code));
      } else {
        op = std::make_shared<Unary>(static_cast<UnaryKind>(ins.code));
      }
      std::vector<TensorSpec> specs = op->infer(args);
      std::vector<Tensor> result(1);
      op->eval(args, specs, result);
      reg.push_back(result[0]);
    }
    for (std::size_t o = 0; o < outputs_.size(); ++o) out[o] = reg[static_cast<std::size_t>(outputs_[o])];
  }

  template <class T>
  void run(std::span<const Tensor> in, std::span<Tensor> out) const {
    std::int64_t n = out[0].num_elements();
    std::int64_t blocks = (n + kBlock - 1) / kBlock;
    std::array<const T*, kMaxRegisters> inputs{};
    for (int i = 0; i < num_inputs_; ++i) inputs[static_cast<std::size_t>(i)] = in[static_cast<std::size_t>(i)].data<T>().data();
    std::array<T*, kMaxRegisters> outputs{};
    for (std::size_t i = 0; i < out.size(); ++i) outputs[i] = out[i].mutable_data<T>().data();
    cpu::parallel_for(blocks, kBlock * static_cast<std::int64_t>(program_.size()), [&](std::int64_t b0, std::int64_t b1) {
      RegisterFile<T> scratch(num_slots_);
      // Scalars are spread over a whole register once; tensors are read in place.
      std::array<const T*, kMaxRegisters> reg{};
      for (int i = 0; i < num_inputs_; ++i)
        if (in[static_cast<std::size_t>(i)].rank() == 0) {
          std::fill_n(scratch[i], kBlock, inputs[static_cast<std::size_t>(i)][0]);
          reg[static_cast<std::size_t>(i)] = scratch[i];
        }
      for (std::int64_t blk = b0; blk < b1; ++blk) {
        std::int64_t start = blk * kBlock, len = std::min(kBlock, n - start);
        for (int i = 0; i < num_inputs_; ++i)
          if (in[static_cast<std::size_t>(i)].rank() != 0) reg[static_cast<std::size_t>(i)] = inputs[static_cast<std::size_t>(i)] + start;
        for (std::size_t p = 0; p < program_.size(); ++p) {
          const FusedInstruction& ins = program_[p];
          int dst = num_inputs_ + static_cast<int>(p);
          int o = output_index_[static_cast<std::size_t>(dst)];
          T* d = o >= 0 ? outputs[static_cast<std::size_t>(o)] + start : scratch[slot_[static_cast<std::size_t>(dst)]];
          if (ins.binary)
            run_binary<T>(static_cast<BinaryKind>(ins.code), reg[static_cast<std::size_t>(ins.a)], reg[static_cast<std::size_t>(ins.b)], d, len);
          else
            run_unary<T>(static_cast<UnaryKind>(ins.code), reg[static_cast<std::size_t>(ins.a)], d, len);
          reg[static_cast<std::size_t>(dst)] = d;
        }
      }
    });
  }

  std::vector<FusedInstruction> program_;
  int num_inputs_;
  std::vector<int> outputs_;
  TensorSpec spec_;
  std::vector<int> slot_;  // per register: its scratch slot (-1: an input, or an output written in place)
  std::vector<int> output_index_;  // per register: which output it is, or -1
  int num_slots_ = 0;
};

}  // namespace

std::shared_ptr<Primitive> make_fused_elementwise(std::vector<FusedInstruction> program, int num_inputs,
                                                  std::vector<int> output_registers, TensorSpec spec) {
  if (num_inputs + static_cast<int>(program.size()) > kMaxRegisters || output_registers.size() > kMaxRegisters)
    fail("fused_elementwise", "program too long");
  return std::make_shared<FusedElementwise>(std::move(program), num_inputs, std::move(output_registers), std::move(spec));
}

int fusible_code(const Primitive& op) {
  if (auto* u = dynamic_cast<const Unary*>(&op)) return u->kind() == UnaryKind::logical_not ? -1 : static_cast<int>(u->kind());
  if (auto* b = dynamic_cast<const Binary*>(&op))
    return b->kind() <= BinaryKind::minimum ? static_cast<int>(b->kind()) : -1;  // comparisons change the dtype
  return -1;
}

void detail::register_fused_elementwise_rules() {
  register_op_rules<FusedElementwise>({.runs_per_example = true, .onnx_unsupported = "made by graph optimization, which ONNX export does not run"});
}

}  // namespace ef
