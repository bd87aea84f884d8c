//===- BinaryValueAnalysis.cpp - tensors that hold only 0 and 1 -----------===//
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "OpMemoryEffects.h"
#include "memopt/Analysis/OperatorCatalog.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::memopt;

static bool isZeroOrOne(Attribute attr) {
  if (auto i = dyn_cast_or_null<IntegerAttr>(attr))
    return i.getValue().isZero() || i.getValue().isOne();
  if (auto f = dyn_cast_or_null<FloatAttr>(attr))
    return f.getValueAsDouble() == 0.0 || f.getValueAsDouble() == 1.0;
  return false;
}

static bool isOne(Attribute attr) {
  if (auto i = dyn_cast_or_null<IntegerAttr>(attr))
    return i.getValue().isOne();
  if (auto f = dyn_cast_or_null<FloatAttr>(attr))
    return f.getValueAsDouble() == 1.0;
  return false;
}

static Attribute constArg(TorchOp op, unsigned pos) {
  return pos < op.getArgs().size() ? op.getArgs()[pos] : Attribute();
}

/// `alpha` of add/sub: absent or the constant 1.
static bool unitAlpha(TorchOp op) {
  return op.getArgs().size() < 3 || isOne(constArg(op, 2));
}

static bool isTorchOp(Value v, StringRef name, TorchOp &op) {
  op = v.getDefiningOp<TorchOp>();
  return op && op.getName() == name;
}

/// `soft - soft.detach()` (alpha 1): exactly zero for finite `soft`.
static bool isZeroStraightThrough(Value v) {
  TorchOp sub, detach;
  if (!isTorchOp(v, "aten::sub", sub) || sub->getNumOperands() != 2 ||
      !unitAlpha(sub))
    return false;
  if (!isTorchOp(sub->getOperand(1), "aten::detach", detach))
    return false;
  return detach->getOperand(0) == sub->getOperand(0);
}

bool mlir::memopt::locationInModule(Location loc, StringRef path) {
  auto matches = [&](StringRef name) {
    return name == path ||
           (name.starts_with(path) && name.size() > path.size() &&
            name[path.size()] == '.');
  };
  if (auto name = dyn_cast<NameLoc>(loc))
    return matches(name.getName()) ||
           locationInModule(name.getChildLoc(), path);
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (auto meta = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
      if (matches(meta.getValue()))
        return true;
    return llvm::any_of(fused.getLocations(),
                        [&](Location l) { return locationInModule(l, path); });
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return locationInModule(call.getCallee(), path) ||
           locationInModule(call.getCaller(), path);
  return false;
}

namespace {
/// 0: not binary, 1: binary by a user assertion, 2: proven binary.
class Solver {
public:
  int get(Value v) const {
    if (forcedNot.contains(v))
      return 0;
    if (auto tensor = dyn_cast<TensorType>(v.getType()))
      if (tensor.getElementType().isInteger(1))
        return 2; // bool tensors hold only 0 and 1
    int l = level.lookup(v);
    return assumedSeeds.contains(v) ? std::max(l, 1) : l;
  }
  void set(Value v, int l) {
    if (l > 0 && isTensorLike(v.getType()) && !forcedNot.contains(v))
      level[v] = l;
  }
  void visitBlock(Block &block) {
    for (Operation &op : block)
      visit(&op);
  }
  void visit(Operation *op);
  void visitTorchOp(TorchOp op);

  DenseMap<Value, int> level;
  DenseSet<Value> forcedNot, assumedSeeds;
};
} // namespace

void Solver::visit(Operation *op) {
  if (auto torchOp = dyn_cast<TorchOp>(op))
    return visitTorchOp(torchOp);
  if (auto cp = dyn_cast<CheckpointOp>(op)) {
    Block &body = cp.getBodyBlock();
    for (auto [arg, input] : llvm::zip(body.getArguments(), cp.getInputs()))
      set(arg, get(input));
    visitBlock(body);
    for (auto [result, value] :
         llvm::zip(cp->getResults(), body.getTerminator()->getOperands()))
      set(result, get(value));
    return;
  }
  if (auto decompress = dyn_cast<DecompressOp>(op)) {
    // bit, bool and sparse packing restore only 0 and 1.
    if (decompress.getInput().getType().getKind() != CompressionKind::uint8)
      set(decompress.getResult(), 2);
  }
}

void Solver::visitTorchOp(TorchOp op) {
  StringRef name = op.getName();
  auto operand = [&](unsigned i) {
    return i < op->getNumOperands() ? get(op->getOperand(i)) : 0;
  };
  auto allTensorOperands = [&] {
    int l = 2;
    bool any = false;
    for (Value v : op.getOperands())
      if (isTensorLike(v.getType())) {
        any = true;
        l = std::min(l, get(v));
      }
    return any ? l : 0;
  };
  unsigned tensorOperands = llvm::count_if(
      op.getOperands(), [](Value v) { return isTensorLike(v.getType()); });
  int l = 0;
  switch (lookupOperator(name).binary) {
  case BinaryRule::None:
    break;
  case BinaryRule::Always:
    l = 2;
    break;
  case BinaryRule::Where:
    l = std::min(operand(1), operand(2));
    break;
  case BinaryRule::MaxMin:
    l = tensorOperands == 2 ? allTensorOperands() : operand(0);
    break;
  case BinaryRule::Subset:
  case BinaryRule::SubsetCopy:
    l = operand(0);
    break;
  case BinaryRule::AllOperands:
    l = allTensorOperands();
    break;
  case BinaryRule::Mul:
    // mul by a constant 0 or 1 keeps 0/1 too.
    if (tensorOperands == 1 && op->getNumOperands() == 1)
      l = isZeroOrOne(constArg(op, 1)) ? operand(0) : 0;
    else
      l = allTensorOperands();
    break;
  case BinaryRule::Heaviside:
    l = operand(1); // the value taken where the input is 0
    break;
  case BinaryRule::OneMinus:
    // 1 - b
    l = op->getNumOperands() == 1 && isOne(constArg(op, 1)) && unitAlpha(op)
            ? operand(0)
            : 0;
    break;
  case BinaryRule::Add:
    if (!unitAlpha(op))
      break;
    if (op->getNumOperands() == 1 && isOne(constArg(op, 1))) {
      // 1 + (-b): how TorchScript spells 1.0 - b (+0 where b is 1).
      TorchOp neg;
      if (isTorchOp(op->getOperand(0), "aten::neg", neg) &&
          neg->getNumOperands() == 1)
        l = get(neg->getOperand(0));
    } else if (op->getNumOperands() == 2) {
      // Straight-through: hard + (soft - soft.detach()) is hard in forward.
      if (isZeroStraightThrough(op->getOperand(1)))
        l = operand(0);
      else if (isZeroStraightThrough(op->getOperand(0)))
        l = operand(1);
    }
    break;
  case BinaryRule::MaskedFill:
    l = isZeroOrOne(constArg(op, 2)) ? operand(0)
                                     : std::min(operand(0), operand(2));
    break;
  case BinaryRule::FillAt1:
    l = isZeroOrOne(constArg(op, 1)) ? 2 : 0;
    break;
  case BinaryRule::FillAt2:
    l = isZeroOrOne(constArg(op, 2)) ? 2 : 0;
    break;
  case BinaryRule::ConstantPad: {
    Attribute value = constArg(op, 2);
    l = (!value || isa<NoneAttr>(value) || isZeroOrOne(value)) ? operand(0) : 0;
    break;
  }
  }
  if (!l)
    return;
  // Tuple-returning reductions (max.dim, adaptive_max_pool2d): values only.
  bool allResults = name.starts_with("prim::") || op->getNumResults() == 1;
  for (Value result : op->getResults()) {
    set(result, l);
    if (!allResults)
      break;
  }
}

/// Values sharing memory: views and in-place results with their operand.
static void collectAliases(Operation *root,
                           llvm::EquivalenceClasses<const void *> &aliases) {
  root->walk([&](TorchOp op) {
    if (auto views = op.getViews()) {
      for (auto [i, operand] : llvm::enumerate(*views))
        if (operand >= 0 && i < op->getNumResults())
          aliases.unionSets(op->getResult(i).getAsOpaquePointer(),
                            op->getOperand(operand).getAsOpaquePointer());
      return;
    }
    if (op->getNumOperands() && op->getNumResults() &&
        lookupOperator(op.getName()).binary == BinaryRule::Subset)
      for (Value result : op->getResults())
        aliases.unionSets(result.getAsOpaquePointer(),
                          op->getOperand(0).getAsOpaquePointer());
  });
}

void BinaryValueAnalysis::analyze(Operation *root,
                                  ArrayRef<std::string> assumedPaths) {
  Solver solver;
  // A module's outputs: results of its ops used outside of it.
  for (const std::string &path : assumedPaths)
    root->walk([&](Operation *op) {
      if (!locationInModule(op->getLoc(), path))
        return;
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (!locationInModule(user->getLoc(), path))
            solver.assumedSeeds.insert(result);
    });
  llvm::EquivalenceClasses<const void *> aliases;
  collectAliases(root, aliases);
  // An in-place write of non-binary data invalidates every alias of the
  // written tensor; iterate until no write does.
  for (bool changed = true; changed;) {
    changed = false;
    solver.level.clear();
    root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<func::FuncOp>(op)) {
        for (Region &region : op->getRegions())
          for (Block &block : region)
            solver.visitBlock(block);
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
    root->walk([&](TorchOp op) {
      auto mutates = op.getMutates();
      if (!mutates)
        return;
      for (int64_t index : *mutates) {
        Value written = op->getOperand(index);
        Value after = op->getNumResults() ? op->getResult(0) : Value();
        if (after && solver.get(after) >= solver.get(written))
          continue;
        for (auto it = aliases.findLeader(
                 aliases.insert(written.getAsOpaquePointer()));
             it != aliases.member_end(); ++it)
          changed |=
              solver.forcedNot.insert(Value::getFromOpaquePointer(*it)).second;
      }
    });
  }
  for (auto [value, l] : solver.level)
    (l == 2 ? proven : assumed).insert(value);
  for (Value v : solver.assumedSeeds)
    if (solver.get(v) == 1)
      assumed.insert(v);
  // Bool tensors are binary without being in the map.
  root->walk([&](Operation *op) {
    for (Value result : op->getResults())
      if (solver.get(result) == 2)
        proven.insert(result);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (solver.get(arg) == 2)
            proven.insert(arg);
  });
}

/// `memopt.assume_binary = ["features.3"]` on `op` or an ancestor.
static SmallVector<std::string> getAssumedPaths(Operation *op) {
  SmallVector<std::string> paths;
  for (Operation *p = op; p; p = p->getParentOp())
    if (auto list = p->getAttrOfType<ArrayAttr>(kAssumeBinaryAttrName))
      for (Attribute a : list)
        if (auto s = dyn_cast<StringAttr>(a))
          paths.push_back(s.str());
  return paths;
}

BinaryValueAnalysis::BinaryValueAnalysis(Operation *op) {
  analyze(op, getAssumedPaths(op));
}

BinaryValueAnalysis::BinaryValueAnalysis(Operation *op,
                                         ArrayRef<std::string> assumedPaths) {
  SmallVector<std::string> paths = getAssumedPaths(op);
  paths.append(assumedPaths.begin(), assumedPaths.end());
  analyze(op, paths);
}

LogicalResult mlir::memopt::verifyModulePaths(func::FuncOp func,
                                              ArrayRef<std::string> paths,
                                              StringRef option) {
  for (const std::string &path : paths) {
    // Nested ops count: a planned function's ops sit in its regions.
    bool found = func.walk([&](Operation *op) {
                       return locationInModule(op->getLoc(), path)
                                  ? WalkResult::interrupt()
                                  : WalkResult::advance();
                     })
                     .wasInterrupted();
    if (!found)
      return func.emitError("module path '")
             << path << "' names no operation of @" << func.getSymName() << " ("
             << option << ")";
  }
  return success();
}

FailureOr<BinaryValueAnalysis>
mlir::memopt::analyzeBinaryValues(func::FuncOp func,
                                  ArrayRef<std::string> assumeBinary) {
  if (failed(verifyModulePaths(func, assumeBinary, "--assume-binary")))
    return failure();
  return BinaryValueAnalysis(func, assumeBinary);
}
