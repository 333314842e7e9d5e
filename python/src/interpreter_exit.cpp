#include "interpreter_exit.h"

#include <eagerflow/core/error.h>
#include <pythread.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace efpy {
namespace {
std::atomic<unsigned long> g_main_thread{0};
}

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void note_main_thread() {
  nanobind::object main = nanobind::module_::import_("threading").attr("main_thread")();
  g_main_thread.store(nanobind::cast<unsigned long>(main.attr("ident")));
}

bool gil_would_end_this_thread() {
  return interpreter_finalizing() && PyThread_get_thread_ident() != g_main_thread.load();
}

WorkerGil::WorkerGil() {
  if (gil_would_end_this_thread())
    throw ef::Error(ef::ErrorCode::cancelled, "[data] the Python interpreter is shutting down");
  state_ = PyGILState_Ensure();
}
WorkerGil::~WorkerGil() { PyGILState_Release(state_); }

ReleasedGil::ReleasedGil() : saved_(PyEval_SaveThread()) {}
ReleasedGil::~ReleasedGil() {
  if (gil_would_end_this_thread())
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  PyEval_RestoreThread(saved_);
}

}  // namespace efpy
