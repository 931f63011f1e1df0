// MetricsServer: poll() on the listening socket and an eventfd; one short-lived connection answered at a time.
#include "emulator/host/metrics_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace feedrate {
namespace {

constexpr size_t kMaxRequestHead = 8192;  // a scrape's request is a few hundred bytes; more is not a scraper

bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // the scraper left, or its 2 s send timeout passed
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string Reply(const char* status, const char* type, const std::string& body) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type + "\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// The request target of "GET /metrics HTTP/1.1" ("" when the line is not a GET).
std::string GetTarget(const std::string& head) {
  if (head.rfind("GET ", 0) != 0) return "";
  const size_t end = head.find(' ', 4);
  return end == std::string::npos ? "" : head.substr(4, end - 4);
}

std::string Describe(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  port = ntohs(a->sin_port);
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

Result<ListenAddress> ParseListenAddress(const std::string& text, int port_offset) {
  const size_t colon = text.rfind(':');
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("--metrics-listen '" + text + "': " + why + " (give HOST:PORT, e.g. 0.0.0.0:9400)");
  };
  if (colon == std::string::npos) return bad("no port");
  ListenAddress a;
  a.host = text.substr(0, colon);
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']') a.host = a.host.substr(1, a.host.size() - 2);
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    return bad("the port is not a number");
  }
  a.port = std::stoi(port) + port_offset;
  if (a.port < 1 || a.port > 65535) return bad("port " + std::to_string(a.port) + " is outside 1-65535");
  return a;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const ListenAddress& where, std::function<std::string()> render) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(where.port);
  const std::string shown = (where.host.empty() ? "*" : where.host) + ":" + port;
  if (const int rc = ::getaddrinfo(where.host.empty() ? nullptr : where.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status::InvalidArgument("metrics endpoint " + shown + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  int err = 0;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd.valid()) {
      err = errno;
      continue;
    }
    const int on = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // a run right after another may rebind
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), 16) != 0) {
      err = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake.valid()) return Status::Errno("metrics endpoint: eventfd", errno);
    return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(fd), std::move(wake), Describe(bound), std::move(render)));
  }
  return Status::Errno("metrics endpoint " + shown + ": cannot listen there", err);
}

MetricsServer::MetricsServer(UniqueFd listener, UniqueFd wake, std::string address, std::function<std::string()> render)
    : listener_(std::move(listener)), wake_(std::move(wake)), address_(std::move(address)), render_(std::move(render)) {
  thread_ = std::thread([this] { Loop(); });
}

MetricsServer::~MetricsServer() {
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

bool MetricsServer::WaitForScrape(uint64_t after, double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return scraped_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return delivered_.load() > after; });
}

void MetricsServer::Loop() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (client.valid()) Answer(client.get());
  }
}

// One request: its head read within 2 s, the answer sent within 2 s, then the connection closed (a scraper that
// stalls costs the others at most that).
void MetricsServer::Answer(int client) {
  const timeval limit{2, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestHead) {
    const ssize_t n = ::recv(client, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  const std::string target = GetTarget(head);
  if (target != "/metrics" && target.rfind("/metrics?", 0) != 0) {
    SendAll(client, Reply("404 Not Found", "text/plain", "feedrate serves /metrics only\n"));
    return;
  }
  const uint64_t number = begun_.fetch_add(1) + 1;
  if (!SendAll(client, Reply("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_()))) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    delivered_.store(number);
  }
  scraped_.notify_all();
}

}  // namespace feedrate
