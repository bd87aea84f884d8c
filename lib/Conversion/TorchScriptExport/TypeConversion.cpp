//===- TypeConversion.cpp - memopt types and constants to TorchScript -----===//
//
// Tensor types lose their shapes on purpose: the exported graph is saved as
// TorchScript source and recompiled on load, so only the kinds of values
// (int vs. float, list element types) matter, and those decide which
// operator overload a node resolves to.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"

#include <ATen/ATen.h>
#include <cmath>
#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/mobile/type_parser.h>

using namespace mlir;
using namespace mlir::memopt;

/// Parses `!memopt.script<"...">` names: TorchScript IR syntax as the
/// importer writes them (`Device`, `(Tensor, Tensor)`, `Tensor?`), or Python
/// annotations (`Tuple[Tensor, Tensor]`) as a fallback.
static c10::TypePtr parseTypeString(const std::string &text) {
  try {
    auto schema = torch::jit::parseSchema("f(" + text + " x) -> ()");
    return schema.arguments().at(0).type();
  } catch (const std::exception &) {
  }
  try {
    return c10::parseType(text);
  } catch (const std::exception &) {
  }
  return nullptr;
}

c10::TypePtr exporter::convertType(Type type) {
  if (isa<mlir::TensorType>(type))
    return c10::TensorType::get();
  if (auto integer = dyn_cast<IntegerType>(type)) {
    if (integer.getWidth() == 1)
      return c10::BoolType::get();
    if (integer.getWidth() == 64)
      return c10::IntType::get();
    return nullptr;
  }
  if (type.isF64())
    return c10::FloatType::get();
  if (isa<mlir::memopt::StringType>(type))
    return c10::StringType::get();
  if (isa<ScriptNoneType>(type))
    return c10::NoneType::get();
  if (auto list = dyn_cast<mlir::memopt::ListType>(type)) {
    c10::TypePtr element = convertType(list.getElementType());
    return element ? c10::ListType::create(element) : nullptr;
  }
  if (auto script = dyn_cast<ScriptType>(type))
    return parseTypeString(script.getName().str());
  return nullptr;
}

std::optional<at::Tensor> exporter::convertTensorConstant(Attribute elements,
                                                          Type type,
                                                          std::string &error) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  auto array = dyn_cast<ArrayAttr>(elements);
  auto dtype = ranked ? scalarTypeOf(ranked.getElementType()) : std::nullopt;
  if (!ranked || !ranked.hasStaticShape() || !array || !dtype ||
      c10::isComplexType(*dtype)) {
    error = "a tensor constant needs a static shape, a real or integer "
            "dtype and its flattened elements";
    return std::nullopt;
  }
  if (static_cast<int64_t>(array.size()) != ranked.getNumElements()) {
    error = "tensor constant has " + std::to_string(array.size()) +
            " elements for " + std::to_string(ranked.getNumElements());
    return std::nullopt;
  }
  // Every f16/bf16/f32 value is exact in f64, every integer in i64.
  bool floating = c10::isFloatingType(*dtype);
  std::vector<double> reals;
  std::vector<int64_t> integers;
  for (Attribute element : array) {
    if (auto boolean = dyn_cast<BoolAttr>(element))
      integers.push_back(boolean.getValue()),
          reals.push_back(boolean.getValue());
    else if (auto integer = dyn_cast<IntegerAttr>(element))
      integers.push_back(integer.getValue().getSExtValue()),
          reals.push_back(
              static_cast<double>(integer.getValue().getSExtValue()));
    else if (auto real = dyn_cast<FloatAttr>(element); real && floating)
      reals.push_back(real.getValueAsDouble());
    else {
      error = "tensor constant element is not a number of its dtype";
      return std::nullopt;
    }
  }
  at::Tensor flat = floating ? at::tensor(reals, at::kDouble)
                             : at::tensor(integers, at::kLong);
  std::vector<int64_t> shape(ranked.getShape().begin(),
                             ranked.getShape().end());
  return flat.to(*dtype).reshape(shape);
}

/// Schema types that constants are built as: SymInt is an int here.
static c10::TypePtr normalizeExpected(c10::TypePtr type) {
  if (type && type->kind() == c10::TypeKind::SymIntType)
    return c10::IntType::get();
  return type;
}

/// The element type of a list constant without a schema type: numbers
/// promote to float, an empty list is `int[]` (sizes, dims), otherwise all
/// elements must unify.
static c10::TypePtr inferElementType(std::vector<c10::IValue> &elements) {
  if (elements.empty())
    return c10::IntType::get();
  bool allNumbers = llvm::all_of(
      elements, [](const c10::IValue &v) { return v.isInt() || v.isDouble(); });
  if (allNumbers && llvm::any_of(elements, [](const c10::IValue &v) {
        return v.isDouble();
      })) {
    for (c10::IValue &v : elements)
      if (v.isInt())
        v = c10::IValue(static_cast<double>(v.toInt()));
    return c10::FloatType::get();
  }
  c10::TypePtr unified = elements.front().type();
  for (const c10::IValue &v : elements) {
    auto next = c10::unifyTypes(unified, v.type());
    if (!next)
      return nullptr;
    unified = *next;
  }
  return unified;
}

std::optional<c10::IValue>
exporter::convertConstant(Attribute attr, const c10::TypePtr &expected,
                          std::string &error) {
  c10::TypePtr want = normalizeExpected(expected);
  if (isa<mlir::memopt::NoneAttr>(attr))
    return c10::IValue();
  if (want && want->kind() == c10::TypeKind::OptionalType)
    want = normalizeExpected(
        want->expectRef<c10::OptionalType>().getElementType());

  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return c10::IValue(boolean.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr)) {
    int64_t value = integer.getValue().getSExtValue();
    // A float parameter given an integral constant (`p=0`) stays a float.
    if (want && want->kind() == c10::TypeKind::FloatType)
      return c10::IValue(static_cast<double>(value));
    return c10::IValue(value);
  }
  if (auto real = dyn_cast<FloatAttr>(attr))
    return c10::IValue(real.getValueAsDouble());
  if (auto string = dyn_cast<StringAttr>(attr)) {
    if (want && want->kind() == c10::TypeKind::DeviceObjType) {
      try {
        return c10::IValue(c10::Device(string.str()));
      } catch (const c10::Error &) {
        error = "'" + string.str() + "' is not a device";
        return std::nullopt;
      }
    }
    return c10::IValue(string.str());
  }
  auto array = dyn_cast<ArrayAttr>(attr);
  // The importer writes tuples as arrays too; the schema type tells them apart.
  if (array && want && want->kind() == c10::TypeKind::TupleType) {
    const auto &elementTypes = want->expectRef<c10::TupleType>().elements();
    if (elementTypes.size() != array.size()) {
      error = "tuple constant has " + std::to_string(array.size()) +
              " elements for type " + want->repr_str();
      return std::nullopt;
    }
    std::vector<c10::IValue> elements;
    for (auto [element, type] : llvm::zip(array, elementTypes)) {
      auto value = convertConstant(element, type, error);
      if (!value)
        return std::nullopt;
      elements.push_back(std::move(*value));
    }
    return c10::IValue(c10::ivalue::Tuple::create(std::move(elements)));
  }
  // A dict is written as [[key, value], ...] in its order (importConstant).
  if (array && want && want->kind() == c10::TypeKind::DictType) {
    const auto &dictType = want->expectRef<c10::DictType>();
    c10::impl::GenericDict dict(dictType.getKeyType(), dictType.getValueType());
    for (Attribute entry : array) {
      auto pair = dyn_cast<ArrayAttr>(entry);
      if (!pair || pair.size() != 2) {
        error = "dict constant entry is not a [key, value] pair";
        return std::nullopt;
      }
      auto key = convertConstant(pair[0], dictType.getKeyType(), error);
      auto value =
          key ? convertConstant(pair[1], dictType.getValueType(), error)
              : std::nullopt;
      if (!value)
        return std::nullopt;
      dict.insert(std::move(*key), std::move(*value));
    }
    return c10::IValue(std::move(dict));
  }
  if (array) {
    c10::TypePtr elementWant;
    if (want && want->kind() == c10::TypeKind::ListType)
      elementWant =
          normalizeExpected(want->expectRef<c10::ListType>().getElementType());
    std::vector<c10::IValue> elements;
    for (Attribute element : array) {
      auto value = convertConstant(element, elementWant, error);
      if (!value)
        return std::nullopt;
      elements.push_back(std::move(*value));
    }
    c10::TypePtr elementType =
        elementWant ? elementWant : inferElementType(elements);
    if (!elementType) {
      error = "list constant mixes element types";
      return std::nullopt;
    }
    c10::impl::GenericList list(elementType);
    for (c10::IValue &element : elements)
      list.push_back(std::move(element));
    return c10::IValue(std::move(list));
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  error = "constant " + os.str() + " has no TorchScript value";
  return std::nullopt;
}

torch::jit::Value *exporter::insertTensorConstant(TorchOp constant,
                                                  torch::jit::Graph &graph) {
  std::string error;
  auto tensor = constant.getArgs().size() == 1
                    ? convertTensorConstant(constant.getArgs()[0],
                                            constant->getResult(0).getType(),
                                            error)
                    : std::nullopt;
  if (!tensor) {
    constant.emitError("cannot export tensor constant: ") << error;
    return nullptr;
  }
  return graph.insertConstant(*tensor);
}

static bool isNonFinite(const c10::IValue &value) {
  return value.isDouble() && !std::isfinite(value.toDouble());
}

static bool holdsNonFinite(const c10::IValue &value) {
  if (isNonFinite(value))
    return true;
  c10::ArrayRef<c10::IValue> elements;
  if (value.isList())
    elements = value.toListRef();
  else if (value.isTuple())
    elements = value.toTupleRef().elements();
  return llvm::any_of(elements, holdsNonFinite);
}

torch::jit::Value *exporter::insertConstantValue(torch::jit::Graph &graph,
                                                 const c10::IValue &value) {
  // Region graphs travel as IR text, and parseIR reads no inf or nan
  // literal (`masked_fill(mask, float("-inf"))` printed as value=-inf):
  // a non-finite float is written as float("inf"), a string constant and
  // a conversion TorchScript runs at load time.
  if (isNonFinite(value)) {
    double number = value.toDouble();
    const char *text = std::isnan(number) ? "nan" : number > 0 ? "inf" : "-inf";
    return graph.insert(c10::Symbol::fromQualString("aten::Float"),
                        {graph.insertConstant(std::string(text))});
  }
  // parseIR reads no tuple literal either (`prim::Constant[value=(7, 7)]`,
  // a window size): tuples are built from their elements, as the compiler
  // builds tuple literals, and so are the lists TorchScript cannot encode
  // as one constant (str[], Tensor?[], nested lists, non-finite elements).
  if (!value.isTuple() && !holdsNonFinite(value))
    if (auto constant = torch::jit::tryInsertConstant(graph, value))
      return *constant;
  if (value.isTuple()) {
    std::vector<torch::jit::Value *> elements;
    for (const c10::IValue &element : value.toTupleRef().elements()) {
      elements.push_back(insertConstantValue(graph, element));
      if (!elements.back())
        return nullptr;
    }
    return graph.insertNode(graph.createTuple(elements))->output();
  }
  if (!value.isList())
    return nullptr;
  c10::List<c10::IValue> list = value.toList();
  std::vector<torch::jit::Value *> elements;
  for (const c10::IValue &element : list) {
    torch::jit::Value *v = insertConstantValue(graph, element);
    if (!v)
      return nullptr;
    elements.push_back(v);
  }
  return graph.insertNode(graph.createList(list.elementType(), elements))
      ->output();
}
