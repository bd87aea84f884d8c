//===- PickleCheck.cpp - Pickles that would make LibTorch allocate wildly -===//
//
// Opcodes and their arguments as in CPython's pickletools (protocols 0-5);
// LibTorch's pickler writes a subset of them.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/PickleCheck.h"
#include "LittleEndian.h"

#include <cstdint>

using namespace mlir::memopt;

namespace {

/// How an opcode's argument is laid out.
enum class Argument {
  None,
  Fixed,     // `size` bytes
  Line,      // up to a newline
  TwoLines,  // module and name, each up to a newline
  Counted,   // a `size`-byte little-endian length, then that many bytes
  MemoIndex, // a `size`-byte little-endian memo index
  MemoLine,  // a decimal memo index up to a newline
  Unknown,
};

struct Opcode {
  Argument argument;
  unsigned size = 0;
};

Opcode describe(uint8_t code) {
  switch (code) {
  // No argument.
  case '(':
  case '.':
  case '0':
  case '1':
  case '2':
  case 'N':
  case 'Q':
  case 'R':
  case 'a':
  case 'b':
  case 'd':
  case '}':
  case 'e':
  case 'l':
  case ']':
  case 'o':
  case 's':
  case 't':
  case ')':
  case 'u':
  case 0x81:
  case 0x85:
  case 0x86:
  case 0x87:
  case 0x88:
  case 0x89:
  case 0x8f:
  case 0x90:
  case 0x91:
  case 0x92:
  case 0x93:
  case 0x94:
  case 0x97:
  case 0x98:
    return {Argument::None};
  case 'K':
  case 0x80:
  case 0x82:
    return {Argument::Fixed, 1};
  case 'M':
  case 0x83:
    return {Argument::Fixed, 2};
  case 'J':
  case 0x84:
    return {Argument::Fixed, 4};
  case 'G':
  case 0x95:
    return {Argument::Fixed, 8};
  case 'F':
  case 'I':
  case 'L':
  case 'P':
  case 'S':
  case 'V':
    return {Argument::Line};
  case 'c':
  case 'i':
    return {Argument::TwoLines};
  case 'U':
  case 'C':
  case 0x8a:
  case 0x8c:
    return {Argument::Counted, 1};
  case 'T':
  case 'X':
  case 'B':
  case 0x8b:
    return {Argument::Counted, 4};
  case 0x8d:
  case 0x8e:
  case 0x96:
    return {Argument::Counted, 8};
  case 'h':
  case 'q':
    return {Argument::MemoIndex, 1};
  case 'j':
  case 'r':
    return {Argument::MemoIndex, 4};
  case 'g':
  case 'p':
    return {Argument::MemoLine};
  default:
    return {Argument::Unknown};
  }
}

std::string where(size_t at) { return " at byte " + std::to_string(at); }

} // namespace

std::optional<std::string>
mlir::memopt::findPickleDamage(llvm::StringRef bytes) {
  const uint64_t size = bytes.size();
  auto memoProblem = [&](uint64_t index,
                         size_t at) -> std::optional<std::string> {
    if (index < size)
      return std::nullopt;
    return "memo index " + std::to_string(index) + where(at) + " of a " +
           std::to_string(size) + "-byte pickle";
  };
  size_t at = 0;
  while (at < size) {
    uint8_t code = static_cast<uint8_t>(bytes[at]);
    size_t opcodeAt = at++;
    Opcode opcode = describe(code);
    switch (opcode.argument) {
    case Argument::Unknown:
      return std::nullopt;
    case Argument::None:
      if (code == '.')
        return std::nullopt;
      break;
    case Argument::Fixed:
      if (size - at < opcode.size)
        return "an argument past the end" + where(opcodeAt);
      at += opcode.size;
      break;
    case Argument::Line:
    case Argument::TwoLines:
    case Argument::MemoLine: {
      unsigned lines = opcode.argument == Argument::TwoLines ? 2 : 1;
      size_t start = at;
      for (unsigned i = 0; i < lines; ++i) {
        size_t newline = bytes.find('\n', at);
        if (newline == llvm::StringRef::npos)
          return "an unterminated argument" + where(opcodeAt);
        at = newline + 1;
      }
      if (opcode.argument == Argument::MemoLine) {
        uint64_t index;
        if (bytes.slice(start, at - 1).trim().getAsInteger(10, index))
          return "a memo index that is not a number" + where(opcodeAt);
        if (auto problem = memoProblem(index, opcodeAt))
          return problem;
      }
      break;
    }
    case Argument::Counted: {
      if (size - at < opcode.size)
        return "a length past the end" + where(opcodeAt);
      uint64_t length = readLittleEndian(bytes, at, opcode.size);
      at += opcode.size;
      if (length > size - at)
        return "a length of " + std::to_string(length) + where(opcodeAt) +
               " with " + std::to_string(size - at) + " bytes left";
      at += length;
      break;
    }
    case Argument::MemoIndex: {
      if (size - at < opcode.size)
        return "a memo index past the end" + where(opcodeAt);
      uint64_t index = readLittleEndian(bytes, at, opcode.size);
      at += opcode.size;
      if (auto problem = memoProblem(index, opcodeAt))
        return problem;
      break;
    }
    }
  }
  return "no STOP opcode";
}
