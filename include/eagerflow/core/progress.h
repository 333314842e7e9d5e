#pragma once
// The progress output of fit, evaluate and predict (ProgbarLogger; Keras' io_utils.print_msg),
// kept beside the log sink (src/core/log.cpp): text exactly as written ('\r' redraws and
// newlines included), to stdout by default, whatever the log level. A sink set here receives it
// instead (nullptr restores stdout); the bar then prints one finished line per epoch, as on a
// file, instead of redrawing in place.
#include <functional>
#include <string_view>

namespace ef {

void set_progress_sink(std::function<void(std::string_view)> sink);
void write_progress(std::string_view text);
// Whether progress text reaches a terminal: no sink is set and stdout is a terminal.
bool progress_to_terminal();

}  // namespace ef
