#include "interpreter_exit.h"

#include <eagerflow/core/error.h>
#include <pythread.h>

#include <atomic>
#include <memory>
#include <chrono>
#include <thread>

namespace efpy {
namespace {
std::atomic<unsigned long> g_main_thread{0};
// The handshake of close_gil_to_other_threads (sequentially consistent: a thread that counts
// itself and then reads `closed` false is seen by the hook's read of `taking` after its write).
std::atomic<bool> g_closed{false};
std::atomic<int> g_taking{0};

bool is_main_thread() { return PyThread_get_thread_ident() == g_main_thread.load(); }

// Counts this thread as about to take the GIL; false (uncounted) when that is no longer allowed.
bool begin_taking_gil() {
  if (is_main_thread()) return true;
  g_taking.fetch_add(1);
  if (g_closed.load() || interpreter_finalizing()) {
    g_taking.fetch_sub(1);
    return false;
  }
  return true;
}
void end_taking_gil() {
  if (!is_main_thread()) g_taking.fetch_sub(1);
}
}  // namespace

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

bool gil_would_end_this_thread() { return (g_closed.load() || interpreter_finalizing()) && !is_main_thread(); }

void close_gil_to_other_threads() {
  g_closed.store(true);
  if (g_taking.load() == 0) return;
  // Threads are waiting for the GIL: let them have it (they return into Python, where
  // CPython may end them safely later); bounded, in case one is stuck.
  Py_BEGIN_ALLOW_THREADS
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (g_taking.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Py_END_ALLOW_THREADS
}

std::shared_ptr<nanobind::object> hold_py(nanobind::handle h) {
  return std::shared_ptr<nanobind::object>(new nanobind::object(nanobind::borrow(h)), [](nanobind::object* o) {
    // Leaked at interpreter exit, as nanobind does: taking the GIL then could end the thread.
    if (!Py_IsInitialized() || !begin_taking_gil()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    end_taking_gil();
    delete o;
    PyGILState_Release(state);
  });
}

WorkerGil::WorkerGil() {
  if (!begin_taking_gil()) throw ef::Error(ef::ErrorCode::cancelled, "[data] the Python interpreter is shutting down");
  state_ = PyGILState_Ensure();
  end_taking_gil();
}
WorkerGil::~WorkerGil() { PyGILState_Release(state_); }

ReleasedGil::ReleasedGil() : saved_(PyEval_SaveThread()) {}
ReleasedGil::~ReleasedGil() {
  if (!begin_taking_gil())
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  PyEval_RestoreThread(saved_);
  end_taking_gil();
}

}  // namespace efpy
