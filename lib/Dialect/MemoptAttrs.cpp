//===- MemoptAttrs.cpp - memopt attributes --------------------------------===//
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::memopt;

#include "memopt/Dialect/MemoptEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "memopt/Dialect/MemoptAttrs.cpp.inc"

LogicalResult
KernelHighWaterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t forward, ArrayRef<int64_t> backward,
                            int64_t backwardHeld) {
  if (forward < -1)
    return emitError() << "forward high-water mark " << forward
                       << " is below -1 (not measured)";
  if (backward.size() != kNumMasks)
    return emitError() << "expected " << kNumMasks
                       << " backward high-water marks (one per gradient "
                          "mask), got "
                       << backward.size();
  for (int64_t bytes : backward)
    if (bytes < -1)
      return emitError() << "backward high-water mark " << bytes
                         << " is below -1 (not measured)";
  if (backwardHeld < -1)
    return emitError() << "backward_held high-water mark " << backwardHeld
                       << " is below -1 (not measured)";
  return success();
}

LogicalResult
MeasuredSavesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t bytes, ArrayRef<int64_t> operands,
                          ArrayRef<int64_t> elements,
                          ArrayRef<int64_t> results) {
  if (bytes < 0)
    return emitError() << "measured saved bytes " << bytes << " are negative";
  for (int64_t index : operands)
    if (index < 0)
      return emitError() << "saved operand index " << index << " is negative";
  if (elements.size() % 2)
    return emitError() << "saved list elements come in (operand, element) "
                          "pairs, got "
                       << elements.size() << " numbers";
  for (int64_t index : elements)
    if (index < 0)
      return emitError() << "saved list element index " << index
                         << " is negative";
  for (int64_t index : results)
    if (index < 0)
      return emitError() << "saved result index " << index << " is negative";
  return success();
}

/// `[1, 2, 3]` after the keyword and `=` (`keyword` already parsed).
static ParseResult parseIndexList(AsmParser &parser,
                                  SmallVectorImpl<int64_t> &values) {
  if (parser.parseEqual())
    return failure();
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    return parser.parseInteger(values.emplace_back());
  });
}

Attribute MeasuredSavesAttr::parse(AsmParser &parser, Type) {
  int64_t bytes = 0;
  SmallVector<int64_t> operands, elements, results;
  if (parser.parseLess() || parser.parseKeyword("bytes") ||
      parser.parseEqual() || parser.parseInteger(bytes))
    return {};
  // The lists in this order, each at most once.
  std::pair<StringRef, SmallVector<int64_t> *> lists[] = {
      {"operands", &operands}, {"elements", &elements}, {"results", &results}};
  size_t next = 0;
  while (succeeded(parser.parseOptionalComma())) {
    while (next < std::size(lists) &&
           failed(parser.parseOptionalKeyword(lists[next].first)))
      ++next;
    if (next == std::size(lists)) {
      parser.emitError(parser.getCurrentLocation(),
                       "expected 'operands', 'elements' or 'results', in "
                       "that order");
      return {};
    }
    if (parseIndexList(parser, *lists[next++].second))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), bytes, operands, elements, results);
}

void MeasuredSavesAttr::print(AsmPrinter &printer) const {
  printer << "<bytes = " << getBytes();
  if (!getOperands().empty())
    printer << ", operands = [" << getOperands() << "]";
  if (!getElements().empty())
    printer << ", elements = [" << getElements() << "]";
  if (!getResults().empty())
    printer << ", results = [" << getResults() << "]";
  printer << ">";
}

bool mlir::memopt::isSavePolicy(Attribute attr) {
  return isa<KeepPolicyAttr, CompressPolicyAttr, OffloadPolicyAttr>(attr);
}

void MemoptDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "memopt/Dialect/MemoptAttrs.cpp.inc"
      >();
}

LogicalResult
PlanSummaryAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t baselinePeakBytes, int64_t plannedPeakBytes,
                        int64_t budgetBytes, bool,
                        int64_t minReachablePeakBytes, APFloat recomputeSeconds,
                        APFloat stepSeconds, PlanGoal, int64_t segments) {
  if (baselinePeakBytes < 0 || plannedPeakBytes < 0 ||
      minReachablePeakBytes < 0 || segments < 0)
    return emitError() << "plan byte counts and segments must not be negative";
  if (budgetBytes < -1)
    return emitError() << "plan budget_bytes " << budgetBytes
                       << " is below -1 (no budget)";
  if (recomputeSeconds.isNegative() || stepSeconds.isNegative() ||
      !recomputeSeconds.isFinite() || !stepSeconds.isFinite())
    return emitError() << "plan seconds must be finite and not negative";
  return success();
}

LogicalResult PrefetchScheduleAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, APFloat bandwidthGbps,
    int64_t offloadedRegions, int64_t predictedPeakBytes,
    int64_t prefetchedEarly, APFloat stallSeconds, APFloat transferSeconds,
    APFloat d2hBandwidthGbps, APFloat offloadSeconds, int64_t heldRegions) {
  for (const APFloat &gbps : {bandwidthGbps, d2hBandwidthGbps})
    if (!gbps.isFiniteNonZero() || gbps.isNegative())
      return emitError() << "prefetch bandwidths must be positive GB/s";
  if (offloadedRegions < 0 || prefetchedEarly < 0 ||
      prefetchedEarly > offloadedRegions || predictedPeakBytes < 0 ||
      heldRegions < 0 || heldRegions > offloadedRegions)
    return emitError() << "prefetch counts must satisfy 0 <= prefetched_early "
                          "<= offloaded_regions, 0 <= held_regions <= "
                          "offloaded_regions and the peak be >= 0";
  for (const APFloat &seconds : {stallSeconds, transferSeconds, offloadSeconds})
    if (seconds.isNegative() || !seconds.isFinite())
      return emitError() << "prefetch seconds must be finite and not negative";
  return success();
}

LogicalResult
SignatureAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t index, int64_t count) {
  if (index < 0 || count < 0)
    return emitError() << "signature index and count must not be negative";
  return success();
}
