#pragma once
// Interrupting long loops (Keras stops at the next batch on Ctrl-C): fit, evaluate and predict
// call check_interrupt() between batches, where the weights are consistent. A front end
// installs the check: Python's runs the signal handlers (PyErr_CheckSignals, with the GIL) and
// throws KeyboardInterrupt out of the loop. With none installed, check_interrupt does nothing.
namespace ef::train {

using InterruptCheck = void (*)();
// The check to run (nullptr: none); returns the previous one.
InterruptCheck set_interrupt_check(InterruptCheck check);
// Runs the installed check, which throws to stop the loop.
void check_interrupt();

}  // namespace ef::train
