//===- ForwardCheckCalls.cpp - What the exporter's forward check calls ----===//
//
// From the planned IR: one call of `forward` per compiled signature (through
// the dispatcher, when there are several), and one of a compiled generic
// fallback on the first signature's inputs, which the dispatcher would send
// elsewhere.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Conversion/ScalarTypes.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"

using namespace mlir;
using namespace mlir::memopt;

/// The call's inputs from static tensor types, or why there are none.
static FailureOr<std::vector<ForwardCheckInput>> inputsOf(TypeRange types,
                                                          std::string &why) {
  std::vector<ForwardCheckInput> inputs;
  for (auto [index, type] : llvm::enumerate(types)) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::optional<c10::ScalarType> dtype =
        tensor ? scalarTypeOf(tensor.getElementType()) : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !dtype) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "input " << index << " is " << type
         << ", not a tensor of static shape";
      why = text;
      return failure();
    }
    inputs.push_back({std::vector<int64_t>(tensor.getShape().begin(),
                                           tensor.getShape().end()),
                      *dtype});
  }
  return inputs;
}

/// "2x3x64x64:f32, 2x8:i64" (the element type as MLIR prints it).
static std::string labelOf(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      types, os,
      [&](Type type) {
        auto tensor = cast<RankedTensorType>(type);
        llvm::interleave(tensor.getShape(), os, "x");
        os << ":" << tensor.getElementType();
      },
      ", ");
  return text;
}

FailureOr<std::vector<ForwardCheckCall>>
exporter::forwardCheckCalls(ModuleOp module, std::string &why) {
  if (auto device = module->getAttrOfType<StringAttr>(kTrainingDeviceAttrName);
      device && device.getValue() == "cuda") {
    why = "a CUDA plan runs on the GPU (scripts/gpu-check.sh runs it there)";
    return failure();
  }
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal()) {
    why = "no @forward";
    return failure();
  }
  std::vector<ForwardCheckCall> calls;
  FailureOr<DispatchOp> dispatch = findEntryDispatch(forward);
  if (failed(dispatch) || !*dispatch) {
    // Inputs left out of the specs keep their defaults (the last ones).
    SmallVector<Type> given;
    for (BlockArgument arg : forward.getArguments())
      if (!forward.getArgAttr(arg.getArgNumber(), kBoundDefaultAttrName))
        given.push_back(arg.getType());
    FailureOr<std::vector<ForwardCheckInput>> inputs = inputsOf(given, why);
    if (failed(inputs))
      return failure();
    calls.push_back({"inputs " + labelOf(given), "forward", *inputs});
    return calls;
  }
  for (Attribute attr : dispatch->getCases()) {
    auto dispatchCase = cast<DispatchCaseAttr>(attr);
    FailureOr<std::vector<ForwardCheckInput>> inputs =
        inputsOf(dispatchCase.getGuards(), why);
    if (failed(inputs))
      return failure();
    calls.push_back(
        {"signature " + labelOf(dispatchCase.getGuards()), "forward", *inputs});
  }
  if (auto fallbackName = dispatch->getFallbackAttr())
    if (auto fallback = module.lookupSymbol<func::FuncOp>(fallbackName);
        fallback && !fallback.isExternal() && !calls.empty()) {
      ForwardCheckCall call = calls.front();
      call.label = "the generic fallback on " + call.label;
      call.method = fallback.getSymName().str();
      calls.push_back(std::move(call));
    }
  return calls;
}
