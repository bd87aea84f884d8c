//===- KeptBranchProbe.cpp - what a kept prim::If keeps for backward ------===//
//
// An `if` on tensor data, kept whole by the importer, is one op whose
// inside the memory model cannot see. Each of its branches is a fixed
// computation, though: this runs each one (the condition forced) on tensors
// of the operands' static shapes with autograd recording, as training does
// (a kept loop: entered once, running as many iterations as the probe's
// data makes it, at most memopt::kept::kMaxIterationsWhenRun),
// and records as the op's `measured_saves` the most any branch keeps for
// backward (new bytes beyond its results, and the operands it holds on
// to), and as its `high_water` the highest peak of any branch's forward
// and backward.
// Skipped (the op stays unknown) when an operand other than the condition
// is neither a statically shaped tensor nor an integer computed from static
// shapes, since its value is not in the IR.
//
//===----------------------------------------------------------------------===//
#include "KeptBranchProbe.h"
#include "GraphRun.h"
#include "ProbeSupport.h"

#include "memopt/Conversion/KeptScript.h"

#include <torch/csrc/jit/ir/ir.h>

using namespace mlir;
using namespace mlir::memopt;

/// A bounded loop with a break on data (`for ...: if c: break`, which the
/// importer keeps as a while loop whose condition is `i < n and not c`)
/// made to run every iteration its bound allows: whatever the data, it
/// keeps at most what they keep. Returns whether `graph` had such a loop.
static bool runBoundedLoopToItsBound(torch::jit::Graph &graph) {
  for (torch::jit::Node *node : graph.nodes()) {
    if (node->kind() != c10::prim::Loop)
      continue;
    torch::jit::Block *body = node->blocks().at(0);
    torch::jit::Node *both = body->outputs().at(0)->node();
    if (both->kind() != c10::aten::__and__ || both->inputs().size() != 2)
      return false;
    for (size_t side : {0, 1}) {
      // `i < n`: n a constant or an input of the op (static: the probe
      // gives it its value), so the bound is not data.
      torch::jit::Node *bound = both->input(side)->node();
      if (bound->kind() != c10::aten::lt ||
          !bound->input(0)->type()->isSubtypeOf(*c10::IntType::get()) ||
          !bound->input(1)->type()->isSubtypeOf(*c10::IntType::get()))
        continue;
      c10::Symbol limit = bound->input(1)->node()->kind();
      if (limit != c10::prim::Constant && limit != c10::prim::Param)
        continue;
      torch::jit::WithInsertPoint point(both);
      both->replaceInput(1 - side, graph.insertConstant(true));
      return true;
    }
    return false;
  }
  return false;
}

bool mlir::memopt::probeKeptBranches(TorchOp op, const DenseSet<Value> &grads,
                                     int threads) {
  // An If's first operand is its condition; a loop's, when it is a bool,
  // the condition it starts with (its trip count is then a constant).
  bool isLoop = op.getName() == "prim::Loop";
  if ((op.getName() != "prim::If" && !isLoop) || !op.getScript() ||
      op->getNumOperands() == 0 || !op->getOperand(0).getType().isInteger(1))
    return false;
  for (Value operand : op->getOperands().drop_front())
    if (!canMakeOperand(operand, /*floatingOnly=*/false))
      return false;
  if (llvm::none_of(op->getOperands(),
                    [&](Value v) { return grads.contains(v); }))
    return false; // nothing to keep for backward
  std::shared_ptr<torch::jit::Graph> graph;
  try {
    graph = ::memopt::kept::parseBoundedScript(op.getScript()->str());
  } catch (const std::exception &) {
    return false;
  }
  if (isLoop)
    runBoundedLoopToItsBound(*graph);
  ::memopt::runtime::enableMemoryStats();
  ::memopt::probe::ThreadCountScope scope(threads);
  std::vector<Value> inputs(std::next(op->operand_begin()), op->operand_end());
  std::optional<GraphRunMarks> most;
  // Each branch of an If; a loop entered (a bounded one runs to its bound,
  // an unbounded one as long as the probe's data makes it: see
  // docs/analyses.md).
  for (bool taken : {true, false}) {
    if (isLoop && !taken)
      break;
    std::optional<GraphRunMarks> marks =
        measureGraphRun(graph, op, inputs, grads, {c10::IValue(taken)},
                        /*opAlone=*/false);
    if (!marks)
      continue;
    if (most)
      most->takeMost(*marks);
    else
      most = marks;
  }
  if (!most)
    return false;
  setGraphRunMarks(op, *most);
  return true;
}
