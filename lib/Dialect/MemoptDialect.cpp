//===- MemoptDialect.cpp - The memopt dialect -----------------------------===//
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Dialect/MemoptOps.h"

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
} // namespace

LogicalResult MemoptDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  bool valid = false;
  StringRef expectedType;
  bool declared = findDeclared<
      SourceAttrHelper, SignatureAttrHelper, BudgetAttrHelper,
      PassthroughAttrHelper, AssumesAttrHelper, ShapeAssumesAttrHelper,
      GradBuffersAttrHelper, WorldSizeAttrHelper, IntraOpThreadsAttrHelper,
      DeviceAttrHelper, AssumeBinaryAttrHelper, UnplannedPeakBytesAttrHelper,
      BudgetBytesAttrHelper, PlanAttrHelper, PrefetchScheduleAttrHelper,
      ReasonAttrHelper, SavedBytesAvoidedAttrHelper, LowersPeakByAttrHelper,
      OriginalMethodAttrHelper, GenericOfAttrHelper>(attr, valid, expectedType);
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
  return success();
}
