//===- OpMemoryEffects.cpp - one op's effect on training memory -----------===//
#include "OpMemoryEffects.h"

#include "memopt/Analysis/OperatorCatalog.h"
#include "memopt/Analysis/SavedTensorTable.h"
#include "memopt/Analysis/TensorBytes.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::memopt;

/// A list or tuple built from its operands.
static bool isConstruct(TorchOp op) {
  SimulatorRule rule = lookupOperator(op.getName()).simulator;
  return rule == SimulatorRule::ListConstruct ||
         rule == SimulatorRule::TupleConstruct;
}

SmallVector<Value> mlir::memopt::getListElements(Value value, Operation *at) {
  auto def = value.getDefiningOp<TorchOp>();
  if (!def || !isConstruct(def))
    return {value};
  SmallVector<Value> elements = llvm::to_vector(llvm::make_filter_range(
      def.getOperands(), [](Value v) { return isTensorLike(v.getType()); }));
  // A list built by `aten::append` (a loop that TorchScript unrolled):
  // the elements appended before `at`, in program order.
  SmallVector<Operation *> appends;
  for (OpOperand &use : value.getUses()) {
    auto user = dyn_cast<TorchOp>(use.getOwner());
    if (!user ||
        lookupOperator(user.getName()).simulator != SimulatorRule::Append ||
        use.getOperandNumber() != 0 || user->getNumOperands() < 2 ||
        user->getBlock() != def->getBlock())
      continue;
    if (at && (at->getBlock() != user->getBlock() ||
               !user->isBeforeInBlock(at)))
      continue;
    appends.push_back(user);
  }
  llvm::sort(appends, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  for (Operation *append : appends)
    if (isTensorLike(append->getOperand(1).getType()))
      elements.push_back(append->getOperand(1));
  return elements;
}

Value mlir::memopt::getListElementAt(Value list, int64_t position,
                                     Operation *at) {
  auto def = list.getDefiningOp<TorchOp>();
  if (!def || !isConstruct(def))
    return {};
  ArrayAttr args = def.getArgs();
  SmallVector<Value> elements = getListElements(list, at);
  int64_t fromConstruct = llvm::count_if(
      def.getOperands(), [](Value v) { return isTensorLike(v.getType()); });
  int64_t appended = int64_t(elements.size()) - fromConstruct;
  if (position < 0) // list[-1]
    position += int64_t(args.size()) + appended;
  if (position < 0)
    return {};
  if (position < int64_t(args.size())) {
    auto ref = dyn_cast<OperandRefAttr>(args[position]);
    return ref ? def->getOperand(ref.getIndex()) : Value();
  }
  // Appended after construction.
  int64_t index = fromConstruct + position - int64_t(args.size());
  return index < int64_t(elements.size()) ? elements[index] : Value();
}

bool mlir::memopt::isTensorListOperation(TorchOp op) {
  StringRef overload = op.getOverload().value_or("");
  if (overload != "t" && overload != "left_t" && overload != "right_")
    return false;
  auto isTensorList = [](Type type) {
    auto list = dyn_cast<ListType>(type);
    return list && isa<TensorType>(list.getElementType());
  };
  // Element reads (`__getitem__.t`, `pop.t`) return a tensor: not these.
  return llvm::any_of(op->getOperandTypes(), isTensorList) &&
         llvm::all_of(op->getResultTypes(), isTensorList) &&
         llvm::none_of(op->getOperandTypes(),
                       [](Type type) { return isa<TensorType>(type); });
}

/// The number of elements of `list` where it is known without running:
/// a list built here, one unpacked into values, a concatenation of those.
static std::optional<int64_t> getKnownListLength(Value list) {
  for (Operation *user : list.getUsers())
    if (auto unpack = dyn_cast<TorchOp>(user);
        unpack && unpack.getName() == "prim::ListUnpack")
      return int64_t(unpack->getNumResults());
  auto def = list.getDefiningOp<TorchOp>();
  if (!def)
    return std::nullopt;
  // Built here and never appended to (appends make the length depend on
  // where it is read).
  if (lookupOperator(def.getName()).simulator == SimulatorRule::ListConstruct)
    return llvm::any_of(list.getUsers(),
                        [](Operation *user) {
                          auto op = dyn_cast<TorchOp>(user);
                          return op && lookupOperator(op.getName()).simulator ==
                                           SimulatorRule::Append;
                        })
               ? std::nullopt
               : std::optional<int64_t>(def.getArgs().size());
  if (def.getName() == "aten::add" && isTensorListOperation(def) &&
      def->getNumOperands() == 2) {
    std::optional<int64_t> a = getKnownListLength(def->getOperand(0));
    std::optional<int64_t> b = getKnownListLength(def->getOperand(1));
    if (a && b)
      return *a + *b;
  }
  return std::nullopt;
}

std::pair<Value, int64_t> mlir::memopt::traceListPosition(Value list,
                                                          int64_t position) {
  while (position >= 0) {
    auto def = list.getDefiningOp<TorchOp>();
    if (!def || !isTensorListOperation(def) || def->getNumOperands() == 0)
      break;
    StringRef name = def.getName();
    if (name == "aten::list" || name == "aten::copy") {
      list = def->getOperand(0);
      continue;
    }
    if (name == "aten::add" && def->getNumOperands() == 2) {
      std::optional<int64_t> first = getKnownListLength(def->getOperand(0));
      if (!first)
        break;
      bool inFirst = position < *first;
      list = def->getOperand(inFirst ? 0 : 1);
      position -= inFirst ? 0 : *first;
      continue;
    }
    // l[start:end:step] with a constant, non-negative start and step.
    if (name == "aten::slice" && def->getNumOperands() == 1) {
      ArrayRef<Attribute> args = def.getArgs().getValue();
      auto intAt = [&](size_t i, int64_t fallback) -> std::optional<int64_t> {
        if (i >= args.size() || isa<NoneAttr>(args[i]))
          return fallback;
        if (auto value = dyn_cast<IntegerAttr>(args[i]))
          return value.getInt();
        return std::nullopt;
      };
      std::optional<int64_t> start = intAt(1, 0), step = intAt(3, 1);
      if (!start || !step || *start < 0 || *step < 1)
        break;
      list = def->getOperand(0);
      position = *start + position * *step;
      continue;
    }
    break;
  }
  return {list, position};
}

/// The tensor type a list or tensor value stands for (its first element).
static Type getElementTensorType(Value value, Operation *at) {
  SmallVector<Value> elements = getListElements(value, at);
  if (elements.empty())
    return {};
  Type type = elements.front().getType();
  if (auto list = dyn_cast<ListType>(type))
    return list.getElementType();
  return type;
}

static int64_t getDtypeBytes(StringRef dtype, Type sameAs) {
  if (dtype == "same") {
    auto shaped = dyn_cast_or_null<ShapedType>(sameAs);
    return shaped ? getElementBytes(shaped.getElementType()) : 4;
  }
  return llvm::StringSwitch<int64_t>(dtype)
      .Case("c128", 16)
      .Cases("i64", "f64", "c64", 8)
      .Cases("i32", "f32", 4)
      .Cases("f16", "bf16", 2)
      .Default(1);
}

/// Bytes of a tensor that an op allocates only for backward.
static int64_t getNewSavedBytes(const SavedItem &item, TorchOp op,
                                ArrayRef<Value> args, Type firstTensorType) {
  Type base;
  if (item.size != SavedItem::Size::One) {
    if (item.sizeOfResult && item.index < op->getNumResults())
      base = op->getResult(item.index).getType();
    else if (!item.sizeOfResult && item.index < args.size() && args[item.index])
      base = getElementTensorType(args[item.index], op);
  }
  int64_t elements = 1;
  if (item.size != SavedItem::Size::One) {
    auto ranked = dyn_cast_or_null<RankedTensorType>(base);
    if (!ranked || !ranked.hasStaticShape())
      return -1;
    ArrayRef<int64_t> shape = ranked.getShape();
    int64_t numel = ranked.getNumElements();
    switch (item.size) {
    case SavedItem::Size::Like:
      elements = numel;
      break;
    case SavedItem::Size::Dim1:
      elements = shape.size() >= 2 ? shape[1] : 1;
      break;
    case SavedItem::Size::Rows:
      elements = shape.empty() || !shape.back() ? 1 : numel / shape.back();
      break;
    case SavedItem::Size::Dim01:
      elements = shape.size() >= 2 ? shape[0] * shape[1] : numel;
      break;
    case SavedItem::Size::Attn: {
      Value key = item.index + 1 < args.size() ? args[item.index + 1] : Value();
      auto keyType =
          key ? dyn_cast<RankedTensorType>(key.getType()) : RankedTensorType();
      if (!keyType || !keyType.hasStaticShape() || keyType.getRank() < 2 ||
          shape.empty() || !shape.back())
        return -1;
      elements = numel / shape.back() * keyType.getShape().drop_back().back();
      break;
    }
    case SavedItem::Size::Dim0ByInt: {
      ArrayRef<Attribute> constants = op.getArgs().getValue();
      auto count = item.intArg < constants.size()
                       ? dyn_cast<IntegerAttr>(constants[item.intArg])
                       : IntegerAttr();
      if (!count || shape.empty())
        return -1;
      elements = shape[0] * count.getInt();
      break;
    }
    case SavedItem::Size::One:
      break;
    }
  }
  return elements * getDtypeBytes(item.dtype, firstTensorType);
}

/// Bytes of the copy ATen's batched matmul saves for operand `index` when
/// the batch dims broadcast it: both operands are expanded to the common
/// batch and reshaped to one bmm batch, which copies a broadcast operand
/// (a weight shared by every sample, `W @ u` in capsule routing); 0 when
/// the operand is not broadcast (or the product is not a batched one).
static int64_t getBroadcastMatmulCopyBytes(TorchOp op, ArrayRef<Value> args,
                                           unsigned index) {
  if (op.getName() != "aten::matmul" || args.size() < 2 || index > 1 ||
      !args[0] || !args[1])
    return 0;
  auto a = dyn_cast<RankedTensorType>(args[0].getType());
  auto b = dyn_cast<RankedTensorType>(args[1].getType());
  if (!a || !b || !a.hasStaticShape() || !b.hasStaticShape() ||
      a.getRank() < 2 || b.getRank() < 2 ||
      (a.getRank() < 3 && b.getRank() < 3) ||
      (b.getRank() <= 2 && a.getRank() >= 3)) // folded into one mm
    return 0;
  ArrayRef<int64_t> batchA = a.getShape().drop_back(2),
                    batchB = b.getShape().drop_back(2);
  size_t rank = std::max(batchA.size(), batchB.size());
  int64_t common = 1;
  for (size_t i = 0; i < rank; ++i) {
    auto dimOf = [&](ArrayRef<int64_t> batch) -> int64_t {
      size_t offset = rank - batch.size();
      return i < offset ? 1 : batch[i - offset];
    };
    common *= std::max(dimOf(batchA), dimOf(batchB));
  }
  RankedTensorType operand = index == 0 ? a : b;
  ArrayRef<int64_t> own = index == 0 ? batchA : batchB;
  int64_t ownBatch = 1;
  for (int64_t d : own)
    ownBatch *= d;
  int64_t bytes = getDeviceBytes(operand);
  if (ownBatch >= common || ownBatch <= 0 || bytes < 0)
    return 0;
  return bytes / ownBatch * common;
}

/// The constant an argument is: written in the op, or a module attribute
/// (`attn.attention_dropout`) whose value the function assumes
/// (memopt.assumes; the exported module checks it before running).
static Attribute getConstantArg(TorchOp op, Attribute arg) {
  auto ref = dyn_cast<OperandRefAttr>(arg);
  if (!ref)
    return arg;
  auto read = op->getOperand(ref.getIndex()).getDefiningOp<GetAttrOp>();
  return read ? read.getAssumedValue() : Attribute();
}

/// The table's name for the op's row: attention with a dropout_p that may
/// be nonzero runs another CPU kernel (the math decomposition, which keeps
/// the scores) than without (flash attention), and has rows of its own.
/// A fused kernel with dropout keeps what flash attention keeps.
static std::string getKernelKey(TorchOp op, bool fusedDropoutAttention) {
  StringRef name = op.getName();
  if (lookupOperator(name).savedRow != SavedRowKey::DropoutAt4 ||
      fusedDropoutAttention)
    return name.str();
  ArrayRef<Attribute> args = op.getArgs().getValue();
  auto p = args.size() > 4
               ? dyn_cast_or_null<FloatAttr>(getConstantArg(op, args[4]))
               : FloatAttr();
  if (p && p.getValueAsDouble() == 0)
    return name.str();
  return (name + "[dropout]").str();
}

/// The kernel's key, or its overload's own (`aten::max[dim]`) where the
/// table has rows for it: overloads that keep other tensors than the
/// operator's others.
static std::string getTableKey(const SavedTensorTable &table, TorchOp op,
                               bool fusedDropoutAttention) {
  std::string key = getKernelKey(op, fusedDropoutAttention);
  StringRef overload = op.getOverload().value_or("");
  std::string overloadKey =
      (key + "[" + (overload.empty() ? StringRef("default") : overload) + "]")
          .str();
  return table.knows(overloadKey) ? overloadKey : key;
}

/// Without a table row: every tensor operand and result is saved and every
/// input gradient is a new buffer (an upper bound).
/// New results and a new gradient for every tensor operand (each element
/// of a list) that requires one; false when none does.
static bool newResultsAndGradients(TorchOp op,
                                   function_ref<bool(Value)> requiresGrad,
                                   OpMemoryEffects &fx) {
  fx.resultAliases.assign(op->getNumResults(), Value());
  for (Value operand : op.getOperands())
    for (Value element : getListElements(operand, op))
      if (isTensorLike(element.getType()) && requiresGrad(element))
        fx.grads.push_back({element, true});
  fx.differentiable = !fx.grads.empty();
  return fx.differentiable;
}

static void guessEffects(TorchOp op, function_ref<bool(Value)> requiresGrad,
                         OpMemoryEffects &fx) {
  fx.known = false;
  if (!newResultsAndGradients(op, requiresGrad, fx))
    return;
  for (Value operand : op.getOperands())
    if (isTensorLike(operand.getType()))
      fx.savedValues.push_back(operand);
  for (Value result : op->getResults())
    if (isTensorLike(result.getType()))
      fx.savedValues.push_back(result);
}

/// What the kernel probe measured (recurrent layers): new results, the
/// kept operands and bytes, and a new gradient for every tensor that
/// requires one (lists: each element).
static void measuredEffects(TorchOp op, MeasuredSavesAttr saves,
                            function_ref<bool(Value)> requiresGrad,
                            OpMemoryEffects &fx) {
  if (!newResultsAndGradients(op, requiresGrad, fx))
    return;
  for (int64_t index : saves.getOperands())
    fx.savedValues.push_back(op->getOperand(index));
  ArrayRef<int64_t> elements = saves.getElements();
  for (size_t i = 0; i + 1 < elements.size(); i += 2)
    fx.savedValues.push_back(*std::next(
        TorchOp::getConstructedElements(op->getOperand(elements[i]))->begin(),
        elements[i + 1]));
  for (int64_t index : saves.getResults())
    fx.savedValues.push_back(op->getResult(index));
  fx.savedNewBytes.push_back(saves.getBytes());
}

/// ATen's dropouts return their input itself when p is 0 or training is
/// off: no noise, no autograd node.
static bool isIdentityDropout(TorchOp op) {
  SimulatorRule rule = lookupOperator(op.getName()).simulator;
  if (rule != SimulatorRule::Dropout && rule != SimulatorRule::IdentityDropout)
    return false;
  ArrayRef<Attribute> args = op.getArgs().getValue();
  if (args.size() != 3 || !isa<OperandRefAttr>(args[0]))
    return false;
  auto p = dyn_cast_or_null<FloatAttr>(getConstantArg(op, args[1]));
  auto train = dyn_cast_or_null<BoolAttr>(getConstantArg(op, args[2]));
  return (p && p.getValueAsDouble() == 0) || (train && !train.getValue());
}

bool mlir::memopt::drawsRandomNumbers(TorchOp op) {
  return op.getNondeterministic() && !isIdentityDropout(op);
}

OpMemoryEffects mlir::memopt::getOpMemoryEffects(
    TorchOp op, function_ref<bool(Value)> requiresGrad,
    function_ref<bool(Value)> isContiguous,
    function_ref<bool(Value)> foldCopies, bool fusedDropoutAttention) {
  OpMemoryEffects fx;
  SmallVector<Value> args;
  std::string pattern;
  Type firstTensorType;
  for (Attribute arg : op.getArgs()) {
    auto ref = dyn_cast<OperandRefAttr>(arg);
    Value value = ref ? op->getOperand(ref.getIndex()) : Value();
    if (!value || !isTensorLike(value.getType())) {
      args.push_back(Value());
      pattern += '-';
      continue;
    }
    args.push_back(value);
    if (!firstTensorType)
      firstTensorType = getElementTensorType(value, op);
    bool grad = llvm::any_of(getListElements(value, op), requiresGrad);
    pattern += grad ? 'g' : 't';
  }
  while (!pattern.empty() && pattern.back() == '-')
    pattern.pop_back();
  bool anyGrad = StringRef(pattern).contains('g');

  if (isIdentityDropout(op) && args[0]) {
    fx.resultAliases.assign(op->getNumResults(), args[0]);
    fx.differentiable = anyGrad;
    if (requiresGrad(args[0]))
      fx.grads.push_back({args[0], false});
    return fx;
  }

  if (MeasuredSavesAttr saves = op.getMeasuredSavesAttr()) {
    measuredEffects(op, saves, requiresGrad, fx);
    return fx;
  }

  const SavedTensorTable &table = SavedTensorTable::get();
  std::string key = getTableKey(table, op, fusedDropoutAttention);
  const SavedTensorRow *row = table.lookup(key, pattern);
  if (!row && !anyGrad)
    row = table.anyRow(key);
  if (!row) {
    guessEffects(op, requiresGrad, fx);
    return fx;
  }

  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    ResultRule rule = i < row->results.size() ? row->results[i] : ResultRule();
    Value base = rule.kind == ResultRule::Kind::New || rule.arg >= args.size()
                     ? Value()
                     : args[rule.arg];
    if (base && rule.kind == ResultRule::Kind::AliasIfContiguous &&
        !isContiguous(base))
      base = Value();
    if (base && rule.kind == ResultRule::Kind::AliasIfSameType &&
        base.getType() != result.getType())
      base = Value();
    fx.resultAliases.push_back(base);
  }
  if (!anyGrad || llvm::all_of(row->grads, [](GradRule rule) {
        return rule == GradRule::None;
      }))
    return fx;
  fx.differentiable = true;
  if (row->backward.factor && row->pattern == pattern) {
    // The buffers are the size of the table's largest tensor; at a
    // broadcast result that is the result's.
    int64_t one =
        getNewSavedBytes(row->backward.size, op, args, firstTensorType);
    // Beside the gradients the buffers are the candidate's own size (the
    // generator measures them so).
    if (row->backward.aboveGradients) {
      if (one > 0)
        fx.backwardAboveGradients = row->backward.factor * one;
    } else {
      if (op->getNumResults() == 1)
        one = std::max(one, getDeviceBytes(op->getResult(0).getType()));
      if (one > 0)
        fx.backwardHighWater = row->backward.factor * one;
    }
  }

  for (const SavedItem &item : row->saved) {
    switch (item.kind) {
    case SavedItem::Kind::Arg:
      if (item.index >= args.size() || !args[item.index])
        break;
      if (int64_t copy = getBroadcastMatmulCopyBytes(op, args, item.index)) {
        fx.savedNewBytes.push_back(copy);
        break;
      }
      if (item.copyIfFolded && foldCopies(args[item.index])) {
        auto ranked = dyn_cast<RankedTensorType>(args[item.index].getType());
        // The reshape merges leading dims (and copies a tensor whose
        // leading dims do not merge) for a batch of more than one dim, or
        // to fold a 3-d first operand times a matrix into one product; a
        // 3-d batch of products keeps its shape.
        Value other =
            item.index < 2 && args.size() > 1 ? args[1 - item.index] : Value();
        auto otherType =
            other ? dyn_cast<RankedTensorType>(other.getType()) : nullptr;
        bool merges = ranked && (ranked.getRank() >= 4 ||
                                 (ranked.getRank() == 3 && item.index == 0 &&
                                  (!otherType || otherType.getRank() <= 2)));
        if (merges) {
          fx.savedNewBytes.push_back(getDeviceBytes(ranked));
          break;
        }
      }
      fx.savedValues.push_back(args[item.index]);
      break;
    case SavedItem::Kind::Result:
      if (item.index < op->getNumResults())
        fx.savedValues.push_back(op->getResult(item.index));
      break;
    case SavedItem::Kind::New:
      fx.savedNewBytes.push_back(
          getNewSavedBytes(item, op, args, firstTensorType));
      break;
    }
  }
  // One gradient rule per 'g' of the row's pattern; the op's own pattern may
  // have fewer (the row over-approximates which inputs need grad).
  unsigned gradIndex = 0;
  for (auto [pos, have] : llvm::enumerate(row->pattern)) {
    if (have != 'g')
      continue;
    GradRule rule =
        gradIndex < row->grads.size() ? row->grads[gradIndex] : GradRule::New;
    ++gradIndex;
    if (pattern[pos] != 'g' || rule == GradRule::None)
      continue;
    // A passed-through gradient has the result's shape: a tensor operand
    // broadcast to it (fewer elements) gets it reduced, a new tensor. (One
    // with more, as sum's, gets an expanded view of it; the elements of a
    // list, as cat's and stack's, slices of it.)
    int64_t resultElements =
        op->getNumResults() ? getNumElements(op->getResult(0).getType()) : -1;
    for (Value element : getListElements(args[pos], op))
      if (requiresGrad(element)) {
        int64_t elements = getNumElements(element.getType());
        bool reduced = rule == GradRule::Pass && element == args[pos] &&
                       elements >= 0 && resultElements >= 0 &&
                       elements < resultElements;
        fx.grads.push_back({element, rule == GradRule::New ||
                                         rule == GradRule::View || reduced});
        if (rule == GradRule::View)
          fx.viewGrads.push_back(element);
        // A batched product (composite in ATen) makes a broadcast
        // operand's gradient at the common batch while its saved tensors
        // live; the expand's backward, a later node, sums it to the
        // operand's shape once they are freed. Where the operand's copy is
        // among them (the other operand needs a gradient) the first is the
        // higher: that gradient beside the copy, in place of the reduced
        // one; else the second, both gradients.
        if (int64_t whole = getBroadcastMatmulCopyBytes(op, args, pos)) {
          bool copySaved =
              pos < 2 && args[1 - pos] && requiresGrad(args[1 - pos]);
          int64_t own = std::max<int64_t>(getDeviceBytes(element.getType()), 0);
          fx.unreducedGrads.push_back(
              {element, copySaved ? std::max<int64_t>(whole - own, 0) : whole});
        }
        if (reduced)
          fx.reducedPassThrough.push_back(element);
      }
  }
  return fx;
}
