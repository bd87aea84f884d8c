//===- ExportInternal.h - Shared pieces of the TorchScript export -*- C++ -*-=//
//
// Private to lib/Conversion/TorchScriptExport. Functions taking an
// Operation* emit their error on it and return failure; they may still let a
// c10::Error escape, which the entry points turn into a diagnostic.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_TORCHSCRIPTEXPORT_EXPORTINTERNAL_H
#define MEMOPT_LIB_CONVERSION_TORCHSCRIPTEXPORT_EXPORTINTERNAL_H

#include "memopt/Conversion/ForwardCheck.h"
#include "memopt/Conversion/ScalarTypes.h"
#include "memopt/Runtime/OpSchemas.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {
class CheckpointOp;
class DispatchOp;
class TorchOp;

namespace exporter {

//===----------------------------------------------------------------------===//
// Types and constants (TypeConversion.cpp)
//===----------------------------------------------------------------------===//

/// The TorchScript type of values of MLIR type `type`, or nullptr.
c10::TypePtr convertType(Type type);

/// A tensor constant of the importer's form: the flattened elements (f64,
/// i64 or bool attributes) of a tensor whose shape and dtype `type` gives.
std::optional<at::Tensor> convertTensorConstant(Attribute elements, Type type,
                                                std::string &error);

/// Inserts the tensor of `constant` (a tensor-typed prim::Constant) into
/// `graph`; null after an error on `constant`.
torch::jit::Value *insertTensorConstant(TorchOp constant,
                                        torch::jit::Graph &graph);

/// Converts a constant argument of memopt.op to an IValue. `expected` is the
/// schema type of the argument when known (nullptr otherwise): it decides
/// int vs. float, the element type of empty lists and devices. Returns
/// std::nullopt and sets `error` when the attribute has no TorchScript value.
std::optional<c10::IValue> convertConstant(Attribute attr,
                                           const c10::TypePtr &expected,
                                           std::string &error);

/// Inserts `value` as constant(s): a prim::Constant where TorchScript can
/// encode it, otherwise a prim::ListConstruct of element constants.
torch::jit::Value *insertConstantValue(torch::jit::Graph &graph,
                                       const c10::IValue &value);

//===----------------------------------------------------------------------===//
// Module state (ModuleState.cpp)
//===----------------------------------------------------------------------===//

/// A fresh module hierarchy mirroring `source`: same attribute names, order,
/// types and flags; parameters and buffers share storage with `source`.
torch::jit::Module rebuildModuleHierarchy(const torch::jit::Module &source);

/// Checks every memopt.param / buffer / get_attr / set_attr of `module`
/// against `root` (the rebuilt hierarchy): the path exists, has the right
/// kind, and tensors match the IR's shape, dtype and `frozen` flag.
LogicalResult verifyModuleState(ModuleOp module, const torch::jit::Module &root,
                                llvm::StringRef sourceName);

/// The value of attribute `path` (dotted, from `root`), or none.
std::optional<c10::IValue> readAttribute(const torch::jit::Module &root,
                                         llvm::StringRef path);

//===----------------------------------------------------------------------===//
// Graph building (GraphBuilder.cpp, CheckpointExport.cpp)
//===----------------------------------------------------------------------===//

using ValueMap = llvm::DenseMap<mlir::Value, torch::jit::Value *>;

/// Module attributes a checkpoint body reads whose type a region cannot take
/// as an input, by path, as the model holds them at export.
struct BakedAttributes {
  /// Lists of ints, floats or bools, tuples of ints, floats, bools or
  /// strings, and strings (torchvision's `Permute.dims`): bodies use them as
  /// constants and forward checks first that the attributes still hold them.
  llvm::StringMap<c10::IValue> constants;
  /// Lists of tensors (nn.LSTM's `_flat_weights`), by length: unpacked into
  /// tensor inputs of the region and rebuilt inside.
  llvm::StringMap<size_t> tensorListLengths;
};

/// Appends the nodes of `block` (without its terminator) to `graph`, mapping
/// SSA values through `values`. `self` is the module value for attribute
/// access, nullptr inside checkpoint bodies (which may not touch state but
/// the `baked` attributes).
LogicalResult emitBlock(Block &block, torch::jit::Graph &graph,
                        torch::jit::Value *self, ValueMap &values,
                        const BakedAttributes &baked);

/// Appends the node(s) of one op to `graph`, as emitBlock does for each.
LogicalResult emitOp(Operation *op, torch::jit::Graph &graph,
                     torch::jit::Value *self, ValueMap &values,
                     const BakedAttributes &baked);

/// The `forward` graph of `func`, whose first input is `self` of `selfType`.
std::shared_ptr<torch::jit::Graph>
buildForwardGraph(func::FuncOp func, const c10::ClassTypePtr &selfType,
                  const torch::jit::Module &source);

//===----------------------------------------------------------------------===//
// Runtime operators (RuntimeOps.cpp, CheckpointExport.cpp, PackedInputs.cpp)
//===----------------------------------------------------------------------===//

/// The runtime schemas the exporter emits calls of: the contract's
/// (memopt/Runtime/OpSchemas.h, docs/runtime.md).
namespace schemas = ::memopt::schemas;

/// Declares the runtime ops the exporter emits (schema only, no kernel) for
/// as long as the handles live, except those already registered (the runtime
/// is loaded): saving needs every node's schema, and the compiler does not
/// link the runtime.
std::vector<c10::RegistrationHandleRAII> declareRuntimeOps();

/// When the runtime is loaded in this process, its schema of the operator
/// `schemaText` names must be `schemaText`; otherwise emits an error on `op`
/// ("cannot export <what>: the loaded runtime declares ...").
LogicalResult checkRuntimeSchema(Operation *op, const llvm::Twine &what,
                                 const char *schemaText);

/// Emits a `memopt.op` carrying `saved_input` (a convolution or linear layer
/// whose operand 0 autograd keeps packed) as a call of memopt::conv_packed /
/// memopt::linear_packed. `schema` is the ATen overload the op records (or
/// null), `inputs` the node inputs built for it, in schema order.
LogicalResult emitPackedInputOp(TorchOp op, const c10::FunctionSchema *schema,
                                std::vector<torch::jit::Value *> inputs,
                                torch::jit::Graph &graph, ValueMap &values);

/// Inserts a call of the runtime op `name` (one tensor result, mapped to
/// `op`'s result) on `inputs`; "<what>: arguments (...) do not match
/// <schema>" on `op` when their types do not fit `schemaText`.
LogicalResult emitRuntimeCall(TorchOp op, const llvm::Twine &what,
                              const char *name, const char *schemaText,
                              llvm::ArrayRef<torch::jit::Value *> inputs,
                              torch::jit::Graph &graph, ValueMap &values);

/// Emits a `memopt.op` carrying `saved_form` as memopt::relu_masked(_),
/// memopt::dropout_masked or memopt::max_pool2d_lean, with `inputs` built in the ATen op's order.
LogicalResult emitSavedFormOp(TorchOp op, const c10::FunctionSchema *schema,
                              std::vector<torch::jit::Value *> inputs,
                              torch::jit::Graph &graph, ValueMap &values);

/// Emits a `memopt.op` carrying `backward` (a training-mode batch-norm) as
/// memopt::batch_norm_by_channel, with `inputs` in aten::batch_norm's order.
LogicalResult emitBackwardKernelOp(TorchOp op,
                                   const c10::FunctionSchema *schema,
                                   std::vector<torch::jit::Value *> inputs,
                                   torch::jit::Graph &graph, ValueMap &values);

/// Emits a checkpoint region as a call of the runtime op memopt::checkpoint.
/// Parameters, buffers and attributes read in the body must already be
/// mapped in `values` (read outside by the caller): they become extra
/// inputs saved with policy "keep", but for `baked` attributes, which the
/// body reads as constants.
LogicalResult emitCheckpoint(CheckpointOp op, torch::jit::Graph &graph,
                             ValueMap &values, const BakedAttributes &baked);

//===----------------------------------------------------------------------===//
// Dispatch (DispatchExport.cpp)
//===----------------------------------------------------------------------===//

/// The memopt.dispatch that `forward` consists of (as
/// memopt-specialize-signatures builds it), a null op when forward does not
/// dispatch, or failure (with an error) when it dispatches in another shape.
FailureOr<DispatchOp> findEntryDispatch(func::FuncOp forward);

/// Adds to `root` one method per case callee and the fallback (a copy of
/// the source's own method for a `memopt.original_method` declaration), and
/// `forward`, which tests the cases' guards in order and calls the match.
LogicalResult addDispatchMethods(DispatchOp dispatch, torch::jit::Module &root,
                                 const torch::jit::Module &source);

/// A LibTorch exception as one line, without the C++ backtrace; where the
/// TorchScript interpreter put a traceback in front of it, the error itself
/// (a runtime op's own message, which names its region).
std::string describeError(const std::exception &error);

/// The calls the exporter's forward check makes (ForwardCheck.h), or
/// failure with `why` none can be made from the IR's shapes.
FailureOr<std::vector<ForwardCheckCall>> forwardCheckCalls(ModuleOp module,
                                                           std::string &why);

} // namespace exporter
} // namespace mlir::memopt

#endif // MEMOPT_LIB_CONVERSION_TORCHSCRIPTEXPORT_EXPORTINTERNAL_H
