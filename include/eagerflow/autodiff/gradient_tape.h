#pragma once
// Reverse-mode autodiff, TF's way: ops run while a GradientTape is active are recorded, and
// tape.gradient(target, sources) walks them backwards through each op's gradient rule.
//
//   ef::GradientTape tape;              // trainable variables read inside are watched
//   ef::Tensor loss = ef::mean(ef::square(model(x) - y));
//   auto grads = tape.gradient(loss, model.trainable_weights());
//
// Gradient rules are ef ops, so the same tape works eagerly and inside ef::function (the
// backward pass becomes part of the traced graph), and an outer tape records the backward
// pass of an inner one (gradients of gradients).
//
// Threads: a tape records the ops run on the thread that created it (as TF's tapes are per
// thread). It may be destroyed on any thread: the creating thread then drops it from its
// tapes the next time it runs an op (or when it ends). It may be handed to another thread
// that calls gradient() while the creating thread runs no ops under it: like a TF tape, one
// tape is not for use from two threads at the same time.
#include <memory>
#include <vector>

#include "eagerflow/core/tensor.h"
#include "eagerflow/variable.h"

namespace ef {

namespace detail {
class TapeImpl;
}

// What a source that does not reach the target gets (TF's tf.UnconnectedGradients).
enum class UnconnectedGradients { none, zero };

struct GradientOptions {
  UnconnectedGradients unconnected = UnconnectedGradients::none;
  // The cotangent of the target (TF's output_gradients); ones_like(target) when undefined.
  Tensor output_gradient;
};

// A tensor or a variable to differentiate with respect to.
class GradientSource {
 public:
  GradientSource(const Tensor& t) : tensor_(t) {}    // NOLINT: implicit on purpose
  GradientSource(const Variable& v) : variable_(v) {}  // NOLINT
  const Tensor& tensor() const { return tensor_; }
  const Variable& variable() const { return variable_; }
  bool is_variable() const { return variable_.defined(); }

 private:
  Tensor tensor_;
  Variable variable_;
};

class GradientTape {
 public:
  // persistent: gradient() may be called more than once. watch_accessed_variables: trainable
  // variables read while the tape records are watched automatically.
  explicit GradientTape(bool persistent = false, bool watch_accessed_variables = true);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  void watch(const Tensor& t);
  void watch(const Variable& v);
  void watch(const std::vector<Tensor>& ts);
  void watch(const std::vector<Variable>& vs);

  // d target / d source, summed over the target's elements (or weighted by output_gradient).
  // An unconnected source gives an undefined tensor, or zeros on request.
  Tensor gradient(const Tensor& target, const Tensor& source, const GradientOptions& options = {});
  Tensor gradient(const Tensor& target, const Variable& source, const GradientOptions& options = {});
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               const GradientOptions& options = {});
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable>& sources,
                               const GradientOptions& options = {});
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<GradientSource>& sources,
                               const GradientOptions& options = {});
  // Several targets at once (their gradients add), each with an optional cotangent.
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const std::vector<GradientSource>& sources,
                               const std::vector<Tensor>& output_gradients = {},
                               UnconnectedGradients unconnected = UnconnectedGradients::none);

  // The variables this tape watches, in the order they were first watched.
  std::vector<Variable> watched_variables() const;

  // Pauses recording for its scope (TF's `with tape.stop_recording():`).
  class Pause {
   public:
    explicit Pause(GradientTape& tape);
    ~Pause();
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    GradientTape& tape_;
    bool was_paused_;
  };
  [[nodiscard]] Pause stop_recording() { return Pause(*this); }
  // Forgets everything recorded (TF's tape.reset()).
  void reset();

 private:
  std::unique_ptr<detail::TapeImpl> impl_;
};

}  // namespace ef
