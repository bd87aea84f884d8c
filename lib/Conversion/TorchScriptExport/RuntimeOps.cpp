//===- RuntimeOps.cpp - The runtime operators the exporter calls ----------===//
//
// The compiler does not link the runtime (libmemopt_runtime), yet saving a
// module checks every node against a registered schema and the exporter
// reloads its own output. So, for the duration of an export, the schemas of
// the runtime ops it emits are declared (schema only, no kernel) unless the
// runtime is loaded in the process, in which case its schemas must be the
// contract's (memopt/Runtime/OpSchemas.h).
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/runtime/operator.h>

using namespace mlir;
using namespace mlir::memopt;

/// The contract's aliasing as TorchScript's.
static c10::AliasAnalysisKind toTorch(::memopt::schemas::Aliasing aliasing) {
  return aliasing == ::memopt::schemas::Aliasing::Conservative
             ? c10::AliasAnalysisKind::CONSERVATIVE
             : c10::AliasAnalysisKind::FROM_SCHEMA;
}

/// The operator symbol of a schema string ("memopt::checkpoint").
static c10::Symbol symbolOf(const c10::FunctionSchema &schema) {
  return c10::Symbol::fromQualString(schema.name());
}

std::vector<c10::RegistrationHandleRAII> exporter::declareRuntimeOps() {
  std::vector<c10::RegistrationHandleRAII> handles;
  for (const ::memopt::schemas::ExportedOp &runtime :
       ::memopt::schemas::kExportedOps) {
    c10::FunctionSchema schema = torch::jit::parseSchema(runtime.schema);
    // Loaded runtime (or an earlier declaration still alive): keep it; the
    // emitters compare its schema with `runtime.schema` before using it.
    if (!torch::jit::getAllOperatorsFor(symbolOf(schema)).empty())
      continue;
    schema.setAliasAnalysis(toTorch(runtime.aliasing));
    handles.push_back(c10::Dispatcher::singleton().registerDef(
        std::move(schema), "memopt TorchScript exporter (schema only)"));
  }
  return handles;
}

LogicalResult exporter::checkRuntimeSchema(Operation *op,
                                           const llvm::Twine &what,
                                           const char *schemaText) {
  c10::FunctionSchema expected = torch::jit::parseSchema(schemaText);
  const auto &registered = torch::jit::getAllOperatorsFor(symbolOf(expected));
  if (registered.empty())
    return success(); // not declared: saving reports it
  for (const auto &candidate : registered)
    if (candidate->schema().overload_name() == expected.overload_name()) {
      if (candidate->schema() == expected)
        return success();
      return op->emitError("cannot export ")
             << what << ": the loaded runtime declares "
             << c10::toString(candidate->schema()) << " but the exporter emits "
             << schemaText;
    }
  return op->emitError("cannot export ")
         << what << ": the loaded runtime has no " << schemaText;
}

LogicalResult
exporter::emitRuntimeCall(TorchOp op, const llvm::Twine &what, const char *name,
                          const char *schemaText,
                          llvm::ArrayRef<torch::jit::Value *> inputs,
                          torch::jit::Graph &graph, ValueMap &values) {
  torch::jit::Node *call = graph.create(
      c10::Symbol::fromQualString(name),
      c10::ArrayRef<torch::jit::Value *>(inputs.data(), inputs.size()));
  call->output()->setType(c10::TensorType::get());
  graph.insertNode(call);
  if (!call->matches(torch::jit::parseSchema(schemaText))) {
    std::string types;
    for (torch::jit::Value *v : inputs)
      types += (types.empty() ? "" : ", ") + v->type()->repr_str();
    return op.emitError("cannot export ") << what << ": arguments (" << types
                                          << ") do not match " << schemaText;
  }
  values[op->getResult(0)] = call->output();
  return success();
}
