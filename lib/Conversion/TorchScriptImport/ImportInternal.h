//===- ImportInternal.h - Shared pieces of the TorchScript importer -*- C++
//-*-===//
//
// The importer runs in three phases, one file (or two) each:
//   1. ModuleLoader: bytes -> torch::jit::Module -> an inlined graph per
//   method;
//   2. GraphSpecializer + NodeEvaluator: fold control flow (If/Loop) on values
//      that do not depend on tensor data and, with input specs, run every node
//      once to learn each tensor's static shape and dtype;
//   3. NodeImport (+ ModuleState, TypeImport, Locations): the straight-line
//      graph -> one func.func in the memopt dialect.
// Errors are reported as ImportError exceptions inside the torch-facing code
// and turned into exactly one MLIR diagnostic at the top (TorchScriptImport).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_IMPORTINTERNAL_H
#define MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_IMPORTINTERNAL_H

#include "memopt/Conversion/TorchScriptImport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Location.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlir::memopt::detail {

/// An import failure with the node it concerns (or null). Thrown inside the
/// torch-facing code, caught once at the library boundary.
class ImportError : public std::runtime_error {
public:
  explicit ImportError(const std::string &message,
                       const torch::jit::Node *node = nullptr)
      : std::runtime_error(message), node(node) {}
  const torch::jit::Node *node;
};

/// The first line of a LibTorch exception message, without backtrace.
std::string describeTorchException(const std::exception &error);

//===----------------------------------------------------------------------===//
// Phase 1: loading (ModuleLoader.cpp)
//===----------------------------------------------------------------------===//

/// Node attribute holding the module path of inlined code ("features.3").
inline const c10::Symbol kModulePathAttr =
    c10::Symbol::attr("memopt_module_path");

/// Throws ImportError when a zip central directory declares a record larger
/// than the archive can hold (ArchiveCheck.cpp).
void checkZipRecordSizes(llvm::StringRef bytes, llvm::StringRef name);

/// Loads an archive from memory; throws ImportError with a message that says
/// what is wrong with the file (not a zip, corrupt, not TorchScript...).
torch::jit::Module loadTorchScriptArchive(llvm::StringRef bytes,
                                          llvm::StringRef displayName);

/// A copy of `method`'s graph with every submodule and function call inlined
/// and TorchScript's own non-numeric cleanups applied.
std::shared_ptr<torch::jit::Graph>
prepareMethodGraph(const torch::jit::Module &module, const std::string &method);

//===----------------------------------------------------------------------===//
// Phase 2: specialization (GraphSpecializer.cpp, NodeEvaluator.cpp)
//===----------------------------------------------------------------------===//

/// What the specializer learned about one value.
struct ValueFacts {
  /// Set when the value was computed (always for constants and module
  /// attributes; for everything when input specs are given).
  std::optional<c10::IValue> value;
  /// True when the value is the same on every call with inputs of the given
  /// shapes: for tensors their shape and dtype, for others the value itself.
  bool isStatic = false;
  /// Module attributes (`bn1.training`) a static value was derived from.
  std::set<std::string> attributeDeps;
  /// A static scalar derived from tensor sizes (`x.size(0)`, `x.numel()`),
  /// not only from ranks and dtypes (`x.dim()`, `len(x.size())`).
  bool sizeDependent = false;
  /// The list `x.size()` itself: its length is the rank.
  bool isSizeList = false;
};

/// Static shape and dtype of a tensor.
struct TensorFacts {
  std::vector<int64_t> sizes;
  c10::ScalarType dtype = c10::ScalarType::Float;
};

/// The result of specializing one method graph.
struct SpecializedGraph {
  std::shared_ptr<torch::jit::Graph> graph;
  /// Facts about tensor values.
  std::unordered_map<const torch::jit::Value *, TensorFacts> tensorFacts;
  /// Module attribute values control flow was folded on (path -> value).
  std::map<std::string, c10::IValue> assumptions;
  /// Control flow folded on tensor sizes, one description per decision
  /// ("prim::If condition at features.3 (model.py:42)"). Decisions whose
  /// other branch only raises (input checks) are not listed.
  std::vector<std::string> shapeAssumptions;
};

/// Folds control flow and (with specs) runs each node once. Throws
/// ImportError naming the construct and its node when something is left that
/// memopt cannot import.
SpecializedGraph specializeGraph(const torch::jit::Module &module,
                                 std::shared_ptr<torch::jit::Graph> graph,
                                 const std::vector<InputSpec> &specs);

/// Evaluates single nodes for the specializer (NodeEvaluator.cpp).
class NodeEvaluator {
public:
  NodeEvaluator(const torch::jit::Module &module,
                const std::shared_ptr<torch::jit::Graph> &graph,
                bool executeTensors);
  ValueFacts &facts(const torch::jit::Value *value);
  const ValueFacts *lookup(const torch::jit::Value *value) const;
  void setFacts(const torch::jit::Value *value, ValueFacts facts);
  void forget(const torch::jit::Value *value);
  /// Computes the facts of `node`'s outputs (executing it when allowed).
  void evaluate(torch::jit::Node *node);
  /// Drops computed tensors nobody still needs (keeps their facts' shape).
  void releaseDeadInputs(torch::jit::Node *node);
  /// Module path of a module-valued graph value, if it is one.
  std::optional<std::string> modulePath(const torch::jit::Value *value) const;
  bool executesTensors() const { return executeTensors; }
  /// Shapes and dtypes recorded when tensors were computed.
  std::unordered_map<const torch::jit::Value *, TensorFacts> &tensorFacts() {
    return shapes;
  }
  /// Records the shape of `value` (a computed tensor or tensor list).
  void recordTensorFacts(const torch::jit::Value *value);
  /// Attribute paths assigned anywhere in the graph (prim::SetAttr).
  bool isAttributeMutated(const std::string &path) const {
    return mutatedAttributes.count(path) != 0;
  }

private:
  void evaluateGetAttr(torch::jit::Node *node);
  void execute(torch::jit::Node *node);

  const torch::jit::Module &module;
  bool executeTensors;
  std::unordered_map<const torch::jit::Value *, ValueFacts> known;
  std::unordered_map<const torch::jit::Value *, std::string> modulePaths;
  std::set<std::string> mutatedAttributes;
  std::unordered_map<const torch::jit::Value *, TensorFacts> shapes;
};

//===----------------------------------------------------------------------===//
// Phase 3: MLIR emission
//===----------------------------------------------------------------------===//

/// NameLoc(module path, FileLineColLoc(file, line, col)) for a node.
Location locationOf(const torch::jit::Node *node, MLIRContext *context);

/// Dotted module path of the module whose code `node` came from ("" = root).
std::string modulePathOf(const torch::jit::Node *node);

/// "features.3 (model.py:42)", "model.py:42", "features.3" or "": where a
/// node is, as describeLocation prints it.
std::string describeNode(const torch::jit::Node *node);

/// The MLIR type of a TorchScript value (facts refine tensors).
Type importType(const c10::TypePtr &type, const TensorFacts *facts,
                MLIRContext *context);
Type importDType(c10::ScalarType dtype, MLIRContext *context);
std::optional<c10::ScalarType> parseDType(llvm::StringRef name);

/// A constant argument attribute for an IValue, or null when the value cannot
/// be a constant argument (tensors, objects...).
Attribute importConstant(const c10::IValue &value, MLIRContext *context);

/// Emits `func.func @<name>` for a specialized graph into `module`, with
/// `memopt.assumes` / `memopt.shape_assumes` when control flow was folded on
/// attributes / tensor sizes.
func::FuncOp importGraph(const torch::jit::Module &torchModule,
                         const SpecializedGraph &graph, const std::string &name,
                         ModuleOp module);

} // namespace mlir::memopt::detail

#endif // MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_IMPORTINTERNAL_H
