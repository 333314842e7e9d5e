#include <bit>
#include <iomanip>
#include <mutex>
#include <sstream>

#include "eagerflow/core/log.h"
#include "eagerflow/function/function.h"
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
  }
  return "?";
}

// Why `now` does not hit `cached`: one phrase per differing argument.
std::vector<std::string> differences(const Signature& now, const Signature& cached, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  if (now.size() != cached.size()) {
    out.push_back(std::to_string(now.size()) + " arguments vs cached " + std::to_string(cached.size()));
    return out;
  }
  for (std::size_t i = 0; i < now.size(); ++i) {
    const ArgSignature &a = now[i], &b = cached[i];
    std::string label = arg_label(i, names);
    if (a.kind != b.kind) {
      out.push_back(label + ": " + kind_name(a.kind) + " vs cached " + kind_name(b.kind));
    } else if (a.kind == ArgSignature::Kind::static_value) {
      if (a.value != b.value) {
        std::string name = i < names.size() && !names[i].empty() ? names[i] : std::to_string(i);
        out.push_back("static arg " + name + ": " + static_value_str(a.value) + " vs " + static_value_str(b.value));
      }
    } else if (a.keys != b.keys || a.specs.size() != b.specs.size()) {
      out.push_back(label + ": " + a.str() + " vs cached " + b.str());
    } else {
      for (std::size_t k = 0; k < a.specs.size(); ++k) {
        bool same = a.specs[k].dtype == b.specs[k].dtype && b.specs[k].shape.accepts(a.specs[k].shape);
        if (same) continue;
        std::string where = label;
        if (a.kind == ArgSignature::Kind::tensor_list) where += "[" + std::to_string(k) + "]";
        if (a.kind == ArgSignature::Kind::tensor_map) where += "[\"" + a.keys[k] + "\"]";
        out.push_back(where + ": " + a.specs[k].str() + " vs cached " + b.specs[k].str());
      }
    }
  }
  return out;
}

// The same structure, static values, dtypes and ranks: only dims differ.
bool relaxable(const Signature& a, const Signature& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind || a[i].keys != b[i].keys || a[i].value != b[i].value || a[i].specs.size() != b[i].specs.size())
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

FunctionCore::FunctionCore(FunctionOptions options) : options_(std::move(options)) {
  if (options_.name.empty()) options_.name = "function";
  if (options_.input_signature && options_.arg_names.empty())
    for (const auto& s : *options_.input_signature) options_.arg_names.push_back(s.name);
}

int FunctionCore::tracing_count() const {
  std::shared_lock lock(mutex_);
  return static_cast<int>(records_.size());
}

std::vector<TraceRecord> FunctionCore::traces() const {
  std::shared_lock lock(mutex_);
  return records_;
}

void FunctionCore::note_hit() {
  // Only recent traces make the history matter; once it is all zeros a hit costs one load.
  std::uint32_t h = history_.load(std::memory_order_relaxed);
  while (h != 0 && !history_.compare_exchange_weak(h, (h << 1) & kWindowMask, std::memory_order_relaxed)) {
  }
}

void FunctionCore::note_trace_for_warning(const std::string& reason) {
  std::uint32_t h = ((history_.load() << 1) | 1u) & kWindowMask;
  history_.store(h);
  recent_reasons_.push_back(reason);
  if (recent_reasons_.size() > kWindow) recent_reasons_.erase(recent_reasons_.begin());
  if (std::popcount(h) < kRetraceThreshold || warnings_ >= kMaxWarnings) return;
  ++warnings_;
  history_.store(0);
  std::ostringstream os;
  os << "[ef.function] WARNING: '" << options_.name << "' traced " << std::popcount(h) << " times in its last "
     << kWindow << " calls. Tracing is expensive, and this many traces mean the calls keep changing the signature. "
     << "Reasons seen:";
  for (const auto& r : recent_reasons_) os << "\n    - " << r;
  os << "\n  To trace less: pass FunctionOptions::input_signature with dynamic dims (ef::kDynamic), set "
        "reduce_retracing = true, or pass changing numbers as tensors rather than static C++ values.";
  recent_reasons_.clear();
  log(LogLevel::warning, os.str());
}

std::string FunctionCore::explain(const Signature& sig, std::optional<Signature>& relaxed) const {
  if (entries_.empty()) return "first call";
  std::vector<std::string> best;
  const ConcreteFunction* best_cf = nullptr;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {  // newest first wins ties
    auto d = differences(sig, (*it)->signature(), options_.arg_names);
    if (!best_cf || d.size() < best.size()) {
      best = std::move(d);
      best_cf = it->get();
    }
  }
  std::string reason;
  for (std::size_t i = 0; i < best.size(); ++i) reason += (i ? "; " : "") + best[i];
  if (options_.reduce_retracing)
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
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
  std::unique_lock lock(mutex_);
  for (const auto& cf : entries_)
    if (signature_accepts(cf->signature(), requested)) return cf;

  Signature sig = requested;
  std::optional<Signature> relaxed;
  std::string reason;
  if (options_.input_signature) {
    Signature fixed;
    for (const auto& spec : *options_.input_signature) fixed.push_back({ArgSignature::Kind::tensor, {spec}, {}, {}});
    if (!signature_accepts(fixed, requested)) {
      auto d = differences(requested, fixed, options_.arg_names);
      std::string what;
      for (std::size_t i = 0; i < d.size(); ++i) what += (i ? "; " : "") + d[i];
      fail("function " + options_.name, "call does not match the input signature " + signature_str(fixed, options_.arg_names) +
                                            ": " + (what.empty() ? signature_str(requested, options_.arg_names) : what));
    }
    reason = entries_.empty() ? "first call" : "input signature";
    sig = std::move(fixed);
  } else {
    reason = explain(requested, relaxed);
    if (relaxed) sig = *relaxed;
  }

  auto start = std::chrono::steady_clock::now();
  trace::TraceContext ctx(options_.name, /*allow_variable_creation=*/entries_.empty());
  OutputStructure structure;
  {
    SuspendTapes hide_tapes;  // the body's symbolic ops belong to the graph, not to a tape outside
    trace::TraceScope scope(ctx);
    body(ctx, sig, structure);
  }
  auto optimized = passes::optimize(*ctx.graph(), options_.passes);
  auto cf = std::make_shared<const ConcreteFunction>(options_.name, sig, options_.arg_names, ctx.graph(), optimized,
                                                     std::move(structure));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  TraceRecord record{static_cast<int>(records_.size()) + 1, cf->signature_str(), reason, ms, ctx.created_variables()};
  entries_.push_back(cf);
  if (signature_is_static(cf->signature())) static_index_.emplace(signature_hash(cf->signature()), cf);
  else dynamic_entries_.push_back(cf);
  records_.push_back(record);
  if (log_enabled(LogLevel::info)) {
    std::ostringstream os;
    os << "[ef.function] '" << options_.name << "' trace #" << record.number << " " << record.signature << ": "
       << reason << " (" << std::fixed << std::setprecision(3) << ms << " ms)";
    if (!record.created_variables.empty()) {
      os << "; created variables:";
      for (const auto& v : record.created_variables) os << " " << v << ";";
    }
    log(LogLevel::info, os.str());
  }
  note_trace_for_warning(reason);
  return cf;
}

}  // namespace detail
}  // namespace ef
