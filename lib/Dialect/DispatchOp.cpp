//===- DispatchOp.cpp - per-signature dispatch ----------------------------===//
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::memopt;

/// A value of type `actual` can be passed where `expected` is declared:
/// same kind of type, same element type, compatible shapes.
static bool isPassable(Type actual, Type expected) {
  if (actual == expected)
    return true;
  auto actualTensor = dyn_cast<TensorType>(actual);
  auto expectedTensor = dyn_cast<TensorType>(expected);
  if (!actualTensor || !expectedTensor)
    return false;
  return actualTensor.getElementType() == expectedTensor.getElementType() &&
         succeeded(verifyCompatibleShape(actualTensor, expectedTensor));
}

LogicalResult DispatchOp::verify() {
  if (getCases().empty())
    return emitOpError("needs at least one case");
  if (getFallback() && getStrict())
    return emitOpError("cannot be strict and have a fallback");
  if (!getFallback() && !getStrict())
    return emitOpError("without a fallback must be marked strict");

  SmallVector<DispatchCaseAttr> seen;
  for (auto [caseIndex, attr] : llvm::enumerate(getCases())) {
    auto dispatchCase = dyn_cast<DispatchCaseAttr>(attr);
    if (!dispatchCase)
      return emitOpError("case #")
             << caseIndex << " is " << attr << ", expected #memopt.case<...>";
    ArrayRef<Type> guards = dispatchCase.getGuards();
    if (guards.size() != getInputs().size())
      return emitOpError("case #")
             << caseIndex << " guards " << guards.size() << " inputs of "
             << getInputs().size();
    for (auto [inputIndex, guard, input] :
         llvm::enumerate(guards, getInputs())) {
      auto guardTensor = dyn_cast<RankedTensorType>(guard);
      if (!guardTensor || !guardTensor.hasStaticShape())
        return emitOpError("case #")
               << caseIndex << " guard #" << inputIndex << " is " << guard
               << ", expected a statically shaped tensor type";
      if (!isPassable(guard, input.getType()))
        return emitOpError("case #")
               << caseIndex << " guard #" << inputIndex << " " << guard
               << " can never match input type " << input.getType();
    }
    for (auto [earlierIndex, earlier] : llvm::enumerate(seen))
      if (earlier.getGuards() == guards)
        return emitOpError("case #")
               << caseIndex << " repeats the guard of case #" << earlierIndex;
    if (dispatchCase.getCount() < 0)
      return emitOpError("case #") << caseIndex << " has a negative count";
    seen.push_back(dispatchCase);
  }
  return success();
}

/// Checks that `callee` names a func.func callable with `argTypes` whose
/// results can stand for the dispatch's results.
static LogicalResult verifyCallee(DispatchOp op, FlatSymbolRefAttr callee,
                                  TypeRange argTypes, StringRef what,
                                  SymbolTableCollection &symbolTable) {
  auto function =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(op, callee);
  if (!function)
    return op.emitOpError(what) << " " << callee
                                << " does not name a func.func";
  FunctionType type = function.getFunctionType();
  if (type.getNumInputs() != argTypes.size())
    return op.emitOpError(what)
           << " " << callee << " takes " << type.getNumInputs()
           << " arguments, dispatch passes " << argTypes.size();
  for (auto [index, actual, expected] :
       llvm::enumerate(argTypes, type.getInputs()))
    if (!isPassable(actual, expected))
      return op.emitOpError(what)
             << " " << callee << " argument #" << index << " has type "
             << expected << ", incompatible with " << actual;
  if (type.getNumResults() != op.getNumResults())
    return op.emitOpError(what)
           << " " << callee << " returns " << type.getNumResults()
           << " values, dispatch returns " << op.getNumResults();
  for (auto [index, produced, declared] :
       llvm::enumerate(type.getResults(), op.getResultTypes()))
    if (!isPassable(produced, declared))
      return op.emitOpError(what)
             << " " << callee << " result #" << index << " has type "
             << produced << ", incompatible with " << declared;
  return success();
}

LogicalResult
DispatchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  for (auto [index, attr] : llvm::enumerate(getCases())) {
    auto dispatchCase = cast<DispatchCaseAttr>(attr);
    std::string what = "case #" + std::to_string(index) + " callee";
    if (failed(verifyCallee(*this, dispatchCase.getCallee(),
                            dispatchCase.getGuards(), what, symbolTable)))
      return failure();
  }
  if (auto fallback = getFallbackAttr())
    return verifyCallee(*this, fallback, getInputs().getTypes(), "fallback",
                        symbolTable);
  return success();
}
