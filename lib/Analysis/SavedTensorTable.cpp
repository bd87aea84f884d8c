//===- SavedTensorTable.cpp - parse the generated saved-tensor table ------===//
#include "memopt/Analysis/SavedTensorTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <string>

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct RawRow {
  const char *op, *pattern, *saved, *results, *grads, *backward;
};
} // namespace

static const RawRow kRawRows[] = {
#define MEMOPT_SAVED_OP(OP, PATTERN, SAVED, RESULTS, GRADS, BACKWARD)          \
  {OP, PATTERN, SAVED, RESULTS, GRADS, BACKWARD},
#define MEMOPT_TORCH_FACT(NAME, VALUE)
#include "SavedTensorTable.def"
#undef MEMOPT_TORCH_FACT
#undef MEMOPT_SAVED_OP
};

static TorchFacts getGeneratedTorchFacts() {
  TorchFacts facts;
#define MEMOPT_SAVED_OP(OP, PATTERN, SAVED, RESULTS, GRADS, BACKWARD)
#define MEMOPT_TORCH_FACT(NAME, VALUE) facts.NAME = (VALUE);
#include "SavedTensorTable.def"
#undef MEMOPT_TORCH_FACT
#undef MEMOPT_SAVED_OP
  return facts;
}

/// `a3` / `r0` -> (kind, index).
static bool parseRef(StringRef text, bool &isResult, unsigned &index) {
  if (text.size() < 2 || (text[0] != 'a' && text[0] != 'r'))
    return false;
  isResult = text[0] == 'r';
  return !text.drop_front().getAsInteger(10, index);
}

static SavedItem parseSaved(StringRef text) {
  SavedItem item;
  bool isResult;
  if (!text.starts_with("new:")) {
    auto [ref, cond] = text.split('?');
    item.copyIfFolded = cond == "fold";
    if ((!cond.empty() && !item.copyIfFolded) ||
        !parseRef(ref, isResult, item.index))
      llvm::report_fatal_error(llvm::Twine("bad saved-tensor item: ") + text);
    item.kind = isResult ? SavedItem::Kind::Result : SavedItem::Kind::Arg;
    return item;
  }
  // new:<rule>.<ref>:<dtype> or new:one:<dtype>
  SmallVector<StringRef, 3> parts;
  text.split(parts, ':');
  if (parts.size() != 3)
    llvm::report_fatal_error(llvm::Twine("bad saved-tensor item: ") + text);
  item.kind = SavedItem::Kind::New;
  item.dtype = parts[2];
  auto [rule, ref] = parts[1].split('.');
  // dim0byarg<J>: dim 0 of the reference times integer argument J.
  if (rule.consume_front("dim0byarg")) {
    if (rule.getAsInteger(10, item.intArg))
      llvm::report_fatal_error(llvm::Twine("bad size rule: ") + text);
    rule = "dim0byarg";
  }
  item.size = llvm::StringSwitch<SavedItem::Size>(rule)
                  .Case("like", SavedItem::Size::Like)
                  .Case("dim1", SavedItem::Size::Dim1)
                  .Case("rows", SavedItem::Size::Rows)
                  .Case("dim01", SavedItem::Size::Dim01)
                  .Case("attn", SavedItem::Size::Attn)
                  .Case("dim0byarg", SavedItem::Size::Dim0ByInt)
                  .Default(SavedItem::Size::One);
  if (item.size != SavedItem::Size::One &&
      !parseRef(ref, item.sizeOfResult, item.index))
    llvm::report_fatal_error(llvm::Twine("bad size rule: ") + text);
  return item;
}

/// `<k>x<size rule>` (`4xlike.a0`), `+<k>x<size rule>` (above the new
/// gradients), or "" for none.
static BackwardHighWater parseBackward(StringRef text) {
  BackwardHighWater rule;
  if (text.empty())
    return rule;
  rule.aboveGradients = text.consume_front("+");
  auto [factor, size] = text.split('x');
  if (factor.getAsInteger(10, rule.factor) || size.empty())
    llvm::report_fatal_error(llvm::Twine("bad backward rule: ") + text);
  rule.size = parseSaved((llvm::Twine("new:") + size + ":same").str());
  rule.size.dtype = "same"; // not the temporary text parsed
  return rule;
}

static ResultRule parseResult(StringRef text) {
  ResultRule rule;
  if (text == "new")
    return rule;
  auto [ref, cond] = text.split('?');
  bool isResult;
  if (!parseRef(ref, isResult, rule.arg) || isResult)
    llvm::report_fatal_error(llvm::Twine("bad result rule: ") + text);
  rule.kind = cond == "contig" ? ResultRule::Kind::AliasIfContiguous
              : cond == "same" ? ResultRule::Kind::AliasIfSameType
                               : ResultRule::Kind::Alias;
  return rule;
}

SavedTensorTable::SavedTensorTable() : facts(getGeneratedTorchFacts()) {
  for (const RawRow &raw : kRawRows) {
    SavedTensorRow row;
    row.op = raw.op;
    row.pattern = raw.pattern;
    row.savedText = raw.saved;
    row.resultsText = raw.results;
    row.gradsText = raw.grads;
    row.backwardText = raw.backward;
    row.backward = parseBackward(row.backwardText);
    SmallVector<StringRef> words;
    row.savedText.split(words, ' ', -1, /*KeepEmpty=*/false);
    for (StringRef w : words)
      row.saved.push_back(parseSaved(w));
    words.clear();
    row.resultsText.split(words, ' ', -1, false);
    for (StringRef w : words)
      row.results.push_back(parseResult(w));
    words.clear();
    row.gradsText.split(words, ' ', -1, false);
    for (StringRef w : words)
      row.grads.push_back(w == "new"    ? GradRule::New
                          : w == "view" ? GradRule::View
                          : w == "pass" ? GradRule::Pass
                                        : GradRule::None);
    rowsByOp[row.op].push_back(rows.size());
    rows.push_back(std::move(row));
  }
}

const SavedTensorTable &SavedTensorTable::get() {
  static const SavedTensorTable table;
  return table;
}

const SavedTensorRow *SavedTensorTable::lookup(StringRef op,
                                               StringRef pattern) const {
  auto it = rowsByOp.find(op);
  if (it == rowsByOp.end())
    return nullptr;
  const SavedTensorRow *best = nullptr;
  unsigned bestExtra = ~0u;
  for (unsigned index : it->second) {
    const SavedTensorRow &row = rows[index];
    if (row.pattern.size() != pattern.size())
      continue;
    // Same tensor positions; every 'g' asked for must be 'g' in the row.
    unsigned extra = 0;
    bool fits = true;
    for (auto [want, have] : llvm::zip(pattern, row.pattern)) {
      if ((want == '-') != (have == '-') || (want == 'g' && have != 'g'))
        fits = false;
      extra += want == 't' && have == 'g';
    }
    if (fits && extra < bestExtra) {
      best = &row;
      bestExtra = extra;
    }
  }
  return best;
}

const SavedTensorRow *SavedTensorTable::anyRow(StringRef op) const {
  auto it = rowsByOp.find(op);
  return it == rowsByOp.end() ? nullptr : &rows[it->second.front()];
}

void SavedTensorTable::print(raw_ostream &os) const {
  std::vector<std::string> lines;
  for (const SavedTensorRow &row : rows)
    lines.push_back((llvm::Twine(row.op) + "|" + row.pattern + "|" +
                     row.savedText + "|" + row.resultsText + "|" +
                     row.gradsText + "|" + row.backwardText)
                        .str());
  std::sort(lines.begin(), lines.end());
  for (const std::string &line : lines)
    os << line << "\n";
  os << "torch|cpuGeneratorStateBytes|" << facts.cpuGeneratorStateBytes << "\n"
     << "torch|inputBufferAccumulatesInPlace|"
     << int(facts.inputBufferAccumulatesInPlace) << "\n";
}
