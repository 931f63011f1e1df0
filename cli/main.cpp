// `feedrate`: how many accelerators can this storage keep fed? Subcommand dispatch and error handling.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "emulator/host/launch_watch.h"
#include "loader/util/exit_codes.h"
#include "loader/config/workload_config.h"

#ifndef FEEDRATE_VERSION
#define FEEDRATE_VERSION "dev"
#endif

namespace {

// The command's exit code (parse errors and configuration exceptions included).
int RunCommand(int argc, char** argv) {
  CLI::App app{"Feedrate: MLPerf Storage-style training-data loader and accelerator emulator", "feedrate"};
  app.set_version_flag("--version", FEEDRATE_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, feedrate::cli::Runner> runners;
  auto add = [&](feedrate::cli::Runner r) { runners[app.get_subcommands({}).back()] = std::move(r); };
  add(feedrate::cli::AddDatagen(app, &argc, &argv));
  add(feedrate::cli::AddRun(app, &argc, &argv));
  add(feedrate::cli::AddCheckpoint(app, &argc, &argv));
  add(feedrate::cli::AddDatasize(app, &argc, &argv));
  add(feedrate::cli::AddInspect(app));
  add(feedrate::cli::AddIobench(app, &argc, &argv));
  add(feedrate::cli::AddWorkloads(app));
  add(feedrate::cli::AddSweep(app));
  add(feedrate::cli::AddReport(app));
  add(feedrate::cli::AddDlio(app, &argc, &argv));
  feedrate::cli::GuardNumericOptions(app);
  feedrate::cli::BareOptionalNumbers(app, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "feedrate: error: %s (see feedrate --help)\n", e.what());
    return feedrate::kExitError;
  }
  try {
    for (auto* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const feedrate::ConfigError& e) {
    std::fprintf(stderr, "feedrate: error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "feedrate: error: %s\n", e.what());
  }
  return feedrate::kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  feedrate::AnnounceStarted();  // (to --hosts' launcher, when it started this rank: launch_watch.h)
  int code = feedrate::kExitError;
  try {
    code = RunCommand(argc, argv);
  } catch (const std::exception& e) {  // (setting the commands up: RunCommand catches what they throw when run)
    std::fprintf(stderr, "feedrate: error: %s\n", e.what());
  }
  feedrate::AnnounceEnd(code);
  return code;
}
