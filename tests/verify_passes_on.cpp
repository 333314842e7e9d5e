// Linked into every test program: the IR verifier runs after each pass of every graph a test
// makes (release builds leave it off), so a pass that breaks a graph fails the test that
// traced it, with an error naming the pass and the node.
#include <eagerflow/passes/passes.h>

namespace {
[[maybe_unused]] const bool verify_passes_on = (ef::passes::set_verify_passes(true), true);
}  // namespace
