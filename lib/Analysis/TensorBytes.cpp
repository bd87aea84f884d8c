//===- TensorBytes.cpp - sizes of tensor-like values ----------------------===//
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Dialect/MemoptTypes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::memopt;

int64_t mlir::memopt::getElementBytes(Type elementType) {
  if (elementType.isIntOrFloat())
    return std::max<int64_t>(1, (elementType.getIntOrFloatBitWidth() + 7) / 8);
  if (auto complex = dyn_cast<ComplexType>(elementType))
    return 2 * getElementBytes(complex.getElementType());
  return 8;
}

int64_t mlir::memopt::getNumElements(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return -1;
  return ranked.getNumElements();
}

int64_t mlir::memopt::getDeviceBytes(Type type) {
  if (auto packed = dyn_cast<PackedTensorType>(type))
    return packed.getPackedBytes();
  if (isa<UnrankedTensorType>(type))
    return -1;
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return 0;
  if (!ranked.hasStaticShape())
    return -1;
  return ranked.getNumElements() * getElementBytes(ranked.getElementType());
}

bool mlir::memopt::isTensorLike(Type type) {
  if (auto list = dyn_cast<ListType>(type)) {
    Type element = list.getElementType();
    // List[Optional[Tensor]] (advanced indexing: x[idx], x[:, idx]): its
    // Nones are constant arguments of the construct, its operands tensors.
    if (auto script = dyn_cast<ScriptType>(element))
      return script.getName() == "Tensor?";
    return isa<TensorType>(element);
  }
  return isa<TensorType>(type);
}

bool mlir::memopt::isStaticFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         isa<FloatType>(tensor.getElementType());
}
