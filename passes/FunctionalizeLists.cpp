//===- FunctionalizeLists.cpp - memopt-functionalize-lists ----------------===//
//
// Scriptable loops collect per-step results with `spikes.append(s)` and
// consume them once with `torch.stack(spikes)`. Once the importer unrolls
// the loop, such a list is built by in-place appends and only read after
// the last one; rebuilding it as one `prim::ListConstruct` of the appended
// values, right before its first reader, gives the same list without the
// writes. The per-step values then flow as plain tensors: analyses see
// through the list (a stack of spikes is binary) and the planner can cut
// between time steps. Reads of such a list at constant indices
// (`skips[len(skips) - 1 - i]` in a U-Net's unrolled decoder loop) then
// become the elements themselves.
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

/// The value of the int argument `position` of `op` when it is a constant
/// or computed from constants and the lengths of read-only lists by
/// `aten::len` and int `add` / `sub` / `mul`.
std::optional<int64_t> constantIntArg(TorchOp op, unsigned position,
                                      unsigned depth = 0);

std::optional<int64_t> constantInt(Value value, unsigned depth) {
  auto op = value.getDefiningOp<TorchOp>();
  if (!op || depth > 64 || op->getNumResults() != 1)
    return std::nullopt;
  StringRef name = op.getName();
  StringRef overload = op.getOverload().value_or("");
  if (name == "aten::len" && overload == "t" && op.getNumOperands() == 1 &&
      TorchOp::isReadOnlyList(op.getOperand(0)))
    return op.getOperand(0).getDefiningOp()->getNumOperands();
  if (overload != "int" || op.getArgs().size() != 2)
    return std::nullopt;
  std::optional<int64_t> lhs = constantIntArg(op, 0, depth + 1);
  std::optional<int64_t> rhs = constantIntArg(op, 1, depth + 1);
  if (!lhs || !rhs)
    return std::nullopt;
  if (name == "aten::add")
    return *lhs + *rhs;
  if (name == "aten::sub")
    return *lhs - *rhs;
  if (name == "aten::mul")
    return *lhs * *rhs;
  return std::nullopt;
}

std::optional<int64_t> constantIntArg(TorchOp op, unsigned position,
                                      unsigned depth) {
  if (position >= op.getArgs().size())
    return std::nullopt;
  if (auto constant = dyn_cast<IntegerAttr>(op.getArgs()[position]))
    return constant.getInt();
  if (Value operand = op.getOperandArg(position))
    return constantInt(operand, depth);
  return std::nullopt;
}

/// Replaces `list[i]` by the element itself where the list is read-only and
/// `i` a constant (`skips[len(skips) - 1 - k]` in an unrolled loop), then
/// erases the list and index arithmetic nothing reads any more. The element
/// then flows as a plain value: a region that reads one element of a list
/// no longer needs the whole list as its inputs.
bool foldConstantListReads(func::FuncOp func) {
  SmallVector<TorchOp> reads;
  func.walk([&](TorchOp op) {
    if (op.getName() == "aten::__getitem__" &&
        op.getOverload().value_or("") == "t" && op.getArgs().size() == 2 &&
        op->getNumResults() == 1 &&
        TorchOp::isReadOnlyList(op.getOperandArg(0)))
      reads.push_back(op);
  });
  bool changed = false;
  for (TorchOp read : reads) {
    Operation *list = read.getOperandArg(0).getDefiningOp();
    std::optional<int64_t> index = constantIntArg(read, 1);
    int64_t size = list->getNumOperands();
    if (!index || *index < -size || *index >= size)
      continue;
    Value element = list->getOperand(*index < 0 ? *index + size : *index);
    if (element.getType() != read->getResult(0).getType())
      continue;
    read->getResult(0).replaceAllUsesWith(element);
    read->erase();
    changed = true;
  }
  if (!changed)
    return false;
  // Erase what only fed the folded reads, users before their operands.
  SmallVector<TorchOp> candidates;
  func.walk([&](TorchOp op) {
    StringRef name = op.getName();
    if (name == "prim::ListConstruct" || name == "aten::len" ||
        (op.getOverload().value_or("") == "int" &&
         (name == "aten::add" || name == "aten::sub" || name == "aten::mul")))
      candidates.push_back(op);
  });
  for (TorchOp op : llvm::reverse(candidates))
    if (op.isFunctional() && op->use_empty())
      op->erase();
  return true;
}

struct FunctionalizeListsPass
    : public mlir::memopt::impl::FunctionalizeListsBase<
          FunctionalizeListsPass> {
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
    changed |= foldConstantListReads(getOperation());
    if (!changed)
      markAllAnalysesPreserved();
  }
};
} // namespace
