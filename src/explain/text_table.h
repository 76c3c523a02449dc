// The plain-text tables `schedext explain` prints (explain.cc, preemption.cc).
#ifndef SCHEDEXT_SRC_EXPLAIN_TEXT_TABLE_H_
#define SCHEDEXT_SRC_EXPLAIN_TEXT_TABLE_H_

#include <string>
#include <vector>

namespace schedext::explain {

// Left-aligned columns separated by two spaces, one line per row, no
// trailing blanks.
std::string TextTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace schedext::explain

#endif  // SCHEDEXT_SRC_EXPLAIN_TEXT_TABLE_H_
