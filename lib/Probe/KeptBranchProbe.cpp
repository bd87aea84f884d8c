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
#include "ProbeSupport.h"

#include "memopt/Conversion/KeptScript.h"
#include "memopt/Conversion/ScalarTypes.h"
#include "memopt/Dialect/MemoptAttrs.h"

#include "mlir/IR/BuiltinTypes.h"

#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <set>

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// What one branch kept: new bytes, and which operands (by index); and the
/// peaks of its forward and of its backward above what was live before
/// each (the backward's counting the gradients it makes), with the
/// incoming gradient freed by the first backward node or held throughout.
struct BranchSaves {
  int64_t bytes = 0;
  std::set<unsigned> operands;
  int64_t forward = 0;
  int64_t backward = 0;
  int64_t backwardHeld = 0;
};
} // namespace

/// The value of an integer the IR computes from static shapes: a size, a
/// rank or an element count of a statically shaped tensor, or integer
/// arithmetic on such values and constants (`h.size(1) // 2`). The
/// importer leaves these as ops so that the exported code stays general.
static std::optional<int64_t> staticIntOf(Value value, unsigned depth = 0) {
  auto op = value.getDefiningOp<TorchOp>();
  if (!op || depth > 16 || !value.getType().isInteger(64))
    return std::nullopt;
  ArrayRef<Attribute> args = op.getArgs().getValue();
  auto argInt = [&](unsigned i) -> std::optional<int64_t> {
    if (i >= args.size())
      return std::nullopt;
    if (auto constant = dyn_cast<IntegerAttr>(args[i]))
      return constant.getInt();
    if (Value operand = op.getOperandArg(i))
      return staticIntOf(operand, depth + 1);
    return std::nullopt;
  };
  StringRef name = op.getName();
  if (name == "aten::size" && args.size() == 2) {
    RankedTensorType type = op.getStaticTensorArg(0);
    std::optional<int64_t> dim = argInt(1);
    if (!type || !dim || *dim < -type.getRank() || *dim >= type.getRank())
      return std::nullopt;
    return type.getDimSize(*dim < 0 ? *dim + type.getRank() : *dim);
  }
  if ((name == "aten::dim" || name == "aten::numel") && args.size() == 1) {
    RankedTensorType type = op.getStaticTensorArg(0);
    if (!type)
      return std::nullopt;
    return name == "aten::dim" ? type.getRank() : type.getNumElements();
  }
  if (args.size() != 2)
    return std::nullopt;
  std::optional<int64_t> a = argInt(0), b = argInt(1);
  if (!a || !b)
    return std::nullopt;
  if (name == "aten::add")
    return *a + *b;
  if (name == "aten::sub")
    return *a - *b;
  if (name == "aten::mul")
    return *a * *b;
  // Python's floor division and modulo (TorchScript's on ints).
  if ((name == "aten::floordiv" || name == "aten::__floordiv__") && *b != 0)
    return *a / *b - ((*a % *b != 0) && ((*a < 0) != (*b < 0)));
  if ((name == "aten::remainder" || name == "aten::__mod__") && *b != 0)
    return ((*a % *b) + *b) % *b;
  return std::nullopt;
}

/// Runs the branch `taken` of the script on fresh tensors of the operands'
/// shapes (and the values of integers computed from static shapes);
/// std::nullopt when it raises there (a branch that only raises). Its
/// backward's mark goes to `saves.backwardHeld` with `incomingHeld`, else to
/// `saves.backward`.
static std::optional<BranchSaves>
measureBranch(const std::shared_ptr<torch::jit::Graph> &graph, TorchOp op,
              const DenseSet<Value> &grads, bool taken, bool incomingHeld) {
  using namespace ::memopt::probe;
  torch::jit::Stack stack{c10::IValue(taken)};
  std::vector<at::Tensor> tensors;
  std::vector<unsigned> tensorOperands; // the op's operand index of each
  // Owners of each operand before the run: of the tensor itself (autograd
  // saves a non-output as is) and of its storage (a saved view or output).
  std::vector<std::pair<int64_t, int64_t>> owners;
  std::set<const void *> inputStorages;
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    if (index == 0)
      continue; // the condition
    if (std::optional<int64_t> value = staticIntOf(operand)) {
      stack.push_back(*value);
      continue;
    }
    auto type = cast<RankedTensorType>(operand.getType());
    at::ScalarType dtype = *scalarTypeOf(type.getElementType());
    // Small values keep activations away from saturation; a tensor that
    // requires grad is a non-leaf, as a layer's output is in training.
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    at::Tensor leaf = at::full(shape, 0.01, at::TensorOptions().dtype(dtype));
    bool grad = grads.contains(operand) && at::isFloatingType(dtype);
    if (grad)
      leaf.requires_grad_(true);
    at::Tensor tensor = grad ? leaf * 1 : leaf;
    tensors.push_back(tensor);
    tensorOperands.push_back(index);
    inputStorages.insert(tensor.storage().data());
    stack.push_back(tensor);
  }
  // Counted once the operands' other handles are gone: the stack's, which
  // the run consumes, is not an owner afterwards.
  for (const at::Tensor &tensor : tensors)
    owners.emplace_back(tensor.use_count() - 1, tensor.storage().use_count());
  c10::AutoGradMode gradMode(true);
  int64_t before = getLiveBytes();
  BranchSaves saves;
  try {
    torch::jit::Code code(graph, "memopt_kept_branch");
    saves.forward =
        measurePeak([&] { torch::jit::InterpreterState(code).run(stack); });
  } catch (const std::exception &) {
    return std::nullopt;
  }
  std::set<const void *> results;
  int64_t resultBytes = 0;
  for (const c10::IValue &value : stack)
    if (value.isTensor() && value.toTensor().defined()) {
      const at::Tensor &result = value.toTensor();
      const void *storage = result.storage().data();
      if (!inputStorages.count(storage) && results.insert(storage).second)
        resultBytes += result.storage().nbytes();
    }
  saves.bytes = std::max<int64_t>(getLiveBytes() - before - resultBytes, 0);
  // The operands that gained owners besides the results (an operand
  // returned as is, or a view of it): saved variables or views of them.
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t tensorOwners = tensors[i].use_count();
    int64_t storageOwners = tensors[i].storage().use_count();
    for (const c10::IValue &value : stack) {
      if (!value.isTensor() || !value.toTensor().defined())
        continue;
      if (value.toTensor().is_same(tensors[i]))
        --tensorOwners;
      else if (value.toTensor().storage().is_alias_of(tensors[i].storage()))
        --storageOwners;
    }
    if (tensorOwners > owners[i].first || storageOwners > owners[i].second)
      saves.operands.insert(tensorOperands[i]);
  }

  // Backward from every result that requires grad; the incoming gradients
  // are made before (the model counts them live before the op's backward).
  // Held: they reach the results directly and stay referenced here. Else
  // each reaches its result through a `* 1`, whose gradient, a new buffer
  // the engine frees once the branch's first node has consumed it, stands
  // for the incoming one: its bytes come off the mark. The results stay
  // referenced, as bytes of `before`: what the backward adds on top is the
  // same whether or not they are freed first.
  std::vector<at::Tensor> returned, roots, incoming, wrt;
  int64_t incomingBytes = 0;
  for (const c10::IValue &value : stack)
    if (value.isTensor() && value.toTensor().defined() &&
        value.toTensor().requires_grad()) {
      returned.push_back(value.toTensor());
      roots.push_back(incomingHeld ? returned.back() : returned.back() * 1);
      incoming.push_back(at::ones_like(roots.back()));
      if (!incomingHeld)
        incomingBytes += roots.back().storage().nbytes();
    }
  for (const at::Tensor &tensor : tensors)
    if (tensor.requires_grad())
      wrt.push_back(tensor);
  stack.clear();
  if (roots.empty() || wrt.empty())
    return saves;
  std::vector<at::Tensor> gradients;
  int64_t mark = std::max<int64_t>(measurePeak([&] {
                                     gradients = torch::autograd::grad(
                                         roots, wrt, incoming,
                                         /*retain_graph=*/false,
                                         /*create_graph=*/false,
                                         /*allow_unused=*/true);
                                   }) - incomingBytes,
                                   0);
  (incomingHeld ? saves.backwardHeld : saves.backward) = mark;
  return saves;
}

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
  for (Value operand : op->getOperands().drop_front()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if ((!type || !type.hasStaticShape() ||
         !scalarTypeOf(type.getElementType())) &&
        !staticIntOf(operand))
      return false;
  }
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
  std::optional<BranchSaves> most;
  // Each branch of an If; a loop entered (a bounded one runs to its bound,
  // an unbounded one as long as the probe's data makes it: see
  // docs/analyses.md).
  for (bool taken : {true, false}) {
    if (isLoop && !taken)
      break;
    std::optional<BranchSaves> saves =
        measureBranch(graph, op, grads, taken, /*incomingHeld=*/false);
    if (!saves)
      continue;
    // The same run again for the backward with the incoming gradient held.
    if (std::optional<BranchSaves> held =
            measureBranch(graph, op, grads, taken, /*incomingHeld=*/true))
      saves->backwardHeld = held->backwardHeld;
    else
      saves->backwardHeld = saves->backward;
    if (!most) {
      most = saves;
      continue;
    }
    most->bytes = std::max(most->bytes, saves->bytes);
    most->operands.insert(saves->operands.begin(), saves->operands.end());
    most->forward = std::max(most->forward, saves->forward);
    most->backward = std::max(most->backward, saves->backward);
    most->backwardHeld = std::max(most->backwardHeld, saves->backwardHeld);
  }
  if (!most)
    return false;
  SmallVector<int64_t> operands(most->operands.begin(), most->operands.end());
  op.setMeasuredSavesAttr(
      MeasuredSavesAttr::get(op.getContext(), most->bytes, operands));
  // One backward mark, whichever operands get gradients (the branch's
  // backward makes them all at once).
  op.setHighWaterAttr(KernelHighWaterAttr::get(
      op.getContext(), most->forward,
      {-1, most->backward, most->backward, most->backward},
      std::max(most->backwardHeld, most->backward)));
  return true;
}
