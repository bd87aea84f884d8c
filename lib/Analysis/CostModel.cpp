//===- CostModel.cpp - FLOPs, bytes and time of operators -----------------===//
#include "memopt/Analysis/CostModel.h"
#include "KernelWorkspace.h"
#include "OpMemoryEffects.h"
#include "memopt/Analysis/OperatorCatalog.h"
#include "memopt/Analysis/SavedTensorTable.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::memopt;

StringRef mlir::memopt::stringifyCostClass(CostClass cls) {
  return getCostClassNames()[static_cast<unsigned>(cls)];
}

std::optional<CostClass> mlir::memopt::symbolizeCostClass(StringRef name) {
  ArrayRef<StringLiteral> names = getCostClassNames();
  const StringLiteral *found = llvm::find(names, name);
  if (found == names.end())
    return std::nullopt;
  return static_cast<CostClass>(found - names.begin());
}

DictionaryAttr mlir::memopt::getFittedCostModel(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto fitted = op->getAttrOfType<DictionaryAttr>(kCostModelAttrName))
      return fitted;
  return nullptr;
}

namespace {
/// The built-in fit, indexed by class; every class must have its line.
struct BuiltinCoefficients {
  std::array<CostCoefficients, kNumCostClasses> table;
  BuiltinCoefficients() {
    std::array<bool, kNumCostClasses> seen{};
#define MEMOPT_COST_CLASS(NAME, F, B, O)                                       \
  table[static_cast<unsigned>(CostClass::NAME)] = {F, B, O};                   \
  seen[static_cast<unsigned>(CostClass::NAME)] = true;
#include "CostCoefficients.def"
#undef MEMOPT_COST_CLASS
    for (bool present : seen)
      if (!present)
        llvm::report_fatal_error("CostCoefficients.def lacks a cost class");
  }
};
} // namespace

const CostCoefficients &CostModel::getBuiltinCoefficients(CostClass cls) {
  static const BuiltinCoefficients builtin;
  return builtin.table[static_cast<unsigned>(cls)];
}

CostModel::CostModel(Operation *op) {
  for (unsigned i = 0; i < kNumCostClasses; ++i)
    coefficients[i] = getBuiltinCoefficients(static_cast<CostClass>(i));
  DictionaryAttr fitted = getFittedCostModel(op);
  if (!fitted)
    return;
  // The dialect verified the names and values.
  for (NamedAttribute entry : fitted) {
    std::optional<CostClass> cls = symbolizeCostClass(entry.getName());
    auto values = dyn_cast<DenseF64ArrayAttr>(entry.getValue());
    if (!cls || !values || values.size() != 3)
      continue;
    coefficients[static_cast<unsigned>(*cls)] = {values[0], values[1],
                                                 values[2]};
  }
}

static ArrayRef<int64_t> shapeOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return t.getShape();
  return {};
}

static double product(ArrayRef<int64_t> dims) {
  double p = 1;
  for (int64_t d : dims)
    p *= std::max<int64_t>(d, 0);
  return p;
}

OpCost CostModel::getCost(Operation *op) const {
  OpCost cost;
  if (auto cp = dyn_cast<CheckpointOp>(op)) {
    for (Operation &inner : cp.getBodyBlock().without_terminator()) {
      OpCost c = getCost(&inner);
      cost.flops += c.flops;
      cost.bytes += c.bytes;
      cost.seconds += c.seconds;
    }
    cost.cls = CostClass::Copy;
    return cost;
  }
  auto torchOp = dyn_cast<TorchOp>(op);
  if (!torchOp) {
    if (isa<CompressOp, DecompressOp>(op))
      cost.cls = CostClass::Copy;
    else
      return cost; // params, buffers, attributes, offload handles: free
  }
  double outElems = 0, inBytes = 0, outBytes = 0;
  for (Value v : op->getResults())
    if (getDeviceBytes(v.getType()) > 0) {
      outElems += product(shapeOf(v));
      outBytes += getDeviceBytes(v.getType());
    }
  for (Value v : op->getOperands())
    for (Value e : getListElements(v))
      inBytes += std::max<int64_t>(getDeviceBytes(e.getType()), 0);
  if (torchOp) {
    StringRef name = torchOp.getName();
    const OperatorInfo &info = lookupOperator(name);
    cost.cls = info.cost;
    // A 1x1 convolution without oneDNN is one GEMM per image.
    bool gemmConv = cost.cls == CostClass::Conv &&
                    isMatrixProductConvolution(torchOp, /*threads=*/1);
    if (gemmConv)
      cost.cls = CostClass::Matmul;
    if (info.flops == FlopRule::MatmulAnyRank && op->getNumOperands() == 2 &&
        shapeOf(op->getOperand(0)).size() >= 3 &&
        shapeOf(op->getOperand(1)).size() >= 3)
      cost.cls = CostClass::BatchedMatmul;
    if (cost.cls == CostClass::Elementwise &&
        !SavedTensorTable::get().knows(name))
      cost.cls = CostClass::Unknown;
    ArrayRef<int64_t> a0 =
        op->getNumOperands() ? shapeOf(op->getOperand(0)) : ArrayRef<int64_t>();
    ArrayRef<int64_t> a1 = op->getNumOperands() > 1 ? shapeOf(op->getOperand(1))
                                                    : ArrayRef<int64_t>();
    switch (info.flops) {
    case FlopRule::Convolution: // 2 * out * (cin / groups) * kh * kw
      cost.flops =
          2 * outElems * (a1.size() > 1 ? product(a1.drop_front()) : 1);
      break;
    case FlopRule::TransposedConvolution: // weight: cin x (cout / groups) x k
      cost.flops =
          2 * product(a0) * (a1.size() > 1 ? product(a1.drop_front()) : 1);
      break;
    case FlopRule::Attention:
      // Scores q k^T and their product with v: 2 * 2 * (B H L) * S * E.
      cost.flops =
          4 * product(a0) * (a1.size() >= 2 ? a1.drop_back().back() : 1);
      break;
    case FlopRule::Recurrent: {
      // Every row (step x batch) of the input meets every gate weight,
      // once per layer and direction: 2 * rows * sum of the 2-d weights.
      double weights = 0;
      if (Value params = torchOp.getOperandArg(2))
        for (Value weight : getListElements(params))
          if (ArrayRef<int64_t> shape = shapeOf(weight); shape.size() == 2)
            weights += product(shape);
      cost.flops = 2 *
                   (a0.empty() || !a0.back() ? 0 : product(a0) / a0.back()) *
                   weights;
      break;
    }
    case FlopRule::Matmul: // 2 * out * k
    case FlopRule::MatmulAnyRank:
      cost.flops = 2 * outElems * (a0.empty() ? 1 : a0.back());
      break;
    case FlopRule::AddMatmul:
      cost.flops = 2 * outElems * (a1.empty() ? 1 : a1.back());
      break;
    case FlopRule::PerInput:
      cost.flops = info.flopsPerElement * product(a0);
      break;
    case FlopRule::PerOutput:
      cost.flops = info.flopsPerElement * outElems;
      break;
    case FlopRule::None:
      break;
    }
  }
  if (cost.cls != CostClass::View)
    cost.bytes = inBytes + outBytes;
  const CostCoefficients &k = getCoefficients(cost.cls);
  cost.seconds = k.overheadSeconds + cost.flops * k.secondsPerFlop +
                 cost.bytes * k.secondsPerByte;
  return cost;
}

double CostModel::getBackwardSeconds(Operation *op) const {
  OpCost c = getCost(op);
  const CostCoefficients &k = getCoefficients(c.cls);
  // A linear layer's forward multiplies by its weight transposed; its two
  // backward products (grad @ weight, grad^T @ input) take both as stored,
  // a GEMM that some BLAS builds run twice as fast.
  if (c.cls == CostClass::Matmul)
    if (auto torchOp = dyn_cast<TorchOp>(op);
        torchOp && torchOp.getName() == "aten::linear") {
      const CostCoefficients &gemm = getCoefficients(CostClass::Gemm);
      return k.overheadSeconds + 2 * (c.flops * gemm.secondsPerFlop +
                                      c.bytes * gemm.secondsPerByte);
    }
  return k.overheadSeconds +
         2 * (c.flops * k.secondsPerFlop + c.bytes * k.secondsPerByte);
}

double CostModel::getRecomputeSeconds(Block::iterator begin,
                                      Block::iterator end) const {
  double seconds = 0;
  for (auto it = begin; it != end; ++it)
    seconds += getCost(&*it).seconds;
  return seconds;
}

double CostModel::getRecomputeSeconds(ArrayRef<Operation *> ops) const {
  double seconds = 0;
  for (Operation *op : ops)
    seconds += getCost(op).seconds;
  return seconds;
}

double CostModel::getTransferSeconds(int64_t bytes, double bandwidth,
                                     double latencySeconds) {
  return bytes <= 0 ? 0 : latencySeconds + double(bytes) / bandwidth;
}
