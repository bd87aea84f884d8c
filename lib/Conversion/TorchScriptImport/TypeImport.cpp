//===- TypeImport.cpp - TorchScript types and constants in MLIR
//------------===//
//
// Tensor -> tensor<...> (ranked static with input specs, else unranked),
// int -> i64, float -> f64, bool -> i1, str -> !memopt.str,
// None -> !memopt.none, List[T] -> !memopt.list<T>, anything else ->
// !memopt.script<"T"> with T in TorchScript IR syntax (what
// torch::jit::parseIR reads back: "Device", "(Tensor, Tensor)", "Tensor?").
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptTypes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::memopt;
using namespace mlir::memopt::detail;

Type mlir::memopt::detail::importDType(c10::ScalarType dtype,
                                       MLIRContext *context) {
  Builder builder(context);
  switch (dtype) {
  case c10::ScalarType::Float:
    return builder.getF32Type();
  case c10::ScalarType::Double:
    return builder.getF64Type();
  case c10::ScalarType::Half:
    return builder.getF16Type();
  case c10::ScalarType::BFloat16:
    return builder.getBF16Type();
  case c10::ScalarType::Long:
    return builder.getI64Type();
  case c10::ScalarType::Int:
    return builder.getI32Type();
  case c10::ScalarType::Short:
    return builder.getI16Type();
  case c10::ScalarType::Char:
    return builder.getIntegerType(8, /*isSigned=*/true);
  case c10::ScalarType::Byte:
    return builder.getIntegerType(8, /*isSigned=*/false);
  case c10::ScalarType::Bool:
    return builder.getI1Type();
  case c10::ScalarType::ComplexFloat:
    return ComplexType::get(builder.getF32Type());
  case c10::ScalarType::ComplexDouble:
    return ComplexType::get(builder.getF64Type());
  default:
    throw ImportError(std::string("tensors of dtype ") + c10::toString(dtype) +
                      " are not supported");
  }
}

std::optional<c10::ScalarType>
mlir::memopt::detail::parseDType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<c10::ScalarType>>(name)
      .Case("f32", c10::ScalarType::Float)
      .Case("f16", c10::ScalarType::Half)
      .Case("bf16", c10::ScalarType::BFloat16)
      .Case("f64", c10::ScalarType::Double)
      .Case("i64", c10::ScalarType::Long)
      .Case("i32", c10::ScalarType::Int)
      .Case("i1", c10::ScalarType::Bool)
      .Default(std::nullopt);
}

static Type tensorType(const TensorFacts *facts, MLIRContext *context) {
  if (!facts)
    return UnrankedTensorType::get(Float32Type::get(context));
  return RankedTensorType::get(facts->sizes,
                               importDType(facts->dtype, context));
}

Type mlir::memopt::detail::importType(const c10::TypePtr &type,
                                      const TensorFacts *facts,
                                      MLIRContext *context) {
  Builder builder(context);
  switch (type->kind()) {
  case c10::TypeKind::TensorType:
    return tensorType(facts, context);
  case c10::TypeKind::IntType:
    return builder.getI64Type();
  case c10::TypeKind::FloatType:
    return builder.getF64Type();
  case c10::TypeKind::BoolType:
    return builder.getI1Type();
  case c10::TypeKind::StringType:
    return StringType::get(context);
  case c10::TypeKind::NoneType:
    return ScriptNoneType::get(context);
  case c10::TypeKind::ListType: {
    const c10::TypePtr &element =
        type->expectRef<c10::ListType>().getElementType();
    // Lists are mutable containers: their tensor elements stay unranked.
    return ListType::get(context, importType(element, nullptr, context));
  }
  default:
    return ScriptType::get(context, type->str());
  }
}

Attribute mlir::memopt::detail::importConstant(const c10::IValue &value,
                                               MLIRContext *context) {
  Builder builder(context);
  if (value.isNone())
    return NoneAttr::get(context);
  if (value.isBool())
    return builder.getBoolAttr(value.toBool());
  if (value.isInt())
    return builder.getI64IntegerAttr(value.toInt());
  if (value.isDouble())
    return builder.getF64FloatAttr(value.toDouble());
  if (value.isString())
    return builder.getStringAttr(value.toStringRef());
  if (value.isDevice())
    return builder.getStringAttr(value.toDevice().str());
  if (value.isList() || value.isTuple()) {
    SmallVector<Attribute> elements;
    auto append = [&](const c10::IValue &element) {
      Attribute attr = importConstant(element, context);
      elements.push_back(attr);
      return static_cast<bool>(attr);
    };
    if (value.isList()) {
      for (const c10::IValue &element : value.toListRef())
        if (!append(element))
          return {};
    } else {
      for (const c10::IValue &element : value.toTupleRef().elements())
        if (!append(element))
          return {};
    }
    return builder.getArrayAttr(elements);
  }
  if (value.isGenericDict() && isGuardableConstant(value)) {
    // [[key, value], ...] in the dict's own (insertion) order: forward may
    // iterate it, so the order is part of the value.
    SmallVector<Attribute> entries;
    for (const auto &entry : value.toGenericDict())
      entries.push_back(
          builder.getArrayAttr({importConstant(entry.key(), context),
                                importConstant(entry.value(), context)}));
    return builder.getArrayAttr(entries);
  }
  return {};
}

bool mlir::memopt::detail::isGuardableConstant(const c10::IValue &value) {
  if (value.isNone() || value.isBool() || value.isInt() || value.isDouble() ||
      value.isString() || value.isDevice())
    return true;
  if (value.isList())
    return llvm::all_of(value.toListRef(), isGuardableConstant);
  if (value.isTuple())
    return llvm::all_of(value.toTupleRef().elements(), isGuardableConstant);
  if (!value.isGenericDict())
    return false;
  // The exported check compares keys() and values() as lists, which
  // TorchScript compares only for these element types.
  auto scalar = [](const c10::IValue &v) {
    return v.isBool() || v.isInt() || v.isDouble() || v.isString();
  };
  for (const auto &entry : value.toGenericDict())
    if (!(entry.key().isString() || entry.key().isInt()) ||
        !scalar(entry.value()))
      return false;
  return true;
}
