//===- PackRegionInputs.cpp - memopt-pack-region-inputs -------------------===//
//
// A checkpoint region keeps its inputs until its backward; a binary one
// kept whole is kept at one bit per value instead.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_PACKREGIONINPUTS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct PackRegionInputsPass
    : public mlir::memopt::impl::PackRegionInputsBase<PackRegionInputsPass> {
  using PackRegionInputsBase::PackRegionInputsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
      return markAllAnalysesPreserved();
    FailureOr<BinaryValueAnalysis> binary =
        analyzeBinaryValues(func, *assumeBinary);
    if (failed(binary))
      return signalPassFailure();
    MLIRContext *context = &getContext();
    auto bit = CompressPolicyAttr::get(context, CompressionKind::bit);
    func.walk([&](CheckpointOp region) {
      SmallVector<Attribute> policies(region.getPolicies().begin(),
                                      region.getPolicies().end());
      bool changed = false;
      for (auto [i, input] : llvm::enumerate(region.getInputs()))
        if (isa<KeepPolicyAttr>(policies[i]) && !isFreeValue(input) &&
            binary->isBinary(input) && isCompressibleTensor(input.getType())) {
          policies[i] = bit;
          changed = true;
        }
      if (changed)
        region.setPoliciesAttr(ArrayAttr::get(context, policies));
    });
  }
};
} // namespace
