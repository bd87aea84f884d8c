//===- MarksLine.h - one measurement as a line of a marks file --*- C++ -*-===//
#ifndef MEMOPT_LIB_PROBE_MARKSLINE_H
#define MEMOPT_LIB_PROBE_MARKSLINE_H

#include "KernelMarks.h"

#include <string>

namespace memopt::probe {

/// One measurement as a line of a marks file (without the newline):
/// `<context>\t<call key>\t<forward> <backward x4>[ <saved> <retained>]`.
/// The context names what picked the kernels (no tabs).
std::string formatMarksLine(const std::string &context, const std::string &key,
                            const KernelMarks &marks);
/// Reads a line written by formatMarksLine; false when it does not parse.
bool parseMarksLine(const std::string &line, std::string &context,
                    std::string &key, KernelMarks &marks);

} // namespace memopt::probe

#endif // MEMOPT_LIB_PROBE_MARKSLINE_H
