//===- SingleOpGraph.cpp - memopt.ops as a TorchScript graph --------------===//
//
// The exporter's own emitter writes the nodes, so the probe runs exactly
// what the exported model will run; its diagnostics are dropped (ops the
// exporter cannot write alone are simply not probed).
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/SingleOpGraph.h"

#include "ExportInternal.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::memopt;

std::optional<OpGraph> mlir::memopt::buildOpGraph(ArrayRef<TorchOp> ops,
                                                  ArrayRef<Value> outputs) {
  if (ops.empty())
    return std::nullopt;
  TorchOp first = ops.front();
  ScopedDiagnosticHandler silence(first->getContext(),
                                  [](Diagnostic &) { return success(); });
  OpGraph built;
  built.graph = std::make_shared<torch::jit::Graph>();
  exporter::ValueMap values;
  exporter::BakedAttributes none;
  for (TorchOp op : ops) {
    // Only plain operator calls: the exporter rewrites ops carrying plan
    // attributes, and kept control flow has its own probe.
    if (op.getScript() || op.getBackwardAttr() || op.getSavedInputAttr() ||
        op.getSavedFormAttr() || op.getName().starts_with("prim::"))
      return std::nullopt;
    for (Value operand : op->getOperands()) {
      if (values.count(operand))
        continue; // an earlier op's result, or an input already
      c10::TypePtr type = exporter::convertType(operand.getType());
      if (!type)
        return std::nullopt;
      torch::jit::Value *input = built.graph->addInput();
      input->setType(type);
      values[operand] = input;
      built.inputs.push_back(operand);
    }
    try {
      if (failed(exporter::emitOp(op, *built.graph, /*self=*/nullptr, values,
                                  none)))
        return std::nullopt;
    } catch (const std::exception &) {
      return std::nullopt;
    }
  }
  for (Value result : outputs) {
    torch::jit::Value *output = values.lookup(result);
    if (!output)
      return std::nullopt;
    built.graph->registerOutput(output);
  }
  return built;
}
