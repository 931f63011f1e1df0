// S3FaultProxy: a thread per connection, forwarding whole requests and responses (Content-Length or chunked).
#include "s3_fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <strings.h>

namespace feedrate::it {
namespace {

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads from fd into buf until buf holds `want` bytes (false on EOF or error).
bool FillTo(int fd, std::string* buf, size_t want) {
  char tmp[65536];
  while (buf->size() < want) {
    ssize_t r = ::recv(fd, tmp, sizeof tmp, 0);
    if (r <= 0) return false;
    buf->append(tmp, static_cast<size_t>(r));
  }
  return true;
}

// Reads until buf contains `token`; its end offset, or npos.
size_t FillUntil(int fd, std::string* buf, const char* token) {
  char tmp[65536];
  for (;;) {
    size_t at = buf->find(token);
    if (at != std::string::npos) return at + std::strlen(token);
    ssize_t r = ::recv(fd, tmp, sizeof tmp, 0);
    if (r <= 0) return std::string::npos;
    buf->append(tmp, static_cast<size_t>(r));
  }
}

// A header's value in a header block ("" when absent), name case-insensitive.
std::string Header(const std::string& head, const char* name) {
  const size_t n = std::strlen(name);
  for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    const size_t line = at + 2;
    if (line + n < head.size() && ::strncasecmp(head.c_str() + line, name, n) == 0 && head[line + n] == ':') {
      size_t v = line + n + 1;
      while (v < head.size() && head[v] == ' ') ++v;
      return head.substr(v, head.find("\r\n", v) - v);
    }
  }
  return "";
}

}  // namespace

S3FaultProxy::S3FaultProxy(const std::string& upstream_url) {
  const std::string rest = upstream_url.substr(upstream_url.find("://") + 3);
  upstream_host_ = rest.substr(0, rest.find(':'));
  upstream_port_ = std::stoi(rest.substr(rest.find(':') + 1));
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    throw std::runtime_error("S3FaultProxy: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

S3FaultProxy::~S3FaultProxy() {
  Stop();
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

void S3FaultProxy::Stop() {
  if (stopped_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept(); the acceptor closes it, so connects are then refused
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
}

void S3FaultProxy::Accept() {
  for (;;) {
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0 || stopped_.load()) {
      if (c >= 0) ::close(c);
      break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(c);
    threads_.emplace_back([this, c] { Serve(c); });
  }
  ::close(listen_fd_);
}

void S3FaultProxy::Serve(int client) {
  int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(upstream_port_));
  ::inet_pton(AF_INET, upstream_host_.c_str(), &a.sin_addr);
  bool ok = up >= 0 && ::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (up >= 0) fds_.push_back(up);
    if (stopped_.load()) ok = false;
  }
  std::string in, out;  // bytes read ahead from the client and from the server
  while (ok) {
    const size_t head_end = FillUntil(client, &in, "\r\n\r\n");
    if (head_end == std::string::npos) break;
    const std::string head = in.substr(0, head_end);
    const std::string cl = Header(head, "Content-Length");
    const size_t body = cl.empty() ? 0 : std::stoull(cl);
    // curl holds large bodies back until "100 Continue": the proxy says it itself (and drops the server's).
    if (body > 0 && in.size() < head_end + body && Header(head, "Expect").find("100") != std::string::npos) {
      const char* cont = "HTTP/1.1 100 Continue\r\n\r\n";
      if (!SendAll(client, cont, std::strlen(cont))) break;
    }
    if (!FillTo(client, &in, head_end + body)) break;
    const std::string request = in.substr(0, head_end + body);
    in.erase(0, head_end + body);
    requests_.fetch_add(1);
    const bool is_get = head.rfind("GET ", 0) == 0, is_head = head.rfind("HEAD ", 0) == 0;
    if (stopped_.load()) break;
    if (is_get && head.substr(0, head.find("\r\n")).find("list-type=2") != std::string::npos) listings_.fetch_add(1);
    // A GET already faulted once passes: every Nth by a global count could otherwise hit one request's every retry
    // (seen once in CI under TSan: 5 SlowDowns in a row for one ranged GET), which tests the count, not the retries.
    const bool faults = is_get && (reset_every_ > 0 || slowdown_every_ > 0);
    const std::string fault_key = faults ? head.substr(0, head.find("\r\n")) + " " + Header(head, "Range") : "";
    bool faulted_before = false;
    if (faults) {
      std::lock_guard<std::mutex> lock(mu_);
      faulted_before = faulted_.count(fault_key) != 0;
    }
    const auto remember = [&] {
      std::lock_guard<std::mutex> lock(mu_);
      faulted_.insert(fault_key);
    };
    const uint64_t k = is_get ? gets_.fetch_add(1) + 1 : 0;
    if (is_get && !faulted_before) {
      if (reset_every_ > 0 && k % reset_every_ == 0) {  // RST instead of an answer
        resets_.fetch_add(1);
        remember();
        linger l{1, 0};
        ::setsockopt(client, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        break;
      }
      if (slowdown_every_ > 0 && k % slowdown_every_ == 0) {
        slowdowns_.fetch_add(1);
        remember();
        const std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
                                "<Message>Please reduce your request rate.</Message></Error>";
        const std::string resp = "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " +
                                 std::to_string(xml.size()) + "\r\n\r\n" + xml;
        if (!SendAll(client, resp.data(), resp.size())) break;
        continue;
      }
    }
    if (is_get && get_delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(get_delay_ms_.load()));
    if (!SendAll(up, request.data(), request.size())) break;
    size_t rhead_end = FillUntil(up, &out, "\r\n\r\n");
    while (rhead_end != std::string::npos && out.rfind("HTTP/1.1 1", 0) == 0) {  // interim 1xx: not the answer
      out.erase(0, rhead_end);
      rhead_end = FillUntil(up, &out, "\r\n\r\n");
    }
    if (rhead_end == std::string::npos) break;
    const std::string rhead = out.substr(0, rhead_end);
    const int code = std::atoi(rhead.c_str() + 9);
    if (!SendAll(client, out.data(), rhead_end)) break;
    out.erase(0, rhead_end);
    if (is_head || code == 204 || code == 304) continue;
    std::string te = Header(rhead, "Transfer-Encoding");
    if (te.find("chunked") != std::string::npos) {
      bool last = false;
      while (ok && !last) {
        const size_t line_end = FillUntil(up, &out, "\r\n");
        if (line_end == std::string::npos) {
          ok = false;
          break;
        }
        const size_t size = std::stoull(out.substr(0, line_end - 2), nullptr, 16);
        last = size == 0;
        ok = FillTo(up, &out, line_end + size + 2) && SendAll(client, out.data(), line_end + size + 2);
        out.erase(0, std::min(out.size(), line_end + size + 2));
      }
      continue;
    }
    const std::string rcl = Header(rhead, "Content-Length");
    size_t left = rcl.empty() ? 0 : std::stoull(rcl);
    while (ok && left > 0) {
      if (out.empty() && !FillTo(up, &out, 1)) {
        ok = false;
        break;
      }
      const size_t n = std::min(left, out.size());
      ok = SendAll(client, out.data(), n);
      out.erase(0, n);
      left -= n;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : {client, up}) {
    if (fd < 0) continue;
    fds_.erase(std::remove(fds_.begin(), fds_.end(), fd), fds_.end());
    ::close(fd);
  }
}

}  // namespace feedrate::it
