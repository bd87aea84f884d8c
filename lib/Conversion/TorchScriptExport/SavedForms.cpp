//===- SavedForms.cpp - Masks, indices, batch-norm backward by channel ----===//
//
// `memopt.op "aten::relu_"(...) {saved_form = #memopt.saved<mask>}` becomes
// memopt::relu_masked_ (relu: memopt::relu_masked; dropout:
// memopt::dropout_masked),
// `memopt.op "aten::max_pool2d"(...) {saved_form = #memopt.saved<indices>}`
// becomes memopt::max_pool2d_lean, and `memopt.op "aten::batch_norm"(...)
// {backward = #memopt.backward<by_channel>}` memopt::batch_norm_by_channel,
// with the ATen operator's arguments in the same order (docs/runtime.md);
// `aten::linear` with `backward = #memopt.backward<weight_rows>`
// memopt::linear_weight_rows, its arguments then the saved_input kind
// ("keep" without one).
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"

using namespace mlir;
using namespace mlir::memopt;
using torch::jit::Graph;

LogicalResult exporter::emitSavedFormOp(TorchOp op,
                                        const c10::FunctionSchema *schema,
                                        std::vector<torch::jit::Value *> inputs,
                                        Graph &graph, ValueMap &values) {
  StringRef name = op.getName();
  SavedFormAttr form = op.getSavedFormAttr();
  auto fail = [&](const Twine &why) {
    return op.emitError("cannot export '")
           << name << "' with saved_form = " << form << ": " << why;
  };
  if (op.getNumResults() != 1 ||
      !isa<mlir::TensorType>(op.getResult(0).getType()))
    return fail("expected one tensor result");
  if (schema && !schema->overload_name().empty())
    return fail("unknown overload '" + Twine(schema->overload_name()) + "'");

  const char *runtimeSchema = nullptr;
  const char *runtimeName = nullptr;
  size_t arity = 0;
  if (form.getForm() == SavedForm::mask && name == "aten::relu") {
    runtimeSchema = schemas::kReluMasked;
    runtimeName = "memopt::relu_masked";
    arity = 1;
  } else if (form.getForm() == SavedForm::mask && name == "aten::relu_") {
    runtimeSchema = schemas::kReluMaskedInplace;
    runtimeName = "memopt::relu_masked_";
    arity = 1;
  } else if (form.getForm() == SavedForm::mask && name == "aten::dropout") {
    runtimeSchema = schemas::kDropoutMasked;
    runtimeName = "memopt::dropout_masked";
    arity = 3;
  } else if (form.getForm() == SavedForm::indices &&
             name == "aten::max_pool2d") {
    runtimeSchema = schemas::kMaxPool2dLean;
    runtimeName = "memopt::max_pool2d_lean";
    arity = 6;
  } else {
    return fail("the runtime has no such form");
  }
  if (inputs.size() != arity)
    return fail("expected " + Twine(arity) +
                " arguments in schema order, got " + Twine(inputs.size()));
  // A single int for max-pool's int[2] arguments (traced code) broadcasts.
  for (size_t index = 1; form.getForm() == SavedForm::indices && index < 5;
       ++index) {
    torch::jit::Value *&value = inputs[index];
    if (value->type()->kind() == c10::TypeKind::IntType)
      value = graph
                  .insertNode(graph.createList(
                      c10::IntType::get(),
                      std::vector<torch::jit::Value *>(2, value)))
                  ->output();
  }
  if (failed(checkRuntimeSchema(op, "'" + name + "' with saved_form",
                                runtimeSchema)))
    return failure();
  std::string what;
  llvm::raw_string_ostream(what)
      << "'" << name << "' with saved_form = " << form;
  return emitRuntimeCall(op, what, runtimeName, runtimeSchema, inputs, graph,
                         values);
}

LogicalResult exporter::emitBackwardKernelOp(
    TorchOp op, const c10::FunctionSchema *schema,
    std::vector<torch::jit::Value *> inputs, Graph &graph, ValueMap &values) {
  StringRef name = op.getName();
  BackwardKernelAttr kernel = op.getBackwardAttr();
  std::string what;
  llvm::raw_string_ostream(what)
      << "'" << name << "' with backward = " << kernel;
  auto fail = [&](const Twine &why) {
    return op.emitError("cannot export ") << what << ": " << why;
  };
  // The runtime op of each kernel, and the ATen op's arity it takes.
  bool rows = kernel.getKernel() == BackwardKernel::weight_rows &&
              name == "aten::linear";
  bool byChannel = kernel.getKernel() == BackwardKernel::by_channel &&
                   name == "aten::batch_norm";
  if (!rows && !byChannel)
    return fail("the runtime has no such kernel");
  size_t arity = rows ? 3 : 9;
  const char *runtimeName =
      rows ? "memopt::linear_weight_rows" : "memopt::batch_norm_by_channel";
  const char *runtimeSchema =
      rows ? schemas::kLinearWeightRows : schemas::kBatchNormByChannel;
  if (op.getNumResults() != 1 ||
      !isa<mlir::TensorType>(op.getResult(0).getType()))
    return fail("expected one tensor result");
  if (schema && !schema->overload_name().empty())
    return fail("unknown overload '" + Twine(schema->overload_name()) + "'");
  if (inputs.size() != arity)
    return fail("expected " + Twine(arity) +
                " arguments in schema order, got " + Twine(inputs.size()));
  if (failed(checkRuntimeSchema(op, what, runtimeSchema)))
    return failure();
  if (rows) {
    // How the input is saved; the verifier allows saved_input = bit or
    // bool only.
    std::string savedInput = "keep";
    if (CompressPolicyAttr saved = op.getSavedInputAttr())
      savedInput = stringifyCompressionKind(saved.getKind()).str();
    inputs.push_back(graph.insertConstant(savedInput));
  }
  return emitRuntimeCall(op, what, runtimeName, runtimeSchema, inputs, graph,
                         values);
}
