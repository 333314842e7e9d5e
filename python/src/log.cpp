// ef's log lines and thread count from Python. The C++ library logs to stderr (std::clog); from Python its
// warnings (retracing, evicted traces) become Python warnings (ef.RetracingWarning), which
// `warnings` filters, pytest captures and -W error turns into exceptions; other "[tag] WARNING:"
// lines (callbacks: EarlyStopping, ReduceLROnPlateau) become UserWarnings, as Keras warns.
//
// The log sink is called under the library's sink mutex, often with the GIL released (a trace
// runs without it), so it never calls Python itself: waiting for the GIL there could deadlock
// against a thread that holds the GIL and logs. Warning lines are queued instead, and
// drain_log_warnings() hands them to Python where the GIL is held and nothing is locked: after
// each trace (ef.function, get_concrete_function) and after fit/evaluate/predict. Other lines
// (EF_LOG_LEVEL=info and up) keep going to stderr, as from C++.
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nanobind/stl/string.h>

#include "bindings.h"

namespace efpy {
namespace {

struct Pending {
  std::mutex mutex;
  std::vector<std::string> lines;
  PyObject* handler = nullptr;  // a strong reference, touched with the GIL held
};

Pending& pending() {
  static Pending* p = new Pending;  // never destroyed: no Python object outlives the interpreter
  return *p;
}

// Lines of ef.function (retracing, evicted traces): ef.RetracingWarning through the handler.
bool is_function_warning(std::string_view line) {
  return line.starts_with("[ef.function] WARNING:") || line.find("evicted the oldest") != std::string_view::npos;
}

// Any "[tag] WARNING: ..." line ([EarlyStopping], [ReduceLROnPlateau], ...) is a warning.
bool is_warning(std::string_view line) {
  if (is_function_warning(line)) return true;
  if (!line.starts_with("[")) return false;
  std::size_t close = line.find("] WARNING:");
  return close != std::string_view::npos && line.find('\n') > close;
}

// A warning from elsewhere than ef.function as Keras gives it: a UserWarning, its text without
// the log's "WARNING:" ("[EarlyStopping] WARNING: msg" reads "EarlyStopping: msg").
void warn_user(const std::string& line) {
  std::string text = line;
  std::size_t close = line.find("] WARNING:");
  if (line.starts_with("[") && close != std::string::npos) {
    std::string rest = line.substr(close + 10);
    if (rest.starts_with(" ")) rest.erase(0, 1);
    text = line.substr(1, close - 1) + ": " + rest;
  }
  if (PyErr_WarnEx(PyExc_UserWarning, text.c_str(), 1) != 0) throw nb::python_error();
}

}  // namespace

void drain_log_warnings() {
  Pending& p = pending();
  std::vector<std::string> lines;
  {
    std::lock_guard lock(p.mutex);
    if (p.lines.empty()) return;
    lines.swap(p.lines);
  }
  if (!p.handler) {
    for (const auto& l : lines) std::clog << l << "\n";
    return;
  }
  nb::handle handler(p.handler);
  nb::object keep = nb::borrow(handler);  // the handler may replace itself
  for (const auto& l : lines) {  // may raise (-W error): propagates
    if (is_function_warning(l))
      keep(nb::str(l.data(), l.size()));
    else
      warn_user(l);
  }
}

void init_log(nb::module_& m) {
  // handler(line) receives each warning line; None restores the C++ default (stderr).
  m.def(
      "_set_log_handler",
      [](nb::object handler) {
        Pending& p = pending();
        if (handler.is_none()) {
          ef::set_log_sink(nullptr);
          drain_log_warnings();  // what is queued still reaches Python
          Py_XDECREF(p.handler);
          p.handler = nullptr;
          return;
        }
        Py_XDECREF(p.handler);
        p.handler = handler.release().ptr();
        ef::set_log_sink([](std::string_view line) {
          if (!is_warning(line)) {
            std::clog << line << "\n" << std::flush;
            return;
          }
          Pending& q = pending();
          std::lock_guard lock(q.mutex);
          q.lines.emplace_back(line);
        });
      },
      nb::arg("handler").none());
  m.def("_drain_log_warnings", &drain_log_warnings);
  m.def("set_num_threads", &ef::set_num_threads, nb::arg("n"),
        "Threads for ops and fit (ef::set_num_threads, at least 1); OMP_NUM_THREADS sets it at start.");
  m.def("num_threads", &ef::num_threads, "The threads ops use now (ef::num_threads).");
  m.def(
      "set_log_level",
      [](const std::string& level) {
        static const std::pair<const char*, ef::LogLevel> names[] = {{"off", ef::LogLevel::off},
                                                                     {"warning", ef::LogLevel::warning},
                                                                     {"info", ef::LogLevel::info},
                                                                     {"verbose", ef::LogLevel::verbose},
                                                                     {"debug", ef::LogLevel::debug}};
        for (const auto& [n, l] : names)
          if (level == n) return ef::set_log_level(l);
        throw nb::value_error(("set_log_level: '" + level + "' is not one of off, warning, info, verbose, debug").c_str());
      },
      nb::arg("level"), "Trace logging (ef::set_log_level): 'off', 'warning' (default), 'info', 'verbose', 'debug'.");
}

}  // namespace efpy
