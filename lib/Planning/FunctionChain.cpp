//===- FunctionChain.cpp - a function seen as a chain of segments ---------===//
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/RegionOutlining.h"
#include "memopt/Runtime/PackedFormat.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::memopt;

/// True when some op writes `value` in place (a list being appended to, a
/// buffer being updated): cloning its definition would lose the writes.
static bool isWrittenInPlace(Value value) {
  for (OpOperand &use : value.getUses()) {
    auto op = dyn_cast<TorchOp>(use.getOwner());
    if (op && op.getMutates() &&
        llvm::is_contained(*op.getMutates(),
                           static_cast<int64_t>(use.getOperandNumber())))
      return true;
  }
  return false;
}

/// Whether `root` has a property that `decide(v)` settles for some values
/// alone (yes or no) and leaves open for a functional op's result, which
/// has it when all its operands do. Each value is decided once (`memo`),
/// without recursion: the shape arithmetic of windowed attention (sizes,
/// floordivs, products shared by later ones) is a deep DAG whose paths a
/// recursive walk enumerates one by one.
static bool
holdsThroughOperands(Value root, DenseMap<Value, bool> &memo,
                     function_ref<std::optional<bool>(Value)> decide) {
  SmallVector<std::pair<Value, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [value, operandsDone] = stack.pop_back_val();
    if (memo.count(value))
      continue;
    Operation *def = value.getDefiningOp();
    if (operandsDone) {
      memo[value] = llvm::all_of(def->getOperands(), [&](Value operand) {
        return memo.lookup(operand);
      });
      continue;
    }
    if (std::optional<bool> decided = decide(value)) {
      memo[value] = *decided;
      continue;
    }
    stack.push_back({value, true});
    for (Value operand : def->getOperands())
      if (!memo.count(operand))
        stack.push_back({operand, false});
  }
  return memo.lookup(root);
}

/// A functional op's result that nothing writes in place: as free as its
/// operands (nothing when it is not).
static std::optional<bool> decideByOperands(Value value) {
  auto op = dyn_cast_or_null<TorchOp>(value.getDefiningOp());
  if (!op || !op.isFunctional() || isWrittenInPlace(value))
    return false;
  return std::nullopt;
}

/// Module state and what functional ops compute from it alone.
static bool isStateDerived(Value value, DenseMap<Value, bool> &memo) {
  return holdsThroughOperands(value, memo, [](Value v) -> std::optional<bool> {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (isa<ParamOp, BufferOp, GetAttrOp>(def))
      return true;
    return decideByOperands(v);
  });
}

bool FreeValueMemo::isFree(Value value) {
  return holdsThroughOperands(value, free, [&](Value v) -> std::optional<bool> {
    if (isa<BlockArgument>(v) || isStateDerived(v, stateDerived))
      return true;
    // Sizes, dtypes and lists of them, computed from inputs or state:
    // what `x.shape[0]` gives. Tensors computed from inputs are
    // activations.
    if (isTensorLike(v.getType()))
      return false;
    return decideByOperands(v);
  });
}

bool FreeValueMemo::definesOnlyFree(Operation *op) {
  return op->getNumResults() > 0 &&
         llvm::all_of(op->getResults(), [&](Value v) { return isFree(v); });
}

bool mlir::memopt::isFreeValue(Value value) {
  return FreeValueMemo().isFree(value);
}

bool mlir::memopt::definesOnlyFreeValues(Operation *op) {
  return FreeValueMemo().definesOnlyFree(op);
}

std::string mlir::memopt::getModulePath(Operation *op) {
  Location loc = op->getLoc();
  while (true) {
    if (auto name = dyn_cast<NameLoc>(loc))
      return name.getName().str();
    if (auto call = dyn_cast<CallSiteLoc>(loc)) {
      loc = call.getCallee();
      continue;
    }
    if (auto fused = dyn_cast<FusedLoc>(loc)) {
      if (auto meta = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
        return meta.str();
      if (!fused.getLocations().empty()) {
        loc = fused.getLocations().front();
        continue;
      }
    }
    return "";
  }
}

/// The value whose storage `value` shares (through views), or itself.
static Value getStorageRoot(Value value) {
  while (auto result = dyn_cast<OpResult>(value)) {
    auto op = dyn_cast<TorchOp>(result.getOwner());
    if (!op || !op.getViews())
      break;
    int64_t base = (*op.getViews())[result.getResultNumber()];
    if (base < 0)
      break;
    value = op.getOperand(base);
  }
  return value;
}

static int64_t bytesOf(Value value) {
  return std::max<int64_t>(getDeviceBytes(value.getType()), 0);
}

/// Bytes of the activations among `roots` (inputs and state are resident).
static int64_t bytesOfRoots(const llvm::SetVector<Value> &roots,
                            FreeValueMemo &free) {
  int64_t bytes = 0;
  for (Value root : roots)
    if (!free.isFree(root))
      bytes += bytesOf(root);
  return bytes;
}

namespace {
/// The body of a function as a numbered op list with value lifetimes.
struct OpOrder {
  std::vector<Operation *> ops; // top-level ops without the terminator
  DenseMap<Operation *, unsigned> index;

  explicit OpOrder(Block &body) {
    for (Operation &op : body.without_terminator()) {
      index[&op] = ops.size();
      ops.push_back(&op);
    }
  }
  /// Index of the last top-level op using `value` (ops.size() for return).
  unsigned lastUse(Value value, Block &body) const {
    unsigned last = 0;
    for (Operation *user : value.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      auto it = top ? index.find(top) : index.end();
      last =
          std::max(last, it == index.end() ? unsigned(ops.size()) : it->second);
    }
    return last;
  }
};

struct Cut {
  unsigned position; // before ops[position]
  SmallVector<Value> tensors;
  int64_t bytes = 0;
};
} // namespace

/// Cuts before every non-free op where only tensors and free values cross.
static std::vector<Cut> findCuts(Block &body, const OpOrder &order,
                                 const BinaryValueAnalysis &binary,
                                 FreeValueMemo &free) {
  std::vector<Cut> cuts;
  // A tensor written in place after a cut cannot cross it: a region may not
  // write to its inputs (they are what backward restores), and writing to a
  // region's result would change what the region saved.
  DenseMap<Value, unsigned> lastWrite;
  for (auto [position, op] : llvm::enumerate(order.ops))
    if (auto torchOp = dyn_cast<TorchOp>(op))
      if (std::optional<ArrayRef<int64_t>> mutated = torchOp.getMutates())
        for (int64_t operand : *mutated)
          lastWrite[getStorageRoot(op->getOperand(operand))] = position;
  // Values defined so far that are still used at or after the cut.
  llvm::SetVector<Value> live;
  DenseMap<Value, unsigned> lastUseOf;
  for (unsigned position = 0; position < order.ops.size(); ++position) {
    if (position > 0) {
      for (Value result : order.ops[position - 1]->getResults())
        if (!result.use_empty())
          lastUseOf[result] = order.lastUse(result, body);
      for (Value result : order.ops[position - 1]->getResults())
        if (!result.use_empty())
          live.insert(result);
      live.remove_if([&](Value v) { return lastUseOf.lookup(v) < position; });
    }
    Operation *op = order.ops[position];
    if (position == 0 ||
        llvm::all_of(op->getResults(), [&](Value v) { return free.isFree(v); }))
      continue;
    Cut cut{position, {}, 0};
    bool valid = true;
    llvm::SetVector<Value> roots;
    for (Value value : live) {
      if (free.isFree(value))
        continue;
      if (isa<TensorType>(value.getType())) {
        auto write = lastWrite.find(getStorageRoot(value));
        if (write != lastWrite.end() && write->second >= position) {
          valid = false;
          break;
        }
        cut.tensors.push_back(value);
        roots.insert(getStorageRoot(value));
      } else {
        // A list under construction or a size computed from activations
        // could enter a region but not leave one (regions return tensors).
        valid = false;
        break;
      }
    }
    if (!valid)
      continue;
    // Rank cuts by what crossing them costs to keep: binary tensors pack.
    for (Value root : roots)
      if (!free.isFree(root))
        cut.bytes += binary.isBinary(root) ? bytesOf(root) / 32 : bytesOf(root);
    cuts.push_back(std::move(cut));
  }
  return cuts;
}

/// Keeps the `maxSegments - 1` cuts whose crossing tensors are cheapest.
static void keepCheapestCuts(std::vector<Cut> &cuts, unsigned maxSegments) {
  std::vector<unsigned> byBytes(cuts.size());
  for (unsigned i = 0; i < cuts.size(); ++i)
    byBytes[i] = i;
  std::stable_sort(byBytes.begin(), byBytes.end(), [&](unsigned a, unsigned b) {
    return cuts[a].bytes < cuts[b].bytes;
  });
  byBytes.resize(maxSegments - 1);
  std::sort(byBytes.begin(), byBytes.end());
  std::vector<Cut> kept;
  for (unsigned i : byBytes)
    kept.push_back(std::move(cuts[i]));
  cuts = std::move(kept);
}

/// Drops cuts until at most `maxSegments` segments remain, each time the
/// cut between the two adjacent segments that keep the fewest bytes for
/// backward together (`savedBefore[p]`: bytes kept by the ops before
/// position p). Ties drop the cut whose crossing is dearer to keep.
static void keepBalancedCuts(std::vector<Cut> &cuts,
                             ArrayRef<int64_t> savedBefore,
                             unsigned maxSegments) {
  unsigned count = cuts.size();
  std::vector<int> prev(count), next(count);
  for (unsigned i = 0; i < count; ++i) {
    prev[i] = int(i) - 1;
    next[i] = i + 1 < count ? int(i) + 1 : -1;
  }
  auto span = [&](unsigned i) {
    unsigned from = prev[i] < 0 ? 0 : cuts[prev[i]].position;
    unsigned to = next[i] < 0 ? savedBefore.size() - 1 : cuts[next[i]].position;
    return savedBefore[to] - savedBefore[from];
  };
  using Key = std::tuple<int64_t, int64_t, unsigned>;
  std::set<Key> queue;
  auto keyOf = [&](unsigned i) { return Key(span(i), -cuts[i].bytes, i); };
  for (unsigned i = 0; i < count; ++i)
    queue.insert(keyOf(i));
  std::vector<bool> dropped(count, false);
  for (unsigned alive = count; alive + 1 > maxSegments; --alive) {
    unsigned i = std::get<2>(*queue.begin());
    queue.erase(queue.begin());
    dropped[i] = true;
    int before = prev[i], after = next[i];
    for (int neighbour : {before, after})
      if (neighbour >= 0)
        queue.erase(keyOf(neighbour));
    if (before >= 0)
      next[before] = after;
    if (after >= 0)
      prev[after] = before;
    for (int neighbour : {before, after})
      if (neighbour >= 0)
        queue.insert(keyOf(neighbour));
  }
  std::vector<Cut> kept;
  for (unsigned i = 0; i < count; ++i)
    if (!dropped[i])
      kept.push_back(std::move(cuts[i]));
  cuts = std::move(kept);
}

bool mlir::memopt::opInAnyModule(Operation *op, ArrayRef<std::string> paths) {
  return llvm::any_of(paths, [&](const std::string &path) {
    return locationInModule(op->getLoc(), path);
  });
}

std::string mlir::memopt::getRegionLabel(ArrayRef<Operation *> ops) {
  FreeValueMemo memo;
  return getRegionLabel(
      ops, [&](Operation *op) { return memo.definesOnlyFree(op); });
}

std::string
mlir::memopt::getRegionLabel(ArrayRef<Operation *> ops,
                             function_ref<bool(Operation *)> definesOnlyFree) {
  SmallVector<StringRef> common;
  std::string first, last;
  for (Operation *op : ops) {
    // Parameter reads are named after the parameter, not the module.
    if (definesOnlyFree(op))
      continue;
    std::string path = getModulePath(op);
    if (path.empty())
      continue;
    SmallVector<StringRef> parts;
    StringRef(path).split(parts, '.');
    if (first.empty()) {
      first = path;
      // Keep the components alive: they point into `first`.
      StringRef(first).split(common, '.');
    } else {
      unsigned n = 0;
      while (n < common.size() && n < parts.size() && common[n] == parts[n])
        ++n;
      common.resize(n);
    }
    last = std::move(path);
  }
  if (first.empty())
    return "ops";
  if (!common.empty())
    return llvm::join(common, ".");
  return first == last ? first : first + ".." + last;
}

/// Bytes of a static float tensor packed at one bit per value (as a region
/// input saved with #memopt.compress<bit>); nullopt for other types.
static std::optional<int64_t> getBitPackedBytes(Type type) {
  if (!isStaticFloatTensor(type))
    return std::nullopt;
  return ::memopt::packed::maxPayloadBytes(::memopt::packed::Kind::Bit,
                                           getNumElements(type));
}

/// Whether `user` gives its operand a gradient of its own: an op with a
/// tensor result (not a size query), a region, or the terminator (the loss
/// gradient of a returned value, or a region's output gradient).
static bool makesGradientUse(Operation *user) {
  if (isa<CheckpointOp>(user) || user->hasTrait<OpTrait::IsTerminator>())
    return true;
  return isa<TorchOp>(user) &&
         llvm::any_of(user->getResultTypes(), isTensorLike);
}

/// Per segment, the uses of every activation that needs a gradient and has
/// three or more uses, for the segments after the one defining it (see
/// ChainSegment::activationUses). Parameters are counted apart (paramUses)
/// and values computed from state and sizes alone are not activations.
static std::vector<std::vector<ActivationUses>>
collectActivationUses(Block &body, const OpOrder &order,
                      ArrayRef<unsigned> segmentOf, unsigned segmentCount,
                      FreeValueMemo &free) {
  std::vector<std::vector<ActivationUses>> perSegment(segmentCount);
  auto segmentOfUser = [&](Operation *user) {
    Operation *top = body.findAncestorOpInBlock(*user);
    auto it = top ? order.index.find(top) : order.index.end();
    return it == order.index.end() ? segmentCount : segmentOf[it->second];
  };
  unsigned next = 0;
  auto record = [&](Value value, int definedIn) {
    if (free.isFree(value))
      return;
    // Uses by segment; segmentCount: the terminator.
    std::vector<unsigned> uses(segmentCount + 1, 0);
    unsigned total = 0;
    for (OpOperand &use : value.getUses())
      if (makesGradientUse(use.getOwner())) {
        ++uses[segmentOfUser(use.getOwner())];
        ++total;
      }
    if (total < 3)
      return;
    unsigned fromHere = uses[segmentCount];
    for (int s = int(segmentCount) - 1; s > definedIn; --s) {
      fromHere += uses[s];
      if (uses[s])
        perSegment[s].push_back({next, uses[s], fromHere, definedIn});
    }
    ++next;
  };
  // What needs a gradient: trainable parameters and what is computed from
  // them (a region's results, conservatively), and a region body's inputs
  // (a function's own inputs are the model's, which need none).
  llvm::DenseSet<Value> needsGrad;
  if (!isa<func::FuncOp>(body.getParentOp()))
    for (BlockArgument arg : body.getArguments())
      if (isTensorLike(arg.getType())) {
        needsGrad.insert(arg);
        record(arg, -1);
      }
  for (Operation &op : body.without_terminator()) {
    bool grad = false;
    if (auto param = dyn_cast<ParamOp>(op))
      grad = !param.getFrozen();
    else
      grad = isa<CheckpointOp>(op) ||
             llvm::any_of(op.getOperands(),
                          [&](Value v) { return needsGrad.contains(v); });
    if (!grad)
      continue;
    for (Value result : op.getResults())
      if (isTensorLike(result.getType())) {
        needsGrad.insert(result);
        if (!isa<ParamOp>(op))
          record(result, int(segmentOfUser(&op)));
      }
  }
  return perSegment;
}

FailureOr<FunctionChain> mlir::memopt::buildFunctionChain(
    func::FuncOp func, const TrainingMemoryModel &memory, const CostModel &cost,
    const BinaryValueAnalysis &binary, const FunctionChainOptions &options) {
  Block &body = func.getBody().front();
  OpOrder order(body);

  if (failed(
          verifyModulePaths(func, options.forceCheckpoint, "--checkpoint")) ||
      failed(
          verifyModulePaths(func, options.forbidCheckpoint, "--no-checkpoint")))
    return failure();

  // The chain is built from a function that does not change meanwhile.
  FreeValueMemo free;
  std::vector<Cut> cuts = findCuts(body, order, binary, free);
  bool coarsened =
      options.maxSegments > 1 && cuts.size() + 1 > options.maxSegments;
  if (coarsened && options.cutSelection == CutSelection::CheapestCrossing)
    keepCheapestCuts(cuts, options.maxSegments);
  if (coarsened && options.cutSelection == CutSelection::BalancedSaved) {
    std::vector<int64_t> savedBefore(order.ops.size() + 1, 0);
    for (unsigned i = 0; i < order.ops.size(); ++i)
      savedBefore[i + 1] =
          savedBefore[i] +
          std::max<int64_t>(0, memory.getSavedBytes(order.ops[i]));
    keepBalancedCuts(cuts, savedBefore, options.maxSegments);
  }

  FunctionChain chain;
  chain.coarsened = coarsened;
  // Parameters used more than once in the function, numbered.
  llvm::DenseMap<StringAttr, unsigned> totalUses, paramIds;
  for (Operation &op : body.without_terminator())
    countParameterUses(&op, totalUses);
  for (auto &[path, uses] : totalUses)
    if (uses >= 2)
      paramIds.try_emplace(path, paramIds.size());
  auto returned = body.getTerminator()->getOperands();
  unsigned segmentCount = cuts.size() + 1;
  // Segment of each top-level op (segmentCount for the terminator).
  std::vector<unsigned> segmentOf(order.ops.size() + 1, segmentCount);
  for (unsigned s = 0, position = 0; position < order.ops.size(); ++position) {
    while (s < cuts.size() && cuts[s].position <= position)
      ++s;
    segmentOf[position] = s;
  }
  auto firstUseSegment = [&](Value value, unsigned from) {
    unsigned first = segmentCount;
    for (Operation *user : value.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      auto it = top ? order.index.find(top) : order.index.end();
      unsigned segment =
          it == order.index.end() ? segmentCount : segmentOf[it->second];
      if (segment >= from)
        first = std::min(first, segment);
    }
    return first;
  };
  std::vector<std::vector<ActivationUses>> activationUses =
      collectActivationUses(body, order, segmentOf, segmentCount, free);
  // The boundary tensors (storage roots) each segment saves.
  std::vector<llvm::SetVector<Value>> savedIn, savedOut;
  for (unsigned s = 0; s < segmentCount; ++s) {
    unsigned begin = s == 0 ? 0 : cuts[s - 1].position;
    unsigned end = s + 1 < segmentCount ? cuts[s].position : order.ops.size();
    std::vector<Operation *> ops(order.ops.begin() + begin,
                                 order.ops.begin() + end);

    llvm::SetVector<Value> inRoots, outRoots, savedRoots;
    SmallVector<Value> inputs;
    if (s > 0) {
      inputs.assign(cuts[s - 1].tensors.begin(), cuts[s - 1].tensors.end());
      for (Value v : inputs)
        inRoots.insert(getStorageRoot(v));
    }
    if (s + 1 < segmentCount) {
      for (Value v : cuts[s].tensors)
        outRoots.insert(getStorageRoot(v));
    } else {
      for (Value v : returned)
        if (isa<TensorType>(v.getType()) && !free.isFree(v))
          outRoots.insert(getStorageRoot(v));
    }

    savedIn.emplace_back();
    savedOut.emplace_back();
    ChainSegment segment;
    segment.label = getRegionLabel(
        ops, [&](Operation *op) { return free.definesOnlyFree(op); });
    segment.inputBytes = bytesOfRoots(inRoots, free);
    segment.outputBytes = bytesOfRoots(outRoots, free);
    int64_t newBytes = 0;
    llvm::SetVector<Value> writtenState;
    llvm::DenseMap<StringAttr, unsigned> usesHere;
    for (Operation *op : ops) {
      countParameterUses(op, usesHere);
      auto torchOp = dyn_cast<TorchOp>(op);
      std::optional<ArrayRef<int64_t>> mutates =
          torchOp ? torchOp.getMutates() : std::nullopt;
      ArrayRef<int64_t> mutated = mutates ? *mutates : ArrayRef<int64_t>();
      for (int64_t index : mutated)
        if (Value root = getStorageRoot(op->getOperand(index));
            root.getDefiningOp<BufferOp>())
          writtenState.insert(root);
      llvm::SetVector<Value> opRoots;
      for (Value saved : memory.getSavedValues(op))
        opRoots.insert(getStorageRoot(saved));
      newBytes += std::max<int64_t>(0, memory.getSavedBytes(op) -
                                           bytesOfRoots(opRoots, free));
      for (Value root : opRoots) {
        if (inRoots.contains(root))
          savedIn.back().insert(root);
        else if (outRoots.contains(root))
          savedOut.back().insert(root);
        else
          savedRoots.insert(root);
      }
      int64_t resultBytes = 0;
      for (Value result : op->getResults())
        if (isa<TensorType>(result.getType()))
          resultBytes += bytesOf(result);
      segment.backwardTransientBytes =
          std::max(segment.backwardTransientBytes, resultBytes);
      OpCost forward = cost.getCost(op);
      segment.forwardCost += forward.seconds;
      chain.stepSeconds += forward.seconds + cost.getBackwardSeconds(op);
    }
    segment.savedBytes = bytesOfRoots(savedRoots, free) + newBytes;
    for (Value root : writtenState)
      segment.writtenStateBytes += std::max<int64_t>(0, bytesOf(root));
    for (auto &[path, uses] : usesHere)
      if (auto id = paramIds.find(path); id != paramIds.end())
        segment.paramUses.push_back({id->second, uses, totalUses.lookup(path)});
    segment.activationUses = std::move(activationUses[s]);
    segment.savedInputBytes = bytesOfRoots(savedIn.back(), free);
    segment.savedOutputBytes = bytesOfRoots(savedOut.back(), free);
    if (s > 0) {
      llvm::SetVector<Value> shared;
      for (Value root : savedIn.back())
        if (savedOut[s - 1].contains(root))
          shared.insert(root);
      segment.sharedBoundaryBytes = bytesOfRoots(shared, free);
    }

    bool anyBinary = false;
    int64_t packed = 0;
    llvm::SmallDenseSet<Value> seenRoots;
    for (Value v : inputs) {
      if (!seenRoots.insert(getStorageRoot(v)).second)
        continue;
      std::optional<int64_t> bits =
          binary.isBinary(v) ? getBitPackedBytes(v.getType()) : std::nullopt;
      if (bits) {
        anyBinary = true;
        packed += *bits;
      } else {
        packed += bytesOf(v);
      }
    }
    if (anyBinary)
      segment.packedInputBytes = packed;
    // Crossing tensors one by one, so a region keeps only those it uses.
    llvm::DenseMap<Value, unsigned> tensorOfRoot;
    for (Value v : inputs) {
      Value root = getStorageRoot(v);
      if (free.isFree(root))
        continue;
      unsigned use = firstUseSegment(v, s);
      auto [it, fresh] =
          tensorOfRoot.try_emplace(root, segment.crossing.size());
      if (!fresh) {
        CrossingTensor &known = segment.crossing[it->second];
        known.firstUse = std::min(known.firstUse, use);
        continue;
      }
      CrossingTensor tensor;
      tensor.firstUse = use;
      tensor.bytes = bytesOf(root);
      std::optional<int64_t> bits =
          binary.isBinary(v) ? getBitPackedBytes(root.getType()) : std::nullopt;
      tensor.packedBytes = bits.value_or(tensor.bytes);
      segment.crossing.push_back(tensor);
    }

    for (Operation *op : ops) {
      auto torchOp = dyn_cast<TorchOp>(op);
      if (isa<SetAttrOp>(op) || (torchOp && torchOp.getSideEffects()) ||
          opInAnyModule(op, options.forbidCheckpoint))
        segment.forbidCheckpoint = true;
      if (opInAnyModule(op, options.forceCheckpoint))
        segment.forceCheckpoint = true;
    }
    chain.segments.push_back(std::move(segment));
    chain.ops.push_back(std::move(ops));
    chain.crossing.push_back(std::move(inputs));
  }
  return chain;
}
