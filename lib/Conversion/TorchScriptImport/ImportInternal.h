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

#include "memopt/Conversion/FatalSignalGuard.h"
#include "memopt/Conversion/TorchScriptImport.h"

#include "llvm/Support/MemoryBuffer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Location.h"

#include <ATen/core/stack.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <cstring>
#include <functional>
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

/// Thrown when made-up tensor data (runShapeOnly) would reach something the
/// import reads, or a kernel fails after some was made up: the import then
/// starts over and runs every kernel (TorchScriptImport.cpp).
class ExactRunRequired : public std::runtime_error {
public:
  ExactRunRequired() : std::runtime_error("the import needs real kernels") {}
};

/// The first line of a LibTorch exception message, without backtrace.
std::string describeTorchException(const std::exception &error);

//===----------------------------------------------------------------------===//
// Phase 1: loading (ModuleLoader.cpp)
//===----------------------------------------------------------------------===//

/// Node attribute holding the module path of inlined code ("features.3").
inline const c10::Symbol kModulePathAttr =
    c10::Symbol::attr("memopt_module_path");

/// While alive, a fatal signal (LibTorch crashing on a damaged archive)
/// prints one line naming the archive and exits 1 (LoaderCrashGuard.cpp;
/// off with setFatalSignalGuards(false)).
class LoaderCrashGuard : public FatalSignalGuard {
public:
  explicit LoaderCrashGuard(llvm::StringRef displayName);
};

/// The archive's bytes as LibTorch reads them, without copying them into a
/// stream first (weights are most of them).
class BufferReader final : public caffe2::serialize::ReadAdapterInterface {
public:
  explicit BufferReader(llvm::StringRef bytes) : bytes(bytes) {}
  size_t size() const override { return bytes.size(); }
  size_t read(uint64_t pos, void *buf, size_t n,
              const char * /*what*/ = "") const override {
    if (pos >= bytes.size())
      return 0;
    n = std::min<size_t>(n, bytes.size() - pos);
    std::memcpy(buf, bytes.data() + pos, n);
    return n;
  }

private:
  llvm::StringRef bytes;
};

/// Loads an archive from memory; throws ImportError with a message that says
/// what is wrong with the file (not a zip, corrupt, not TorchScript...).
torch::jit::Module loadTorchScriptArchive(llvm::StringRef bytes,
                                          llvm::StringRef displayName);

/// The archive loaded as torch.jit.load loads it (tensors on the device they
/// were saved from), or std::nullopt when that fails; throws ImportError for
/// what loadTorchScriptArchive rejects before loading. With `weights`, a
/// private copy of the same bytes, the weights stay in it where they can
/// (loadWithWeightsInPlace).
std::optional<torch::jit::Module>
loadSharedSource(llvm::StringRef bytes, llvm::StringRef name,
                 std::shared_ptr<llvm::WritableMemoryBuffer> weights = nullptr);

/// The archive `bytes` loaded onto the CPU with its weights left in
/// `weights`, a private, writable copy of the same bytes (a copy-on-write
/// mapping of the file): every storage saved in a record points into it,
/// and `weights` lives as long as any of them (WeightsInPlace.cpp). `bytes`
/// itself is never written. std::nullopt where that cannot be done exactly
/// (a record deflated or not aligned, a class with __setstate__, copies that
/// differ): load as loadSharedSource does then. Called by loadSharedSource,
/// after the archive's checks.
std::optional<torch::jit::Module>
loadWithWeightsInPlace(llvm::StringRef bytes,
                       std::shared_ptr<llvm::WritableMemoryBuffer> weights);

/// A copy of `module` for the import to run, so that the original stays as
/// loaded: fresh objects of the same classes; fresh tensors with the same
/// sizes, strides, dtype and requires_grad (leaves, like loaded ones), one
/// per original, so tied ones stay tied. Except parameters, most of the
/// bytes, which forward rarely writes: they are shared (compare their
/// _version() before and after). std::nullopt when some value cannot be
/// copied faithfully (a tensor off the CPU, an opaque object).
std::optional<torch::jit::Module>
copyModuleState(const torch::jit::Module &module);

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
  /// A tensor whose data, not only its shape, is the same on every call
  /// with inputs of the given shapes: made by deterministic operators from
  /// constants and static scalars only (a causal mask built from a
  /// sequence length), never from inputs, parameters or buffers.
  bool dataStatic = false;
};

/// Static shape and dtype of a tensor.
struct TensorFacts {
  std::vector<int64_t> sizes;
  c10::ScalarType dtype = c10::ScalarType::Float;
  /// Laid out channels-last (NHWC strides) and not contiguous when it ran.
  bool channelsLast = false;
};

/// A prim::If or prim::Loop whose condition or trip count depends on tensor
/// data, kept whole instead of folded (KeptControlFlow.cpp).
struct KeptControlFlow {
  /// The values it reads from outside itself, constants aside: its
  /// graph's inputs and the memopt.op's operands, in this order.
  std::vector<torch::jit::Value *> inputs;
  /// The IR text of a graph running it on `inputs` (parseIR reads it).
  std::string script;
  /// Some op inside draws random numbers.
  bool nondeterministic = false;
  /// Some op inside has an effect a second run would repeat (printing).
  bool sideEffects = false;
  /// Positions in `inputs` an op inside may write in place.
  std::vector<int64_t> written;
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
  /// Inputs left out of the specs (by position, self not counted) and the
  /// value each was bound to: its default in the method's schema, or None.
  std::map<size_t, c10::IValue> boundDefaults;
  /// Control flow on tensor data left in the graph, by node.
  std::unordered_map<const torch::jit::Node *, KeptControlFlow> kept;
};

/// How the nodes of one import are run; shared by all its graphs, since
/// made-up data in one signature's run changes the module state and the
/// random numbers the next one sees.
struct EvaluationMode {
  /// Heavy kernels may be replaced by runShapeOnly.
  bool allowShapeOnly = true;
  /// Set once one was: tensor data may differ from a real run from then on.
  bool madeUpData = false;
};

/// Folds control flow and (with specs) runs each node once. Throws
/// ImportError naming the construct and its node when something is left that
/// memopt cannot import, ExactRunRequired (see there).
/// `schema` (the method's, when known) gives the defaults of the trailing
/// inputs the specs leave out.
SpecializedGraph specializeGraph(const torch::jit::Module &module,
                                 std::shared_ptr<torch::jit::Graph> graph,
                                 const std::vector<InputSpec> &specs,
                                 EvaluationMode &mode,
                                 const c10::FunctionSchema *schema = nullptr);

/// The results of `node` (an aten operator) on `stack` as zero tensors of
/// the right sizes, strides and dtype, without running its kernel, when the
/// kernel is a heavy one (or, with `dataMadeUp`, a memory-bound one) that
/// certainly succeeds there; std::nullopt otherwise (ShapeOnlyKernels.cpp).
std::optional<std::vector<c10::IValue>>
runShapeOnly(torch::jit::Node *node, const torch::jit::Stack &stack,
             bool dataMadeUp);

/// True when `node`, an in-place activation or arithmetic update of its
/// first input on `stack`, certainly succeeds and changes nothing but data:
/// once data is made up, its result is that input, unchanged.
bool canSkipInPlaceUpdate(torch::jit::Node *node,
                          const torch::jit::Stack &stack);

/// Moves the prim::GetAttr nodes inside `node` that read state from outside
/// it (parameters, `self.training`) to just before it, so that they are
/// imported as state reads; returns the first one moved, or null when none
/// was left (KeptControlFlow.cpp).
torch::jit::Node *hoistStateReads(torch::jit::Node *node);

/// For a value kept control flow reads: the constant it is on every call
/// (the graph then makes its own), or std::nullopt (it is an input).
using KeptConstantFn =
    std::function<std::optional<c10::IValue>(torch::jit::Value *)>;

/// What keeping `node` (control flow on tensor data) whole takes: its
/// inputs (but the values `constantOf` folds), its graph as parseable text
/// and its effects. Throws ImportError when something inside cannot be
/// kept (an attribute assignment, a `with` block, a module object used as
/// a value).
KeptControlFlow describeKeptControlFlow(torch::jit::Node *node,
                                        const KeptConstantFn &constantOf = {});

/// Runs a kept node's script on `inputs` through TorchScript's interpreter
/// and returns its outputs. For a prim::If `branch` (0 or 1) replaces the
/// condition, so that each branch can be run.
std::vector<c10::IValue> runKeptControlFlow(const KeptControlFlow &kept,
                                            torch::jit::Stack inputs,
                                            std::optional<bool> branch);

/// True for the prim::Enter of a `with torch.no_grad():` block.
bool isNoGradBlock(const torch::jit::Node *enter);

/// Rewrites the no_grad block entered at `enter` (isNoGradBlock) into the
/// same ops on detached inputs (NoGradBlocks.cpp); `dead` gets the nodes the
/// caller must destroy (Enter, Exit, the context object). `isNone` tells
/// whether an Optional[Tensor] is None (nullopt: unknown). Returns the node
/// to visit next. Throws ImportError for what cannot be detached.
torch::jit::Node *lowerNoGradBlock(
    torch::jit::Node *enter,
    const std::function<std::optional<bool>(torch::jit::Value *)> &isNone,
    std::vector<torch::jit::Node *> &dead);

/// Evaluates single nodes for the specializer (NodeEvaluator.cpp).
class NodeEvaluator {
public:
  NodeEvaluator(const torch::jit::Module &module,
                const std::shared_ptr<torch::jit::Graph> &graph,
                bool executeTensors, EvaluationMode &mode);
  ValueFacts &facts(const torch::jit::Value *value);
  const ValueFacts *lookup(const torch::jit::Value *value) const;
  void setFacts(const torch::jit::Value *value, ValueFacts facts);
  void forget(const torch::jit::Value *value);
  /// Computes the facts of `node`'s outputs (executing it when allowed).
  void evaluate(torch::jit::Node *node);
  /// Drops computed tensors nobody still needs (keeps their facts' shape).
  /// (Values `held` says the caller still holds, such as an unrolling
  /// loop's next-iteration values, which have no use yet, are kept.)
  void
  releaseDeadInputs(torch::jit::Node *node,
                    llvm::function_ref<bool(const torch::jit::Value *)> held);
  /// Module path of a module-valued graph value, if it is one.
  std::optional<std::string> modulePath(const torch::jit::Value *value) const;
  /// Dotted path of the attribute a prim::GetAttr / prim::SetAttr node
  /// reads or writes, if its object is a module.
  std::optional<std::string> attributePath(const torch::jit::Node *node) const;
  bool executesTensors() const { return executeTensors; }
  /// True once a kernel's results were made up (EvaluationMode).
  bool madeUpData() const { return mode.madeUpData; }
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
  /// Runs `node` on `stack` (its inputs) through TorchScript's interpreter.
  void runInterpreted(torch::jit::Node *node, torch::jit::Stack &stack);

  const torch::jit::Module &module;
  bool executeTensors;
  EvaluationMode &mode;
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

/// Whether `value` can be a `memopt.assumes` entry that the exported forward
/// checks: scalars, strings, devices, None, lists and tuples of these, and
/// dicts with string or int keys and bool, int, float or string values.
bool isGuardableConstant(const c10::IValue &value);

/// Emits `func.func @<name>` for a specialized graph into `module`, with
/// `memopt.assumes` / `memopt.shape_assumes` when control flow was folded on
/// attributes / tensor sizes.
func::FuncOp importGraph(const torch::jit::Module &torchModule,
                         const SpecializedGraph &graph, const std::string &name,
                         ModuleOp module);

} // namespace mlir::memopt::detail

#endif // MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_IMPORTINTERNAL_H
