//===- RuntimeOps.cpp - The runtime operators the exporter calls ----------===//
//
// The compiler does not link the runtime (libmemopt_runtime), yet saving a
// module checks every node against a registered schema and the exporter
// reloads its own output. So, for the duration of an export, the schemas of
// the runtime ops it emits are declared (schema only, no kernel) unless the
// runtime is loaded in the process, in which case its schemas must be the
// ones below.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/runtime/operator.h>

using namespace mlir;
using namespace mlir::memopt;

const char *const exporter::kCheckpointSchema =
    "memopt::checkpoint.typed(str graph, Tensor[] inputs, int[] ints, "
    "float[] floats, str[] policies, str name) -> Tensor[]";
const char *const exporter::kConvPackedSchema =
    "memopt::conv_packed(Tensor input, Tensor weight, Tensor? bias, "
    "int[] stride, int[] padding, int[] dilation, int groups, str kind) "
    "-> Tensor";
const char *const exporter::kLinearPackedSchema =
    "memopt::linear_packed(Tensor input, Tensor weight, Tensor? bias, "
    "str kind) -> Tensor";
const char *const exporter::kMulPackedSchema =
    "memopt::mul_packed(Tensor binary, Tensor other, str kind) -> Tensor";

const char *const exporter::kReluMaskedSchema =
    "memopt::relu_masked(Tensor self) -> Tensor";
const char *const exporter::kReluMaskedInplaceSchema =
    "memopt::relu_masked_(Tensor(a!) self) -> Tensor(a!)";
const char *const exporter::kDropoutMaskedSchema =
    "memopt::dropout_masked(Tensor input, float p, bool train) -> Tensor";
const char *const exporter::kMaxPool2dLeanSchema =
    "memopt::max_pool2d_lean(Tensor self, int[] kernel_size, int[] stride, "
    "int[] padding, int[] dilation, bool ceil_mode) -> Tensor";
const char *const exporter::kBatchNormByChannelSchema =
    "memopt::batch_norm_by_channel(Tensor input, Tensor? weight, "
    "Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, "
    "bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor";
const char *const exporter::kLinearWeightRowsSchema =
    "memopt::linear_weight_rows(Tensor input, Tensor weight, Tensor? bias, "
    "str saved_input) -> Tensor";

/// A runtime schema and its alias analysis, as TORCH_LIBRARY's def in the
/// runtime declares it: as the schema says (relu_masked_ writes its input),
/// or conservative for dropout_masked, which draws random numbers, so that
/// TorchScript neither merges nor drops its calls.
struct RuntimeSchema {
  const char *text;
  c10::AliasAnalysisKind aliasAnalysis = c10::AliasAnalysisKind::FROM_SCHEMA;
};

static const RuntimeSchema kRuntimeSchemas[] = {
    {exporter::kCheckpointSchema},
    {exporter::kConvPackedSchema},
    {exporter::kLinearPackedSchema},
    {exporter::kMulPackedSchema},
    {exporter::kReluMaskedSchema},
    {exporter::kReluMaskedInplaceSchema},
    {exporter::kMaxPool2dLeanSchema},
    {exporter::kBatchNormByChannelSchema},
    {exporter::kLinearWeightRowsSchema},
    {exporter::kDropoutMaskedSchema, c10::AliasAnalysisKind::CONSERVATIVE}};

/// The operator symbol of a schema string ("memopt::checkpoint").
static c10::Symbol symbolOf(const c10::FunctionSchema &schema) {
  return c10::Symbol::fromQualString(schema.name());
}

std::vector<c10::RegistrationHandleRAII> exporter::declareRuntimeOps() {
  std::vector<c10::RegistrationHandleRAII> handles;
  for (const RuntimeSchema &runtime : kRuntimeSchemas) {
    c10::FunctionSchema schema = torch::jit::parseSchema(runtime.text);
    // Loaded runtime (or an earlier declaration still alive): keep it; the
    // emitters compare its schema with `runtime.text` before using it.
    if (!torch::jit::getAllOperatorsFor(symbolOf(schema)).empty())
      continue;
    schema.setAliasAnalysis(runtime.aliasAnalysis);
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
