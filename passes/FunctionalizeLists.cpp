//===- FunctionalizeLists.cpp - memopt-functionalize-lists ----------------===//
//
// Scriptable loops collect per-step results with `spikes.append(s)` and
// consume them once with `torch.stack(spikes)`. Once the importer unrolls
// the loop, such a list is built by in-place appends and only read after
// the last one; rebuilding it as one `prim::ListConstruct` of the appended
// values, right before its first reader, gives the same list without the
// writes. The per-step values then flow as plain tensors: analyses see
// through the list (a stack of spikes is binary) and the planner can cut
// between time steps.
//
//===----------------------------------------------------------------------===//
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_FUNCTIONALIZELISTS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
bool isAppendTo(Operation *op, Value list) {
  auto append = dyn_cast<TorchOp>(op);
  return append && append.getName() == "aten::append" &&
         append.getNumOperands() == 2 && append.getOperand(0) == list &&
         llvm::all_of(append->getResults(),
                      [](Value result) { return result.use_empty(); });
}

/// Rewrites `list` if it is built only by appends that all come before its
/// readers, in its own block. Returns true when it did.
bool functionalize(TorchOp construct) {
  Value list = construct->getResult(0);
  Block *block = construct->getBlock();
  SmallVector<TorchOp> appends;
  Operation *firstReader = nullptr;
  for (Operation &op :
       llvm::make_range(std::next(construct->getIterator()), block->end())) {
    bool uses = llvm::is_contained(op.getOperands(), list);
    bool nestedUse = false;
    op.walk([&](Operation *nested) {
      if (nested != &op && llvm::is_contained(nested->getOperands(), list))
        nestedUse = true;
    });
    if (nestedUse)
      return false;
    if (!uses)
      continue;
    if (isAppendTo(&op, list)) {
      if (firstReader)
        return false; // written after being read
      appends.push_back(cast<TorchOp>(&op));
      continue;
    }
    // Any other user reads it; it must not write it.
    if (auto reader = dyn_cast<TorchOp>(&op))
      if (std::optional<ArrayRef<int64_t>> written = reader.getMutates())
        for (int64_t index : *written)
          if (op.getOperand(index) == list)
            return false;
    if (!firstReader)
      firstReader = &op;
  }
  if (appends.empty() || !firstReader)
    return false;

  SmallVector<Value> elements;
  for (TorchOp append : appends)
    elements.push_back(append.getOperand(1));
  OpBuilder builder(firstReader);
  SmallVector<Attribute> args;
  for (unsigned i = 0; i < elements.size(); ++i)
    args.push_back(OperandRefAttr::get(builder.getContext(), i));
  auto rebuilt = builder.create<TorchOp>(
      construct.getLoc(), construct->getResultTypes(), "prim::ListConstruct",
      elements, builder.getArrayAttr(args));
  rebuilt.setOverloadAttr(construct.getOverloadAttr());
  for (TorchOp append : appends)
    append->erase();
  list.replaceAllUsesWith(rebuilt->getResult(0));
  construct->erase();
  return true;
}

struct FunctionalizeListsPass
    : public memopt::impl::FunctionalizeListsBase<FunctionalizeListsPass> {
  void runOnOperation() override {
    SmallVector<TorchOp> candidates;
    getOperation().walk([&](TorchOp op) {
      if (op.getName() == "prim::ListConstruct" && op.getNumOperands() == 0 &&
          op->getNumResults() == 1)
        candidates.push_back(op);
    });
    bool changed = false;
    for (TorchOp construct : candidates)
      changed |= functionalize(construct);
    if (!changed)
      markAllAnalysesPreserved();
  }
};
} // namespace
