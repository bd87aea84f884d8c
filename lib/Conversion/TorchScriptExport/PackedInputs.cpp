//===- PackedInputs.cpp - saved_input convolutions and linear layers ------===//
//
// `memopt.op "aten::conv2d"(...) {saved_input = #memopt.compress<bit>}` keeps
// its operand 0 packed for the backward pass. It becomes a call of the
// runtime operator
//
//   memopt::conv_packed(Tensor input, Tensor weight, Tensor? bias,
//                       int[] stride, int[] padding, int[] dilation,
//                       int groups, str kind) -> Tensor
//   memopt::linear_packed(Tensor input, Tensor weight, Tensor? bias,
//                         str kind) -> Tensor
//   memopt::mul_packed(Tensor binary, Tensor other, str kind) -> Tensor
//
// with the ATen operator's arguments in the same order and `kind` = "bit" or
// "bool". Only the int[]-padding overload of convolutions has a packed form.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"

using namespace mlir;
using namespace mlir::memopt;
using torch::jit::Graph;

/// Number of spatial dimensions of `aten::convNd`, 0 for linear.
static int spatialDims(StringRef name) {
  if (name == "aten::conv1d")
    return 1;
  if (name == "aten::conv2d")
    return 2;
  if (name == "aten::conv3d")
    return 3;
  return 0;
}

LogicalResult
exporter::emitPackedInputOp(TorchOp op, const c10::FunctionSchema *schema,
                            std::vector<torch::jit::Value *> inputs,
                            Graph &graph, ValueMap &values) {
  StringRef name = op.getName();
  CompressPolicyAttr saved = op.getSavedInputAttr();
  std::string kind = stringifyCompressionKind(saved.getKind()).str();
  int dims = spatialDims(name);
  bool conv = dims > 0;
  auto fail = [&](const Twine &why) {
    return op.emitError("cannot export '")
           << name << "' with saved_input = " << saved << ": " << why;
  };
  if (name == "aten::mul") {
    if (inputs.size() != 2 || op.getNumResults() != 1)
      return fail("expected the Tensor overload: two tensors, one result");
    if (failed(checkRuntimeSchema(op, "'aten::mul' with saved_input",
                                  schemas::kMulPacked)))
      return failure();
    inputs.push_back(graph.insertConstant(kind));
    std::string what;
    llvm::raw_string_ostream(what)
        << "'aten::mul' with saved_input = " << saved;
    return emitRuntimeCall(op, what, "memopt::mul_packed", schemas::kMulPacked,
                           inputs, graph, values);
  }
  if (!conv && name != "aten::linear")
    return fail("only aten::conv1d/2d/3d, aten::linear and aten::mul have a "
                "packed form");
  if (kind != "bit" && kind != "bool")
    return fail("the runtime packs inputs as 'bit' or 'bool' only");
  if (op.getNumResults() != 1 ||
      !isa<mlir::TensorType>(op.getResult(0).getType()))
    return fail("expected one tensor result");

  size_t arity = conv ? 7 : 3;
  if (inputs.size() != arity)
    return fail("expected " + Twine(arity) +
                " arguments in schema order, got " + Twine(inputs.size()));
  if (conv) {
    // conv2d.padding(..., str padding="valid", ...) has no packed form.
    bool stringPadding = (schema && !schema->overload_name().empty()) ||
                         inputs[4]->type()->kind() == c10::TypeKind::StringType;
    if (stringPadding)
      return fail("only the int[] padding overload has a packed form, not "
                  "the string padding ('same', 'valid') one");
    // A single int for an int[N] argument (traced code) broadcasts.
    for (size_t index : {3, 4, 5}) {
      torch::jit::Value *&value = inputs[index];
      if (value->type()->kind() == c10::TypeKind::IntType)
        value = graph
                    .insertNode(graph.createList(
                        c10::IntType::get(),
                        std::vector<torch::jit::Value *>(dims, value)))
                    ->output();
    }
  } else if (schema && !schema->overload_name().empty()) {
    return fail("unknown overload '" + Twine(schema->overload_name()) + "'");
  }

  const char *runtimeSchema =
      conv ? schemas::kConvPacked : schemas::kLinearPacked;
  if (failed(checkRuntimeSchema(op, "'" + name + "' with saved_input",
                                runtimeSchema)))
    return failure();
  inputs.push_back(graph.insertConstant(kind));
  std::string what;
  llvm::raw_string_ostream(what)
      << "'" << name << "' with saved_input = " << saved;
  return emitRuntimeCall(op, what,
                         conv ? "memopt::conv_packed" : "memopt::linear_packed",
                         runtimeSchema, inputs, graph, values);
}
