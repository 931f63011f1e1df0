// One escaping rule per output format, for every value a command renders that it did not write itself (names,
// paths, host names, anything read back from a summary): plain text (valid UTF-8, no control bytes), HTML, markdown,
// CSV cells (a spreadsheet formula prefix neutralised), and whole JSON trees made plain before any format renders
// them. Renderers take their inputs through these at the boundary, so a new field cannot forget them.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace feedrate {

// Valid UTF-8 with no control characters: invalid bytes and C0/C1 controls, DEL and ESC become U+FFFD; a line break
// or tab becomes a space (a value never starts a line of its own in any output).
std::string PlainText(std::string_view s);
// Whether `s` is valid UTF-8 (nlohmann::json refuses to dump a string that is not).
bool IsValidUtf8(std::string_view s);
// &, <, >, " and ' as entities, after PlainText.
std::string HtmlText(std::string_view s);
// Markdown inline text: PlainText, then the characters markdown or the HTML it may hold would read as syntax
// (\ ` * _ [ ] < > & | #) escaped with a backslash or an entity.
std::string MarkdownText(std::string_view s);
// A CSV cell (csv.QUOTE_MINIMAL, after PlainText): a value starting with = + - @ or a tab or CR gets a leading ' so
// a spreadsheet reads text, not a formula; quoted when it holds a comma or a quote.
std::string CsvCell(std::string_view s);

// Whether `name`, built from configuration (a model, workload, organisation or system name), can be one path
// component: not empty, not "." or "..", no '/', no NUL and no control character.
bool IsPlainName(std::string_view name);

// `j` with every string value passed through `f`: the inputs of one output format (keys stay as they are, for the
// renderers to look up; a renderer that shows a key passes it through the format's rule itself).
nlohmann::json MapStrings(const nlohmann::json& j, std::string (*f)(std::string_view));
// The paths ("feedrate.hosts[1].name") of the strings in `j` that are not valid UTF-8, at most `limit`.
std::vector<std::string> InvalidUtf8Fields(const nlohmann::json& j, size_t limit = 8);
// j.dump(indent) that never throws: invalid UTF-8 is written as U+FFFD (InvalidUtf8Fields names where).
std::string DumpJson(const nlohmann::json& j, int indent = -1);

}  // namespace feedrate
