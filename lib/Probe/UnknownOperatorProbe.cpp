//===- UnknownOperatorProbe.cpp - operators the table does not know -------===//
//
// The saved-tensor table says what autograd keeps for each operator it
// lists; for any other the memory model can only assume the worst (every
// operand and result saved) and knows nothing of the buffers its kernels
// make (an FFT's, einsum's permuted copies, cumsum's flipped gradients).
// Such an operator is a fixed computation at static shapes, so it is run
// once alone, as the exporter writes it, and priced from what it kept and
// allocated, as kept control flow is (GraphRun.h). So is an operator the
// catalog marks `Measured`: the table knows it, but which of its kernels
// runs (CPU attention: flash, with per-thread buffers, or the math
// decomposition) depends on the PyTorch, the arguments and the threads.
//
//===----------------------------------------------------------------------===//
#include "UnknownOperatorProbe.h"
#include "ProbeSupport.h"

#include "memopt/Analysis/OperatorCatalog.h"
#include "memopt/Analysis/SavedTensorTable.h"
#include "memopt/Conversion/SingleOpGraph.h"
#include "memopt/Probe/KernelProbe.h"

#include "llvm/Support/raw_ostream.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>

using namespace mlir;
using namespace mlir::memopt;

/// Whether the dispatcher's schema of `name`.`overload` writes no operand:
/// an operator whose saved tensors and buffers running it alone on fresh
/// operands describes. (In-place writes are what the table says for the
/// operators it lists.) Operators only the TorchScript interpreter
/// registers have no dispatcher schema; of those, names ending in `_` write.
static bool writesNoOperand(StringRef name, StringRef overload) {
  // c10::optional in PyTorch 1.13, std::optional from 2.4.
  auto handle =
      c10::Dispatcher::singleton().findSchema({name.str(), overload.str()});
  if (!handle || !handle->hasSchema())
    return true;
  // `Tensor(a!)[]` says its elements are written: on the contained type.
  std::function<bool(const c10::AliasInfo &)> writes =
      [&](const c10::AliasInfo &alias) {
        return alias.isWrite() || llvm::any_of(alias.containedTypes(), writes);
      };
  return llvm::none_of(
      handle->schema().arguments(), [&](const c10::Argument &argument) {
        return argument.alias_info() && writes(*argument.alias_info());
      });
}

/// Whether `op` is a candidate: an operator without a table row, ATen's or
/// a loaded library's (torchvision's, a C++ extension's: --load-library),
/// or one whose catalog row says its kernels are measured (the table's row
/// cannot say which kernel runs), that writes none of its operands, some
/// operand of which will require grad, every operand one the probe can make.
static bool isCandidate(TorchOp op, const DenseSet<Value> &grads) {
  StringRef name = op.getName();
  StringRef space = name.split("::").first;
  bool measured = lookupOperator(name).workspace == WorkspaceRule::Measured;
  if (space == name || space == "prim" || space == "memopt" ||
      name.ends_with("_") || op.getScript() ||
      (SavedTensorTable::get().knows(name) && !measured) ||
      !writesNoOperand(name, op.getOverload().value_or("")) ||
      llvm::none_of(op->getResultTypes(),
                    [](Type type) { return isa<TensorType>(type); }))
    return false;
  bool anyGrad = false;
  for (Value operand : op->getOperands()) {
    if (!canMakeOperand(operand, /*floatingOnly=*/true))
      return false;
    anyGrad |= grads.contains(operand);
    if (std::optional<OperandRange> elements =
            TorchOp::getConstructedElements(operand))
      anyGrad |= llvm::any_of(
          *elements, [&](Value element) { return grads.contains(element); });
  }
  return anyGrad;
}

/// What identifies the call: the operator, its arguments, and each
/// operand's type, gradient, layout and static value.
static std::string getCallKey(TorchOp op, const DenseSet<Value> &grads) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op.getName() << '.' << op.getOverload().value_or("") << ' '
     << op.getArgs();
  auto describe = [&](Value value) {
    os << ' ' << value.getType() << (grads.contains(value) ? "g" : "");
    describeLayout(value, os);
    if (std::optional<int64_t> constant = getStaticInt(value))
      os << '=' << *constant;
    else if (std::optional<double> constant = getStaticFloat(value))
      os << '=' << *constant;
  };
  for (Value operand : op->getOperands()) {
    describe(operand);
    if (std::optional<OperandRange> elements =
            TorchOp::getConstructedElements(operand)) {
      os << " [";
      for (Value element : *elements)
        describe(element);
      os << " ]";
    }
  }
  return os.str();
}

UnknownOperatorProbe
mlir::memopt::probeUnknownOperator(TorchOp op, const DenseSet<Value> &grads,
                                   int threads,
                                   llvm::StringMap<GraphRunMarks> &seen) {
  if (!isCandidate(op, grads))
    return UnknownOperatorProbe::NotApplicable;
  std::string key = getCallKey(op, grads);
  if (auto it = seen.find(key); it != seen.end()) {
    setGraphRunMarks(op, it->second);
    return UnknownOperatorProbe::Reused;
  }
  SmallVector<Value> results(op->getResults());
  std::optional<OpGraph> alone = buildOpGraph({op}, results);
  if (!alone)
    return UnknownOperatorProbe::Skipped;
  ::memopt::runtime::enableMemoryStats();
  ::memopt::probe::ThreadCountScope scope(threads);
  KernelCrashGuard guard(op, "operator");
  std::optional<GraphRunMarks> marks =
      measureGraphRun(alone->graph, op, alone->inputs, grads, {},
                      /*opAlone=*/true);
  if (!marks)
    return UnknownOperatorProbe::Skipped;
  seen[key] = *marks;
  setGraphRunMarks(op, *marks);
  return UnknownOperatorProbe::Measured;
}
