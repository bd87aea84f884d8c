//===- MemoptTypes.cpp - memopt types -------------------------------------===//
#include "memopt/Dialect/MemoptTypes.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Runtime/PackedFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::memopt;

/// Parses `8x64xf32` (static dimensions, then the element type).
static ParseResult parseStaticShape(AsmParser &parser,
                                    SmallVector<int64_t> &shape,
                                    Type &elementType) {
  if (parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return failure();
  return success();
}

static void printStaticShape(AsmPrinter &printer, ArrayRef<int64_t> shape,
                             Type elementType) {
  for (int64_t dim : shape)
    printer << dim << 'x';
  printer << elementType;
}

#define GET_TYPEDEF_CLASSES
#include "memopt/Dialect/MemoptOpsTypes.cpp.inc"

static bool isCompressibleElementType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32();
}

LogicalResult
PackedTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                         ArrayRef<int64_t> shape, Type elementType,
                         CompressionKind kind) {
  for (int64_t dim : shape)
    if (dim < 0)
      return emitError() << "packed tensor dimensions must be static and "
                            "non-negative";
  if (!isCompressibleElementType(elementType))
    return emitError() << "packed tensor element type must be f16, bf16 or "
                          "f32, got "
                       << elementType;
  return success();
}

RankedTensorType PackedTensorType::getLogicalType() const {
  return RankedTensorType::get(getShape(), getElementType());
}

/// The runtime contract's kind of the same packed format.
static ::memopt::packed::Kind toPackedKind(CompressionKind kind) {
  switch (kind) {
  case CompressionKind::bit:
    return ::memopt::packed::Kind::Bit;
  case CompressionKind::bool_:
    return ::memopt::packed::Kind::Bool;
  case CompressionKind::uint8:
    return ::memopt::packed::Kind::UInt8;
  case CompressionKind::sparse:
    return ::memopt::packed::Kind::Sparse;
  }
  llvm_unreachable("unknown compression kind");
}

int64_t PackedTensorType::getPackedBytes() const {
  int64_t elements = 1;
  for (int64_t dim : getShape())
    elements *= dim;
  return ::memopt::packed::maxPayloadBytes(toPackedKind(getKind()), elements);
}

LogicalResult
HostTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                       Type payload) {
  if (!llvm::isa<RankedTensorType, PackedTensorType>(payload))
    return emitError() << "host payload must be a ranked tensor or a packed "
                          "tensor, got "
                       << payload;
  return success();
}

bool mlir::memopt::isDifferentiableElementType(Type elementType) {
  return isa<FloatType, ComplexType>(elementType);
}

bool mlir::memopt::mayCarryGradient(Type type) {
  if (auto tensor = dyn_cast<TensorType>(type))
    return isDifferentiableElementType(tensor.getElementType());
  return !type.isIntOrIndexOrFloat();
}

void MemoptDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "memopt/Dialect/MemoptOpsTypes.cpp.inc"
      >();
}
