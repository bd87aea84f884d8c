//===- MemoptDialect.cpp - The memopt dialect -----------------------------===//
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memopt;

#include "memopt/Dialect/MemoptOpsDialect.cpp.inc"

void MemoptDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "memopt/Dialect/MemoptOps.cpp.inc"
      >();
}

namespace {
/// Whether `attribute` is the one `Helper` manages; if so, `valid` says
/// whether its value has the declared type.
template <typename Helper>
bool isManagedBy(NamedAttribute attribute, bool &valid,
                 StringRef &expectedType) {
  using AttrT = decltype(std::declval<Helper &>().getAttr(nullptr));
  if (attribute.getName() != Helper::getNameStr())
    return false;
  valid = isa<AttrT>(attribute.getValue());
  expectedType = llvm::getTypeName<AttrT>().rsplit("::").second;
  return true;
}

template <typename... Helpers>
bool findDeclared(NamedAttribute attribute, bool &valid,
                  StringRef &expectedType) {
  return (isManagedBy<Helpers>(attribute, valid, expectedType) || ...);
}

/// `memopt.cost_model`: known classes, each three finite non-negative
/// coefficients (a negative or NaN price would make recompute look free).
LogicalResult verifyCostModel(Operation *op, DictionaryAttr classes) {
  for (NamedAttribute entry : classes) {
    StringRef name = entry.getName().getValue();
    if (!llvm::is_contained(getCostClassNames(), name))
      return op->emitError("memopt.cost_model: unknown cost class '")
             << name << "' (expected one of "
             << llvm::join(getCostClassNames(), ", ") << ")";
    auto values = dyn_cast<DenseF64ArrayAttr>(entry.getValue());
    if (!values || values.size() != 3)
      return op->emitError("memopt.cost_model: class '")
             << name
             << "' must be array<f64: secondsPerFlop, secondsPerByte, "
                "overheadSeconds>, got "
             << entry.getValue();
    for (double value : values.asArrayRef())
      if (!std::isfinite(value) || value < 0)
        return op->emitError("memopt.cost_model: class '")
               << name << "' has a coefficient that is not a finite "
               << "non-negative number: " << entry.getValue();
  }
  return success();
}
} // namespace

ArrayRef<StringLiteral> mlir::memopt::getCostClassNames() {
  static constexpr StringLiteral names[] = {
#define MEMOPT_COST_CLASS_NAME(NAME) #NAME,
#include "memopt/Dialect/CostClasses.def"
#undef MEMOPT_COST_CLASS_NAME
  };
  return names;
}

LogicalResult MemoptDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  bool valid = false;
  StringRef expectedType;
  bool declared = findDeclared<
      SourceAttrHelper, SignatureAttrHelper, BudgetAttrHelper,
      PassthroughAttrHelper, AssumesAttrHelper, ShapeAssumesAttrHelper,
      GradBuffersAttrHelper, WorldSizeAttrHelper, IntraOpThreadsAttrHelper,
      CostModelAttrHelper, DeviceAttrHelper, AssumeBinaryAttrHelper,
      UnplannedPeakBytesAttrHelper, BudgetBytesAttrHelper, PlanAttrHelper,
      PrefetchScheduleAttrHelper, ReasonAttrHelper, SavedBytesAvoidedAttrHelper,
      LowersPeakByAttrHelper, OriginalMethodAttrHelper, GenericOfAttrHelper>(
      attr, valid, expectedType);
  if (!declared)
    return op->emitError("unknown memopt attribute '")
           << attr.getName().getValue() << "'";
  if (!valid)
    return op->emitError("attribute '")
           << attr.getName().getValue() << "' must be of type " << expectedType
           << ", got " << attr.getValue();
  if (attr.getName() == IntraOpThreadsAttrHelper::getNameStr() &&
      cast<IntegerAttr>(attr.getValue()).getValue().getSExtValue() < 1)
    return op->emitError("attribute '")
           << attr.getName().getValue() << "' must be at least 1, got "
           << attr.getValue();
  if (attr.getName() == CostModelAttrHelper::getNameStr())
    return verifyCostModel(op, cast<DictionaryAttr>(attr.getValue()));
  return success();
}
