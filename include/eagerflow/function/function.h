#pragma once
// ef::function: trace a C++ callable once per input signature into a graph, then replay it.
//
//   auto f = ef::function([](const ef::Tensor& x) { return ef::relu(x) * 2.0f; });
//   f(x);  // traces (reason: first call), runs the graph
//   f(x);  // replays
//
// Host code in the callable (a std::cout, a counter) runs when tracing only; ef::print runs
// on every call. Every trace has a reason: f.traces().
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "eagerflow/function/concrete_function.h"
#include "eagerflow/passes/passes.h"

namespace ef {

// One argument of a fixed input signature: a tensor, or a list or map of tensors.
struct ArgSpec {
  ArgSpec(TensorSpec spec) : kind(ArgSignature::Kind::tensor), specs{std::move(spec)} {}  // NOLINT: implicit
  ArgSpec(std::vector<TensorSpec> list) : kind(ArgSignature::Kind::tensor_list), specs(std::move(list)) {}  // NOLINT
  ArgSpec(std::map<std::string, TensorSpec> map) : kind(ArgSignature::Kind::tensor_map) {  // NOLINT
    for (auto& [k, v] : map) {
      keys.push_back(k);
      specs.push_back(std::move(v));
    }
  }
  ArgSignature::Kind kind;
  std::vector<TensorSpec> specs;
  std::vector<std::string> keys;
};

// A fixed input signature, one ArgSpec per argument. A std::vector<TensorSpec> is one tensor
// argument per spec: `.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 784}}}`.
struct InputSignature : std::vector<ArgSpec> {
  using std::vector<ArgSpec>::vector;
  InputSignature(const std::vector<TensorSpec>& tensors) : std::vector<ArgSpec>(tensors.begin(), tensors.end()) {}  // NOLINT
};

struct FunctionOptions {
  // Fixes the signature (dims may be dynamic, kDynamic); calls that do not fit are errors.
  std::optional<InputSignature> input_signature;
  // TF semantics: once an argument has seen two shapes, trace one relaxed signature with the
  // differing dims dynamic instead of one trace per shape.
  bool reduce_retracing = false;
  std::string name;                     // shown in logs, reasons and errors
  std::vector<std::string> arg_names;   // optional, for reasons: "arg 0 (x): ..."
  passes::PassOptions passes;
  // At most this many traces are cached (0: no bound); the oldest is evicted with a warning
  // in the log, and a later call with its signature traces again.
  std::size_t max_traces = 1024;
};

struct TraceRecord {
  int number = 0;                 // 1 for the first trace
  std::string signature;          // "(x: float32[60,28,28])"
  std::string reason;             // "first call", "arg 0 (x): float32[16,28,28] vs cached float32[60,28,28]"
  double milliseconds = 0;
  std::vector<std::string> created_variables;
};

// Runs every ef::function's body eagerly (for debugging), like tf.config.run_functions_eagerly.
void run_functions_eagerly(bool enable);
bool functions_run_eagerly();

namespace detail {

// True when a GradientTape on this thread records (src/ops/interpreters.h).
bool tapes_recording();

// How deeply traces may nest on one thread: functions traced or inlined into a trace (or run
// by run_functions_eagerly), and the branches and loop bodies of ef::cond / ef::while_loop
// traced inside them. Real programs nest a handful (a train step calling a model calling a
// helper; a few conds); a function that calls itself without a C++ condition ending the
// recursion at trace time would overflow the stack instead. Deeper is an ef::Error naming
// the chain: "f -> f -> f ...".
inline constexpr int kMaxTraceDepth = 128;

// One level of that nesting for its scope; throws when it would exceed kMaxTraceDepth.
class NestedTrace {
 public:
  explicit NestedTrace(const std::string& name);
  ~NestedTrace();
  NestedTrace(const NestedTrace&) = delete;
  NestedTrace& operator=(const NestedTrace&) = delete;
};

// The untyped part of a function: cache, trace records, reasons and warnings.
class FunctionCore {
 public:
  explicit FunctionCore(FunctionOptions options);
  ~FunctionCore();
  FunctionCore(const FunctionCore&) = delete;
  FunctionCore& operator=(const FunctionCore&) = delete;
  using TraceBody = std::function<void(trace::TraceContext&, const Signature&, OutputStructure&)>;

  // `hash` is the call's signature_hash, computed from the arguments. Fully static entries
  // are found through the hash index (O(number of args) however many traces there are);
  // entries with dynamic dims are then tried in trace order.
  template <class Match>
  std::shared_ptr<const ConcreteFunction> find(std::uint64_t hash, Match&& match) {
    using M = std::remove_reference_t<Match>;
    return find_matching(hash, &match, [](const void* m, const Signature& s) -> bool {
      return (*static_cast<M*>(const_cast<void*>(m)))(s);
    });
  }
  // Finds an entry accepting `sig` or traces a new one (under the lock: concurrent first
  // calls trace once). A trace that throws leaves the cache as it was.
  std::shared_ptr<const ConcreteFunction> get_or_trace(const Signature& sig, const TraceBody& body);
  // The same for a call inside another function's trace (the one active on this thread): the
  // body traces into a graph of its own, which the caller records as one call node. When the
  // body used values of the enclosing trace (a closure over its tensors), they are returned as
  // `captures`, to pass after the arguments, and that trace is not cached.
  struct NestedCall {
    std::shared_ptr<const ConcreteFunction> function;
    std::vector<Tensor> captures;
  };
  NestedCall get_or_trace_inside(const Signature& sig, const TraceBody& body);
  // True while this function's body traces on this thread: a call of it from its own body
  // (recursion) is inlined, as its trace cannot wait on itself.
  bool tracing_on_this_thread() const;

  const std::string& name() const { return options_.name; }
  int tracing_count() const;
  // The most recent traces (at most 4096), oldest first.
  std::vector<TraceRecord> traces() const;
  // The cached concrete functions, in trace order (what ef::save writes).
  std::vector<std::shared_ptr<const ConcreteFunction>> concrete_functions() const;
  // A function inlined into another trace still enforces its input signature.
  void check_inline_signature(const Signature& requested) const;
  bool has_input_signature() const { return options_.input_signature.has_value(); }

 private:
  // The cache, its indexes and the trace records (src/function/function_core.cpp): kept out
  // of this header so that including it does not pull in their containers and locks.
  struct State;
  std::shared_ptr<const ConcreteFunction> find_matching(std::uint64_t hash, const void* match,
                                                        bool (*matches)(const void*, const Signature&));
  void note_hit();
  std::string explain(const Signature& sig, std::optional<Signature>& relaxed) const;
  std::string note_trace_for_warning(const std::string& reason);  // the warning to log, if any
  Signature fixed_signature() const;
  [[noreturn]] void signature_mismatch(const Signature& fixed, const Signature& requested) const;
  std::string evict_oldest();  // returns the log line
  NestedCall trace_new(const Signature& requested, const TraceBody& body, trace::TraceContext* parent);

  FunctionOptions options_;
  std::unique_ptr<State> state_;
};


}  // namespace detail

template <class F>
class Function {
 public:
  Function(F f, FunctionOptions options)
      : f_(std::move(f)), core_(std::make_shared<detail::FunctionCore>(std::move(options))) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using R = std::invoke_result_t<F&, typename detail::ArgTraits<Args>::Symbolic...>;
    if (!core_) fail("function", "call of a moved-from ef::Function");
    // Inside another trace the call is one node holding this function's own trace (cached as
    // any other; the passes inline it); a call from its own body is inlined. When debugging,
    // the body runs eagerly.
    if (trace::current() && core_->has_input_signature())
      core_->check_inline_signature(Signature{detail::ArgTraits<Args>::signature(args)...});
    if (trace::current() && !functions_run_eagerly() && !core_->tracing_on_this_thread()) {
      auto nested = core_->get_or_trace_inside(Signature{detail::ArgTraits<Args>::signature(args)...},
                                               [this](trace::TraceContext& ctx, const Signature& final_sig,
                                                      detail::OutputStructure& structure) {
                                                 trace_body<Args...>(ctx, final_sig, structure,
                                                                     std::index_sequence_for<Args...>{});
                                               });
      detail::FlatTensors flat;
      (detail::ArgTraits<Args>::flatten(args, flat), ...);
      for (const Tensor& c : nested.captures) flat.push(c);
      return call_recorded<R>(*nested.function, flat.span());
    }
    if (functions_run_eagerly() || trace::current()) {
      detail::NestedTrace nested(core_->name());
      return std::invoke(f_, args...);
    }
    std::uint64_t hash = sizeof...(Args);
    (detail::ArgTraits<Args>::hash(args, hash), ...);
    auto cf = core_->find(hash, [&](const Signature& s) { return matches(s, args...); });
    if (!cf) cf = trace(Signature{detail::ArgTraits<Args>::signature(args)...}, std::type_identity<Args>{}...);
    detail::FlatTensors flat;
    (detail::ArgTraits<Args>::flatten(args, flat), ...);
    // Under a GradientTape the graph runs as one call op, which the tape records with the
    // forward values its gradient needs (the body, with its host code, is not run again).
    if (detail::tapes_recording()) return call_recorded<R>(*cf, flat.span());
    return replay<R>(*cf, flat.span());
  }

  // Traces (or finds) the specialization for these argument specs without running it. Tensor
  // arguments may be given as TensorSpec (dims may be dynamic).
  template <class... Args>
  std::shared_ptr<const ConcreteFunction> get_concrete_function(const Args&... args) const {
    if (!core_) fail("function", "get_concrete_function of a moved-from ef::Function");
    return trace(Signature{detail::ArgTraits<Args>::signature(args)...}, std::type_identity<Args>{}...);
  }

  int tracing_count() const { return core().tracing_count(); }
  // The cached traces, oldest first.
  std::vector<std::shared_ptr<const ConcreteFunction>> concrete_functions() const { return core().concrete_functions(); }
  std::vector<TraceRecord> traces() const { return core().traces(); }
  const std::string& name() const { return core().name(); }

 private:
  const detail::FunctionCore& core() const {
    if (!core_) fail("function", "use of a moved-from ef::Function");
    return *core_;
  }

  template <class... Args>
  static bool matches(const Signature& s, const Args&... args) {
    if (s.size() != sizeof...(Args)) return false;
    std::size_t i = 0;
    return (detail::ArgTraits<Args>::matches(s[i++], args) && ...);
  }

  template <class... Args>
  std::shared_ptr<const ConcreteFunction> trace(const Signature& sig, std::type_identity<Args>...) const {
    return core_->get_or_trace(sig, [this](trace::TraceContext& ctx, const Signature& final_sig,
                                           detail::OutputStructure& structure) {
      trace_body<Args...>(ctx, final_sig, structure, std::index_sequence_for<Args...>{});
    });
  }

  template <class... Args, std::size_t... I>
  void trace_body(trace::TraceContext& ctx, const Signature& sig, detail::OutputStructure& structure,
                  std::index_sequence<I...>) const {
    // Braced initialization evaluates left to right: graph inputs follow argument order.
    std::tuple<typename detail::ArgTraits<Args>::Symbolic...> symbolic{detail::ArgTraits<Args>::symbolic(sig[I], ctx)...};
    using R = std::invoke_result_t<F&, typename detail::ArgTraits<Args>::Symbolic...>;
    std::vector<Tensor> outputs;
    if constexpr (std::is_void_v<R>) {
      std::apply(f_, symbolic);
    } else {
      R result = std::apply(f_, symbolic);
      detail::OutTraits<std::decay_t<R>>::flatten(result, outputs, structure);
    }
    ctx.set_outputs(outputs);
  }

  template <class R>
  static R replay(const ConcreteFunction& cf, std::span<const Tensor> inputs) {
    if constexpr (std::is_void_v<R>) {
      cf.run(inputs, {});
    } else if constexpr (std::is_same_v<R, Tensor>) {
      Tensor out;
      cf.run(inputs, std::span<Tensor>(&out, 1));
      return out;
    } else {
      std::vector<Tensor> outs(cf.num_outputs());
      cf.run(inputs, outs);
      detail::OutputCursor cursor{outs, 0, 0, 0, &cf.output_structure()};
      return detail::OutTraits<std::decay_t<R>>::build(cursor);
    }
  }

  template <class R>
  static R call_recorded(const ConcreteFunction& cf, std::span<const Tensor> inputs) {
    std::vector<Tensor> outs = cf.call(inputs);
    if constexpr (std::is_void_v<R>) {
      return;
    } else if constexpr (std::is_same_v<R, Tensor>) {
      return outs.at(0);
    } else {
      detail::OutputCursor cursor{outs, 0, 0, 0, &cf.output_structure()};
      return detail::OutTraits<std::decay_t<R>>::build(cursor);
    }
  }

  mutable F f_;  // a callable with state (a mutable lambda) stays callable through const&
  std::shared_ptr<detail::FunctionCore> core_;
};

template <class F>
Function<std::decay_t<F>> function(F&& f, FunctionOptions options = {}) {
  if (options.name.empty()) options.name = "function";
  return Function<std::decay_t<F>>(std::forward<F>(f), std::move(options));
}

}  // namespace ef
