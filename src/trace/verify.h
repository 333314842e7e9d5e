#pragma once
// The IR verifier: checks a graph's invariants, so that a pass that breaks one fails where it
// broke it instead of in a later pass, a replay or a saved file.
#include <set>
#include <string>

#include "eagerflow/trace/graph.h"

namespace ef::ir {

// Throws an ef::Error "[verify] <when>: graph '<name>', node <n> (<op>): ..." for the first
// broken invariant found (`when`: "after pass 'dead_code'", "before the passes"):
// - every value id used (node inputs and outputs, graph inputs and outputs) exists;
// - each value says truly where it comes from: an input at its position, a constant at its
//   index (with the constant's dtype and shape), or an output of the node that lists it;
// - nodes have an op, use values only after they are defined, and define each value once;
// - each node's output specs agree with what its op's infer() gives for its input specs (the
//   same count, dtypes and ranks, and equal dims where both are known);
// - the graph's outputs exist;
// - the same, recursively, for the graphs an op holds (Primitive::subgraphs(): cond branches,
//   loop and scan bodies, called functions), each graph once.
// `verified`, when given, holds sub-graphs already checked (skipped) and gains those checked
// here: a pass pipeline checks the sub-graphs its passes share once, not after every pass.
// `g` itself is always checked.
void verify(const Graph& g, const std::string& when, std::set<const Graph*>* verified = nullptr);

}  // namespace ef::ir
