//===- InsertSavedForms.cpp - memopt-insert-saved-forms -------------------===//
//
// Ops whose backward needs less than the tensor autograd keeps keep that
// instead: max-pool indices, ReLU and dropout masks (one bit per value).
// Gradients are the same bits.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_INSERTSAVEDFORMS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// A dropout whose noise autograd keeps (a constant p in (0, 1) or one known
/// at run time; training on or known at run time), on a contiguous input
/// (the runtime leaves a strided one to at::dropout).
bool keepsDropoutNoise(TorchOp op, const TrainingMemoryModel &memory) {
  if (op.getName() != "aten::dropout" || op.getOverload().value_or("") != "" ||
      op.getArgs().size() != 3 || op.getNumOperands() == 0 ||
      !isStaticFloatTensor(op.getOperand(0).getType()) ||
      memory.getSavedBytes(op) <= 0 || !memory.isContiguous(op.getOperand(0)))
    return false;
  // A constant p = 0 or training off saves nothing (the memory model knows
  // those return their input); p = 1 (all zeros) stays with at::dropout.
  auto p = dyn_cast<FloatAttr>(op.getArgs()[1]);
  return !p || (p.getValueAsDouble() > 0 && p.getValueAsDouble() < 1);
}

struct InsertSavedFormsPass
    : public mlir::memopt::impl::InsertSavedFormsBase<InsertSavedFormsPass> {
  using InsertSavedFormsBase::InsertSavedFormsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
      return markAllAnalysesPreserved();
    MLIRContext *context = &getContext();
    Block &body = func.getBody().front();
    // Max-pools first: they stop keeping their input, often a ReLU's result.
    for (auto op : body.getOps<TorchOp>())
      if (op.getName() == "aten::max_pool2d" &&
          op.getOverload().value_or("").empty() && !op.getSavedFormAttr() &&
          op.getNumOperands() > 0 && !isFreeValue(op.getOperand(0)) &&
          isStaticFloatTensor(op.getOperand(0).getType()))
        op.setSavedFormAttr(SavedFormAttr::get(context, SavedForm::indices));
    TrainingMemoryModel memory(func);
    DenseMap<Value, unsigned> keepers = memory.countKeepers(body);
    // Then ReLUs whose result only they keep (a ReLU without gradient keeps
    // nothing; a mask frees nothing while another op keeps the tensor).
    for (auto op : body.getOps<TorchOp>()) {
      if ((op.getName() != "aten::relu" && op.getName() != "aten::relu_") ||
          op.getSavedFormAttr() || op.getNumOperands() == 0 ||
          op->getNumResults() != 1)
        continue;
      Value result = op->getResult(0);
      if (isStaticFloatTensor(result.getType()) &&
          keepers.lookup(result) == 1 &&
          llvm::is_contained(memory.getSavedValues(op), result))
        op.setSavedFormAttr(SavedFormAttr::get(context, SavedForm::mask));
    }
    // Then dropouts, whose noise only they keep.
    if (dropoutMasks)
      for (auto op : body.getOps<TorchOp>())
        if (!op.getSavedFormAttr() && keepsDropoutNoise(op, memory))
          op.setSavedFormAttr(SavedFormAttr::get(context, SavedForm::mask));
  }
};
} // namespace
