#pragma once
// The GIL at interpreter exit. Once CPython finalizes, a thread other than the finalizing (main)
// one that takes the GIL is ended by pthread_exit inside take_gil (CPython 3.8-3.13); the forced
// unwinding through C++ frames (noexcept destructors, catch (...)) then aborts the process
// ("terminate called without an active exception"). So threads that CPython did not start (the
// data pipeline's workers) refuse the GIL then, and calls that wait with the GIL released never
// return into Python then: the thread sleeps until the process ends (CPython 3.14's own rule).
#include <nanobind/nanobind.h>

#include <memory>

namespace efpy {

// CPython's finalization has begun.
bool interpreter_finalizing();
// Finalization has begun (or the exit hook has ended, see below) and this is not the main
// thread: taking the GIL could end it.
bool gil_would_end_this_thread();
// The end of the exit hook (atexit, before CPython finalizes): from now on threads other than
// the main one never take the GIL (WorkerGil throws, ReleasedGil sleeps); and a thread that
// decided to take it just before waits for it here, with the GIL released, so that none is
// still waiting for it when finalization starts. Called on the main thread holding the GIL.
// A check of "finalizing" alone leaves a window: a thread that checked before the flag was
// set and then blocked on the GIL is ended by CPython inside C++ frames (terminate).
void close_gil_to_other_threads();
void note_main_thread();  // at import: the thread that finalizes is the main one

// A Python object that may be released on any thread (the pipeline's workers, a gradient
// rule run by a C++ thread): the last owner takes the GIL to free it, or leaks it at exit.
std::shared_ptr<nanobind::object> hold_py(nanobind::handle h);

// The GIL for a worker thread: an ef::Error ("the interpreter is shutting down") instead of a
// thread ended inside C++.
class WorkerGil {
 public:
  WorkerGil();
  ~WorkerGil();
  WorkerGil(const WorkerGil&) = delete;
  WorkerGil& operator=(const WorkerGil&) = delete;

 private:
  PyGILState_STATE state_;
};

// The GIL released around a blocking call from Python; taken back on return unless that would
// end the thread (then it sleeps until the process ends).
class ReleasedGil {
 public:
  ReleasedGil();
  ~ReleasedGil();
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;

 private:
  PyThreadState* saved_;
};

}  // namespace efpy
