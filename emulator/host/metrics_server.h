// A Prometheus scrape endpoint: one thread answers `GET /metrics` on a TCP socket with text a callback renders
// (the exposition format, text/plain version 0.0.4). Off the hot path: the callback reads counters, never waits.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "loader/io/unique_fd.h"
#include "loader/status.h"

namespace feedrate {

// "HOST:PORT" ("0.0.0.0:9400", "127.0.0.1:9400", "[::1]:9400", ":9400" = every address) with `port_offset` added to
// the port (a host's second rank serves PORT+1). InvalidArgument naming the text when it is not one.
struct ListenAddress {
  std::string host;  // "" = every address
  int port = 0;
};
Result<ListenAddress> ParseListenAddress(const std::string& text, int port_offset);

class MetricsServer {
 public:
  // Binds and listens (an address in use or not on this host is an error naming it), then serves on its own thread
  // until destroyed. `render` runs on that thread, once per scrape; it outlives the server.
  static Result<std::unique_ptr<MetricsServer>> Start(const ListenAddress& where, std::function<std::string()> render);
  ~MetricsServer();  // stops the thread; a scrape being answered finishes first
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  const std::string& address() const { return address_; }  // "127.0.0.1:9400", the port as bound
  // `GET /metrics` requests begun (render called) so far, numbered 1, 2, ... in the order one thread answers them.
  uint64_t begun() const { return begun_.load(); }
  // The number of the last one whose whole answer was sent (0: none): a scraper that gave up before it had it
  // (its timeout passed) does not count.
  uint64_t delivered() const { return delivered_.load(); }
  // Waits until a request numbered above `after` has been delivered, or `seconds` passed; true when one was. Pass
  // begun() to wait for a scrape of what render gives from now on.
  bool WaitForScrape(uint64_t after, double seconds);

 private:
  MetricsServer(UniqueFd listener, UniqueFd wake, std::string address, std::function<std::string()> render);
  void Loop();
  void Answer(int client);

  UniqueFd listener_, wake_;  // wake_: an eventfd the destructor writes to end poll()
  std::string address_;
  std::function<std::string()> render_;
  std::atomic<uint64_t> begun_{0}, delivered_{0};
  std::mutex mu_;  // guards nothing but the wait below (once per scrape, never per sample)
  std::condition_variable scraped_;
  std::thread thread_;
};

}  // namespace feedrate
