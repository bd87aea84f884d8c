//===- MemoptTypes.td - memopt types -----------------------*- tablegen -*-===//
#ifndef MEMOPT_TYPES_TD
#define MEMOPT_TYPES_TD

include "memopt/Dialect/MemoptAttrs.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Memopt_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Memopt_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Memopt_PackedTensorType : Memopt_Type<"PackedTensor", "packed"> {
  let summary = "a compressed tensor that remembers its logical type";
  let description = [{
    `!memopt.packed<8x64x32x32xf32, bit>` is what `memopt.compress` makes of
    a `tensor<8x64x32x32xf32>`: the logical shape and element type survive,
    so `memopt.decompress` restores exactly that tensor type.
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "logical shape">:$shape,
    "::mlir::Type":$elementType,
    EnumParameter<Memopt_CompressionKind>:$kind);
  let assemblyFormat = "`<` custom<StaticShape>($shape, $elementType) `,` $kind `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The tensor type this value decompresses to.
    ::mlir::RankedTensorType getLogicalType() const;
    /// Bytes of the packed payload (bit: ceil(n/8), sparse: an upper bound).
    int64_t getPackedBytes() const;
  }];
}

def Memopt_HostTensorType : Memopt_Type<"HostTensor", "host"> {
  let summary = "a tensor (or packed tensor) that lives in host memory";
  let parameters = (ins "::mlir::Type":$payload);
  let assemblyFormat = "`<` $payload `>`";
  let genVerifyDecl = 1;
}

def Memopt_TokenType : Memopt_Type<"Token", "token"> {
  let summary = "completion of an asynchronous copy";
}

// TorchScript values that are not tensors or numbers.
def Memopt_ListType : Memopt_Type<"List", "list"> {
  let summary = "a TorchScript list";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def Memopt_ScriptNoneType : Memopt_Type<"ScriptNone", "none"> {
  let summary = "the TorchScript NoneType";
}

def Memopt_StringType : Memopt_Type<"String", "str"> {
  let summary = "a TorchScript string";
}

def Memopt_ScriptType : Memopt_Type<"Script", "script"> {
  let summary = "any other TorchScript type, by its annotation string";
  let description = [{
    `!memopt.script<"Device">`, `!memopt.script<"(Tensor, Tensor)">`: values
    the compiler passes through without reasoning about them.
  }];
  let parameters = (ins StringRefParameter<"TorchScript type string">:$name);
  let assemblyFormat = "`<` $name `>`";
}

def Memopt_AnyTensor : AnyTypeOf<[AnyTensor], "tensor">;
def Memopt_FloatTensor
    : TensorOf<[F16, BF16, F32], [], "float16/bfloat16/float32 tensor">;
def Memopt_SavedValue
    : AnyTypeOf<[AnyTensor, Memopt_PackedTensorType], "tensor or packed tensor">;

#endif // MEMOPT_TYPES_TD
