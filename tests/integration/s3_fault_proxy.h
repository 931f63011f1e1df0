// A fault-injecting HTTP proxy between Feedrate and the S3 test server, for the fault tests: it forwards requests
// (one upstream connection per client connection, HTTP/1.1 without pipelining, as curl sends), and on command
// answers every Nth request with 503 SlowDown, resets every Nth connection mid-request, delays every GET (an object
// store where each request waits), or stops altogether (the server "dies": listening socket and every connection
// closed, later connects refused).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace feedrate::it {

class S3FaultProxy {
 public:
  // Forwards to host:port of `upstream_url` ("http://127.0.0.1:7480").
  explicit S3FaultProxy(const std::string& upstream_url);
  ~S3FaultProxy();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void SlowDownEvery(uint64_t n) { slowdown_every_ = n; }  // 0: never
  void ResetEvery(uint64_t n) { reset_every_ = n; }        // 0: never
  void DelayGets(uint64_t ms) { get_delay_ms_ = ms; }      // each GET waits this long before it is forwarded
  void Stop();                                            // the server goes away
  uint64_t requests() const { return requests_.load(); }  // requests seen (GET, PUT, ...)
  uint64_t gets() const { return gets_.load(); }
  uint64_t listings() const { return listings_.load(); }  // ListObjectsV2 requests (GET ...?list-type=2)
  uint64_t slowdowns() const { return slowdowns_.load(); }
  uint64_t resets() const { return resets_.load(); }

 private:
  void Accept();
  void Serve(int client);

  std::string upstream_host_;
  int upstream_port_ = 0;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> slowdown_every_{0}, reset_every_{0}, get_delay_ms_{0};
  std::atomic<uint64_t> requests_{0}, gets_{0}, listings_{0}, slowdowns_{0}, resets_{0};
  std::mutex mu_;
  std::set<std::string> faulted_;  // GETs (request line and Range) already answered with a fault: not again
  std::vector<int> fds_;  // open client and upstream sockets (closed by Stop)
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace feedrate::it
