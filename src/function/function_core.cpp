#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <shared_mutex>
#include <unordered_map>
#include <bit>
#include <iomanip>
#include <limits>
#include <mutex>
#include <sstream>

#include "eagerflow/core/log.h"
#include "eagerflow/function/function.h"
#include "function/control_flow_ops.h"
#include "ops/interpreters.h"

namespace ef {
namespace {

std::atomic<bool> eager_mode{false};

constexpr std::uint32_t kWindow = 10;          // TF: 5 of the last 10 calls traced
constexpr std::uint32_t kWindowMask = (1u << kWindow) - 1;
constexpr int kRetraceThreshold = 5;
constexpr int kMaxWarnings = 2;

std::string arg_label(std::size_t i, const std::vector<std::string>& names) {
  std::string s = "arg " + std::to_string(i);
  if (i < names.size() && !names[i].empty()) s += " (" + names[i] + ")";
  return s;
}

const char* kind_name(ArgSignature::Kind k) {
  switch (k) {
    case ArgSignature::Kind::tensor: return "a tensor";
    case ArgSignature::Kind::tensor_list: return "a list of tensors";
    case ArgSignature::Kind::tensor_map: return "a map of tensors";
    case ArgSignature::Kind::static_value: return "a static value";
    case ArgSignature::Kind::variable: return "a variable";
  }
  return "?";
}

// Why `now` does not hit `cached`: one phrase per differing argument. `versus` names the
// other side ("cached", or "the signature's" for a fixed input signature).
std::vector<std::string> differences(const Signature& now, const Signature& cached, const std::vector<std::string>& names,
                                     const std::string& versus = "cached") {
  std::vector<std::string> out;
  if (now.size() != cached.size()) {
    out.push_back(std::to_string(now.size()) + " arguments vs " + versus + " " + std::to_string(cached.size()));
    return out;
  }
  for (std::size_t i = 0; i < now.size(); ++i) {
    const ArgSignature &a = now[i], &b = cached[i];
    std::string label = arg_label(i, names);
    if (a.kind != b.kind) {
      out.push_back(label + ": " + kind_name(a.kind) + " vs " + versus + " " + kind_name(b.kind));
    } else if (a.kind == ArgSignature::Kind::variable) {
      if (!static_equal(a.value, b.value)) out.push_back(label + ": " + a.str() + " vs " + versus + " " + b.str());
    } else if (a.kind == ArgSignature::Kind::static_value) {
      if (!static_equal(a.value, b.value)) {
        std::string name = i < names.size() && !names[i].empty() ? names[i] : std::to_string(i);
        out.push_back("static arg " + name + ": " + static_value_str(a.value) + " vs " + static_value_str(b.value));
      }
    } else if (a.keys != b.keys || a.specs.size() != b.specs.size()) {
      out.push_back(label + ": " + a.str() + " vs " + versus + " " + b.str());
    } else {
      for (std::size_t k = 0; k < a.specs.size(); ++k) {
        bool same = a.specs[k].dtype == b.specs[k].dtype && b.specs[k].shape.accepts(a.specs[k].shape);
        if (same) continue;
        std::string where = label;
        if (a.kind == ArgSignature::Kind::tensor_list) where += "[" + std::to_string(k) + "]";
        if (a.kind == ArgSignature::Kind::tensor_map) where += "[\"" + a.keys[k] + "\"]";
        out.push_back(where + ": " + a.specs[k].str() + " vs " + versus + " " + b.specs[k].str());
      }
    }
  }
  return out;
}

// How many arguments differ, without building any text: finding the closest cached entry
// stays cheap however many there are; only the closest one is then described.
std::size_t count_differences(const Signature& now, const Signature& cached) {
  if (now.size() != cached.size()) return 1;
  std::size_t n = 0;
  for (std::size_t i = 0; i < now.size(); ++i) {
    const ArgSignature &a = now[i], &b = cached[i];
    if (a.kind != b.kind || a.keys != b.keys || a.specs.size() != b.specs.size() || !static_equal(a.value, b.value)) {
      ++n;
      continue;
    }
    for (std::size_t k = 0; k < a.specs.size(); ++k)
      n += !(a.specs[k].dtype == b.specs[k].dtype && b.specs[k].shape.accepts(a.specs[k].shape));
  }
  return n;
}

// The same structure, static values, dtypes and ranks: only dims differ.
bool relaxable(const Signature& a, const Signature& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind || a[i].keys != b[i].keys || !static_equal(a[i].value, b[i].value) ||
        a[i].specs.size() != b[i].specs.size())
      return false;
    for (std::size_t k = 0; k < a[i].specs.size(); ++k)
      if (a[i].specs[k].dtype != b[i].specs[k].dtype || a[i].specs[k].shape.rank() != b[i].specs[k].shape.rank()) return false;
  }
  return true;
}

Signature relax(const Signature& now, const Signature& cached) {
  Signature r = now;
  for (std::size_t i = 0; i < r.size(); ++i)
    for (std::size_t k = 0; k < r[i].specs.size(); ++k) {
      Shape& s = r[i].specs[k].shape;
      const Shape& c = cached[i].specs[k].shape;
      for (int d = 0; d < s.rank(); ++d)
        if (s[d] != c[d]) s[d] = kDynamic;
    }
  return r;
}

}  // namespace

void run_functions_eagerly(bool enable) { eager_mode.store(enable); }
bool functions_run_eagerly() { return eager_mode.load(std::memory_order_relaxed); }

namespace detail {

struct FunctionCore::State {
  static constexpr std::size_t kMaxRecords = 4096;
  mutable std::shared_mutex mutex_;
  std::vector<std::shared_ptr<const ConcreteFunction>> entries_;  // all, in trace order
  std::unordered_multimap<std::uint64_t, std::shared_ptr<const ConcreteFunction>> static_index_;
  std::vector<std::shared_ptr<const ConcreteFunction>> dynamic_entries_;
  bool traced_once_ = false;  // variables may be created on the first trace only
  mutable std::mutex records_mutex_;
  std::deque<TraceRecord> records_;
  int trace_count_ = 0;
  std::atomic<std::uint32_t> history_{0};  // last calls, 1 bit per call (1 = traced), newest lowest
  int warnings_ = 0;
  std::vector<std::string> recent_reasons_;
};

FunctionCore::~FunctionCore() = default;

std::shared_ptr<const ConcreteFunction> FunctionCore::find_matching(std::uint64_t hash, const void* match,
                                                                    bool (*matches)(const void*, const Signature&)) {
  std::shared_lock lock(state_->mutex_);
  auto [first, last] = state_->static_index_.equal_range(hash);
  for (auto it = first; it != last; ++it)
    if (matches(match, it->second->signature())) {
      note_hit();
      return it->second;
    }
  for (const auto& cf : state_->dynamic_entries_)
    if (matches(match, cf->signature())) {
      note_hit();
      return cf;
    }
  return nullptr;
}

std::vector<std::shared_ptr<const ConcreteFunction>> FunctionCore::concrete_functions() const {
  std::shared_lock lock(state_->mutex_);
  return state_->entries_;
}

FunctionCore::FunctionCore(FunctionOptions options) : options_(std::move(options)), state_(std::make_unique<State>()) {
  if (options_.name.empty()) options_.name = "function";
  if (options_.input_signature && options_.arg_names.empty())
    for (const auto& a : *options_.input_signature)
      options_.arg_names.push_back(a.kind == ArgSignature::Kind::tensor ? a.specs[0].name : std::string());
  if (options_.input_signature) {
    for (const auto& a : *options_.input_signature)
      if (a.kind == ArgSignature::Kind::tensor && a.specs.size() != 1)
        fail("function " + options_.name, "an input_signature entry of kind tensor holds " + std::to_string(a.specs.size()) + " specs");
    check_signature_dims(fixed_signature(), options_.arg_names, "function " + options_.name);
  }
}

// Trace records have their own lock: a log sink or the body itself may ask for them while
// the cache's lock is held by a trace in progress.
int FunctionCore::tracing_count() const {
  std::lock_guard lock(state_->records_mutex_);
  return state_->trace_count_;
}

std::vector<TraceRecord> FunctionCore::traces() const {
  std::lock_guard lock(state_->records_mutex_);
  return {state_->records_.begin(), state_->records_.end()};
}

namespace {
// The functions this thread is tracing now: asking one of them for a trace from inside its
// own body would wait on itself.
thread_local std::vector<const FunctionCore*> tracing_now;
// Names of the nested traces on this thread, outermost first (NestedTrace).
thread_local std::vector<std::string> trace_chain;

std::string chain_str(const std::vector<std::string>& chain) {
  constexpr std::size_t kShown = 6;  // at each end
  std::string s;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (chain.size() > 2 * kShown && i == kShown) {
      s += " -> ... (" + std::to_string(chain.size() - 2 * kShown) + " more)";
      i = chain.size() - kShown;
    }
    s += (s.empty() ? "" : " -> ") + chain[i];
  }
  return s;
}
// The bytes of this thread's stack left below the current frame (its size from pthread's
// attributes, read once per thread); max when unknown.
std::size_t stack_left() {
  thread_local std::uintptr_t low = [] {
    pthread_attr_t attr;
    void* base = nullptr;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return std::uintptr_t{0};
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
    return reinterpret_cast<std::uintptr_t>(base);
  }();
  char here;
  auto sp = reinterpret_cast<std::uintptr_t>(&here);
  return low && sp > low ? sp - low : std::numeric_limits<std::size_t>::max();
}
// More than one nested trace needs to reach the next check (a few KiB; ~17 KiB under
// ThreadSanitizer): below it, the depth error comes before a stack overflow would.
constexpr std::size_t kStackPerTrace = 64 * 1024;
}  // namespace

NestedTrace::NestedTrace(const std::string& name) {
  if (trace_chain.size() >= static_cast<std::size_t>(kMaxTraceDepth) || stack_left() < kStackPerTrace) {
    std::vector<std::string> chain = trace_chain;
    chain.push_back(name);
    fail("function " + chain.front(),
         "traces nest more than " +
             (trace_chain.size() >= static_cast<std::size_t>(kMaxTraceDepth)
                  ? std::to_string(kMaxTraceDepth) + " deep"
                  : std::to_string(trace_chain.size()) + " deep for this thread's stack") +
             ": " + chain_str(chain) +
             ". A function that calls itself must end the recursion at trace time, with a C++ condition on static "
             "values (inside a trace both branches of ef::cond are traced, so a tensor predicate does not end it)");
  }
  trace_chain.push_back(name);
}

NestedTrace::~NestedTrace() { trace_chain.pop_back(); }

void FunctionCore::check_inline_signature(const Signature& requested) const {
  if (!options_.input_signature) return;
  Signature fixed = fixed_signature();
  if (!signature_accepts(fixed, requested)) signature_mismatch(fixed, requested);
}

Signature FunctionCore::fixed_signature() const {
  Signature fixed;
  for (const auto& a : *options_.input_signature) fixed.push_back({a.kind, a.specs, a.keys, {}, {}});
  return fixed;
}

void FunctionCore::signature_mismatch(const Signature& fixed, const Signature& requested) const {
  auto d = differences(requested, fixed, options_.arg_names, "the signature's");
  std::string what;
  for (std::size_t i = 0; i < d.size(); ++i) what += (i ? "; " : "") + d[i];
  fail("function " + options_.name, "call does not match the input signature " + signature_str(fixed, options_.arg_names) +
                                        ": " + (what.empty() ? signature_str(requested, options_.arg_names) : what));
}

void FunctionCore::note_hit() {
  // Only recent traces make the history matter; once it is all zeros a hit costs one load.
  std::uint32_t h = state_->history_.load(std::memory_order_relaxed);
  while (h != 0 && !state_->history_.compare_exchange_weak(h, (h << 1) & kWindowMask, std::memory_order_relaxed)) {
  }
}

std::string FunctionCore::note_trace_for_warning(const std::string& reason) {
  std::uint32_t h = ((state_->history_.load() << 1) | 1u) & kWindowMask;
  state_->history_.store(h);
  state_->recent_reasons_.push_back(reason);
  if (state_->recent_reasons_.size() > kWindow) state_->recent_reasons_.erase(state_->recent_reasons_.begin());
  if (std::popcount(h) < kRetraceThreshold || state_->warnings_ >= kMaxWarnings) return {};
  ++state_->warnings_;
  state_->history_.store(0);
  std::ostringstream os;
  os << "[ef.function] WARNING: '" << options_.name << "' traced " << std::popcount(h) << " times in its last "
     << kWindow << " calls. Tracing is expensive, and this many traces mean the calls keep changing the signature. "
     << "Reasons seen:";
  for (const auto& r : state_->recent_reasons_) os << "\n    - " << r;
  os << "\n  To trace less: pass FunctionOptions::input_signature with dynamic dims (ef::kDynamic), set "
        "reduce_retracing = true, or pass changing numbers as tensors rather than static C++ values.";
  state_->recent_reasons_.clear();
  return os.str();
}

std::string FunctionCore::explain(const Signature& sig, std::optional<Signature>& relaxed) const {
  if (!state_->traced_once_) return "first call";
  if (state_->entries_.empty()) return "the cached traces were evicted (FunctionOptions::max_traces)";
  const ConcreteFunction* best_cf = nullptr;
  std::size_t best_count = 0;
  for (auto it = state_->entries_.rbegin(); it != state_->entries_.rend(); ++it) {  // newest first wins ties
    std::size_t c = count_differences(sig, (*it)->signature());
    if (!best_cf || c < best_count) {
      best_count = c;
      best_cf = it->get();
    }
  }
  std::vector<std::string> best = differences(sig, best_cf->signature(), options_.arg_names);
  std::string reason;
  for (std::size_t i = 0; i < best.size(); ++i) reason += (i ? "; " : "") + best[i];
  if (options_.reduce_retracing)
    for (auto it = state_->entries_.rbegin(); it != state_->entries_.rend(); ++it)
      if (relaxable(sig, (*it)->signature())) {
        relaxed = relax(sig, (*it)->signature());
        std::string specs;
        for (const auto& a : *relaxed)
          if (a.kind != ArgSignature::Kind::static_value) specs += (specs.empty() ? "" : ", ") + a.str();
        reason += "; relaxed to " + specs;
        break;
      }
  return reason;
}

std::shared_ptr<const ConcreteFunction> FunctionCore::get_or_trace(const Signature& requested, const TraceBody& body) {
  return trace_new(requested, body, nullptr).function;
}

bool FunctionCore::tracing_on_this_thread() const {
  return std::find(tracing_now.begin(), tracing_now.end(), this) != tracing_now.end();
}

FunctionCore::NestedCall FunctionCore::get_or_trace_inside(const Signature& requested, const TraceBody& body) {
  trace::TraceContext* outer = trace::current();
  if (!outer)
    fail(ErrorCode::internal, "function " + options_.name, "internal: get_or_trace_inside needs an active trace");
  return trace_new(requested, body, outer);
}

FunctionCore::NestedCall FunctionCore::trace_new(const Signature& requested, const TraceBody& body,
                                                 trace::TraceContext* parent) {
  // Before the cache: a dynamic dim of a cached entry would accept a dim of -7.
  check_signature_dims(requested, options_.arg_names, "function " + options_.name);
  if (tracing_on_this_thread())
    fail(ErrorCode::failed_precondition, "function " + options_.name,
         "a new signature " + signature_str(requested, options_.arg_names) +
             " was requested from inside this function's own trace (get_concrete_function "
             "or a call from a log sink); calls inside the body inline instead");
  std::vector<std::pair<LogLevel, std::string>> messages;  // logged after the lock is released
  NestedCall result;
  {
    std::unique_lock lock(state_->mutex_);
    for (const auto& e : state_->entries_)
      if (signature_accepts(e->signature(), requested)) return {e, {}};

    Signature sig = requested;
    std::optional<Signature> relaxed;
    std::string reason;
    if (options_.input_signature) {
      Signature fixed = fixed_signature();
      if (!signature_accepts(fixed, requested)) signature_mismatch(fixed, requested);
      reason = state_->traced_once_ ? "input signature" : "first call";
      sig = std::move(fixed);
    } else {
      reason = explain(requested, relaxed);
      if (relaxed) sig = *relaxed;
    }

    auto start = std::chrono::steady_clock::now();
    NestedTrace nested(options_.name);
    // Inside another trace the body may use that trace's values: they are lifted into this
    // graph as trailing inputs (as the branches of ef::cond do).
    trace::TraceContext ctx(options_.name, /*allow_variable_creation=*/!state_->traced_once_, parent);
    OutputStructure structure;
    {
      tracing_now.push_back(this);
      struct Pop {
        ~Pop() { tracing_now.pop_back(); }
      } pop;
      SuspendTapes hide_tapes;  // the body's symbolic ops belong to the graph, not to a tape outside
      TracingPassOptions pass_scope(options_.passes);  // for the body's cond, while and scan sub-graphs
      trace::TraceScope scope(ctx);
      body(ctx, sig, structure);
    }
    auto optimized = passes::optimize(*ctx.graph(), options_.passes);
    auto cf = std::make_shared<const ConcreteFunction>(options_.name, sig, options_.arg_names, ctx.graph(), optimized,
                                                       std::move(structure), options_.passes);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    result.function = cf;
    result.captures = ctx.lifted();
    if (!result.captures.empty())
      reason += "; inside the trace of '" + parent->function_name() + "', using " + std::to_string(result.captures.size()) +
                " of its values (this trace is not cached)";

    // From here on nothing throws: the cache changes only for a complete trace.
    state_->traced_once_ = true;
    if (result.captures.empty()) {
      if (options_.max_traces > 0 && state_->entries_.size() >= options_.max_traces)
        messages.emplace_back(LogLevel::warning, evict_oldest());
      state_->entries_.push_back(cf);
      if (signature_is_static(cf->signature())) state_->static_index_.emplace(signature_hash(cf->signature()), cf);
      else state_->dynamic_entries_.push_back(cf);
    }
    TraceRecord record;
    {
      std::lock_guard records_lock(state_->records_mutex_);
      record = TraceRecord{++state_->trace_count_, cf->signature_str(), reason, ms, ctx.created_variables()};
      state_->records_.push_back(record);
      if (state_->records_.size() > State::kMaxRecords) state_->records_.pop_front();
    }
    if (log_enabled(LogLevel::info)) {
      std::ostringstream os;
      os << "[ef.function] '" << options_.name << "' trace #" << record.number << " " << record.signature << ": "
         << reason << " (" << std::fixed << std::setprecision(3) << ms << " ms)";
      if (!record.created_variables.empty()) {
        os << "; created variables:";
        for (const auto& v : record.created_variables) os << " " << v << ";";
      }
      messages.emplace_back(LogLevel::info, os.str());
    }
    if (std::string warning = note_trace_for_warning(reason); !warning.empty())
      messages.emplace_back(LogLevel::warning, std::move(warning));
  }
  for (const auto& [level, text] : messages) log(level, text);
  return result;
}

std::string FunctionCore::evict_oldest() {
  std::shared_ptr<const ConcreteFunction> old = state_->entries_.front();
  state_->entries_.erase(state_->entries_.begin());
  auto [first, last] = state_->static_index_.equal_range(signature_hash(old->signature()));
  for (auto it = first; it != last; ++it)
    if (it->second == old) {
      state_->static_index_.erase(it);
      break;
    }
  std::erase(state_->dynamic_entries_, old);
  return "[ef.function] '" + options_.name + "' holds " + std::to_string(options_.max_traces) +
         " traces (FunctionOptions::max_traces): evicted the oldest, " + old->signature_str() +
         "; a later call with it traces again";
}

}  // namespace detail
}  // namespace ef
