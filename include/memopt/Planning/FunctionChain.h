//===- FunctionChain.h - a function seen as a chain of segments -*- C++ -*-===//
//
// Cuts the body of an imported function into the chain the planner works on.
// A cut is a position between two top-level ops; the tensors crossing it are
// the activations defined before and used after it. Parameters, buffers,
// attributes and whatever is computed from them alone ("free" values) cross
// cuts at no cost: outlining clones them into a region. A cut is valid when
// only tensors cross it (a list under construction cannot enter a region),
// so residual adds and concatenations simply give cuts with several crossing
// tensors, and the unrolled time steps of a neuron loop give cuts between
// steps.
//
// Each segment (ops between consecutive cuts) is described for the chain
// planner from the training-memory model (what its ops save), the cost model
// (how long recomputing it takes) and the binary-value analysis (whether its
// input packs to a bit per value).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_FUNCTIONCHAIN_H
#define MEMOPT_PLANNING_FUNCTIONCHAIN_H

#include "memopt/Planning/ChainPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <string>
#include <vector>

namespace mlir::memopt {

class BinaryValueAnalysis;
class CostModel;
class TrainingMemoryModel;

/// True for values a region can rebuild by cloning their defining ops:
/// parameters, buffers, attributes and functional ops of such values.
bool isFreeValue(Value value);

/// True for ops with results that are all free values (parameter reads and
/// what is derived from them alone): they compute no activation, so they
/// name no module and a region clones them instead of recomputing them.
bool definesOnlyFreeValues(Operation *op);

/// isFreeValue / definesOnlyFreeValues for many values of a function that
/// does not change meanwhile: each value is decided once. (Deciding one
/// value walks what it is computed from, back to the inputs; asking about
/// every op of a function one by one is quadratic.)
class FreeValueMemo {
public:
  bool isFree(Value value);
  bool definesOnlyFree(Operation *op);

private:
  DenseMap<Value, bool> stateDerived, free;
};

/// The module path an op belongs to (from its NameLoc), or "".
std::string getModulePath(Operation *op);

/// Whether `op` belongs to one of the modules `paths` names (or to a
/// module within one).
bool opInAnyModule(Operation *op, ArrayRef<std::string> paths);

/// The module that contains all of `ops` ("layer1.0"), or "first..last"
/// when they share none.
std::string getRegionLabel(ArrayRef<Operation *> ops);
std::string getRegionLabel(ArrayRef<Operation *> ops,
                           function_ref<bool(Operation *)> definesOnlyFree);

struct FunctionChain {
  std::vector<ChainSegment> segments;
  /// Top-level ops of each segment, in order.
  std::vector<std::vector<Operation *>> ops;
  /// Tensors crossing the cut before each segment.
  std::vector<SmallVector<Value>> crossing;
  /// Modelled forward + backward time of the whole step, in seconds.
  double stepSeconds = 0;
  /// Some cuts were dropped to respect `maxSegments`.
  bool coarsened = false;
};

/// Which cuts a long function keeps when it has too many.
enum class CutSelection {
  /// Those whose crossing tensors are cheapest to keep (binary ones at 1/32):
  /// block boundaries of a spiking network, where spikes cross.
  CheapestCrossing,
  /// Those that split the heaviest stretches, by the bytes their ops keep
  /// for backward: fine segments where activations are large (a MobileNetV2
  /// stem at full resolution), coarse where they are small.
  BalancedSaved,
};

struct FunctionChainOptions {
  std::vector<std::string> forceCheckpoint; // module paths
  std::vector<std::string> forbidCheckpoint;
  /// Adjacent segments are merged until at most this many remain.
  unsigned maxSegments = 96;
  CutSelection cutSelection = CutSelection::CheapestCrossing;
};

/// Builds the chain of `func`. Fails (with a diagnostic) when a path in
/// `options` names no op of the function.
FailureOr<FunctionChain>
buildFunctionChain(func::FuncOp func, const TrainingMemoryModel &memory,
                   const CostModel &cost, const BinaryValueAnalysis &binary,
                   const FunctionChainOptions &options);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_FUNCTIONCHAIN_H
