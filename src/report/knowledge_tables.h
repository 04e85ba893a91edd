#pragma once
// The knowledge tables (data/*.json, compiled in) as a reader sees them: docs/knowledge.md is generated from
// knowledge_markdown() (`scalescope knowledge --markdown > docs/knowledge.md`; tests/knowledge checks the file is
// current), and `scalescope knowledge gpus|models|transports|observations` prints one table on the terminal.

#include <string>
#include <string_view>

namespace scalescope::report {

/// The whole of docs/knowledge.md: every table with its columns, one row per item, and each row's source.
std::string knowledge_markdown();

/// One table as terminal text ("gpus", "models", "transports", "observations"), without sources (they are long:
/// --markdown prints them). Throws core::UsageError for an unknown name, listing the names.
std::string knowledge_text(std::string_view table);

}  // namespace scalescope::report
