//===- SavedTensorTable.h - what autograd saves per operator ----*- C++ -*-===//
//
// The table is generated from PyTorch by scripts/gen_saved_tensor_table.py
// (lib/Analysis/SavedTensorTable.def). One row per operator and "pattern":
// for each schema argument, 'g' (a tensor that requires grad), 't' (a tensor
// that does not) or '-' (anything else), trailing '-' dropped. A row says
// which tensors autograd saves, which results alias an argument and whether
// each input gradient is a new buffer or passes the output gradient through.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_SAVEDTENSORTABLE_H
#define MEMOPT_ANALYSIS_SAVEDTENSORTABLE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace mlir::memopt {

/// One tensor autograd keeps for backward.
struct SavedItem {
  enum class Kind { Arg, Result, New };
  /// How big a new tensor is, relative to an argument or result.
  /// Attn: the attention scores of a query (the argument) and the key
  /// after it: the query's rows times the key's length (dim -2).
  /// Dim0ByInt: dim 0 of the argument times the integer constant argument
  /// `intArg` (group norm's statistics: samples x groups).
  enum class Size { Like, Dim1, Rows, Dim01, Attn, Dim0ByInt, One };
  Kind kind = Kind::Arg;
  unsigned index = 0; // argument or result index (Arg/Result, or size base)
  Size size = Size::Like;
  bool sizeOfResult = false; // the size rule refers to a result
  unsigned intArg = 0;       // Dim0ByInt: the integer argument's index
  StringRef dtype;           // "same" (as the first tensor argument) or "i64"..
  /// `aK?fold`: matmul folds the argument (>= 3-d) into a matrix with
  /// reshape; when that copies (a non-contiguous argument whose last dim
  /// is still dense, e.g. after transpose(0, 1)), the copy is saved.
  bool copyIfFolded = false;
};

/// What a result is: a new allocation, or an alias of an argument
/// (always, only when that argument is contiguous, or only when the result
/// has the argument's type).
struct ResultRule {
  enum class Kind { New, Alias, AliasIfContiguous, AliasIfSameType };
  Kind kind = Kind::New;
  unsigned arg = 0;
};

/// An input's gradient: a new buffer; a new buffer seen through a view
/// (linear's weight gradient, a product's transpose: autograd cannot add a
/// second gradient into it in place); the output gradient passed through;
/// none.
enum class GradRule { New, View, Pass, None };

/// What the operator's backward allocates at its highest, counting the
/// gradients it makes (`4xlike.a0`: four buffers the size of argument 0,
/// a division's `-grad * self / (other * other)` beside its gradients);
/// only where that is more than the new gradients (factor 0: no rule).
struct BackwardHighWater {
  unsigned factor = 0;
  SavedItem size; // a New item: the size of one buffer
  // `+<k>x<size>`: the buffers are beside the new gradients, not counting
  // them (an embedding bag's sorted indices beside the table's gradient).
  bool aboveGradients = false;
};

struct SavedTensorRow {
  StringRef op, pattern;
  SmallVector<SavedItem> saved;
  SmallVector<ResultRule> results;
  SmallVector<GradRule> grads; // one per 'g' of the pattern, in order
  BackwardHighWater backward;
  StringRef savedText, resultsText, gradsText, backwardText;
};

/// What the PyTorch the table was made from does beyond any one operator
/// (MEMOPT_TORCH_FACT lines), measured by the generator.
struct TorchFacts {
  /// Autograd adds a second gradient of a tensor into the first one's
  /// buffer when nothing else holds it (PyTorch 2.x), rather than into a
  /// new one while both stay live (1.13).
  bool inputBufferAccumulatesInPlace = true;
  /// Bytes of the CPU generator's state (torch.get_rng_state()), which a
  /// checkpoint region that draws random numbers keeps from its forward to
  /// its recompute.
  int64_t cpuGeneratorStateBytes = 0;
};

class SavedTensorTable {
public:
  /// The table compiled from SavedTensorTable.def (parsed once).
  static const SavedTensorTable &get();

  /// The row for exactly this pattern; otherwise the row of the same tensor
  /// arguments where the fewest extra ones require grad (a safe over-
  /// approximation); null when the operator has no such row.
  const SavedTensorRow *lookup(StringRef op, StringRef pattern) const;
  /// Any row of the operator (for result aliasing when nothing needs grad).
  const SavedTensorRow *anyRow(StringRef op) const;
  bool knows(StringRef op) const { return rowsByOp.count(op); }

  const TorchFacts &getTorchFacts() const { return facts; }

  /// Prints `op|pattern|saved|results|grads|backward` rows, sorted, then
  /// `torch|<name>|<value>` lines, as the generator script prints them.
  void print(raw_ostream &os) const;

private:
  SavedTensorTable();
  TorchFacts facts;
  std::vector<SavedTensorRow> rows;
  llvm::StringMap<SmallVector<unsigned, 8>> rowsByOp;
};

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_SAVEDTENSORTABLE_H
